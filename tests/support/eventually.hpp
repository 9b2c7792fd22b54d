// Polls a condition until it holds or a timeout passes: what a test of threads and actors waits
// with instead of a fixed sleep.
#pragma once

#include <chrono>
#include <thread>

namespace herd::testing {

/// Whether `condition` held within `timeout` (checked every 10 ms, and once more at the end).
template <class Condition, class Rep, class Period>
bool eventually(Condition condition, std::chrono::duration<Rep, Period> timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return condition();
}

} // namespace herd::testing
