// What the control plane costs in one process: the time the group coordinator and the aggregators
// spend in their handlers, and the messages they handle. Both add to one control_costs from their
// own threads; the coordinator reads it into the summary when the run ends. Plain, no CAF.
//
// Two clocks. Wall time (the default, about 30 ns a reading, so it is always on) is what a round
// waits for; but where the threads outnumber the cores it also counts the time the OS ran another
// thread in the middle of a handler. The threads' CPU time counts only what the handlers computed,
// but each reading is a system call (about 1.2 us on a paravirtualized VM, so only when asked:
// benchmarks), longer than many a handler. Both clocks' own cost is measured when a control_costs
// is made and left out of every handler's time.
#pragma once

#include "herd/run_summary.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

namespace herd::actors {

struct control_costs {
  enum class clock_kind { wall, thread_cpu };

  explicit control_costs(clock_kind clock_used = clock_kind::wall)
      : clock(clock_used), clock_overhead_nanoseconds(measured_overhead(clock_used)) {}

  /// The reading that starts a handler's interval. On the CPU clock, the second of two: the first
  /// after a stretch of other work is cold (the system call's code and data evicted; about 1.8 us
  /// against 1.2 on a paravirtualized VM), and the part of it after its sample would fall inside
  /// the interval, more than the warm calibration leaves out; the second is warm like the
  /// calibration's. The wall clock's readings are too short to matter: one.
  std::uint64_t start() const {
    if (clock == clock_kind::thread_cpu)
      (void)now();
    return now();
  }

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
  /// What two back-to-back readings of `clock` measure with nothing between them: the part of
  /// the readings themselves that falls inside every interval (the median of many tries).
  const std::uint64_t clock_overhead_nanoseconds;
  struct counter {
    std::atomic<std::uint64_t> nanoseconds{0};
    std::atomic<std::uint64_t> messages{0};
  };
  counter coordinator;
  counter aggregators; // the data-plane reductions they ran included...
  std::atomic<std::uint64_t> reduction_nanoseconds{0}; // ...which take this much of it

  /// The nanoseconds a handler took that began at `start` and ends now, less the clock's own.
  std::uint64_t spent_since(std::uint64_t start) const {
    const std::uint64_t spent = now() - start;
    return spent > clock_overhead_nanoseconds ? spent - clock_overhead_nanoseconds : 0;
  }

  /// What a handler's time holds of an interval nested in it that began at `start` (a reduction):
  /// the interval and its own two readings of the clock.
  std::uint64_t nested_since(std::uint64_t start) const {
    return now() - start + clock_overhead_nanoseconds;
  }

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

private:
  static std::uint64_t measured_overhead(clock_kind kind) {
    const control_costs raw(kind, 0);
    std::array<std::uint64_t, 101> tries{};
    for (auto& interval : tries) {
      const std::uint64_t start = raw.now();
      interval = raw.now() - start;
    }
    std::nth_element(tries.begin(), tries.begin() + tries.size() / 2, tries.end());
    return tries[tries.size() / 2];
  }
  control_costs(clock_kind kind, std::uint64_t overhead)
      : clock(kind), clock_overhead_nanoseconds(overhead) {}
};

/// Adds the time from its construction to its destruction (on costs->clock, less the clock's own
/// cost), and one message, to costs->*into (when costs is not null). One at each entry point of an
/// actor (a handler, a response callback), never nested.
class handler_timer {
public:
  handler_timer(control_costs* costs, control_costs::counter control_costs::*into)
      : costs_(costs), into_(into), start_(costs ? costs->start() : 0) {}
  handler_timer(const handler_timer&) = delete;
  handler_timer& operator=(const handler_timer&) = delete;
  ~handler_timer() {
    if (costs_ == nullptr)
      return;
    auto& counted = costs_->*into_;
    counted.nanoseconds.fetch_add(costs_->spent_since(start_), std::memory_order_relaxed);
    counted.messages.fetch_add(1, std::memory_order_relaxed);
  }

private:
  control_costs* costs_;
  control_costs::counter control_costs::*into_;
  std::uint64_t start_;
};

} // namespace herd::actors
