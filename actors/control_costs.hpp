// What the control plane costs in one process: the time the group coordinator and the aggregators
// spend in their handlers, and the messages they handle. Both add to one control_costs from their
// own threads; the coordinator reads it into the summary when the run ends. Plain, no CAF.
//
// Two clocks. Wall time (the default, about 50 ns for the two readings of a message, so it is
// always on) is what a round waits for; but where the threads outnumber the cores it also counts
// the time the OS ran another thread in the middle of a handler. The threads' CPU time (about
// 0.4 us a message here, so only when asked: benchmarks) counts only what the handlers computed.
#pragma once

#include "herd/run_summary.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

namespace herd::actors {

struct control_costs {
  enum class clock_kind { wall, thread_cpu };

  explicit control_costs(clock_kind clock_used = clock_kind::wall) : clock(clock_used) {}

  /// Nanoseconds on `clock`: since some fixed point (wall), or the calling thread's CPU time.
  std::uint64_t now() const {
    if (clock == clock_kind::thread_cpu) {
      timespec spent{};
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spent);
      return static_cast<std::uint64_t>(spent.tv_sec) * 1000000000u +
             static_cast<std::uint64_t>(spent.tv_nsec);
    }
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now().time_since_epoch())
                                          .count());
  }

  const clock_kind clock;
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

/// Adds the time from its construction to its destruction (on costs->clock), and one message, to
/// costs->*into (when costs is not null). One at each entry point of an actor (a handler, a
/// response callback), never nested.
class handler_timer {
public:
  handler_timer(control_costs* costs, control_costs::counter control_costs::*into)
      : costs_(costs), into_(into), start_(costs ? costs->now() : 0) {}
  handler_timer(const handler_timer&) = delete;
  handler_timer& operator=(const handler_timer&) = delete;
  ~handler_timer() {
    if (costs_ == nullptr)
      return;
    auto& counted = costs_->*into_;
    counted.nanoseconds.fetch_add(costs_->now() - start_, std::memory_order_relaxed);
    counted.messages.fetch_add(1, std::memory_order_relaxed);
  }

private:
  control_costs* costs_;
  control_costs::counter control_costs::*into_;
  std::uint64_t start_;
};

} // namespace herd::actors
