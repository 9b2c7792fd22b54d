// The host memory and the list of implementations the kernel tests run against, and the random
// inputs and comparison they share.
#include "kernel_test_support.hpp"

#include <cmath>
#include <cstring>
#include <new>
#include <random>
#include <sstream>

namespace herd::kernels::test_support {
namespace {

class host_memory final : public kernel_memory {
public:
  void* allocate(std::size_t bytes) const override { return ::operator new(bytes); }
  void release(void* pointer) const override { ::operator delete(pointer); }
  void copy_from_host(void* destination, const void* source, std::size_t bytes) const override {
    std::memcpy(destination, source, bytes);
  }
  void copy_to_host(void* destination, const void* source, std::size_t bytes) const override {
    std::memcpy(destination, source, bytes);
  }
};

} // namespace

std::vector<implementation> implementations_under_test() {
  static const host_memory host;
  return {implementation{&cpu_ops(), &host}};
}

std::string implementation_name(const ::testing::TestParamInfo<implementation>& info) {
  return std::string(info.param.kernels->name());
}

void PrintTo(const implementation& tested, std::ostream* out) {
  *out << tested.kernels->name();
}

std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float low, float high) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(n);
  for (float& value : values)
    value = distribution(generator);
  return values;
}

std::vector<std::int32_t> random_labels(int rows, int classes, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<std::int32_t> distribution(0, classes - 1);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
  for (std::int32_t& label : labels)
    label = distribution(generator);
  return labels;
}

::testing::AssertionResult all_close(const std::vector<float>& actual,
                                     const std::vector<float>& expected, float tolerance) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "sizes differ: " << actual.size() << " vs " << expected.size() << " expected";
  std::size_t mismatches = 0;
  std::ostringstream first;
  first.precision(9);
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const float bound = tolerance * (1.0f + std::fabs(expected[i]));
    // Written as !(difference <= bound) so that a NaN fails.
    if (!(std::fabs(actual[i] - expected[i]) <= bound)) {
      if (mismatches == 0)
        first << "element " << i << " is " << actual[i] << ", expected " << expected[i]
              << " (allowed difference " << bound << ')';
      ++mismatches;
    }
  }
  if (mismatches == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << actual.size() << " elements differ; first: " << first.str();
}

} // namespace herd::kernels::test_support
