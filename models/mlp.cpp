// The MLP's forward, backward and evaluation; see mlp.hpp.
#include "models/mlp.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <random>

namespace herd::models {

mlp::mlp(std::vector<std::size_t> layer_sizes) : layer_sizes_(std::move(layer_sizes)) {
  HERD_CHECK(layer_sizes_.size() >= 2,
             "an MLP needs at least an input and an output size, got " << layer_sizes_.size());
  for (std::size_t i = 0; i + 1 < layer_sizes_.size(); ++i) {
    layers_.emplace_back(layer_sizes_[i], layer_sizes_[i + 1]);
    offsets_.push_back(parameter_count_);
    parameter_count_ += layers_.back().parameter_count();
  }
}

tensor mlp::initial_parameters(std::uint64_t seed) const {
  tensor params({parameter_count_});
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < layers_.size(); ++i)
    layers_[i].initialise(params.data() + offsets_[i], rng);
  return params;
}

const std::int32_t* mlp::prepare(const kernels::ops& ops, const tensor& x,
                                 const std::vector<std::int32_t>& labels,
                                 mlp_workspace& work) const {
  const kernels::memory& where = ops.memory();
  HERD_CHECK(&x.where() == &where, "a batch in " << x.where().name()
                                                 << " memory given to ops computing in "
                                                 << where.name() << " memory");
  HERD_CHECK_EQ(x.rows(), labels.size());
  if (&work.probs.where() != &where) {
    work.outputs.assign(layers_.size(), tensor(where));
    work.output_grads.assign(layers_.size(), tensor(where));
    work.probs = tensor(where);
    work.labels = kernels::buffer<std::int32_t>(0, where);
  }
  if (where.host_accessible())
    return labels.data();
  work.labels.resize(labels.size());
  ops.upload(work.labels.data(), labels.data(), labels.size() * sizeof(std::int32_t));
  return work.labels.data();
}

float mlp::forward(const kernels::ops& ops, const float* params, const tensor& x,
                   const std::int32_t* labels, mlp_workspace& work) const {
  HERD_CHECK_EQ(x.cols(), inputs());
  work.outputs.resize(layers_.size(), tensor(ops.memory()));
  const tensor* input = &x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i].forward(ops, params + offsets_[i], *input, work.outputs[i]);
    if (i + 1 < layers_.size())
      relu::forward(ops, work.outputs[i], work.outputs[i]);
    input = &work.outputs[i];
  }
  return softmax_cross_entropy::forward(ops, work.outputs.back(), labels, work.probs);
}

float mlp::loss(const kernels::ops& ops, const float* params, const tensor& x,
                const std::vector<std::int32_t>& labels, mlp_workspace& work) const {
  return forward(ops, params, x, prepare(ops, x, labels, work), work);
}

float mlp::loss_and_gradient(const kernels::ops& ops, const float* params, const tensor& x,
                             const std::vector<std::int32_t>& labels, float* grads,
                             mlp_workspace& work) const {
  const std::int32_t* batch_labels = prepare(ops, x, labels, work);
  const float batch_loss = forward(ops, params, x, batch_labels, work);
  work.output_grads.resize(layers_.size(), tensor(ops.memory()));
  softmax_cross_entropy::backward(ops, work.probs, batch_labels, work.output_grads.back());
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const tensor& input = i == 0 ? x : work.outputs[i - 1];
    // The first layer's input gradient is never used: skip that GEMM.
    tensor* input_grad = i == 0 ? nullptr : &work.output_grads[i - 1];
    layers_[i].backward(ops, params + offsets_[i], input, work.output_grads[i], grads + offsets_[i],
                        input_grad);
    if (input_grad != nullptr)
      relu::backward(ops, work.outputs[i - 1], *input_grad, *input_grad);
  }
  return batch_loss;
}

evaluation mlp::evaluate(const kernels::ops& ops, const float* params, const dataset& data,
                         std::size_t batch_size, mlp_workspace& work) const {
  HERD_CHECK_GT(batch_size, 0u);
  HERD_CHECK_EQ(data.features(), inputs());
  evaluation result;
  std::vector<std::int32_t> labels;
  double loss_sum = 0.0;
  for (std::size_t first = 0; first < data.size(); first += batch_size) {
    const std::size_t rows = std::min(batch_size, data.size() - first);
    labels.assign(data.labels.begin() + static_cast<std::ptrdiff_t>(first),
                  data.labels.begin() + static_cast<std::ptrdiff_t>(first + rows));
    if (&work.batch.where() != &ops.memory())
      work.batch = tensor(ops.memory());
    tensor& x = work.batch;
    x.reshape({rows, inputs()});
    ops.upload(x.data(), data.images.row(first), rows * inputs() * sizeof(float));
    const std::int32_t* batch_labels = prepare(ops, x, labels, work);
    loss_sum += static_cast<double>(forward(ops, params, x, batch_labels, work)) * rows;
    result.correct += ops.count_correct(work.probs.data(), batch_labels, static_cast<int>(rows),
                                        static_cast<int>(classes()));
    result.samples += rows;
  }
  result.mean_loss = result.samples == 0 ? 0.0 : loss_sum / result.samples;
  return result;
}

} // namespace herd::models
