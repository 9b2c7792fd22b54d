// Load-imbalance injection as real elapsed time: the worker's compute thread waits out the extra
// time policy::imbalance_model draws (the model is CAF-free, in policy/, so that the simulator
// draws the same delays), and a stop cuts that wait short.
#pragma once

#include <condition_variable>
#include <mutex>

#include "policy/imbalance.hpp"

namespace herd::actors {

using policy::imbalance_model;

/// Where a worker's compute thread waits out its injected delay. cancel() (the worker was asked
/// to stop, or is going away) ends the wait under way and every later one at once, so that a
/// delay longer than the run (imbalance.delay-ms = 60000 with train.max-seconds = 3, or Ctrl-C
/// during it) never holds up the end of the run. Thread-safe.
class injected_delay {
public:
  /// Waits `seconds` (steady clock), or until cancel(). True when it waited the whole time.
  bool wait(double seconds);

  /// Ends the wait under way, if any, and makes every later wait() return at once.
  void cancel();

  bool cancelled() const;

private:
  mutable std::mutex mutex_;
  std::condition_variable woken_;
  bool cancelled_ = false;
};

} // namespace herd::actors
