// Convolution and max pooling over kernels::ops; see image_layers.hpp.
#include "models/image_layers.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace herd::models {

namespace {

using kernels::transpose;

shape image_shape(int channels, int height, int width) {
  return {static_cast<std::size_t>(channels), static_cast<std::size_t>(height),
          static_cast<std::size_t>(width)};
}

std::string window_text(int height, int width) {
  return std::to_string(height) + "x" + std::to_string(width);
}

int as_int(std::size_t value) {
  HERD_CHECK(value <= 0x7fffffffu, "dimension " << value << " does not fit an int");
  return static_cast<int>(value);
}

} // namespace

// -- conv2d ---------------------------------------------------------------------------------------

conv2d::conv2d(const kernels::window2d& window, std::size_t filters)
    : layer(image_shape(window.channels, window.height, window.width),
            image_shape(as_int(filters), window.output_height(), window.output_width())),
      window_(window), filters_(as_int(filters)) {
  HERD_CHECK(filters_ > 0 && window.output_height() > 0 && window.output_width() > 0,
             "a convolution needs filters and a window that fits");
}

std::string conv2d::describe() const {
  std::string text =
      "conv " + std::to_string(filters_) + " " + window_text(window_.kernel_h, window_.kernel_w);
  if (window_.stride_h != 1 || window_.stride_w != 1)
    text += " stride " + window_text(window_.stride_h, window_.stride_w);
  if (window_.pad_h != 0)
    text += " pad " + std::to_string(window_.pad_h);
  return text;
}

std::size_t conv2d::parameter_count() const {
  return static_cast<std::size_t>(filters_) * window_.column_rows() + filters_;
}

std::vector<parameter_tensor> conv2d::parameter_tensors() const {
  const auto size = [](int extent) { return static_cast<std::size_t>(extent); };
  return {
      {"weight",
       {size(filters_), size(window_.channels), size(window_.kernel_h), size(window_.kernel_w)}},
      {"bias", {size(filters_)}}};
}

