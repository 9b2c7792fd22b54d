// The textcnn preset with its parameters, token batch, activations and gradients in GPU memory
// (CUDA ops) against the same model on the CPU: loss, gradient and evaluation, and a batch padded
// with extra columns giving the same result as the trimmed one. Label gpu: skips without a device.
#include "herd/dataset.hpp"
#include "herd/sequential.hpp"
#include "herd/tensor.hpp"
#include "kernels/cuda/cuda_ops.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <random>

#include "support/cuda_skip.hpp"

namespace {

using herd::models::tensor;

// Rows of byte ids of lengths 1 to `width`, padded with -1 to `width`.
herd::models::dataset byte_rows(std::size_t rows, std::size_t width, std::uint64_t seed) {
  herd::models::dataset data;
  data.images = tensor({rows, width});
  data.labels.resize(rows);
  data.classes = 5;
  std::mt19937_64 rng(seed);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto length = std::uniform_int_distribution<std::size_t>(1, width)(rng);
    for (std::size_t c = 0; c < width; ++c)
      data.images.row(r)[c] =
          c < length ? static_cast<float>(std::uniform_int_distribution<int>(0, 255)(rng)) : -1.0f;
    data.labels[r] = static_cast<std::int32_t>(r % 5);
  }
  return data;
}

TEST(gpu_sequence, the_textcnn_preset_on_the_device_matches_the_cpu) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto gpu = herd::kernels::cuda::make_cuda_ops(0);
  const auto& cpu = herd::kernels::cpu_ops();
  const auto& device = gpu->memory();
  herd::models::model_choice choice;
  choice.preset = "textcnn";
  const auto built = herd::models::build_model(choice, {67}, 5); // odd sizes
  const herd::models::model& model = *built;
  const tensor host_params = model.initial_parameters(9);
  const tensor params(host_params, device);

  const auto data = byte_rows(37, 67, 10);
  const tensor x_device(data.images, device);
  const auto cpu_workspace = model.make_workspace();
  const auto gpu_workspace = model.make_workspace();
  tensor cpu_grads({model.parameter_count()});
  tensor gpu_grads(std::vector<std::size_t>{model.parameter_count()}, device);
  const float cpu_loss = model.loss_and_gradient(cpu, host_params.data(), data.images, data.labels,
                                                 cpu_grads.data(), *cpu_workspace);
  const float gpu_loss = model.loss_and_gradient(*gpu, params.data(), x_device, data.labels,
                                                 gpu_grads.data(), *gpu_workspace);
  EXPECT_NEAR(gpu_loss, cpu_loss, 1e-5 * (1.0 + std::fabs(cpu_loss)));
  const auto gradient = gpu_grads.to_host();
  EXPECT_LT(herd::models::relative_difference(gradient.data(), cpu_grads.data(), gradient.size()),
            1e-4);

  // The longest row is shorter than 67 here, so the device drops padding columns too.
  const auto short_rows = byte_rows(9, 20, 11);
  tensor wide({9, 67});
  for (std::size_t r = 0; r < 9; ++r)
    for (std::size_t c = 0; c < 67; ++c)
      wide.row(r)[c] = c < 20 ? short_rows.images.row(r)[c] : -1.0f;
  const tensor wide_device(wide, device);
  const tensor short_device(short_rows.images, device);
  EXPECT_EQ(model.loss(*gpu, params.data(), wide_device, short_rows.labels, *gpu_workspace),
            model.loss(*gpu, params.data(), short_device, short_rows.labels, *gpu_workspace));

  const auto on_cpu = model.evaluate(cpu, host_params.data(), data, 16, *cpu_workspace);
  const auto on_gpu = model.evaluate(*gpu, params.data(), data, 16, *gpu_workspace);
  EXPECT_EQ(on_gpu.samples, 37u);
  EXPECT_NEAR(on_gpu.mean_loss, on_cpu.mean_loss, 1e-4 * (1.0 + on_cpu.mean_loss));
}

} // namespace
