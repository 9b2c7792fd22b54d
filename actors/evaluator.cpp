// The evaluator actor; see evaluator.hpp.
#include "actors/evaluator.hpp"

#include "actors/errors.hpp"
#include "actors/messages.hpp"
#include "herd/tensor.hpp"

#include <chrono>
#include <cmath>
#include <limits>

namespace herd::actors {

namespace {

struct evaluator_state {
  std::unique_ptr<models::model_workspace> workspace; // made at the first evaluation
  models::tensor device_parameters; // the snapshot, where the ops' memory is not the host's
  static inline const char* name = "herd.evaluator";
};

// The snapshot where setup.ops computes: as it is in host memory, else uploaded (on a GPU).
const float* parameters_for(evaluator_state& state, const evaluator_setup& setup,
                            const std::vector<float>& snapshot) {
  const auto& where = setup.ops->memory();
  if (where.host_accessible())
    return snapshot.data();
  if (state.device_parameters.size() != snapshot.size())
    state.device_parameters = models::tensor(std::vector<std::size_t>{snapshot.size()}, where);
  setup.ops->upload(state.device_parameters.data(), snapshot.data(),
                    snapshot.size() * sizeof(float));
  return state.device_parameters.data();
}

caf::result<evaluation_result> measure(evaluator_state& state, const evaluator_setup& setup,
                                       const parameter_snapshot& snapshot,
                                       const models::dataset& samples) {
  const auto start = std::chrono::steady_clock::now();
  try {
    if (!snapshot.parameters || snapshot.parameters->size() != setup.model->parameter_count())
      return make_error(herd_errc::evaluation_failed,
                        "snapshot does not match the model's parameter count");
    if (!state.workspace)
      state.workspace = setup.model->make_workspace();
    const auto measured =
        setup.model->evaluate(*setup.ops, parameters_for(state, setup, *snapshot.parameters),
                              samples, setup.batch_size, *state.workspace);
    evaluation_result result;
    // Parameters that are not numbers give a NaN loss, and their argmax means nothing.
    result.test_accuracy = std::isnan(measured.mean_loss) ? std::numeric_limits<double>::quiet_NaN()
                                                          : measured.accuracy();
    result.test_loss = measured.mean_loss;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  } catch (const std::exception& failure) {
    return make_error(herd_errc::evaluation_failed, failure.what());
  }
}

caf::behavior evaluator(caf::stateful_actor<evaluator_state>* self, const evaluator_setup& setup) {
  const bool validating = setup.validation && setup.validation->size() > 0;
  return {
      [self, setup, validating](evaluate_atom, const parameter_snapshot& snapshot) {
        return measure(self->state, setup, snapshot, validating ? *setup.validation : *setup.test);
      },
      [self, setup](evaluate_atom, test_set_atom, const parameter_snapshot& snapshot) {
        return measure(self->state, setup, snapshot, *setup.test);
      },
  };
}

} // namespace

evaluator_setup evaluator_of(std::shared_ptr<const models::model> model,
                             const std::shared_ptr<const models::train_test_split>& data,
                             const kernels::ops& ops) {
  evaluator_setup setup;
  setup.model = std::move(model);
  setup.test = std::shared_ptr<const models::dataset>(data, &data->test);
  if (data->validation.size() > 0)
    setup.validation = std::shared_ptr<const models::dataset>(data, &data->validation);
  setup.ops = &ops;
  return setup;
}

caf::actor spawn_evaluator(caf::actor_system& system, evaluator_setup setup) {
  return system.spawn<caf::detached>(evaluator, std::move(setup));
}

} // namespace herd::actors