void conv2d::initialise(float* params, std::mt19937_64& rng) const {
  const std::size_t fan_in = window_.column_rows();
  const std::size_t weights = static_cast<std::size_t>(filters_) * fan_in;
  std::normal_distribution<float> weight(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
  for (std::size_t i = 0; i < weights; ++i)
    params[i] = weight(rng);
  for (int f = 0; f < filters_; ++f)
    params[weights + static_cast<std::size_t>(f)] = 0.0f;
}

// The images of one call: the ops' hint, bounded so that a chunk's scratch (its column matrices,
// their gradients and its images' weight and bias gradients) stays within 64 MiB. The CPU's hint
// is 1: one image's columns stay in cache, and y_n = W cols_n is NCHW.
int conv2d::images_per_call(const kernels::ops& ops, std::size_t images) const {
  constexpr std::size_t budget_floats = std::size_t{16} << 20;
  const std::size_t weights = static_cast<std::size_t>(filters_) * window_.column_rows();
  const std::size_t one_image = 2 * window_.column_rows() * window_.output_positions() + weights +
                                static_cast<std::size_t>(filters_);
  const std::size_t fit = std::max<std::size_t>(1, budget_floats / one_image);
  const auto hint = static_cast<std::size_t>(std::max(1, ops.images_per_call()));
  return as_int(std::max<std::size_t>(1, std::min({images, hint, fit})));
}

// Scratch for `chunk` images: their column matrices, their gradients, a row of ones (the bias as
// a GEMM, and the sum over a chunk's images), and with more than one image per call, each image's
// weight and bias gradients before they are summed.
// forward() grows the scratch to that; backward() must find it so (the row of ones is forward's).
conv2d::chunk_scratch conv2d::chunk_scratch_of(layer_scratch& scratch, int chunk, bool grow) const {
  const auto images = static_cast<std::size_t>(chunk);
  const std::size_t columns = images * window_.column_rows() * window_.output_positions();
  const std::size_t ones = std::max(window_.output_positions(), images);
  const std::size_t weights = static_cast<std::size_t>(filters_) * window_.column_rows();
  const std::size_t per_image =
      chunk > 1 ? images * (weights + static_cast<std::size_t>(filters_)) : 0;
  const std::size_t total = 2 * columns + ones + per_image;
  if (scratch.floats.size() < total) {
    HERD_CHECK(grow, "conv2d: the backward pass needs the scratch of its forward pass ("
                         << total << " floats, not " << scratch.floats.size() << ")");
    scratch.floats.reshape({total});
  }
  float* base = scratch.floats.data();
  return {base, base + columns, base + 2 * columns, base + 2 * columns + ones,
          base + 2 * columns + ones + images * weights};
}

scratch_need conv2d::scratch(std::size_t /*batch*/, std::size_t /*input_elements*/) const {
  // One image's share; forward() grows it for the images of one call (images_per_call).
  return {2 * window_.column_rows() * window_.output_positions() + window_.output_positions(), 0};
}

void conv2d::forward(const pass& p, const float* params, const tensor& x, tensor& y,
                     layer_scratch& scratch) const {
  HERD_CHECK_EQ(x.cols(), window_.image_size());
  const std::size_t images = x.rows();
  const int rows = as_int(window_.column_rows());
  const int positions = as_int(window_.output_positions());
  const std::size_t out = static_cast<std::size_t>(filters_) * window_.output_positions();
  y.reshape({images, out});
  const int chunk = images_per_call(p.ops, images);
  const chunk_scratch work = chunk_scratch_of(scratch, chunk, true);
  p.ops.fill(work.ones, std::max(window_.output_positions(), std::size_t(chunk)), 1.0f);
  const float* weights = params;
  const float* bias = params + static_cast<std::size_t>(filters_) * window_.column_rows();
  const std::size_t column_floats = window_.column_rows() * window_.output_positions();
  for (std::size_t first = 0; first < images; first += static_cast<std::size_t>(chunk)) {
    const int count = as_int(std::min(images - first, static_cast<std::size_t>(chunk)));
    float* y_first = y.data() + first * out;
    p.ops.im2col(x.data() + first * window_.image_size(), count, window_, work.columns);
    // y_n = W columns_n, then y_n += b 1^T: each filter's bias across its output plane.
    p.ops.gemm_batched(transpose::no, transpose::no, filters_, positions, rows, 1.0f, weights, rows,
                       0, work.columns, positions, column_floats, 0.0f, y_first, positions, out,
                       count);
    p.ops.gemm_batched(transpose::no, transpose::no, filters_, positions, 1, 1.0f, bias, 1, 0,
                       work.ones, positions, 0, 1.0f, y_first, positions, out, count);
  }
}

void conv2d::backward(const pass& p, const float* params, const tensor& x, const tensor& /*y*/,
                      const tensor& dy, float* param_grads, tensor* dx,
                      layer_scratch& scratch) const {
  const std::size_t images = x.rows();
  const std::size_t out = static_cast<std::size_t>(filters_) * window_.output_positions();
  HERD_CHECK_EQ(dy.rows(), images);
  HERD_CHECK_EQ(dy.cols(), out);
  const int rows = as_int(window_.column_rows());
  const int positions = as_int(window_.output_positions());
  const int chunk = images_per_call(p.ops, images);
  const chunk_scratch work = chunk_scratch_of(scratch, chunk, false); // the ones are forward()'s
  const std::size_t column_floats = window_.column_rows() * window_.output_positions();
  const int weight_count = filters_ * rows;
  float* weight_grads = param_grads;
  float* bias_grads = param_grads + static_cast<std::size_t>(weight_count);
  if (dx != nullptr)
    dx->reshape({images, window_.image_size()});
  for (std::size_t first = 0; first < images; first += static_cast<std::size_t>(chunk)) {
    const int count = as_int(std::min(images - first, static_cast<std::size_t>(chunk)));
    const float* dy_first = dy.data() + first * out;
    const float accumulate = first == 0 ? 0.0f : 1.0f;
    // dW += dy_n columns_n^T, db += dy_n 1 (the columns again, not kept from the forward pass).
    p.ops.im2col(x.data() + first * window_.image_size(), count, window_, work.columns);
    if (count == 1) {
      p.ops.gemm(transpose::no, transpose::yes, filters_, rows, positions, 1.0f, dy_first,
                 positions, work.columns, positions, accumulate, weight_grads, rows);
      p.ops.gemm(transpose::no, transpose::no, filters_, 1, positions, 1.0f, dy_first, positions,
                 work.ones, 1, accumulate, bias_grads, 1);
    } else {
      // Each image's gradients, then their sum: 1^T (count x weights), 1^T (count x filters).
      p.ops.gemm_batched(transpose::no, transpose::yes, filters_, rows, positions, 1.0f, dy_first,
                         positions, out, work.columns, positions, column_floats, 0.0f,
                         work.image_weight_grads, rows, static_cast<std::size_t>(weight_count),
                         count);
      p.ops.gemm(transpose::no, transpose::no, count * filters_, 1, positions, 1.0f, dy_first,
                 positions, work.ones, 1, 0.0f, work.image_bias_grads, 1);
      p.ops.gemm(transpose::no, transpose::no, 1, weight_count, count, 1.0f, work.ones, count,
                 work.image_weight_grads, weight_count, accumulate, weight_grads, weight_count);
      p.ops.gemm(transpose::no, transpose::no, 1, filters_, count, 1.0f, work.ones, count,
                 work.image_bias_grads, filters_, accumulate, bias_grads, filters_);
    }
    if (dx != nullptr) {
      // dx_n = col2im(W^T dy_n).
      p.ops.gemm_batched(transpose::yes, transpose::no, rows, positions, filters_, 1.0f, params,
                         rows, 0, dy_first, positions, out, 0.0f, work.column_grads, positions,
                         column_floats, count);
      p.ops.col2im(work.column_grads, count, window_, dx->data() + first * window_.image_size());
    }
  }
}

// -- maxpool2d ------------------------------------------------------------------------------------

maxpool2d::maxpool2d(const kernels::window2d& window)
    : layer(image_shape(window.channels, window.height, window.width),
            image_shape(window.channels, window.output_height(), window.output_width())),
      window_(window) {
  HERD_CHECK(window.pad_h == 0 && window.pad_w == 0 && window.output_height() > 0 &&
                 window.output_width() > 0,
             "max pooling takes no padding and a window that fits");
}

std::string maxpool2d::describe() const {
  std::string text = "maxpool " + window_text(window_.kernel_h, window_.kernel_w);
  if (window_.stride_h != window_.kernel_h || window_.stride_w != window_.kernel_w)
    text += " stride " + window_text(window_.stride_h, window_.stride_w);
  return text;
}

scratch_need maxpool2d::scratch(std::size_t batch, std::size_t /*input_elements*/) const {
  return {0, batch * elements(output_shape())};
}

void maxpool2d::forward(const pass& p, const float* /*params*/, const tensor& x, tensor& y,
                        layer_scratch& scratch) const {
  HERD_CHECK_EQ(x.cols(), window_.image_size());
  y.reshape({x.rows(), elements(output_shape())});
  p.ops.max_pool2d_forward(x.data(), as_int(x.rows()), window_, y.data(), scratch.ints.data());
}

void maxpool2d::backward(const pass& p, const float* /*params*/, const tensor& x,
                         const tensor& /*y*/, const tensor& dy, float* /*param_grads*/, tensor* dx,
                         layer_scratch& scratch) const {
  HERD_CHECK_EQ(dy.cols(), elements(output_shape()));
  if (dx == nullptr)
    return;
  dx->reshape({x.rows(), window_.image_size()});
  p.ops.max_pool2d_backward(dy.data(), scratch.ints.data(), as_int(x.rows()), window_, dx->data());
}

} // namespace herd::models
