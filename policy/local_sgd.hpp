// Local SGD (docs/algorithms.md, "Local SGD"): the baseline WAGMA-SGD measures itself against.
// Every worker steps alone with its own optimizer; every `period` local steps all live workers
// average their models in one round that waits for every one of them. A plain class, no actors:
// the grouping policy the coordinator drives.
#pragma once

#include <cstdint>
#include <vector>

#include "policy/policy.hpp"

namespace herd::policy {

/// A worker's fresh arrival of step s, s not a multiple of `period`, is a round of that worker
/// alone: averaging one model leaves it as it is (the weight is exactly 1), and the round is what
/// hands a model-exchanging worker its model back so that it may take its next step. Step
/// k * period is a global average instead: one round of every live worker, activated once all of
/// them have finished that step (so the workers that finished it first wait, as local SGD's
/// averaging is a barrier), uniform weights, a full_sync round. Nobody is ever late for a round:
/// a singleton's member has just finished its step, and a global round's members all wait for it.
class local_sgd_policy final : public grouping_policy {
public:
  explicit local_sgd_policy(int period);

  std::string_view name() const override { return "local-sgd"; }
  bool exchanges_models() const override { return true; }
  std::vector<group_decision> set_live_workers(std::vector<int> workers) override;
  std::vector<group_decision> on_ready(const arrival& ready) override;
  std::vector<group_decision> on_group_done(const group_outcome& outcome) override;
  std::string save_state() const override;
  void load_state(const std::string& state) override;
  std::vector<int> live_workers() const override { return live_; }

  int period() const { return period_; }
  /// The last local step whose global average activated (0 before the first).
  std::uint64_t averaged_step() const { return averaged_; }

private:
  std::vector<group_decision> average_if_everyone_arrived();
  bool live(int worker) const;

  int period_;
  std::vector<int> live_;                 // ascending
  std::vector<std::uint64_t> fresh_step_; // by worker: its latest fresh arrival's step
  std::uint64_t averaged_ = 0;
};

} // namespace herd::policy
