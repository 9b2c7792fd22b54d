// The layers over kernels::ops, and make_layer(); see layers.hpp.
#include "models/layers.hpp"

#include "kernels/check.hpp"

#include <cmath>
#include <stdexcept>

namespace herd::models {

namespace {

int as_int(std::size_t value) {
  HERD_CHECK(value <= 0x7fffffffu, "dimension " << value << " does not fit a BLAS int");
  return static_cast<int>(value);
}

// A positive size written in a layer, at most 2^24 (no layer is wider; a typo is not a request
// for terabytes).
std::size_t size_argument(const std::string& text, const std::string& what) {
  std::size_t value = 0;
  const bool digits = !text.empty() && text.size() <= 9 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  if (digits)
    value = std::stoul(text);
  if (!digits || value < 1 || value > (std::size_t{1} << 24))
    throw std::invalid_argument(what + " must be a whole number between 1 and 16777216, not \"" +
                                text + "\"");
  return value;
}

void expect_arguments(const layer_spec& spec, std::size_t count, const std::string& form) {
  if (spec.arguments.size() != count)
    throw std::invalid_argument("\"" + spec.text + "\": expected " + form);
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

const std::vector<std::string>& layer_grammar() {
  static const std::vector<std::string> grammar{"dense N", "relu", "flatten"};
  return grammar;
}

std::unique_ptr<layer> make_layer(const layer_spec& spec, const shape& input) {
  if (spec.kind == "dense") {
    expect_arguments(spec, 1, "dense N (N outputs, e.g. dense 128)");
    const std::size_t outputs = size_argument(spec.arguments[0], "the outputs of dense");
    if (input.size() != 1)
      throw std::invalid_argument("dense takes a flat input, not " + shape_text(input) +
                                  "; put flatten before it");
    return std::make_unique<dense>(input, outputs);
  }
  if (spec.kind == "relu") {
    expect_arguments(spec, 0, "relu, without arguments");
    return std::make_unique<relu>(input);
  }
  if (spec.kind == "flatten") {
    expect_arguments(spec, 0, "flatten, without arguments");
    return std::make_unique<flatten>(input);
  }
  std::string known;
  for (const auto& form : layer_grammar())
    known += (known.empty() ? "" : ", ") + form;
  throw std::invalid_argument("unknown layer \"" + spec.kind + "\"; the layers are: " + known);
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
                    tensor& /*scratch*/) const {
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
                     const tensor& dy, float* param_grads, tensor* dx, tensor& /*scratch*/) const {
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
                   tensor& /*scratch*/) const {
  y.reshape(x.shape());
  p.ops.relu_forward(x.data(), y.data(), x.size());
}

void relu::backward(const pass& p, const float* /*params*/, const tensor& /*x*/, const tensor& y,
                    const tensor& dy, float* /*param_grads*/, tensor* dx,
                    tensor& /*scratch*/) const {
  HERD_CHECK_EQ(y.size(), dy.size());
  if (dx == nullptr)
    return;
  dx->reshape(y.shape());
  p.ops.relu_backward(y.data(), dy.data(), dx->data(), y.size());
}

void flatten::forward(const pass& p, const float* /*params*/, const tensor& x, tensor& y,
                      tensor& /*scratch*/) const {
  y.reshape(x.shape());
  p.ops.copy(y.data(), x.data(), x.size());
}

void flatten::backward(const pass& p, const float* /*params*/, const tensor& /*x*/,
                       const tensor& /*y*/, const tensor& dy, float* /*param_grads*/, tensor* dx,
                       tensor& /*scratch*/) const {
  if (dx == nullptr)
    return;
  dx->reshape(dy.shape());
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
