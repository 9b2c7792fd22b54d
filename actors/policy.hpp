// Grouping policies: who reduces with whom, and when. A policy is a plain class the group
// coordinator drives with arrivals and completions, so its decisions are tested without actors.
// DESIGN.md section 4 defines the algorithms; this file holds the interface and `sync`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace herd::actors {

/// A worker reporting a finished local step.
struct arrival {
  int worker = 0;
  std::uint64_t step = 0;  // the worker's step counter after this step
  double at_seconds = 0.0; // coordinator clock
  double compute_seconds = 0.0;
};

enum class round_kind : std::uint8_t { partial, full_sync };

/// How the aggregator weights the members' contributions.
enum class weighting : std::uint8_t {
  uniform, // every member 1 / group size: the mean (sync), or sum / P (solo, majority)
};

struct group_decision {
  std::vector<int> members; // ascending worker indices
  round_kind kind = round_kind::full_sync;
  weighting weights = weighting::uniform;
};

class grouping_policy {
public:
  virtual ~grouping_policy() = default;
  virtual std::string_view name() const = 0;

  /// The live workers changed (at start, or a worker was lost). A loss may complete a group that
  /// was waiting for the lost worker, so decisions can come back.
  virtual std::vector<group_decision> set_live_workers(std::vector<int> workers) = 0;

  virtual std::vector<group_decision> on_ready(const arrival& ready) = 0;

  virtual std::vector<group_decision> on_group_done(const std::vector<int>& members) = 0;
};

/// Baseline allreduce-SGD: one group of all live workers once every one of them is ready.
class sync_policy final : public grouping_policy {
public:
  std::string_view name() const override { return "sync"; }
  std::vector<group_decision> set_live_workers(std::vector<int> workers) override;
  std::vector<group_decision> on_ready(const arrival& ready) override;
  std::vector<group_decision> on_group_done(const std::vector<int>& members) override;

private:
  std::vector<group_decision> activate_if_complete();

  std::vector<int> live_;  // ascending
  std::vector<int> ready_; // ascending, subset of live_
};

/// The policy named by train.algorithm (one of config::known_algorithms()).
std::unique_ptr<grouping_policy> make_policy(const std::string& algorithm);

/// Weight of each member, in the members' order.
std::vector<float> member_weights(weighting weights, std::size_t members);

} // namespace herd::actors
