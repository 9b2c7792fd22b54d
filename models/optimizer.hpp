// The optimizer over one flat parameter buffer: SGD with momentum and coupled weight decay, or
// AdamW. It owns its state (SGD's velocity, AdamW's two moments), which stays local to each
// worker: no algorithm averages it.
#pragma once

#include "herd/ops.hpp"
#include "herd/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace herd::models {

enum class optimizer_kind : std::uint8_t { sgd, adamw };

/// The kind train.optimizer names ("sgd", "adamw"; validated before).
inline optimizer_kind optimizer_kind_of(const std::string& name) {
  return name == "adamw" ? optimizer_kind::adamw : optimizer_kind::sgd;
}

/// train.optimizer and its settings ({lr, momentum, weight decay} is SGD's).
struct optimizer_settings {
  float learning_rate = 0.0f;
  float momentum = 0.0f;     // sgd
  float weight_decay = 0.0f; // sgd: L2 added to the gradient; adamw: decoupled
  optimizer_kind kind = optimizer_kind::sgd;
  float beta1 = 0.9f;   // adamw
  float beta2 = 0.999f; // adamw
  float eps = 1e-8f;    // adamw
};

class optimizer {
public:
  /// The state lives in `where`, the memory of the ops that step() will be given.
  optimizer(std::size_t parameter_count, const optimizer_settings& settings,
            const kernels::memory& where = kernels::host_memory());

  /// One step of params with grads (see kernels::sgd_hyper and kernels::adam_hyper).
  void step(const kernels::ops& ops, float* params, const float* grads);

  const optimizer_settings& settings() const { return settings_; }
  /// The next steps' rate: the learning rate it was made with times `scale` (train.lr-schedule's
  /// factor: the same float product on every replica that is given the same factor).
  void scale_learning_rate(float scale) { settings_.learning_rate = base_rate_ * scale; }

  /// Floats of state per kind: the velocity (one per parameter) or AdamW's m and v (two).
  static std::size_t state_floats(optimizer_kind kind, std::size_t parameter_count);
  /// Its state: SGD's velocity, or AdamW's first moments followed by its second.
  const tensor& state() const { return state_; }
  /// Takes over another optimizer's state (state().size() floats, in host memory): a worker
  /// joining a running job continues where a live peer is.
  void restore_state(const float* host_state);
  std::size_t steps() const { return steps_; }
  /// Continues counting from a checkpoint's step count (AdamW's bias corrections count them).
  void restore_steps(std::size_t steps) { steps_ = steps; }

private:
  optimizer_settings settings_;
  float base_rate_ = 0.0f; // the learning rate it was made with
  tensor state_;
  std::size_t steps_ = 0;
};

} // namespace herd::models
