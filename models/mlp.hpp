// A multi-layer perceptron: dense layers with ReLU between them and softmax cross-entropy on top.
// The model is the architecture only; parameters and gradients are flat buffers the caller owns
// (one per worker replica), and scratch space lives in an mlp_workspace, so one mlp can serve
// many replicas and evaluations on different threads.
#pragma once

#include "kernels/ops.hpp"
#include "models/dataset.hpp"
#include "models/layers.hpp"
#include "models/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace herd::models {

/// Activations of one forward/backward pass, in the memory of the ops last used with it (a
/// workspace moves there by itself). Buffers keep their capacity between batches.
struct mlp_workspace {
  std::vector<tensor> outputs;      // per dense layer: pre-activation z, then ReLU(z) in place
  std::vector<tensor> output_grads; // per dense layer: dL/d(output)
  tensor probs;
  kernels::buffer<std::int32_t> labels; // the batch's labels, when the ops are not on the host
  tensor batch;                         // evaluate(): the batch, in the ops' memory
};

struct evaluation {
  double mean_loss = 0.0;
  std::size_t correct = 0;
  std::size_t samples = 0;
  double accuracy() const { return samples == 0 ? 0.0 : static_cast<double>(correct) / samples; }
};

class mlp {
public:
  /// layer_sizes = {inputs, hidden..., classes}, e.g. {784, 256, 128, 10}; at least two entries.
  explicit mlp(std::vector<std::size_t> layer_sizes);

  const std::vector<std::size_t>& layer_sizes() const { return layer_sizes_; }
  std::size_t inputs() const { return layer_sizes_.front(); }
  std::size_t classes() const { return layer_sizes_.back(); }
  std::size_t parameter_count() const { return parameter_count_; }
  const std::vector<dense>& layers() const { return layers_; }
  /// Where layer i's [W | b] starts in the parameter buffer.
  std::size_t parameter_offset(std::size_t layer) const { return offsets_.at(layer); }

  /// He-initialised parameters drawn from `seed`: the same seed gives the same replica.
  tensor initial_parameters(std::uint64_t seed) const;

  /// Forward and backward on one batch: overwrites `grads` (parameter_count() floats) with the
  /// gradient of the batch's mean loss and returns that loss. `params`, `x` and `grads` are in
  /// ops.memory() (device memory for CUDA ops); the labels are on the host (uploaded as needed).
  float loss_and_gradient(const kernels::ops& ops, const float* params, const tensor& x,
                          const std::vector<std::int32_t>& labels, float* grads,
                          mlp_workspace& work) const;

  /// Forward only: the batch's mean loss.
  float loss(const kernels::ops& ops, const float* params, const tensor& x,
             const std::vector<std::int32_t>& labels, mlp_workspace& work) const;

  /// Mean loss and accuracy over a whole (host) dataset, in batches of `batch_size` copied into
  /// ops.memory(); `params` are in ops.memory().
  evaluation evaluate(const kernels::ops& ops, const float* params, const dataset& data,
                      std::size_t batch_size, mlp_workspace& work) const;

private:
  /// Leaves the logits in work.outputs.back() and the probabilities in work.probs; returns the
  /// batch's mean loss.
  float forward(const kernels::ops& ops, const float* params, const tensor& x,
                const std::int32_t* labels, mlp_workspace& work) const;
  /// Moves the workspace into ops.memory() if it is elsewhere, checks that x is there too, and
  /// returns the labels as a pointer in that memory.
  const std::int32_t* prepare(const kernels::ops& ops, const tensor& x,
                              const std::vector<std::int32_t>& labels, mlp_workspace& work) const;

  std::vector<std::size_t> layer_sizes_;
  std::vector<dense> layers_;
  std::vector<std::size_t> offsets_;
  std::size_t parameter_count_ = 0;
};

} // namespace herd::models
