// The fixture of the layer-kernel tests (layer_ops_oracle_test.cpp, layer_ops_behaviour_test.cpp).
// Their bodies are compiled into two programs: kernels_test instantiates them for cpu_ops(), and
// the gpu-labelled kernels_cuda_ops_test for the CUDA ops on device memory, so both meet the same
// odd shapes and the same contract.
#pragma once

#include "herd/ops.hpp"

#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <vector>

#include "kernel_test_support.hpp"

namespace herd::kernels::test_support {

class layer_ops : public ::testing::TestWithParam<implementation> {
protected:
  const ops& tested() const { return *GetParam().kernels; }
  static const ops& oracle() { return reference_ops(); }

  kernel_buffer<float> floats(const std::vector<float>& values) const {
    return kernel_buffer<float>(*GetParam().memory, values);
  }
  kernel_buffer<std::int32_t> ints(const std::vector<std::int32_t>& values) const {
    return kernel_buffer<std::int32_t>(*GetParam().memory, values);
  }
  /// n NaNs (or -7s): an output buffer the kernel must overwrite entirely.
  kernel_buffer<float> garbage(std::size_t n) const {
    return floats(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()));
  }
  kernel_buffer<std::int32_t> garbage_ints(std::size_t n) const {
    return ints(std::vector<std::int32_t>(n, -7));
  }
};

/// Whether the implementation checks every id, length and argmax it reads, as the ones on host
/// memory do; the CUDA ops check only what their contract says (kernels/cuda/cuda_ops.hpp).
inline bool checks_all_data(const ops& tested) {
  return tested.memory().host_accessible();
}

/// <a, b> in double.
inline double inner_product(const std::vector<float>& a, const std::vector<float>& b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    sum += static_cast<double>(a[i]) * static_cast<double>(b[i]);
  return sum;
}

} // namespace herd::kernels::test_support
