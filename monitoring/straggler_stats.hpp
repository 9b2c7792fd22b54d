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
  void step_finished(int worker, double now_seconds, double step_seconds);

  /// A round's result reached `worker` at `now_seconds`: a worker that waits for its rounds'
  /// results (sync) begins its next step then, not when its last one ended.
  void result_applied(int worker, double now_seconds);

  /// A lost worker no longer counts (its score becomes empty).
  void worker_lost(int worker);

  /// A lost worker's slot is live again, with no steps in the window yet.
  void worker_joined(int worker);

  /// The typical step time of `worker` over the window ending at `now_seconds`: the mean of the
  /// middle half of its step times. Empty when it finished no step in the window (it may be hung
  /// or very slow: then its last known typical time is kept, see compute()).
  std::optional<double> recent_typical(int worker, double now_seconds) const;

  struct snapshot {
    std::vector<std::optional<double>> score; // by worker: its typical time over the others' median
    std::optional<double> imbalance_ratio;    // the highest score
  };

  /// Scores at `now_seconds`. A live worker with no step in the window keeps its last typical time,
  /// and one that has finished fewer steps than the most advanced live worker is scored by the
  /// time its current step has taken so far once that is a hang (more than 4 times its typical
  /// time, and more than 1 s), counted from the later of its last step's end and its last result:
  /// a lower bound of that step, which grows while it hangs, so that a worker that stopped
  /// finishing steps does not look healthy. (The others may be waiting
  /// for it, their clocks running too; only a worker behind them is surely computing.) Empty until
  /// some live worker has a typical time.
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
    std::optional<double> last_result; // when a round's result last reached it
  };

  void forget_before(worker_state& state, double now_seconds) const;

  double window_seconds_;
  std::vector<worker_state> workers_;
};

} // namespace herd::monitoring
