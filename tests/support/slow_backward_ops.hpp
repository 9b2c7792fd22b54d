// Gradient buckets under test: backward made slow (each relu_backward sleeps), so that rounds
// begin while their members' backward runs; and on call `fail_on_call` it throws after its sleep.
// A step has been announced by then: the last layer's gradient is final before relu's backward
// runs.
#pragma once

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "support/delegating_ops.hpp"

namespace herd::testing {

class slow_backward_ops final : public delegating_ops {
public:
  explicit slow_backward_ops(std::chrono::milliseconds sleep, int fail_on_call = 0)
      : sleep_(sleep), fail_on_call_(fail_on_call) {}
  void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) const override {
    std::this_thread::sleep_for(sleep_);
    if (calls_.fetch_add(1) + 1 == fail_on_call_)
      throw std::runtime_error("injected failure");
    base().relu_backward(y, dy, dx, n);
  }

private:
  std::chrono::milliseconds sleep_;
  int fail_on_call_;
  mutable std::atomic<int> calls_{0};
};

} // namespace herd::testing
