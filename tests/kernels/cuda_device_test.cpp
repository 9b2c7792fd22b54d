// The CUDA device query never aborts: with a device it describes it, without one (or in a CPU-only
// build) it says why, and the test skips what needs a GPU.
#include "kernels/cuda/device.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using herd::kernels::cuda::describe;
using herd::kernels::cuda::query_devices;

TEST(cuda_device, query_explains_itself_without_a_device) {
  const auto query = query_devices();
  const auto text = describe(query);
  if (!query.devices.empty())
    GTEST_SKIP() << "a device is present: " << text;
  EXPECT_FALSE(query.unavailable_reason.empty());
  EXPECT_THAT(text, testing::HasSubstr(query.unavailable_reason));
#ifdef HERD_TEST_WITH_CUDA
  EXPECT_TRUE(query.compiled_with_cuda);
  EXPECT_GT(query.runtime_version, 0);
#else
  EXPECT_FALSE(query.compiled_with_cuda);
#endif
}

TEST(cuda_device, a_present_device_reports_its_properties) {
  const auto query = query_devices();
  if (query.devices.empty())
    GTEST_SKIP() << describe(query);
  for (const auto& device : query.devices) {
    EXPECT_FALSE(device.name.empty());
    EXPECT_GE(device.compute_major, 7);
    EXPECT_GT(device.memory_gib, 1.0);
    EXPECT_GT(device.multiprocessors, 0);
  }
  EXPECT_GT(query.driver_version, 0);
  EXPECT_THAT(describe(query), testing::HasSubstr(query.devices.front().name));
}

} // namespace
