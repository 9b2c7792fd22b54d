// Waiting out an injected delay; see imbalance.hpp.
#include "actors/imbalance.hpp"

#include <algorithm>
#include <chrono>

namespace herd::actors {

bool injected_delay::wait(double seconds) {
  if (!(seconds > 0.0)) // also NaN: nothing to wait for
    return !cancelled();
  // Far beyond any run, but small enough that the deadline below cannot overflow.
  constexpr double longest_seconds = 1e9;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(std::min(seconds, longest_seconds)));
  std::unique_lock<std::mutex> lock(mutex_);
  return !woken_.wait_until(lock, deadline, [this] { return cancelled_; });
}

void injected_delay::cancel() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    cancelled_ = true;
  }
  woken_.notify_all();
}

bool injected_delay::cancelled() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return cancelled_;
}

} // namespace herd::actors
