// Rounding floats to 16 bits for the wire; see wire_format.hpp.
#include "comm/wire_format.hpp"

#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <limits>
#include <stdexcept>

namespace herd::comm {

namespace {

constexpr float fp16_max = 65504.0f;

std::uint32_t bits_of(float x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

float float_of(std::uint32_t u) {
  float x = 0.0f;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Finite magnitudes above fp16's largest become it; infinities stay infinite (a diverging
// gradient must still show), and NaN fails both comparisons and stays NaN.
float saturated(float x) {
  if (std::isinf(x))
    return x;
  return x > fp16_max ? fp16_max : (x < -fp16_max ? -fp16_max : x);
}

// Round to nearest, ties to even: add half an ulp of the kept part less one, plus the kept
// part's lowest bit. A NaN is kept a (quiet) NaN rather than rounded into an infinity.
std::uint16_t bf16_of(float x) {
  const std::uint32_t u = bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float float_of_bf16(std::uint16_t h) {
  return float_of(static_cast<std::uint32_t>(h) << 16);
}

std::uint16_t fp16_of(float x) {
  const _Float16 h = static_cast<_Float16>(saturated(x)); // libgcc: round to nearest even
  std::uint16_t out = 0;
  std::memcpy(&out, &h, sizeof out);
  return out;
}

float float_of_fp16(std::uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}

#if !defined(__SANITIZE_THREAD__)
// Eight floats at a time with F16C (every x86-64-v3 CPU has it), the tail in plain C++.
__attribute__((target("avx2,f16c"))) void narrow_fp16_f16c(const float* from, std::uint16_t* to,
                                                           std::size_t n) {
  const __m256 high = _mm256_set1_ps(fp16_max);
  const __m256 low = _mm256_set1_ps(-fp16_max);
  const __m256 infinity = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 magnitude_bits = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(from + i);
    // max_ps and min_ps return their second operand where either is NaN: a NaN stays NaN.
    const __m256 clamped = _mm256_min_ps(high, _mm256_max_ps(low, x));
    const __m256 infinite = _mm256_cmp_ps(_mm256_and_ps(x, magnitude_bits), infinity, _CMP_EQ_OQ);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i),
                     _mm256_cvtps_ph(_mm256_blendv_ps(clamped, x, infinite),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i)
    to[i] = fp16_of(from[i]);
}

__attribute__((target("avx2,f16c"))) void widen_fp16_f16c(const std::uint16_t* from, float* to,
                                                          std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(to + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i))));
  for (; i < n; ++i)
    to[i] = float_of_fp16(from[i]);
}

bool has_f16c() {
  __builtin_cpu_init();
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return supported;
}
#endif

} // namespace

wire_format wire_format_of(std::string_view name) {
  if (name == "none")
    return wire_format::fp32;
  if (name == "fp16")
    return wire_format::fp16;
  if (name == "bf16")
    return wire_format::bf16;
  throw std::invalid_argument("unknown wire format '" + std::string(name) +
                              "'; allowed: none, fp16, bf16");
}

std::string_view name_of(wire_format format) {
  switch (format) {
  case wire_format::fp16:
    return "fp16";
  case wire_format::bf16:
    return "bf16";
  case wire_format::fp32:
    break;
  }
  return "none";
}

std::size_t wire_bytes(wire_format format) {
  return format == wire_format::fp32 ? sizeof(float) : sizeof(std::uint16_t);
}

void narrow_portable(wire_format format, const float* from, std::uint16_t* to, std::size_t n) {
  if (format == wire_format::fp32)
    throw std::invalid_argument("narrow: fp32 is not a 16-bit wire format");
  if (format == wire_format::bf16) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i)
      to[i] = bf16_of(from[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i)
      to[i] = fp16_of(from[i]);
  }
}

void widen_portable(wire_format format, const std::uint16_t* from, float* to, std::size_t n) {
  if (format == wire_format::fp32)
    throw std::invalid_argument("widen: fp32 is not a 16-bit wire format");
  if (format == wire_format::bf16) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i)
      to[i] = float_of_bf16(from[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i)
      to[i] = float_of_fp16(from[i]);
  }
}

void narrow(wire_format format, const float* from, std::uint16_t* to, std::size_t n) {
#if !defined(__SANITIZE_THREAD__)
  if (format == wire_format::fp16 && has_f16c())
    return narrow_fp16_f16c(from, to, n);
#endif
  narrow_portable(format, from, to, n);
}

void widen(wire_format format, const std::uint16_t* from, float* to, std::size_t n) {
#if !defined(__SANITIZE_THREAD__)
  if (format == wire_format::fp16 && has_f16c())
    return widen_fp16_f16c(from, to, n);
#endif
  widen_portable(format, from, to, n);
}

} // namespace herd::comm
