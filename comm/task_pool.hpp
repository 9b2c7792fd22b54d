// A few threads that share out the independent pieces of one call (the data plane's sealing and
// opening of a message's pieces), with the calling thread taking part; and one thread that runs
// jobs in the order given (the sealing of sends posted in order). No OpenSSL, no Gloo.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace herd::comm {

/// Runs `work(0) .. work(n - 1)` of a call on the calling thread and `threads - 1` helpers, and
/// returns when all have run. Calls from several threads at once share the helpers: each call's
/// pieces are claimed one at a time, by its own thread as well as the helpers, so a call never
/// waits for pieces nobody has claimed. With one thread there are no helpers and a call runs its
/// pieces in order. A helper without work polls for a new call for 50 us before it sleeps, and so
/// does a caller waiting for its last pieces: handing pieces over must cost less than sealing them.
class task_pool {
public:
  /// Throws std::invalid_argument for fewer than 1 thread.
  explicit task_pool(int threads);
  ~task_pool();
  task_pool(const task_pool&) = delete;
  task_pool& operator=(const task_pool&) = delete;

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }

  /// Every piece runs, even after one throws; the first exception (in piece order) is rethrown
  /// here once all have ended.
  void run(std::size_t n, const std::function<void(std::size_t)>& work);

  /// The default for a process that seals its own traffic: half the cores it may run on,
  /// between 1 and 4.
  static int default_threads();

private:
  struct call;
  void help();
  void stop(); // ends and joins the helpers

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<call>> calls_; // with pieces not yet claimed
  std::atomic<std::size_t> queued_{0};      // calls_.size(), for helpers polling without the lock
  bool stopping_ = false;
  std::vector<std::thread> helpers_;
};

/// One thread that runs the jobs given to it one at a time, in the order they were given: a
/// rank's sealed sends, which must reach Gloo in the order they were posted, sealed while the
/// thread that posted them goes on. Like the pool's helpers it polls for 50 us before it sleeps.
class ordered_thread {
public:
  ordered_thread();
  /// Runs every job already given, then joins the thread.
  ~ordered_thread();
  ordered_thread(const ordered_thread&) = delete;
  ordered_thread& operator=(const ordered_thread&) = delete;

  /// `job` runs after every job given before it. It must not throw (a job that does ends the
  /// process): its errors are its own to hand back.
  void give(std::function<void()> job);

private:
  void serve();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::atomic<std::size_t> queued_{0}; // jobs_.size(), for the thread polling without the lock
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace herd::comm
