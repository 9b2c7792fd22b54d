// The layers of Herd's models. Layers own no parameters: they read and write a slice of the
// model's single parameter buffer (and gradient buffer), so a reduction is always one buffer.
#pragma once

#include "kernels/ops.hpp"
#include "models/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace herd::models {

/// Fully connected: y = x W^T + b with W stored outputs x inputs (row-major), then b; the slice
/// holds [W | b], parameter_count() floats.
class dense {
public:
  dense(std::size_t inputs, std::size_t outputs);

  std::size_t inputs() const { return inputs_; }
  std::size_t outputs() const { return outputs_; }
  std::size_t parameter_count() const { return inputs_ * outputs_ + outputs_; }

  /// He initialisation (for the ReLUs that follow): W ~ N(0, 2 / inputs), b = 0.
  void initialise(float* params, std::mt19937_64& rng) const;

  /// y (batch x outputs) from x (batch x inputs).
  void forward(const kernels::ops& ops, const float* params, const tensor& x, tensor& y) const;

  /// Overwrites param_grads (this layer's slice) with dL/d[W | b]; when dx is not null, also
  /// writes dL/dx = dy W.
  void backward(const kernels::ops& ops, const float* params, const tensor& x, const tensor& dy,
                float* param_grads, tensor* dx) const;

private:
  std::size_t inputs_;
  std::size_t outputs_;
};

/// max(x, 0), elementwise.
class relu {
public:
  static void forward(const kernels::ops& ops, const tensor& x, tensor& y);
  /// dx = dy where the forward output y was positive.
  static void backward(const kernels::ops& ops, const tensor& y, const tensor& dy, tensor& dx);
};

/// Softmax over each row of the logits followed by the mean cross-entropy against the labels
/// (one per row, in the ops' memory like the tensors).
class softmax_cross_entropy {
public:
  /// Writes the probabilities and returns the mean loss.
  static float forward(const kernels::ops& ops, const tensor& logits, const std::int32_t* labels,
                       tensor& probs);
  /// dL/dlogits of the mean loss: (probs - onehot) / rows.
  static void backward(const kernels::ops& ops, const tensor& probs, const std::int32_t* labels,
                       tensor& dlogits);
};

} // namespace herd::models
