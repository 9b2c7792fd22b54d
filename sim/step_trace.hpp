// Step times taken from a real run: each worker's step-time histogram from a `herd train
// --report` (per_worker[].step_histogram), so that `herd simulate` can replay a measured
// distribution (variable-length inputs, a noisy machine) at any number of workers.
#pragma once

#include "herd/run_summary.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace herd::sim {

class step_trace {
public:
  /// One histogram per worker of the measured run, each with at least one step. Throws
  /// std::invalid_argument when there is no worker, a worker has no step, a bar is malformed
  /// (negative, reversed, not finite or beyond an hour, as simulate.step-ms is bounded), the
  /// counts add up past 2^64, or the steps take no time on average.
  explicit step_trace(std::vector<std::vector<actors::histogram_bar>> workers);

  /// The time of step `step` of simulated worker `worker`: a draw from measured worker
  /// `worker` mod workers(), a bar with probability count / steps, then a time uniform within it.
  /// A pure function of (seed, worker, step), so a simulation replays exactly whatever order its
  /// events run in.
  double draw(int worker, std::uint64_t step, std::uint64_t seed) const;

  /// The mean step time of all measured steps (from the bars' midpoints).
  double mean_seconds() const { return mean_seconds_; }
  std::size_t workers() const { return workers_.size(); }

private:
  struct worker_bars {
    std::vector<actors::histogram_bar> bars;
    std::vector<std::uint64_t> cumulative; // counts up to and including each bar
  };
  std::vector<worker_bars> workers_;
  double mean_seconds_ = 0.0;
};

} // namespace herd::sim
