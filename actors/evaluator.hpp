// The evaluator actor: measures a parameter snapshot on the test set, on its own thread (it is
// spawned detached), so the coordinator stays responsive while a full test pass runs. With ops on
// a GPU it uploads the snapshot and evaluates there; the test batches go up as training's do.
//
// Messages it answers:
//   (evaluate_atom, parameter_snapshot) -> evaluation_result
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
  const kernels::ops* ops = nullptr;
  std::size_t batch_size = 1000;
};

caf::actor spawn_evaluator(caf::actor_system& system, evaluator_setup setup);

} // namespace herd::actors
