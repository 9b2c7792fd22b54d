// The requests behind an evaluation, made from the group coordinator: parameter snapshots from the
// workers evaluation_schedule names (their mean where there are several), and the evaluator's test
// of them. Each is bounded: 30 s for a snapshot, 10 min for an evaluation.
#pragma once

#include "herd/run_summary.hpp"

#include <caf/fwd.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herd::actors {

using parameters_ptr = std::shared_ptr<const std::vector<float>>;
/// Parameters taken at a point of the run.
using snapshot_taken = std::function<void(const evaluation_point&, parameters_ptr)>;
/// Why there are none.
using snapshot_failed = std::function<void(const std::string&)>;
/// An evaluation: the point with its accuracy and the parameters evaluated, or nothing and why.
using evaluated =
    std::function<void(std::optional<evaluation_point>, parameters_ptr, const std::string&)>;

/// Asks each of `sources` for its parameters, as of `point`: `then` with the mean of those that
/// answered, `failed` when none did (or there is none to ask).
void request_snapshot(caf::event_based_actor& self, const std::vector<caf::actor>& sources,
                      const evaluation_point& point, snapshot_taken then, snapshot_failed failed);

/// Which samples an evaluation measures: the run's evaluation set (its validation set where it
/// has one, else its test set), or the test set.
enum class measured_set { evaluation, test };

/// Has `evaluator` measure `parameters`, taken at `point`, on `set`.
void request_evaluation(caf::event_based_actor& self, const caf::actor& evaluator,
                        evaluation_point point, parameters_ptr parameters, evaluated on_result,
                        measured_set set = measured_set::evaluation);

} // namespace herd::actors
