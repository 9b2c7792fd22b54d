// The MLP and the cnn preset with their parameters, batch, activations and gradients in GPU memory
// (CUDA ops) against the same models on the CPU: loss, gradient, an optimizer step and an
// evaluation. Label gpu: skips without a device.
#include "herd/dataset.hpp"
#include "herd/sequential.hpp"
#include "herd/tensor.hpp"
#include "kernels/cuda/cuda_ops.hpp"
#include "models/optimizer.hpp"
#include "models/sampler.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <stdexcept>

#include "support/cuda_skip.hpp"

namespace {

using herd::models::tensor;

// Loss, gradient, an SGD step and an evaluation of `model` on the device against the CPU.
void expect_the_device_matches_the_cpu(const herd::models::model& model,
                                       const herd::models::train_test_split& data) {
  const auto gpu = herd::kernels::cuda::make_cuda_ops(0);
  const auto& cpu = herd::kernels::cpu_ops();
  const auto& device = gpu->memory();
  EXPECT_EQ(device.name(), "cuda:0");
  EXPECT_FALSE(device.host_accessible());

  const tensor host_params = model.initial_parameters(9);
  tensor params(host_params, device);
  EXPECT_THROW((void)params[0], std::logic_error);
  EXPECT_EQ(params.to_host(), host_params.to_host());

  tensor x;
  std::vector<std::int32_t> labels;
  std::vector<std::size_t> rows(77);
  for (std::size_t i = 0; i < rows.size(); ++i)
    rows[i] = (i * 13) % data.train.size();
  herd::models::gather_batch(data.train, rows, x, labels);
  const tensor x_device(x, device);

  const auto cpu_workspace = model.make_workspace();
  const auto gpu_workspace = model.make_workspace();
  auto& cpu_work = *cpu_workspace;
  auto& gpu_work = *gpu_workspace;
  tensor cpu_grads({model.parameter_count()});
  tensor gpu_grads(std::vector<std::size_t>{model.parameter_count()}, device);
  const float cpu_loss =
      model.loss_and_gradient(cpu, host_params.data(), x, labels, cpu_grads.data(), cpu_work);
  const float gpu_loss =
      model.loss_and_gradient(*gpu, params.data(), x_device, labels, gpu_grads.data(), gpu_work);
  EXPECT_NEAR(gpu_loss, cpu_loss, 1e-5 * (1.0 + std::fabs(cpu_loss)));
  const auto gradient = gpu_grads.to_host();
  EXPECT_LT(herd::models::relative_difference(gradient.data(), cpu_grads.data(), gradient.size()),
            1e-4);

  herd::models::optimizer cpu_optimizer(model.parameter_count(), {0.1f, 0.9f, 1e-4f});
  herd::models::optimizer gpu_optimizer(model.parameter_count(), {0.1f, 0.9f, 1e-4f}, device);
  tensor stepped = host_params;
  cpu_optimizer.step(cpu, stepped.data(), cpu_grads.data());
  gpu_optimizer.step(*gpu, params.data(), gpu_grads.data());
  const auto after = params.to_host();
  EXPECT_LT(herd::models::relative_difference(after.data(), stepped.data(), after.size()), 1e-5);

  const auto on_cpu = model.evaluate(cpu, stepped.data(), data.test, 64, cpu_work);
  const auto on_gpu = model.evaluate(*gpu, params.data(), data.test, 64, gpu_work);
  EXPECT_EQ(on_gpu.samples, 333u);
  EXPECT_NEAR(static_cast<double>(on_gpu.correct), static_cast<double>(on_cpu.correct), 2.0);
  EXPECT_NEAR(on_gpu.mean_loss, on_cpu.mean_loss, 1e-4 * (1.0 + on_cpu.mean_loss));
}

TEST(gpu_mlp, the_model_on_the_device_matches_the_cpu) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto data = herd::models::make_synthetic_split(500, 333, 57, 7, 5);
  herd::models::model_choice choice;
  choice.hidden = {129, 33}; // odd sizes
  expect_the_device_matches_the_cpu(*herd::models::build_model(choice, {57}, 7), data);
}

TEST(gpu_cnn, the_cnn_preset_on_the_device_matches_the_cpu) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  auto data = herd::models::make_synthetic_split(500, 333, 784, 7, 5);
  data.train.sample_shape = data.test.sample_shape = {1, 28, 28};
  herd::models::model_choice choice;
  choice.preset = "cnn";
  expect_the_device_matches_the_cpu(*herd::models::build_model(choice, {1, 28, 28}, 7), data);
}

} // namespace
