// The evaluator actor; see evaluator.hpp.
#include "actors/evaluator.hpp"

#include "actors/errors.hpp"
#include "actors/messages.hpp"

#include <chrono>
#include <cmath>
#include <limits>

namespace herd::actors {

namespace {

struct evaluator_state {
  std::unique_ptr<models::model_workspace> workspace; // made at the first evaluation
  static inline const char* name = "herd.evaluator";
};

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
          const auto measured =
              setup.model->evaluate(*setup.ops, snapshot.parameters->data(), *setup.test,
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
