// The embedding and conv1d-max layers over kernels::ops; see sequence_layers.hpp.
#include "models/sequence_layers.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>

namespace herd::models {

namespace {

using kernels::transpose;

int as_int(std::size_t value) {
  HERD_CHECK(value <= 0x7fffffffu, "dimension " << value << " does not fit an int");
  return static_cast<int>(value);
}

// The steps of a batch `input_elements` wide, `channels` per step, for a layer of at most
// `longest` steps.
std::size_t steps_of(std::size_t input_elements, std::size_t channels, std::size_t longest,
                     const std::string& layer) {
  HERD_CHECK(input_elements % channels == 0 && input_elements / channels >= 1 &&
                 input_elements / channels <= longest,
             layer << " takes 1 to " << longest << " steps of " << channels
                   << " elements per sample, given " << input_elements << " elements");
  return input_elements / channels;
}

} // namespace

// -- embedding ------------------------------------------------------------------------------------

embedding::embedding(const shape& input, std::size_t vocab, std::size_t dim)
    : layer(input, {input.empty() ? 0 : input[0], dim}), vocab_(vocab), dim_(dim) {
  HERD_CHECK(input.size() == 1 && input[0] > 0 && vocab > 0 && dim > 0 &&
                 vocab <= static_cast<std::size_t>(kernels::largest_token) + 1,
             "an embedding needs sequences ({L}), a vocabulary and a dimension, got "
                 << shape_text(input) << ", " << vocab << " and " << dim);
}

std::string embedding::describe() const {
  return "embedding " + std::to_string(vocab_) + " " + std::to_string(dim_);
}

void embedding::initialise(float* params, std::mt19937_64& rng) const {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::size_t i = 0; i < parameter_count(); ++i)
    params[i] = normal(rng);
}

std::size_t embedding::output_elements(std::size_t input_elements) const {
  return steps_of(input_elements, 1, input_shape()[0], describe()) * dim_;
}

void embedding::forward(const pass& p, const float* params, const tensor& x, tensor& y,
                        layer_scratch& /*scratch*/) const {
  const sequence_batch* tokens = p.sequences;
  HERD_CHECK(tokens != nullptr,
             describe() << " reads the batch's token ids, and the pass has none: it must be the "
                           "model's first layer");
  HERD_CHECK(tokens->steps >= 1 && tokens->steps <= x.cols(),
             "token ids of " << tokens->steps << " steps for a batch " << x.cols() << " wide");
  const std::size_t steps = output_elements(tokens->steps) / dim_;
  y.reshape({x.rows(), steps * dim_});
  p.ops.embedding_forward(params, as_int(vocab_), as_int(dim_), tokens->ids,
                          as_int(x.rows() * steps), y.data());
}

void embedding::backward(const pass& p, const float* /*params*/, const tensor& x,
                         const tensor& /*y*/, const tensor& dy, float* param_grads, tensor* dx,
                         layer_scratch& /*scratch*/) const {
  HERD_CHECK(p.sequences != nullptr, describe() << " reads the batch's token ids, and the pass "
                                                   "has none");
  HERD_CHECK(dx == nullptr, "token ids have no gradient: nothing can come before " << describe());
  const std::size_t steps = p.sequences->steps;
  HERD_CHECK_EQ(dy.rows(), x.rows());
  HERD_CHECK_EQ(dy.cols(), steps * dim_);
  p.ops.embedding_backward(dy.data(), p.sequences->ids, as_int(x.rows() * steps), as_int(vocab_),
                           as_int(dim_), param_grads);
}

// -- conv1d-max -----------------------------------------------------------------------------------

conv1d_max::conv1d_max(const shape& input, std::size_t filters, std::vector<std::size_t> widths)
    : layer(input, {filters * widths.size()}), channels_(input.size() == 2 ? input[1] : 0),
      filters_(filters), widths_(std::move(widths)) {
  HERD_CHECK(input.size() == 2 && input[0] > 0 && channels_ > 0 && filters_ > 0 &&
                 !widths_.empty(),
             "conv1d-max needs sequences of vectors ({L, C}), filters and widths, got "
                 << shape_text(input));
  for (std::size_t width : widths_) {
    HERD_CHECK_GT(width, 0u);
    widest_ = std::max(widest_, width);
  }
}

std::string conv1d_max::describe() const {
  std::string text = "conv1d-max " + std::to_string(filters_);
  for (std::size_t width : widths_)
    text += " " + std::to_string(width);
  return text;
}

std::size_t conv1d_max::weight_offset(std::size_t i) const {
  std::size_t offset = 0;
  for (std::size_t k = 0; k < i; ++k)
    offset += filters_ * widths_[k] * channels_;
  return offset;
}

std::size_t conv1d_max::band_offset(std::size_t i) const {
  return (widest_ / 2 - widths_[i] / 2) * channels_;
}

std::size_t conv1d_max::parameter_count() const {
  return weight_offset(widths_.size()) + filters_ * widths_.size();
}

std::vector<parameter_tensor> conv1d_max::parameter_tensors() const {
  std::vector<parameter_tensor> tensors;
  for (const std::size_t width : widths_)
    tensors.push_back({"weight.w" + std::to_string(width), {filters_, width, channels_}});
  tensors.push_back({"bias", {widths_.size(), filters_}});
  return tensors;
}

