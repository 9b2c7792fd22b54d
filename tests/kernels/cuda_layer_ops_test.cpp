// The layer-kernel tests (layer_ops_oracle_test.cpp, layer_ops_behaviour_test.cpp) for the CUDA
// ops, on device memory. Without a device they have no instance, and the one test here skips with
// the runtime's reason, as every gpu-labelled test does.
#include "herd/ops.hpp"
#include "kernels/cuda/cuda_ops.hpp"

#include <cstddef>
#include <gtest/gtest.h>
#include <memory>
#include <vector>

#include "kernel_test_support.hpp"
#include "layer_ops_fixture.hpp"
#include "support/cuda_skip.hpp"

namespace herd::kernels::test_support {
namespace {

// Device memory of device 0, seen through the tests' kernel_memory.
class device_kernel_memory final : public kernel_memory {
public:
  void* allocate(std::size_t bytes) const override { return device().allocate(bytes); }
  void release(void* pointer) const override { device().release(pointer); }
  void copy_from_host(void* destination, const void* source, std::size_t bytes) const override {
    device().upload(destination, source, bytes);
  }
  void copy_to_host(void* destination, const void* source, std::size_t bytes) const override {
    device().download(destination, source, bytes);
  }

private:
  static const memory& device() { return cuda::device_memory(0); }
};

// The CUDA ops on device 0, made when GoogleTest first asks for the instances (inside main, after
// the runtime has started); none without a device.
std::vector<implementation> cuda_implementations() {
  if (!cuda::cuda_device_available())
    return {};
  static const std::unique_ptr<ops> gpu = cuda::make_cuda_ops(0);
  static const device_kernel_memory memory;
  return {implementation{gpu.get(), &memory}};
}

INSTANTIATE_TEST_SUITE_P(gpu, layer_ops, ::testing::ValuesIn(cuda_implementations()),
                         implementation_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(layer_ops);

TEST(cuda_layer_ops, run_on_a_device) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  EXPECT_EQ(cuda_implementations().size(), 1u);
}

} // namespace
} // namespace herd::kernels::test_support
