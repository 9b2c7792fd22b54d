// What a job heard of its run before the run's own summary came (the coordinator's progress and
// evaluations), so that a job ended early (an exit message, a coordinator that died) still says
// how far its run got. No CAF here.
#pragma once

#include "herd/run_summary.hpp"

#include <optional>
#include <string>
#include <vector>

namespace herd::actors {

class run_so_far {
public:
  void heard(const progress& now) { latest_ = now; }
  void heard(const evaluation_point& point) { evaluations_.push_back(point); }

  /// The summary of a run that ended without one of its own: `ended` (algorithm, workers, the
  /// stop reason and error, what it ran on) with the rounds, steps, samples, epochs, time and
  /// evaluations last heard. The final evaluation, the per-worker figures and what only the
  /// coordinator counted stay empty.
  run_summary summary(run_summary ended) const;

private:
  std::optional<progress> latest_;
  std::vector<evaluation_point> evaluations_;
};

} // namespace herd::actors
