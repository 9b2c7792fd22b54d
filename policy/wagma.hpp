// WAGMA-SGD (docs/algorithms.md, "WAGMA-SGD"): wait-avoiding group model averaging. Each local
// step s has one round: the groups of the butterfly schedule at step s, all activated by the first
// worker that finishes step s. A plain class, no actors: the grouping policy the coordinator
// drives. What a late member does is the worker's: send_buffer.hpp, family blending_models.
#pragma once

#include <cstdint>
#include <vector>

#include "policy/butterfly.hpp"
#include "policy/policy.hpp"

namespace herd::policy {

struct wagma_settings {
  int group_size = 0;           // a power of two; 0 = butterfly_schedule::default_group_size
  int sync_every = 10;          // tau: a blocking global average every this many steps; 0 = never
  bool reference_blend = false; // wagma.blend = reference: on-time members blend too
};

/// The policy's settings from config [wagma].
wagma_settings wagma_settings_of(const config::wagma_section& section);

/// Step s's round activates at the first fresh arrival of step s: one decision per group of the
/// butterfly schedule at schedule step s - 1 (so step 1 gives the paper's first grouping), lost
/// workers left out, each with uniform weights and `step` = s. Members that have not finished
/// step s contribute their stored model. Every `sync_every`-th step is a global average instead:
/// one group of every live worker, activated once all of them finished that step (blocking), so
/// nobody is late for it. Rounds activate in step order.
class wagma_policy final : public grouping_policy {
public:
  wagma_policy(int workers, wagma_settings settings);

  std::string_view name() const override { return "wagma"; }
  bool exchanges_models() const override { return true; }
  bool blends_late_models() const override { return true; }
  bool blends_on_time_models() const override { return reference_blend_; }
  std::vector<group_decision> set_live_workers(std::vector<int> workers) override;
  std::vector<group_decision> on_ready(const arrival& ready) override;
  std::vector<group_decision> on_group_done(const group_outcome& outcome) override;
  std::string save_state() const override;
  void load_state(const std::string& state) override;
  std::vector<int> live_workers() const override { return live_; }

  const butterfly_schedule& schedule() const { return schedule_; }
  /// The last step whose round activated (0 before the first).
  std::uint64_t activated_step() const { return activated_; }

private:
  std::vector<group_decision> activate_due();
  bool is_global(std::uint64_t step) const;
  bool live(int worker) const;
  // Live workers whose fresh step is at least `step` (a global average's): counted once per
  // such step, then kept by on_ready as workers reach it.
  std::size_t reached(std::uint64_t step);
  void forget_counts(); // the live workers or their steps changed: recount

  butterfly_schedule schedule_;
  int sync_every_;
  bool reference_blend_;
  std::vector<int> live_;                 // ascending
  std::vector<std::uint64_t> fresh_step_; // by worker: its latest fresh arrival's step
  std::uint64_t activated_ = 0;
  // Derived, not saved, so that an arrival costs O(1) rather than scans of every worker (which
  // made a step of P workers cost O(P^2)): the furthest fresh step of a live worker, and the
  // global average waited for (0: none) with how many live workers have reached it.
  std::uint64_t furthest_ = 0;
  std::uint64_t waiting_global_ = 0;
  std::size_t reached_ = 0;
};

} // namespace herd::policy
