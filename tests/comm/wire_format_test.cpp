// Rounding floats to 16 bits for the wire: the formats' names, exact values, ties to even,
// infinities and NaN, fp16's saturation, the error bound on random values, and the vector code
// (F16C) against the portable code bit for bit.
#include "comm/wire_format.hpp"
#include "herd/run_config.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using herd::comm::wire_format;

float round_trip(wire_format format, float x) {
  std::uint16_t h = 0;
  herd::comm::narrow(format, &x, &h, 1);
  float back = 0.0f;
  herd::comm::widen(format, &h, &back, 1);
  return back;
}

std::uint32_t bits_of(float x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

TEST(wire_format, names_are_the_settings_values_and_an_unknown_one_is_refused) {
  EXPECT_EQ(herd::comm::wire_format_of("none"), wire_format::fp32);
  EXPECT_EQ(herd::comm::wire_format_of("fp16"), wire_format::fp16);
  EXPECT_EQ(herd::comm::wire_format_of("bf16"), wire_format::bf16);
  // Every value the setting accepts names a format, and back.
  for (const auto& name : herd::config::known_compressions())
    EXPECT_EQ(herd::comm::name_of(herd::comm::wire_format_of(name)), name);
  try {
    herd::comm::wire_format_of("fp8");
    FAIL() << "fp8 was accepted";
  } catch (const std::invalid_argument& refused) {
    EXPECT_NE(std::string(refused.what()).find("'fp8'"), std::string::npos) << refused.what();
  }
  EXPECT_EQ(herd::comm::wire_bytes(wire_format::fp32), 4u);
  EXPECT_EQ(herd::comm::wire_bytes(wire_format::fp16), 2u);
  EXPECT_EQ(herd::comm::wire_bytes(wire_format::bf16), 2u);
}

TEST(wire_format, values_of_the_format_pass_exactly_and_ties_go_to_even) {
  for (float x : {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, 1024.0f})
    for (auto format : {wire_format::fp16, wire_format::bf16})
      EXPECT_EQ(bits_of(round_trip(format, x)), bits_of(x)) << x;
  EXPECT_EQ(round_trip(wire_format::fp16, 65504.0f), 65504.0f);
  EXPECT_EQ(round_trip(wire_format::fp16, std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));
  // Halfway between two neighbours: to the one whose last bit is 0.
  EXPECT_EQ(round_trip(wire_format::fp16, 1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(round_trip(wire_format::fp16, 1.0f + 3 * std::ldexp(1.0f, -11)),
            1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(round_trip(wire_format::bf16, 1.0f + std::ldexp(1.0f, -8)), 1.0f);
  EXPECT_EQ(round_trip(wire_format::bf16, 1.0f + 3 * std::ldexp(1.0f, -8)),
            1.0f + std::ldexp(1.0f, -6));
}

TEST(wire_format, fp16_saturates_large_magnitudes_and_infinities_and_nan_pass) {
  EXPECT_EQ(round_trip(wire_format::fp16, 1e6f), 65504.0f);
  EXPECT_EQ(round_trip(wire_format::fp16, -1e6f), -65504.0f);
  EXPECT_EQ(round_trip(wire_format::fp16, 65520.0f), 65504.0f); // would round to infinity
  const float inf = std::numeric_limits<float>::infinity();
  for (auto format : {wire_format::fp16, wire_format::bf16}) {
    EXPECT_EQ(round_trip(format, inf), inf);
    EXPECT_EQ(round_trip(format, -inf), -inf);
    EXPECT_TRUE(std::isnan(round_trip(format, std::numeric_limits<float>::quiet_NaN())));
  }
  // bf16 has float's range: no saturation.
  EXPECT_NEAR(round_trip(wire_format::bf16, 1e30f), 1e30f, 1e30f * std::ldexp(1.0f, -8));
}

// Values over many magnitudes, subnormal to beyond fp16's range, in a length that is not a
// multiple of the vector width.
std::vector<float> spread_values(std::size_t n, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::vector<float> values(n);
  for (auto& v : values)
    v = std::ldexp(mantissa(generator), exponent(generator));
  return values;
}

TEST(wire_format, the_error_is_within_half_a_unit_of_the_last_kept_bit) {
  const auto values = spread_values(100003, 7);
  for (auto [format, bits] : {std::pair{wire_format::fp16, 11}, std::pair{wire_format::bf16, 8}}) {
    std::vector<std::uint16_t> wire(values.size());
    std::vector<float> back(values.size());
    herd::comm::narrow(format, values.data(), wire.data(), values.size());
    herd::comm::widen(format, wire.data(), back.data(), values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      const float x = values[i];
      // fp16's normal range only (below it the step is absolute, above it saturates).
      if (format == wire_format::fp16 &&
          (std::abs(x) < std::ldexp(1.0f, -14) || std::abs(x) > 65504))
        continue;
      ASSERT_LE(std::abs(back[i] - x), std::ldexp(std::abs(x), -bits)) << x;
    }
  }
}

TEST(wire_format, the_vector_code_rounds_as_the_portable_code_bit_for_bit) {
  auto values = spread_values(100003, 11);
  values[5] = std::numeric_limits<float>::quiet_NaN();
  values[6] = std::numeric_limits<float>::infinity();
  values[7] = -1e9f;
  for (auto format : {wire_format::fp16, wire_format::bf16}) {
    std::vector<std::uint16_t> fast(values.size()), portable(values.size());
    herd::comm::narrow(format, values.data(), fast.data(), values.size());
    herd::comm::narrow_portable(format, values.data(), portable.data(), values.size());
    ASSERT_EQ(fast, portable) << herd::comm::name_of(format);
    std::vector<float> wide(values.size()), wide_portable(values.size());
    herd::comm::widen(format, fast.data(), wide.data(), values.size());
    herd::comm::widen_portable(format, fast.data(), wide_portable.data(), values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(bits_of(wide[i]), bits_of(wide_portable[i])) << i;
  }
}

} // namespace
