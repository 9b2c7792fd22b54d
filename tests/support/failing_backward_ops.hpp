// Fault injection through the kernel interface: the N-th backward pass of softmax (only ever
// called by a worker's training step) throws, so exactly one worker's step fails and that worker
// is lost; or, with `and_after`, that one and every later one, so that every worker is lost.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>

#include "support/delegating_ops.hpp"

namespace herd::testing {

class failing_backward_ops final : public delegating_ops {
public:
  explicit failing_backward_ops(int fail_on_call, bool and_after = false)
      : fail_on_call_(fail_on_call), and_after_(and_after) {}
  void softmax_xent_backward(const float* probs, const std::int32_t* labels, int rows,
                             int classes_count, float* dlogits) const override {
    const int call = calls_.fetch_add(1) + 1;
    if (call == fail_on_call_ || (and_after_ && call > fail_on_call_))
      throw std::runtime_error("injected failure");
    base().softmax_xent_backward(probs, labels, rows, classes_count, dlogits);
  }

private:
  int fail_on_call_;
  bool and_after_;
  mutable std::atomic<int> calls_{0};
};

} // namespace herd::testing
