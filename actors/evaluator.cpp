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

caf::behavior evaluator(caf::stateful_actor<evaluator_state>* self, const evaluator_setup& setup) {
  return {
      [self, setup](evaluate_atom,
                    const parameter_snapshot& snapshot) -> caf::result<evaluation_result> {
        const auto start = std::chrono::steady_clock::now();
        try {
          if (!snapshot.parameters || snapshot.parameters->size() != setup.model->parameter_count())
            return make_error(herd_errc::evaluation_failed,
                              "snapshot does not match the model's parameter count");
          if (!self->state.workspace)
            self->state.workspace = setup.model->make_workspace();
          const auto measured = setup.model->evaluate(
              *setup.ops, parameters_for(self->state, setup, *snapshot.parameters), *setup.test,
              setup.batch_size, *self->state.workspace);
          evaluation_result result;
          // Parameters that are not numbers give a NaN loss, and their argmax means nothing.
          result.test_accuracy = std::isnan(measured.mean_loss)
                                     ? std::numeric_limits<double>::quiet_NaN()
                                     : measured.accuracy();
          result.test_loss = measured.mean_loss;
          result.seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          return result;
        } catch (const std::exception& failure) {
          return make_error(herd_errc::evaluation_failed, failure.what());
        }
      },
  };
}

} // namespace

caf::actor spawn_evaluator(caf::actor_system& system, evaluator_setup setup) {
  return system.spawn<caf::detached>(evaluator, std::move(setup));
}

} // namespace herd::actors
