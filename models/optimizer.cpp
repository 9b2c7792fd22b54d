// The optimizer; see optimizer.hpp.
#include "models/optimizer.hpp"

#include "kernels/check.hpp"

namespace herd::models {

optimizer::optimizer(std::size_t parameter_count, const optimizer_settings& settings,
                     const kernels::memory& where)
    : settings_(settings), base_rate_(settings.learning_rate),
      state_(std::vector<std::size_t>{state_floats(settings.kind, parameter_count)}, where) {
  HERD_CHECK_GE(settings.learning_rate, 0.0f);
  HERD_CHECK(settings.momentum >= 0.0f && settings.momentum < 1.0f,
             "momentum must lie in [0, 1), got " << settings.momentum);
  HERD_CHECK_GE(settings.weight_decay, 0.0f);
  HERD_CHECK(settings.beta1 >= 0.0f && settings.beta1 < 1.0f && settings.beta2 >= 0.0f &&
                 settings.beta2 < 1.0f,
             "AdamW's betas must lie in [0, 1), got " << settings.beta1 << " and "
                                                      << settings.beta2);
  HERD_CHECK_GT(settings.eps, 0.0f); // the state starts at zero, as PyTorch's
}

std::size_t optimizer::state_floats(optimizer_kind kind, std::size_t parameter_count) {
  return kind == optimizer_kind::adamw ? 2 * parameter_count : parameter_count;
}

void optimizer::step(const kernels::ops& ops, float* params, const float* grads) {
  HERD_CHECK(&ops.memory() == &state_.where(), "an optimizer whose state is in "
                                                   << state_.where().name()
                                                   << " memory stepped by ops computing in "
                                                   << ops.memory().name() << " memory");
  if (settings_.kind == optimizer_kind::adamw) {
    const kernels::adam_hyper hyper{settings_.learning_rate, settings_.beta1, settings_.beta2,
                                    settings_.eps, settings_.weight_decay};
    ops.adam_step(params, grads, state_.data(), state_.size() / 2, hyper, steps_ + 1);
  } else {
    const kernels::sgd_hyper hyper{settings_.learning_rate, settings_.momentum,
                                   settings_.weight_decay};
    ops.sgd_step(params, grads, state_.data(), state_.size(), hyper);
  }
  ++steps_;
}

void optimizer::restore_state(const float* host_state) {
  state_.where().upload(state_.data(), host_state, state_.size() * sizeof(float));
}

} // namespace herd::models
