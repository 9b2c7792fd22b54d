// Who is the straggler, now: each worker's typical step time over a recent window of wall time
// (the interquartile mean: the mean of the middle half), against the median of the other live
// workers' typical times. Under allreduce every rank waits the same
// time, so the slow one hides in the wait; its step times do not (docs/metrics.md). A plain
// class: the coordinator feeds it, tests drive it with scripted times.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace herd::monitoring {

class straggler_stats {
public:
  /// `window_seconds`: how far back step times count, so that the score follows a worker that
  /// becomes slow and recovers.
  straggler_stats(int workers, double window_seconds);

  /// Worker `worker` finished a step of `step_seconds` at time `now_seconds` (any monotonic clock).
  /// `late`: its round had closed, so it went on with its next step at once (else it waits for a
  /// round to take the step and for that round's result).
  void step_finished(int worker, double now_seconds, double step_seconds, bool late = false);

  /// A round's result reached `worker` at `now_seconds`: a worker that waits for its rounds'
  /// results (sync) begins its next step then, not when its last one ended.
  void result_applied(int worker, double now_seconds);

  /// A lost worker no longer counts (its score becomes empty).
  void worker_lost(int worker);

  /// A lost worker's slot is live again, with no steps in the window yet.
  void worker_joined(int worker);

  /// The typical step time of `worker` over the window ending at `now_seconds`: the mean of the
  /// middle half of its step times there (its last 1024 at most). Empty when it finished no step
  /// in the window (it may be hung or very slow: then its last known typical time is kept, see
  /// compute()).
  std::optional<double> recent_typical(int worker, double now_seconds) const;

  struct snapshot {
    std::vector<std::optional<double>> score; // by worker: its typical time over the others' median
    std::optional<double> imbalance_ratio;    // the highest score
  };

  /// Scores at `now_seconds`. A live worker with no step in the window keeps its last typical time,
  /// and one that has finished fewer steps than the most advanced live worker and is computing is
  /// scored by the time its current step has taken so far once that is a hang (more than 4 times
  /// its typical time, and more than 1 s), so that a worker that stopped finishing steps does not
  /// look healthy. A worker is computing from its last step's end when that step was late, else
  /// from a round result that came after it (until then it waits for a round to take its step,
  /// or for that round's result); the time so far is a lower bound of the step, which grows while
  /// it hangs. Empty until some live worker has a typical time.
  snapshot compute(double now_seconds);

private:
  struct sample {
    double at = 0.0;
    double seconds = 0.0;
  };
  struct worker_state {
    bool live = true;
    std::deque<sample> recent;
    std::optional<double> last_typical;
    std::uint64_t steps = 0;           // finished since it (re)joined, from the others' count
    std::optional<double> last_end;    // when its last step finished
    bool last_late = false;            // whether that step was late (it went on at once)
    std::optional<double> last_result; // when a round's result last reached it

    /// When it began the step it is computing; nothing while it waits (for a round to take its
    /// last step, or for that round's result), when no step of its runs.
    std::optional<double> computing_since() const;
  };

  void forget_before(worker_state& state, double now_seconds) const;

  double window_seconds_;
  std::vector<worker_state> workers_;
  // recent_typical()'s step times, kept between calls (so even the const calls are for the one
  // thread that feeds it).
  mutable std::vector<double> scratch_;
};

} // namespace herd::monitoring
