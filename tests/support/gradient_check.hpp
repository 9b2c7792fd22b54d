// Finite-difference gradient checks for the model tests: random tensors, a weighted-sum loss whose
// gradient is known, and the comparison of an analytic gradient with central differences.
#pragma once

#include "herd/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace herd::testing {

/// Normal(0, scale) values drawn from `seed`.
inline models::tensor random_tensor(std::vector<std::size_t> shape, std::uint64_t seed,
                                    float scale = 1.0f) {
  models::tensor t(std::move(shape));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  for (std::size_t i = 0; i < t.size(); ++i)
    t[i] = normal(rng);
  return t;
}

/// Weighted sum of a tensor: loss = sum_i y_i * r_i, so dL/dy = r.
inline double weighted(const models::tensor& y, const models::tensor& r) {
  double total = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i)
    total += static_cast<double>(y[i]) * r[i];
  return total;
}

/// Whether `analytic` and `numeric` agree: relative to the larger of the two, with an absolute
/// floor for derivatives near zero.
inline bool derivatives_agree(double analytic, double numeric) {
  const double scale = std::max({std::fabs(numeric), std::fabs(analytic), 1e-2});
  return std::fabs(numeric - analytic) / scale <= 2e-2;
}

/// Central difference of `loss` in every coordinate of `values`, compared with `analytic`.
/// The step is 1e-3: small enough that it rarely crosses a ReLU kink (or a max-pool switch) at
/// these scales, large enough for float32 forward passes. Where it does cross one (which depends
/// on the rounding of the machine's BLAS kernels) the two one-sided differences disagree, and the
/// analytic derivative must then be the one of the side it was taken on: one of the two.
inline void expect_gradient_matches(float* values, std::size_t n, const float* analytic,
                                    const std::function<double()>& loss, const char* what) {
  const float step = 1e-3f;
  int mismatches = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float saved = values[i];
    values[i] = saved + step;
    const double up = loss();
    values[i] = saved - step;
    const double down = loss();
    values[i] = saved;
    const double numeric = (up - down) / (2.0 * step);
    if (derivatives_agree(analytic[i], numeric))
      continue;
    const double center = loss();
    const double right = (up - center) / step, left = (center - down) / step;
    const bool kink = !derivatives_agree(left, right);
    if (kink && (derivatives_agree(analytic[i], left) || derivatives_agree(analytic[i], right)))
      continue;
    if (++mismatches <= 5)
      ADD_FAILURE() << what << "[" << i << "]: analytic " << analytic[i] << ", numeric " << numeric
                    << " (one-sided " << left << " and " << right << ")";
  }
  EXPECT_EQ(mismatches, 0) << what;
}

} // namespace herd::testing
