// Deadlines and asynchronous-error polling for data-plane operations whose progress only a query
// can tell (NCCL on a non-blocking communicator, PyTorch c10d's watchdog thread). Plain C++: it
// knows nothing of NCCL or CUDA, so its timing and abort logic is tested on the CPU with threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace herd::comm {

class watchdog;

/// One operation under a watchdog, shared by the watchdog and whoever waits for it (a work handle).
/// It ends exactly once: completed, or failed with the watchdog's message.
class watched_operation {
public:
  /// Blocks until the operation has ended or `timeout` passes; true when it has ended.
  bool wait(std::chrono::milliseconds timeout) const;
  bool finished() const;
  /// Ended and not failed.
  bool succeeded() const;
  /// Empty while running or after success; otherwise the message that failed it.
  std::string error() const;
  const std::string& description() const { return description_; }

  watched_operation(const watched_operation&) = delete;
  watched_operation& operator=(const watched_operation&) = delete;

private:
  friend class watchdog;
  watched_operation(std::string description, std::function<bool()> is_complete,
                    std::chrono::milliseconds timeout);
  // Ends the operation unless it has ended already: completed when `error` is empty.
  void finish(const std::string& error);

  const std::string description_;
  const std::function<bool()> is_complete_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::steady_clock::time_point deadline_;

  mutable std::mutex mutex_;
  mutable std::condition_variable ended_;
  bool finished_ = false;
  std::string error_;
};

struct watchdog_options {
  /// How often the queries run while an operation is watched, and while none is.
  std::chrono::milliseconds busy_poll{1};
  std::chrono::milliseconds idle_poll{100};
};

/// A thread that polls the watched operations' completion queries and an asynchronous-error query,
/// and aborts (once, for good) when an operation passes its deadline, a query reports an error or
/// throws, or the owner asks. After the abort every watched operation has failed with one message
///   "<subject>: <cause>; <what the abort callback did>"
/// e.g. "nccl rank 0 of 4 (device 0): group reduction among ranks [0, 2] (1000 floats) did not
/// finish within 30000 ms; the communicator was aborted", and every later watch() fails at once
/// with it.
///
/// Guarantees to the callbacks: they run one at a time (never concurrently with each other, nor
/// with themselves), the queries never run during or after the abort, and the abort callback runs
/// at most once. The queries and the abort run on the watchdog's thread, or, for abort(), on the
/// caller's; the owner serialises them with its own calls on the same resource (a communicator)
/// and must not hold what the callbacks lock while it calls watch(), abort() or the destructor.
class watchdog {
public:
  /// `async_error`: empty while healthy, otherwise the cause in words (an exception counts as a
  /// cause too). `abort`: releases the resource; gets the cause and returns what it did, in words
  /// ("the communicator was aborted").
  watchdog(std::string subject, std::function<std::string()> async_error,
           std::function<std::string(const std::string& cause)> abort,
           watchdog_options options = {});
  /// Stops the thread without aborting; operations still running fail with "<subject>: the
  /// watchdog stopped before <description> finished".
  ~watchdog();
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

  /// Watches an operation until `is_complete` returns true (it ends completed) or `timeout` from
  /// now passes first (the watchdog aborts: "<description> did not finish within <timeout> ms").
  /// An exception from `is_complete` aborts with "<description> failed: <what>". After an abort
  /// the operation returned has already failed with the abort's message.
  std::shared_ptr<watched_operation> watch(std::string description,
                                           std::function<bool()> is_complete,
                                           std::chrono::milliseconds timeout);

  /// Aborts now with `cause` (a failed call the owner saw), unless already aborted; returns the
  /// abort's message either way. Waits for a polling round in progress to finish.
  std::string abort(const std::string& cause);

  bool aborted() const;
  /// Empty until the abort has finished; then what every failed operation says.
  std::string abort_message() const;
  const std::string& subject() const { return subject_; }

private:
  void loop();
  void poll_once();
  // Runs the abort callback and fails every running operation; the caller holds poll_mutex_.
  void abort_holding_poll_lock(const std::string& cause);
  std::vector<std::shared_ptr<watched_operation>> running() const;

  const std::string subject_;
  const std::function<std::string()> async_error_;
  const std::function<std::string(const std::string&)> abort_;
  const watchdog_options options_;

  // Held for one polling round or for the abort: so the callbacks never overlap.
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
