// Deadlines for data-plane operations, and asynchronous-error polling for planes whose progress
// only a query can tell (PyTorch c10d's watchdog thread). One watchdog serves every plane that
// needs one: a deadline per operation and an abort hook per plane. Plain C++: it knows nothing of
// NCCL, Gloo or CUDA, so its timing and abort logic is tested on the CPU with threads.
#pragma once

#include "comm/data_plane.hpp" // work, status

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace herd::comm {

/// One operation under a watchdog, and the work handle of whoever waits for it. It ends exactly
/// once: done, or failed with the watchdog's (or its owner's) status.
class watched_operation final : public work {
public:
  status wait(std::chrono::milliseconds timeout) override;
  bool is_completed() const override;

private:
  friend class watchdog;
  std::string not_in_time() const {
    return description_ + " did not finish within " + std::to_string(timeout_.count()) + " ms";
  }
  watched_operation(std::string description, std::function<bool()> is_complete,
                    std::chrono::milliseconds timeout, std::function<void()> expire);
  void finish(status result); // unless it has ended already

  const std::string description_;
  const std::function<bool()> is_complete_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::steady_clock::time_point deadline_;
  const std::function<void()> expire_;

  mutable std::mutex mutex_;
  mutable std::condition_variable ended_;
  bool finished_ = false;
  status result_;
};

struct watchdog_options {
  /// How often the queries run while a polled operation is watched, and while none is.
  std::chrono::milliseconds busy_poll{1};
  std::chrono::milliseconds idle_poll{100};
};

/// A thread that polls the operations' completion queries and the plane's asynchronous-error
/// query, and enforces each operation's deadline. It aborts the plane (once, for good) when a
/// query reports an error or throws, when an operation the plane cannot end alone passes its
/// deadline, or when the owner asks. Every operation then fails (the overdue one `timeout`, the
/// others and every later watch() `aborted`) with "<subject>: <cause>; <what the hook did>", e.g.
/// "nccl rank 0 of 4 (device 0): group reduction among ranks [0, 2] (1000 floats) did not finish
/// within 30000 ms; the communicator was aborted".
///
/// The callbacks run one at a time, on the watchdog's thread (or the caller's of abort() and
/// finish()); the queries never during or after the abort, the abort hook at most once, none for
/// an operation after finish() returned for it. The owner must not hold what the callbacks lock
/// while it calls watch(), finish(), abort() or the destructor.
class watchdog {
public:
  /// `async_error`: empty while healthy, otherwise the cause (an exception is a cause too).
  /// `abort`: releases the plane's resource, given the cause; returns what it did ("the
  /// communicator was aborted"). Either may be empty (Gloo, whose operations end one by one).
  watchdog(std::string subject, std::function<std::string()> async_error,
           std::function<std::string(const std::string& cause)> abort,
           watchdog_options options = {});
  /// Stops the thread without aborting; operations still running fail (`aborted`) with
  /// "<subject>: the watchdog stopped before <description> finished".
  ~watchdog();

  /// Watches an operation until `is_complete` (polled) returns true, or the owner's finish() when
  /// there is none. Past its deadline (`timeout` from now) the watchdog calls `expire` and fails
  /// that operation alone, `timeout` "<subject>: <description> did not finish within <timeout>
  /// ms" (Gloo wakes its waits); without `expire` it aborts the plane (NCCL: a hung operation
  /// leaves the communicator unusable). A query that throws aborts with "<description> failed:
  /// <what>". After an abort the operation returned has already failed with its message.
  std::shared_ptr<watched_operation> watch(std::string description,
                                           std::function<bool()> is_complete,
                                           std::chrono::milliseconds timeout,
                                           std::function<void()> expire = {});

  /// Ends `operation` with `result` unless it has ended; waits for a polling round in progress.
  void finish(watched_operation& operation, status result);

  /// Aborts now with `cause` (a failed call the owner saw), unless already aborted; returns the
  /// abort's message either way. Waits for a polling round in progress to finish.
  std::string abort(const std::string& cause);

  bool aborted() const;
  /// Empty until the abort has finished; then what every failed operation says.
  std::string abort_message() const;

private:
  void loop();
  void poll_once();
  std::chrono::steady_clock::time_point next_poll() const; // holding mutex_
  void abort_holding_poll_lock(const std::string& cause, const watched_operation* overdue);
  void end_holding_poll_lock(watched_operation& operation, status result);
  std::vector<std::shared_ptr<watched_operation>> running() const;

  const std::string subject_;
  const std::function<std::string()> async_error_;
  const std::function<std::string(const std::string&)> abort_;
  const watchdog_options options_;

  // Held for one polling round, an abort or a finish: so the callbacks never overlap.
  std::mutex poll_mutex_;
  // Guards the fields below; never held while a callback runs.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<watched_operation>> running_;
  bool aborted_ = false;
  std::string abort_message_;
  bool new_operation_ = false;
  bool stopping_ = false;
  std::thread thread_; // last: starts once everything above is initialised
};

} // namespace herd::comm
