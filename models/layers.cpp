// Dense, ReLU and softmax-cross-entropy layers over kernels::ops; see layers.hpp.
#include "models/layers.hpp"

#include "kernels/check.hpp"

#include <cmath>

namespace herd::models {

namespace {

int as_int(std::size_t value) {
  HERD_CHECK(value <= 0x7fffffffu, "dimension " << value << " does not fit a BLAS int");
  return static_cast<int>(value);
}

} // namespace

dense::dense(std::size_t inputs, std::size_t outputs) : inputs_(inputs), outputs_(outputs) {
  HERD_CHECK(inputs > 0 && outputs > 0,
             "a dense layer needs inputs and outputs, got " << inputs << " x " << outputs);
}

void dense::initialise(float* params, std::mt19937_64& rng) const {
  std::normal_distribution<float> weight(0.0f, std::sqrt(2.0f / static_cast<float>(inputs_)));
  for (std::size_t i = 0; i < inputs_ * outputs_; ++i)
    params[i] = weight(rng);
  for (std::size_t i = 0; i < outputs_; ++i)
    params[inputs_ * outputs_ + i] = 0.0f;
}

void dense::forward(const kernels::ops& ops, const float* params, const tensor& x,
                    tensor& y) const {
  HERD_CHECK_EQ(x.cols(), inputs_);
  const std::size_t batch = x.rows();
  y.reshape({batch, outputs_});
  const float* weights = params;
  const float* bias = params + inputs_ * outputs_;
  ops.gemm(kernels::transpose::no, kernels::transpose::yes, as_int(batch), as_int(outputs_),
           as_int(inputs_), 1.0f, x.data(), as_int(inputs_), weights, as_int(inputs_), 0.0f,
           y.data(), as_int(outputs_));
  ops.bias_add(y.data(), bias, as_int(batch), as_int(outputs_));
}

void dense::backward(const kernels::ops& ops, const float* params, const tensor& x,
                     const tensor& dy, float* param_grads, tensor* dx) const {
  HERD_CHECK_EQ(x.cols(), inputs_);
  HERD_CHECK_EQ(dy.cols(), outputs_);
  HERD_CHECK_EQ(dy.rows(), x.rows());
  const std::size_t batch = x.rows();
  // dW = dy^T x (outputs x inputs), db = column sums of dy.
  ops.gemm(kernels::transpose::yes, kernels::transpose::no, as_int(outputs_), as_int(inputs_),
           as_int(batch), 1.0f, dy.data(), as_int(outputs_), x.data(), as_int(inputs_), 0.0f,
           param_grads, as_int(inputs_));
  ops.bias_grad(dy.data(), param_grads + inputs_ * outputs_, as_int(batch), as_int(outputs_));
  if (dx != nullptr) {
    dx->reshape({batch, inputs_});
    ops.gemm(kernels::transpose::no, kernels::transpose::no, as_int(batch), as_int(inputs_),
             as_int(outputs_), 1.0f, dy.data(), as_int(outputs_), params, as_int(inputs_), 0.0f,
             dx->data(), as_int(inputs_));
  }
}

void relu::forward(const kernels::ops& ops, const tensor& x, tensor& y) {
  y.reshape(x.shape());
  ops.relu_forward(x.data(), y.data(), x.size());
}

void relu::backward(const kernels::ops& ops, const tensor& y, const tensor& dy, tensor& dx) {
  HERD_CHECK_EQ(y.size(), dy.size());
  dx.reshape(y.shape());
  ops.relu_backward(y.data(), dy.data(), dx.data(), y.size());
}

float softmax_cross_entropy::forward(const kernels::ops& ops, const tensor& logits,
                                     const std::int32_t* labels, tensor& probs) {
  probs.reshape(logits.shape());
  return ops.softmax_xent_forward(logits.data(), labels, as_int(logits.rows()),
                                  as_int(logits.cols()), probs.data());
}

void softmax_cross_entropy::backward(const kernels::ops& ops, const tensor& probs,
                                     const std::int32_t* labels, tensor& dlogits) {
  dlogits.reshape(probs.shape());
  ops.softmax_xent_backward(probs.data(), labels, as_int(probs.rows()), as_int(probs.cols()),
                            dlogits.data());
}

} // namespace herd::models
