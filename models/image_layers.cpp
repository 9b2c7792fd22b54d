// Convolution and max pooling over kernels::ops; see image_layers.hpp.
#include "models/image_layers.hpp"

#include "kernels/check.hpp"

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

void conv2d::initialise(float* params, std::mt19937_64& rng) const {
  const std::size_t fan_in = window_.column_rows();
  const std::size_t weights = static_cast<std::size_t>(filters_) * fan_in;
  std::normal_distribution<float> weight(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
  for (std::size_t i = 0; i < weights; ++i)
    params[i] = weight(rng);
  for (int f = 0; f < filters_; ++f)
    params[weights + static_cast<std::size_t>(f)] = 0.0f;
}

scratch_need conv2d::scratch(std::size_t /*batch*/, std::size_t /*input_elements*/) const {
  // One image at a time: its columns stay in cache and W * columns is already NCHW.
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
  float* columns = scratch.floats.data();
  float* ones = columns + 2 * window_.column_rows() * window_.output_positions();
  const std::vector<float> host_ones(window_.output_positions(), 1.0f);
  p.ops.upload(ones, host_ones.data(), host_ones.size() * sizeof(float));
  const float* weights = params;
  const float* bias = params + static_cast<std::size_t>(filters_) * window_.column_rows();
  for (std::size_t n = 0; n < images; ++n) {
    float* y_n = y.data() + n * out;
    p.ops.im2col(x.data() + n * window_.image_size(), 1, window_, columns);
    p.ops.gemm(transpose::no, transpose::no, filters_, positions, rows, 1.0f, weights, rows,
               columns, positions, 0.0f, y_n, positions);
    // y_n += b 1^T: each filter's bias across its output plane.
    p.ops.gemm(transpose::no, transpose::no, filters_, positions, 1, 1.0f, bias, 1, ones, positions,
               1.0f, y_n, positions);
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
  float* columns = scratch.floats.data();
  float* column_grads = columns + window_.column_rows() * window_.output_positions();
  const float* ones = column_grads + window_.column_rows() * window_.output_positions();
  float* weight_grads = param_grads;
  float* bias_grads = param_grads + static_cast<std::size_t>(filters_) * window_.column_rows();
  if (dx != nullptr)
    dx->reshape({images, window_.image_size()});
  for (std::size_t n = 0; n < images; ++n) {
    const float* dy_n = dy.data() + n * out;
    const float accumulate = n == 0 ? 0.0f : 1.0f;
    // dW += dy_n columns^T, db += dy_n 1 (the columns again, not kept from the forward pass).
    p.ops.im2col(x.data() + n * window_.image_size(), 1, window_, columns);
    p.ops.gemm(transpose::no, transpose::yes, filters_, rows, positions, 1.0f, dy_n, positions,
               columns, positions, accumulate, weight_grads, rows);
    p.ops.gemm(transpose::no, transpose::no, filters_, 1, positions, 1.0f, dy_n, positions, ones, 1,
               accumulate, bias_grads, 1);
    if (dx != nullptr) {
      // dx_n = col2im(W^T dy_n).
      p.ops.gemm(transpose::yes, transpose::no, rows, positions, filters_, 1.0f, params, rows, dy_n,
                 positions, 0.0f, column_grads, positions);
      p.ops.col2im(column_grads, 1, window_, dx->data() + n * window_.image_size());
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
