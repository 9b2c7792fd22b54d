// SGD with momentum; see sgd.hpp.
#include "models/sgd.hpp"

#include "kernels/check.hpp"

#include <algorithm>

namespace herd::models {

sgd::sgd(std::size_t parameter_count, const kernels::sgd_hyper& hyper, const kernels::memory& where)
    : hyper_(hyper), base_rate_(hyper.learning_rate),
      velocity_(std::vector<std::size_t>{parameter_count}, where) {
  HERD_CHECK_GE(hyper.learning_rate, 0.0f);
  HERD_CHECK(hyper.momentum >= 0.0f && hyper.momentum < 1.0f,
             "momentum must lie in [0, 1), got " << hyper.momentum);
  HERD_CHECK_GE(hyper.weight_decay, 0.0f);
}

void sgd::step(const kernels::ops& ops, float* params, const float* grads) {
  HERD_CHECK(&ops.memory() == &velocity_.where(), "an optimizer whose velocity is in "
                                                      << velocity_.where().name()
                                                      << " memory stepped by ops computing in "
                                                      << ops.memory().name() << " memory");
  ops.sgd_step(params, grads, velocity_.data(), velocity_.size(), hyper_);
  ++steps_;
}

void sgd::restore_velocity(const float* host_velocity) {
  velocity_.where().upload(velocity_.data(), host_velocity, velocity_.size() * sizeof(float));
}

} // namespace herd::models
