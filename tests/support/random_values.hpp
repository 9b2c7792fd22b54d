// Seeded random buffers for the data-plane tests: n floats uniform in [-1, 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace herd::testing {

inline std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(n);
  for (auto& value : values)
    value = uniform(rng);
  return values;
}

} // namespace herd::testing
