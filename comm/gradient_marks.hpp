// How far the backward pass writing a worker's send buffer has come, so that a reduction can read
// each part of the buffer as soon as it is final instead of after the whole pass (gradient
// buckets). The worker's compute thread writes the marks; the threads that reduce wait on them.
// Backward finishes the gradient from the end of the buffer towards its start, so one number
// says what is final: [final_from, count).
#pragma once

#include "comm/errors.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>

namespace herd::comm {

class gradient_marks {
public:
  using clock_type = std::chrono::steady_clock;

  /// A buffer of `count` floats, at rest: all of it final.
  explicit gradient_marks(std::size_t count) : count_(count) {}

  std::size_t count() const { return count_; }

  /// A pass begins writing the buffer: nothing of it is final until final_from() says so.
  void begin();
  /// [begin, count) is final: nothing later in the pass writes it. `begin` never grows within a
  /// pass (a larger one than before changes nothing).
  void final_from(std::size_t begin);
  /// The pass ended: all of the buffer is final.
  void end() { final_from(0); }
  /// The pass ended without finishing the gradient: a wait fails with `why` until the next
  /// begin().
  void abandon(const std::string& why);

  /// Blocks until [from, count) is final; timeout at `deadline`, peer_lost if the pass was
  /// abandoned first (both name the floats still missing).
  status wait_final_from(std::size_t from, clock_type::time_point deadline) const;
  /// Whether a pass is writing the buffer now (something of it is not final, or the pass was
  /// abandoned).
  bool writing() const;

private:
  const std::size_t count_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::size_t final_from_ = 0;
  bool abandoned_ = false;
  std::string why_;
};

} // namespace herd::comm
