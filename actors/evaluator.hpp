// The evaluator actor: measures a parameter snapshot on the validation set where the run has one,
// else on the test set, on its own thread (it is spawned detached), so the coordinator stays
// responsive while a full pass runs. With ops on a GPU it uploads the snapshot and evaluates
// there; the batches go up as training's do.
//
// Messages it answers:
//   (evaluate_atom, parameter_snapshot) -> evaluation_result            the evaluation set
//   (evaluate_atom, test_set_atom, parameter_snapshot) -> evaluation_result   the test set
#pragma once

#include "herd/dataset.hpp"
#include "herd/model.hpp"
#include "herd/ops.hpp"

#include <caf/fwd.hpp>

#include <cstddef>
#include <memory>

namespace herd::actors {

struct evaluator_setup {
  std::shared_ptr<const models::model> model;
  std::shared_ptr<const models::dataset> test;
  /// Null or empty: the evaluations measure the test set.
  std::shared_ptr<const models::dataset> validation;
  const kernels::ops* ops = nullptr;
  std::size_t batch_size = 1000;
};

/// The evaluator of `data`'s sets (sharing their ownership): its validation set where it has one.
evaluator_setup evaluator_of(std::shared_ptr<const models::model> model,
                             const std::shared_ptr<const models::train_test_split>& data,
                             const kernels::ops& ops);

caf::actor spawn_evaluator(caf::actor_system& system, evaluator_setup setup);

} // namespace herd::actors
