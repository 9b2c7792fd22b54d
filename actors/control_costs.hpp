// What the control plane costs in one process: the time the group coordinator and the aggregators
// spend in their handlers, and the messages they handle. Both add to one control_costs from their
// own threads; the coordinator reads it into the summary when the run ends. Plain, no CAF. The
// clock is read twice per message (about 50 ns), so it is always on.
#pragma once

#include "herd/run_summary.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace herd::actors {

struct control_costs {
  struct counter {
    std::atomic<std::uint64_t> nanoseconds{0};
    std::atomic<std::uint64_t> messages{0};
  };
  counter coordinator;
  counter aggregators; // the data-plane reductions they ran included...
  std::atomic<std::uint64_t> reduction_nanoseconds{0}; // ...which take this much of it

  /// What the summary reports (aggregators without their reductions).
  control_summary summary() const {
    control_summary made;
    made.coordinator_seconds = static_cast<double>(coordinator.nanoseconds.load()) * 1e-9;
    made.coordinator_messages = coordinator.messages.load();
    const auto aggregating = aggregators.nanoseconds.load();
    const auto reducing = std::min(aggregating, reduction_nanoseconds.load());
    made.aggregator_seconds = static_cast<double>(aggregating - reducing) * 1e-9;
    made.aggregator_messages = aggregators.messages.load();
    return made;
  }
};

/// Adds the time from its construction to its destruction, and one message, to `into` (when not
/// null). One at each entry point of an actor (a handler, a response callback), never nested.
class handler_timer {
public:
  explicit handler_timer(control_costs::counter* into)
      : into_(into), start_(std::chrono::steady_clock::now()) {}
  handler_timer(const handler_timer&) = delete;
  handler_timer& operator=(const handler_timer&) = delete;
  ~handler_timer() {
    if (into_ == nullptr)
      return;
    const auto spent = std::chrono::steady_clock::now() - start_;
    into_->nanoseconds.fetch_add(
        static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count()),
        std::memory_order_relaxed);
    into_->messages.fetch_add(1, std::memory_order_relaxed);
  }

private:
  control_costs::counter* into_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace herd::actors
