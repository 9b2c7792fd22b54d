// The layers over kernels::ops, and make_layer(); see layers.hpp.
#include "herd/layers.hpp"

#include "kernels/check.hpp"

#include <cmath>
#include <cstdio>

namespace herd::models {

namespace {

int as_int(std::size_t value) {
  HERD_CHECK(value <= 0x7fffffffu, "dimension " << value << " does not fit a BLAS int");
  return static_cast<int>(value);
}

} // namespace

std::size_t elements(const shape& of) {
  std::size_t product = 1;
  for (std::size_t dim : of)
    product *= dim;
  return of.empty() ? 0 : product;
}

std::string shape_text(const shape& of) {
  std::string text;
  for (std::size_t i = 0; i < of.size(); ++i)
    text += (i ? "x" : "") + std::to_string(of[i]);
  return text.empty() ? "(none)" : text;
}

std::size_t layer::output_elements(std::size_t input_elements) const {
  HERD_CHECK(input_elements == elements(input_), describe() << " takes " << elements(input_)
                                                             << " elements per sample, given "
                                                             << input_elements);
  return elements(output_);
}

// -- dense ----------------------------------------------------------------------------------------

dense::dense(const shape& input, std::size_t outputs) : layer(input, {outputs}) {
  HERD_CHECK(input.size() == 1 && input[0] > 0 && outputs > 0,
             "a dense layer needs a flat input and outputs, got " << shape_text(input) << " to "
                                                                  << outputs);
}

std::string dense::describe() const {
  return "dense " + std::to_string(outputs());
}

void dense::initialise(float* params, std::mt19937_64& rng) const {
  const std::size_t in = inputs();
  const std::size_t out = outputs();
  std::normal_distribution<float> weight(0.0f, std::sqrt(2.0f / static_cast<float>(in)));
  for (std::size_t i = 0; i < in * out; ++i)
    params[i] = weight(rng);
  for (std::size_t i = 0; i < out; ++i)
    params[in * out + i] = 0.0f;
}

void dense::forward(const pass& p, const float* params, const tensor& x, tensor& y,
                    layer_scratch& /*scratch*/) const {
  const std::size_t in = inputs();
  const std::size_t out = outputs();
  HERD_CHECK_EQ(x.cols(), in);
  const std::size_t batch = x.rows();
  y.reshape({batch, out});
  const float* weights = params;
  const float* bias = params + in * out;
  p.ops.gemm(kernels::transpose::no, kernels::transpose::yes, as_int(batch), as_int(out),
             as_int(in), 1.0f, x.data(), as_int(in), weights, as_int(in), 0.0f, y.data(),
             as_int(out));
  p.ops.bias_add(y.data(), bias, as_int(batch), as_int(out));
}

void dense::backward(const pass& p, const float* params, const tensor& x, const tensor& /*y*/,
                     const tensor& dy, float* param_grads, tensor* dx,
                     layer_scratch& /*scratch*/) const {
  const std::size_t in = inputs();
  const std::size_t out = outputs();
  HERD_CHECK_EQ(x.cols(), in);
  HERD_CHECK_EQ(dy.cols(), out);
  HERD_CHECK_EQ(dy.rows(), x.rows());
  const std::size_t batch = x.rows();
  // dW = dy^T x (outputs x inputs), db = column sums of dy.
  p.ops.gemm(kernels::transpose::yes, kernels::transpose::no, as_int(out), as_int(in),
             as_int(batch), 1.0f, dy.data(), as_int(out), x.data(), as_int(in), 0.0f, param_grads,
             as_int(in));
  p.ops.bias_grad(dy.data(), param_grads + in * out, as_int(batch), as_int(out));
  if (dx != nullptr) {
    dx->reshape({batch, in});
    p.ops.gemm(kernels::transpose::no, kernels::transpose::no, as_int(batch), as_int(in),
               as_int(out), 1.0f, dy.data(), as_int(out), params, as_int(in), 0.0f, dx->data(),
               as_int(in));
  }
}

// -- relu and flatten -----------------------------------------------------------------------------

void relu::forward(const pass& p, const float* /*params*/, const tensor& x, tensor& y,
                   layer_scratch& /*scratch*/) const {
  y.reshape(x.shape());
  p.ops.relu_forward(x.data(), y.data(), x.size());
}

void relu::backward(const pass& p, const float* /*params*/, const tensor& /*x*/, const tensor& y,
                    const tensor& dy, float* /*param_grads*/, tensor* dx,
                    layer_scratch& /*scratch*/) const {
  HERD_CHECK_EQ(y.size(), dy.size());
  if (dx == nullptr)
    return;
  dx->reshape(y.shape());
  p.ops.relu_backward(y.data(), dy.data(), dx->data(), y.size());
}

void flatten::forward(const pass& p, const float* /*params*/, const tensor& x, tensor& y,
                      layer_scratch& /*scratch*/) const {
  y.reshape(x.shape());
  p.ops.copy(y.data(), x.data(), x.size());
}

void flatten::backward(const pass& p, const float* /*params*/, const tensor& /*x*/,
                       const tensor& /*y*/, const tensor& dy, float* /*param_grads*/, tensor* dx,
                       layer_scratch& /*scratch*/) const {
  if (dx == nullptr)
    return;
  dx->reshape(dy.shape());
  p.ops.copy(dx->data(), dy.data(), dy.size());
}

// -- dropout --------------------------------------------------------------------------------------

dropout::dropout(const shape& input, float probability)
    : layer(input, input), probability_(probability) {
  HERD_CHECK(probability >= 0.0f && probability < 1.0f,
             "a dropout probability must lie in [0, 1), got " << probability);
}

std::string dropout::describe() const {
  char text[32];
  std::snprintf(text, sizeof text, "dropout %g", static_cast<double>(probability_));
  return text;
}

void dropout::forward(const pass& p, const float* /*params*/, const tensor& x, tensor& y,
                      layer_scratch& /*scratch*/) const {
  y.reshape(x.shape());
  if (p.training)
    p.ops.dropout_forward(x.data(), y.data(), x.size(), probability_, p.seed);
  else
    p.ops.copy(y.data(), x.data(), x.size());
}

void dropout::backward(const pass& p, const float* /*params*/, const tensor& /*x*/,
                       const tensor& /*y*/, const tensor& dy, float* /*param_grads*/, tensor* dx,
                       layer_scratch& /*scratch*/) const {
  if (dx == nullptr)
    return;
  dx->reshape(dy.shape());
  if (p.training)
    p.ops.dropout_backward(dy.data(), dx->data(), dy.size(), probability_, p.seed);
  else
    p.ops.copy(dx->data(), dy.data(), dy.size());
}

// -- the loss -------------------------------------------------------------------------------------

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
