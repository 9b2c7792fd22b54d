// The dropout mask of kernels::ops: whether element `index` survives dropout with probability p
// under `seed`. A pure function of (seed, index), integer arithmetic up to one exact comparison, so
// the CPU and CUDA implementations (this header compiles for both host and device) draw bit-
// identical masks, forward and backward, with no mask stored. Plain C++ outside nvcc.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define HERD_HOST_DEVICE __host__ __device__
#else
#define HERD_HOST_DEVICE
#endif

namespace herd::kernels::dropout_mask {

/// splitmix64's output function: a bijection of 64 bits that mixes every input bit into all
/// output bits.
HERD_HOST_DEVICE inline std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

/// splitmix64's golden-ratio increment.
constexpr std::uint64_t increment = 0x9E3779B97F4A7C15ULL;

/// Element `index` of splitmix64's stream from the state mix(seed): the seed is mixed first so
/// that seeds one increment apart do not give shifted copies of one mask.
HERD_HOST_DEVICE inline std::uint64_t hash(std::uint64_t seed, std::uint64_t index) {
  return mix(mix(seed) + (index + 1U) * increment);
}

/// Whether element `index` is kept: the top 24 bits of the hash, over 2^24 (exact in float), are
/// at least p. Kept with probability 1 - p, to within 2^-24.
HERD_HOST_DEVICE inline bool keep(std::uint64_t seed, std::uint64_t index, float p) {
  const auto top_bits = static_cast<std::uint32_t>(hash(seed, index) >> 40U);
  return static_cast<float>(top_bits) * (1.0f / 16777216.0f) >= p;
}

/// What a kept element is multiplied by, computed in float the same way everywhere.
HERD_HOST_DEVICE inline float scale(float p) {
  return 1.0f / (1.0f - p);
}

} // namespace herd::kernels::dropout_mask