void conv1d_max::initialise(float* params, std::mt19937_64& rng) const {
  for (std::size_t i = 0; i < widths_.size(); ++i) {
    const std::size_t fan_in = widths_[i] * channels_;
    std::normal_distribution<float> weight(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
    float* weights = params + weight_offset(i);
    for (std::size_t k = 0; k < filters_ * fan_in; ++k)
      weights[k] = weight(rng);
  }
  std::fill_n(params + weight_offset(widths_.size()), filters_ * widths_.size(), 0.0f);
}

std::size_t conv1d_max::output_elements(std::size_t input_elements) const {
  steps_of(input_elements, channels_, input_shape()[0], describe());
  return elements(output_shape());
}

kernels::sequence_window conv1d_max::window(std::size_t batch, std::size_t steps) const {
  return {as_int(batch), as_int(steps), as_int(channels_), as_int(widest_), as_int(widest_ / 2)};
}

scratch_need conv1d_max::scratch(std::size_t batch, std::size_t input_elements) const {
  const auto w = window(batch, steps_of(input_elements, channels_, input_shape()[0], describe()));
  const std::size_t outputs = elements(output_shape());
  return {w.output_rows() * (2 * w.window_size() + outputs), batch * outputs + batch};
}

const std::int32_t* conv1d_max::lengths(const pass& p, std::size_t batch, std::size_t steps,
                                        layer_scratch& scratch) const {
  if (p.sequences != nullptr) {
    HERD_CHECK_EQ(p.sequences->steps, steps);
    return p.sequences->lengths;
  }
  std::int32_t* every = scratch.ints.data() + batch * elements(output_shape());
  const std::vector<std::int32_t> full(batch, as_int(steps));
  p.ops.upload(every, full.data(), batch * sizeof(std::int32_t));
  return every;
}

void conv1d_max::forward(const pass& p, const float* params, const tensor& x, tensor& y,
                         layer_scratch& scratch) const {
  const std::size_t batch = x.rows();
  const std::size_t steps = steps_of(x.cols(), channels_, input_shape()[0], describe());
  const auto w = window(batch, steps);
  const std::size_t outputs = elements(output_shape());
  float* columns = scratch.floats.data();
  float* conv = columns + 2 * w.output_rows() * w.window_size();
  const std::int32_t* valid = lengths(p, batch, steps, scratch);
  p.ops.unfold1d(x.data(), valid, w, columns);
  // Each width's filters read their band of the widest window and fill their columns of conv.
  for (std::size_t i = 0; i < widths_.size(); ++i) {
    const std::size_t fan_in = widths_[i] * channels_;
    p.ops.gemm(transpose::no, transpose::yes, as_int(w.output_rows()), as_int(filters_),
               as_int(fan_in), 1.0f, columns + band_offset(i), as_int(w.window_size()),
               params + weight_offset(i), as_int(fan_in), 0.0f, conv + i * filters_,
               as_int(outputs));
  }
  p.ops.bias_add(conv, params + weight_offset(widths_.size()), as_int(w.output_rows()),
                 as_int(outputs));
  y.reshape({batch, outputs});
  p.ops.sequence_max_pool_forward(conv, valid, w, as_int(outputs), y.data(), scratch.ints.data());
}

void conv1d_max::backward(const pass& p, const float* params, const tensor& x, const tensor& /*y*/,
                          const tensor& dy, float* param_grads, tensor* dx,
                          layer_scratch& scratch) const {
  const std::size_t batch = x.rows();
  const std::size_t steps = steps_of(x.cols(), channels_, input_shape()[0], describe());
  const auto w = window(batch, steps);
  const std::size_t outputs = elements(output_shape());
  HERD_CHECK_EQ(dy.rows(), batch);
  HERD_CHECK_EQ(dy.cols(), outputs);
  const int rows = as_int(w.output_rows());
  // The forward pass's columns are kept: unfolding again would save memory but not time.
  const float* columns = scratch.floats.data();
  float* column_grads = scratch.floats.data() + w.output_rows() * w.window_size();
  float* conv_grads = column_grads + w.output_rows() * w.window_size();
  p.ops.sequence_max_pool_backward(dy.data(), scratch.ints.data(), w, as_int(outputs), conv_grads);
  p.ops.bias_grad(conv_grads, param_grads + weight_offset(widths_.size()), rows, as_int(outputs));
  for (std::size_t i = 0; i < widths_.size(); ++i) {
    const std::size_t fan_in = widths_[i] * channels_;
    p.ops.gemm(transpose::yes, transpose::no, as_int(filters_), as_int(fan_in), rows, 1.0f,
               conv_grads + i * filters_, as_int(outputs), columns + band_offset(i),
               as_int(w.window_size()), 0.0f, param_grads + weight_offset(i), as_int(fan_in));
  }
  if (dx == nullptr)
    return;
  // The column gradients are the widths' bands added up: the widest first, whose band is the whole
  // window, overwrites them; the others add into theirs.
  const auto widest = static_cast<std::size_t>(
      std::find(widths_.begin(), widths_.end(), widest_) - widths_.begin());
  const auto add_band = [&](std::size_t i, float beta) {
    const std::size_t fan_in = widths_[i] * channels_;
    p.ops.gemm(transpose::no, transpose::no, rows, as_int(fan_in), as_int(filters_), 1.0f,
               conv_grads + i * filters_, as_int(outputs), params + weight_offset(i),
               as_int(fan_in), beta, column_grads + band_offset(i), as_int(w.window_size()));
  };
  add_band(widest, 0.0f);
  for (std::size_t i = 0; i < widths_.size(); ++i)
    if (i != widest)
      add_band(i, 1.0f);
  dx->reshape({batch, x.cols()});
  p.ops.fold1d(column_grads, lengths(p, batch, steps, scratch), w, dx->data());
}

} // namespace herd::models
