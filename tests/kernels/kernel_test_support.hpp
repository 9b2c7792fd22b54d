// What the kernel tests share: the implementations under test with the memory their kernels use,
// seeded random inputs, and an element-by-element comparison that names the first mismatch.
#pragma once

#include "herd/ops.hpp"

#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <ostream>
#include <string>
#include <vector>

namespace herd::kernels::test_support {

/// The memory one implementation's kernels read and write. The CPU kernels work on host memory; a
/// CUDA implementation brings device memory, and the tests run against it unchanged.
class kernel_memory {
public:
  virtual ~kernel_memory() = default;
  virtual void* allocate(std::size_t bytes) const = 0;
  virtual void release(void* pointer) const = 0;
  virtual void copy_from_host(void* destination, const void* source, std::size_t bytes) const = 0;
  virtual void copy_to_host(void* destination, const void* source, std::size_t bytes) const = 0;
};

/// One implementation under test.
struct implementation {
  const ops* kernels;
  const kernel_memory* memory;
};

/// Every implementation this build has: cpu_ops() today, the CUDA one when it is built.
std::vector<implementation> implementations_under_test();

/// Test-name suffix: the implementation's name().
std::string implementation_name(const ::testing::TestParamInfo<implementation>& info);

/// So GoogleTest prints "cpu" rather than the struct's bytes.
void PrintTo(const implementation& tested, std::ostream* out);

/// A buffer in an implementation's memory, filled from a host vector and read back into one.
template <class T>
class kernel_buffer {
public:
  kernel_buffer(const kernel_memory& memory, const std::vector<T>& values)
      : memory_(memory), size_(values.size()),
        data_(static_cast<T*>(memory.allocate(values.size() * sizeof(T)))) {
    memory_.copy_from_host(data_, values.data(), size_ * sizeof(T));
  }
  ~kernel_buffer() { memory_.release(data_); }
  kernel_buffer(const kernel_buffer&) = delete;
  kernel_buffer& operator=(const kernel_buffer&) = delete;

  T* get() { return data_; }
  std::vector<T> to_host() const {
    std::vector<T> values(size_);
    memory_.copy_to_host(values.data(), data_, size_ * sizeof(T));
    return values;
  }

private:
  const kernel_memory& memory_;
  std::size_t size_;
  T* data_;
};

/// Relative tolerances (with an absolute floor of the same size near zero, see all_close).
constexpr float elementwise_tolerance = 1e-5f;
constexpr float gemm_tolerance = 1e-4f;

/// n floats uniform in [low, high), the same on every run for the same seed.
std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float low = -1.0f,
                                 float high = 1.0f);

/// rows labels uniform in [0, classes), the same on every run for the same seed.
std::vector<std::int32_t> random_labels(int rows, int classes, std::uint32_t seed);

/// Whether |actual - expected| <= tolerance * (1 + |expected|) for every element: relative for
/// large values, absolute near zero, like numpy's allclose with rtol = atol = tolerance. NaN never
/// passes. On failure names the first mismatch and counts them all.
::testing::AssertionResult all_close(const std::vector<float>& actual,
                                     const std::vector<float>& expected, float tolerance);

} // namespace herd::kernels::test_support
