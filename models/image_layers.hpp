// Layers over images (channels x height x width samples, NCHW batches): 2-D convolution as
// im2col + GEMM, and 2-D max pooling.
#pragma once

#include "herd/layers.hpp"

#include <cstddef>
#include <string>

namespace herd::models {

/// y = W * im2col(x) + b per image, W filters x (channels x kernel_h x kernel_w) row-major, then
/// b (filters); the slice holds [W | b]. Takes channels x height x width, gives filters x
/// output_height x output_width.
class conv2d final : public layer {
public:
  conv2d(const kernels::window2d& window, std::size_t filters);

  std::string describe() const override;
  std::size_t parameter_count() const override;
  /// weight {filters, channels, kernel_h, kernel_w}, bias {filters}: PyTorch's nn.Conv2d layout.
  std::vector<parameter_tensor> parameter_tensors() const override;
  /// He initialisation over the window's fan-in: W ~ N(0, 2 / column_rows), b = 0.
  void initialise(float* params, std::mt19937_64& rng) const override;
  /// One image's column matrix and its gradient, and a row of ones (the bias as a GEMM); forward
  /// grows it to the images of one call where the ops take several (ops::images_per_call).
  scratch_need scratch(std::size_t batch, std::size_t input_elements) const override;
  void forward(const pass& p, const float* params, const tensor& x, tensor& y,
               layer_scratch& scratch) const override;
  void backward(const pass& p, const float* params, const tensor& x, const tensor& y,
                const tensor& dy, float* param_grads, tensor* dx,
                layer_scratch& scratch) const override;

private:
  struct chunk_scratch {
    float* columns;
    float* column_grads;
    float* ones;
    float* image_weight_grads; // with more than one image per call
    float* image_bias_grads;
  };
  int images_per_call(const kernels::ops& ops, std::size_t images) const;
  chunk_scratch chunk_scratch_of(layer_scratch& scratch, int chunk, bool grow) const;

  kernels::window2d window_;
  int filters_;
};

/// The maximum of each window, per channel (no padding). Keeps each maximum's position in its
/// scratch for the backward pass.
class maxpool2d final : public layer {
public:
  explicit maxpool2d(const kernels::window2d& window);

  std::string describe() const override;
  scratch_need scratch(std::size_t batch, std::size_t input_elements) const override;
  void forward(const pass& p, const float* params, const tensor& x, tensor& y,
               layer_scratch& scratch) const override;
  void backward(const pass& p, const float* params, const tensor& x, const tensor& y,
                const tensor& dy, float* param_grads, tensor* dx,
                layer_scratch& scratch) const override;

private:
  kernels::window2d window_;
};

} // namespace herd::models
