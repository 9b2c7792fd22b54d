// Load-imbalance injection (docs/algorithms.md, "Load imbalance"): how much longer than its real
// compute time a worker's local step must take. Seeded and reproducible: the answer depends only on
// the settings, the worker and the step number, so every worker derives the same "shared" random
// choices without talking to the others. A plain class without actors or threads, so that the
// workers (actors/imbalance.hpp waits the extra time out) and the simulator (sim/) draw the same
// delays.
#pragma once

#include "herd/run_config.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace herd::policy {

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
  /// Whether that step is slowed at all: extra_seconds is positive for a positive compute time.
  /// Known before the step runs (gradient buckets announce only steps that are not delayed).
  bool slows(int worker, std::uint64_t step) const { return extra_seconds(worker, step, 1.0) > 0; }

  /// kind=random: the `k` workers delayed at `step`, ascending; the same on every worker. Empty
  /// for the other kinds. O(k log k), independent of the worker count.
  std::vector<int> delayed_workers(std::uint64_t step) const;

  /// One line for summaries and reports, e.g. "random: 2 of 8 workers delayed 40 ms per step".
  std::string describe() const;

private:
  // Every worker asks for the same step's set: the latest one is kept (shared by the threads
  // that ask, and by copies of this model, which have the same settings).
  struct latest_step {
    std::mutex mutex;
    std::uint64_t step = 0;
    std::shared_ptr<const std::vector<int>> delayed;
  };
  std::shared_ptr<const std::vector<int>> delayed_at(std::uint64_t step) const;

  config::imbalance_section settings_;
  int workers_;
  std::shared_ptr<latest_step> latest_ = std::make_shared<latest_step>();
};

} // namespace herd::policy
