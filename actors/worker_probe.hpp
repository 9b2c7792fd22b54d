// A test and diagnostics window into a worker's data: the gradients it computes, its parameters
// after each applied round, and what it still holds when it stops. No CAF.
#pragma once

#include <cstddef>
#include <cstdint>

namespace herd::actors {

/// Hooks into a worker's data for tests and diagnostics (null in production). gradient_computed
/// runs on the worker's compute thread, the others on its actor thread; different workers call
/// concurrently.
class worker_probe {
public:
  virtual ~worker_probe() = default;
  /// A local step produced `gradient` (before any accumulation).
  virtual void gradient_computed(int worker, std::uint64_t step, const float* gradient,
                                 std::size_t count);
  /// Under late-gradients = scale: step `step`'s gradient was late and goes on weighted `factor`
  /// (called after gradient_computed for that step, before the next step's).
  virtual void gradient_scaled(int worker, std::uint64_t step, float factor);
  /// The worker applied round `round`'s `result`; `parameters` are its parameters afterwards.
  virtual void round_applied(int worker, std::uint64_t round, const float* result,
                             const float* parameters, std::size_t count);
  /// The worker stopped; `unsent` is the sum of the gradients it computed that no round took
  /// (null when there are none).
  virtual void stopped(int worker, const float* unsent, std::size_t count);
};

} // namespace herd::actors
