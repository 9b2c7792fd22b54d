// SGD with momentum and weight decay over one flat parameter buffer; it owns the velocity, which
// stays local to each worker (no algorithm averages momentum).
#pragma once

#include "herd/ops.hpp"
#include "herd/tensor.hpp"

#include <cstddef>

namespace herd::models {

class sgd {
public:
  /// The velocity lives in `where`, the memory of the ops that step() will be given.
  sgd(std::size_t parameter_count, const kernels::sgd_hyper& hyper,
      const kernels::memory& where = kernels::host_memory());

  /// params -= lr * (momentum-smoothed grads + weight_decay * params).
  void step(const kernels::ops& ops, float* params, const float* grads);

  const kernels::sgd_hyper& hyper() const { return hyper_; }
  /// The next steps' rate: the learning rate it was made with times `scale` (train.lr-schedule's
  /// factor: the same float product on every replica that is given the same factor).
  void scale_learning_rate(float scale) { hyper_.learning_rate = base_rate_ * scale; }
  const tensor& velocity() const { return velocity_; }
  /// Takes over another optimizer's velocity (velocity().size() floats, in host memory): a worker
  /// joining a running job continues where a live peer is.
  void restore_velocity(const float* host_velocity);
  std::size_t steps() const { return steps_; }
  /// Continues counting from a checkpoint's step count.
  void restore_steps(std::size_t steps) { steps_ = steps; }

private:
  kernels::sgd_hyper hyper_;
  float base_rate_ = 0.0f; // the learning rate it was made with
  tensor velocity_;
  std::size_t steps_ = 0;
};

} // namespace herd::models
