// Workers on a GPU (train.backend = cuda): four workers share one device, each with its own
// streams, and reduce through the device weighted-sum kernel. Label gpu: every test skips
// without a device. On the GPU machine the quick-start data comes from HERD_FASHION_MNIST_DIR
// (or Debian's package directory); with HERD_REQUIRE_DATA set a missing dataset fails.
#include "actors/train_session.hpp"
#include "herd/config.hpp"
#include "herd/dataset.hpp"
#include "herd/tensor.hpp"
#include "kernels/cuda/cuda_ops.hpp"

#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <iostream>
#include <string>

#include "support/cuda_skip.hpp"
#include "support/session_config.hpp"

namespace {

using herd::actors::stop_cause;
using herd::actors::train_session;

herd::actors::session_options quick() {
  return herd::testing::quick_session_options();
}

herd::config::run_config synthetic_config(const std::string& algorithm,
                                          const std::string& backend) {
  auto config = herd::testing::small_session_config(4, 8);
  config.train.algorithm = algorithm;
  config.train.backend = backend;
  config.model.hidden = {64, 32};
  return config;
}

// Under sync every worker applies the same mean gradient: the replicas on the GPU stay identical
// bit for bit, and after 30 rounds they match the CPU run to FP32 rounding (cuBLAS and OpenBLAS
// sum in different orders, so not bit for bit).
TEST(gpu_training, sync_on_the_gpu_matches_the_cpu_and_keeps_replicas_identical) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  auto data = std::make_shared<herd::models::train_test_split>(
      herd::models::make_synthetic_split(std::size_t{4} * 8 * 30, 500, 40, 6, 7));
  train_session on_cpu(synthetic_config("sync", "cpu"), data, quick());
  const auto cpu_summary = on_cpu.run();
  train_session on_gpu(synthetic_config("sync", "cuda"), data, quick());
  const auto gpu_summary = on_gpu.run();
  ASSERT_EQ(gpu_summary.stop_reason, stop_cause::epochs) << gpu_summary.error;
  EXPECT_EQ(gpu_summary.rounds, cpu_summary.rounds);
  EXPECT_EQ(gpu_summary.compute.rfind("cuda:0 (", 0), 0u) << gpu_summary.compute;
  const auto& gpu = on_gpu.final_parameters();
  const auto& cpu = on_cpu.final_parameters();
  ASSERT_EQ(gpu.size(), 4u);
  for (std::size_t w = 1; w < gpu.size(); ++w)
    EXPECT_EQ(gpu[w], gpu[0]) << "worker " << w;
  ASSERT_EQ(gpu[0].size(), cpu[0].size());
  EXPECT_LT(herd::models::relative_difference(gpu[0].data(), cpu[0].data(), cpu[0].size()), 1e-3);
  ASSERT_TRUE(gpu_summary.final_test_accuracy.has_value());
  EXPECT_NEAR(*gpu_summary.final_test_accuracy, *cpu_summary.final_test_accuracy, 0.02);
}

// The model-averaging path (copies of models between parameters, send buffer and results on the
// device, WAGMA's late blend) learns the synthetic problem.
TEST(gpu_training, wagma_and_preduce_on_the_gpu_learn) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  auto data = std::make_shared<herd::models::train_test_split>(
      herd::models::make_synthetic_split(std::size_t{4} * 8 * 60, 500, 40, 6, 7));
  for (const char* algorithm : {"wagma", "preduce"}) {
    auto config = synthetic_config(algorithm, "cuda");
    config.train.epochs = 3;
    train_session session(config, data, quick());
    const auto summary = session.run();
    ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << algorithm << ": " << summary.error;
    ASSERT_TRUE(summary.final_test_accuracy.has_value());
    EXPECT_GT(*summary.final_test_accuracy, 0.6) << algorithm;
  }
}

// The run configurations; HERD_CONFIG_DIR overrides the source tree's (a bundle made by
// scripts/gpu-bundle runs on a machine where the tree lies elsewhere).
std::string config_dir() {
  const char* from_environment = std::getenv("HERD_CONFIG_DIR");
  return from_environment != nullptr ? from_environment : HERD_CONFIG_DIR;
}

std::string fashion_mnist_dir() {
  const char* from_environment = std::getenv("HERD_FASHION_MNIST_DIR");
  return from_environment != nullptr ? from_environment : herd::models::default_fashion_mnist_dir;
}

// The bar: four workers on one GPU train the quick-start job to the target accuracy, with
// sync and with a partial algorithm (the quick start's solo, imbalance included).
class gpu_quickstart : public ::testing::TestWithParam<const char*> {};

TEST_P(gpu_quickstart, four_workers_on_one_gpu_reach_85_percent_within_three_epochs) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const std::string dir = fashion_mnist_dir();
  // The loader reads the files gzipped (Debian's package) or not (scripts/gpu-bundle's).
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz") &&
      !std::filesystem::exists(dir + "/train-images-idx3-ubyte")) {
    if (std::getenv("HERD_REQUIRE_DATA") != nullptr)
      FAIL() << "Fashion-MNIST is not in " << dir << " (set HERD_FASHION_MNIST_DIR)";
    GTEST_SKIP() << "Fashion-MNIST is not in " << dir << " (set HERD_FASHION_MNIST_DIR)";
  }
  const auto config = herd::config::load(
      config_dir() + "/quickstart.ini",
      {"--train.backend=cuda", std::string("--train.algorithm=") + GetParam(),
       "--train.target-accuracy=0.85", "--train.epochs=3", "--data.path=" + dir});
  auto data =
      std::make_shared<herd::models::train_test_split>(herd::models::load_fashion_mnist(dir));
  train_session session(config, data, quick());
  const auto summary = session.run();
  EXPECT_EQ(summary.stop_reason, stop_cause::target_accuracy) << summary.error;
  EXPECT_EQ(summary.workers, 4);
  EXPECT_EQ(summary.aborted_rounds, 0u);
  ASSERT_TRUE(summary.final_test_accuracy.has_value());
  EXPECT_GE(*summary.final_test_accuracy, 0.85);
  std::cout << GetParam() << " on " << summary.compute << ": "
            << summary.final_test_accuracy.value() << " after " << summary.epochs << " epochs, "
            << summary.wall_seconds << " s\n";
}

INSTANTIATE_TEST_SUITE_P(algorithms, gpu_quickstart, ::testing::Values("sync", "solo"));

} // namespace
