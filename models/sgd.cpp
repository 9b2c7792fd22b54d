// SGD with momentum; see sgd.hpp.
#include "models/sgd.hpp"

#include "kernels/check.hpp"

#include <algorithm>

namespace herd::models {

sgd::sgd(std::size_t parameter_count, const kernels::sgd_hyper& hyper)
    : hyper_(hyper), velocity_({parameter_count}) {
  HERD_CHECK_GE(hyper.learning_rate, 0.0f);
  HERD_CHECK(hyper.momentum >= 0.0f && hyper.momentum < 1.0f,
             "momentum must lie in [0, 1), got " << hyper.momentum);
  HERD_CHECK_GE(hyper.weight_decay, 0.0f);
}

void sgd::step(const kernels::ops& ops, float* params, const float* grads) {
  ops.sgd_step(params, grads, velocity_.data(), velocity_.size(), hyper_);
  ++steps_;
}

void sgd::restore_velocity(const float* velocity) {
  std::copy(velocity, velocity + velocity_.size(), velocity_.data());
}

} // namespace herd::models
