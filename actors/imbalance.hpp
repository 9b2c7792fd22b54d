// Load-imbalance injection (docs/algorithms.md, "Load imbalance"): how much longer than its real
// compute time a worker's local step must take. Seeded and reproducible: the answer depends only on
// the settings, the worker and the step number, so every worker derives the same "shared" random
// choices without talking to the others. The worker waits the extra time inside its compute step
// (injected_delay), and a stop cuts that wait short.
#pragma once

#include "config/run_config.hpp"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace herd::actors {

class imbalance_model {
public:
  /// `workers` is the job's worker count (kind=random picks `k` of them each step).
  imbalance_model(config::imbalance_section settings, int workers);

  /// False for kind=none: no step is ever slowed.
  bool active() const;

  /// Extra seconds worker `worker`'s step number `step` (1-based, as in step_ready) must take on
  /// top of `compute_seconds`, the time the step really took. Never negative:
  ///   random      delay-ms / 1000 when the worker is among delayed_workers(step), else 0;
  ///   persistent  (factor - 1) * compute_seconds for the listed workers, else 0;
  ///   lognormal   (m - 1) * compute_seconds, m ~ LogNormal(0, sigma) drawn from (seed, worker,
  ///               step); a step cannot run faster than it did, so m < 1 gives 0.
  double extra_seconds(int worker, std::uint64_t step, double compute_seconds) const;

  /// kind=random: the `k` workers delayed at `step`, ascending; the same on every worker. Empty
  /// for the other kinds.
  std::vector<int> delayed_workers(std::uint64_t step) const;

  /// One line for summaries and reports, e.g. "random: 2 of 8 workers delayed 40 ms per step".
  std::string describe() const;

private:
  config::imbalance_section settings_;
  int workers_;
};

/// Where a worker's compute thread waits out its injected delay. cancel() (the worker was asked
/// to stop, or is going away) ends the wait under way and every later one at once, so that a
/// delay longer than the run (imbalance.delay-ms = 60000 with train.max-seconds = 3, or Ctrl-C
/// during it) never holds up the end of the run. Thread-safe.
class injected_delay {
public:
  /// Waits `seconds` (steady clock), or until cancel(). True when it waited the whole time.
  bool wait(double seconds);

  /// Ends the wait under way, if any, and makes every later wait() return at once.
  void cancel();

  bool cancelled() const;

private:
  mutable std::mutex mutex_;
  std::condition_variable woken_;
  bool cancelled_ = false;
};

} // namespace herd::actors
