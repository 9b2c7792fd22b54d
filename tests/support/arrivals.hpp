// Helpers of the grouping-policy tests: an arrival built in one call, and the worker list 0..n-1.
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

#include "policy/policy.hpp"

namespace herd::testing {

/// Worker `worker` reports a fresh result of its step `step` at `at_seconds`.
inline policy::arrival ready(int worker, std::uint64_t step = 1, double at_seconds = 0.0) {
  policy::arrival event;
  event.worker = worker;
  event.step = step;
  event.at_seconds = at_seconds;
  return event;
}

/// 0, 1, ..., n - 1.
inline std::vector<int> iota(int n) {
  std::vector<int> values(static_cast<std::size_t>(n));
  std::iota(values.begin(), values.end(), 0);
  return values;
}

} // namespace herd::testing
