// The thread a worker computes on. A worker actor hands its local step to this thread and goes on
// answering messages (contribution requests, results, stop) while the step runs, like eager-SGD's
// progress thread. Plain C++, no CAF: the job itself reports back to the actor.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace herd::actors {

class compute_thread {
public:
  /// Starts the thread; `name` shows in debuggers and top (at most 15 characters are kept).
  explicit compute_thread(const std::string& name);
  /// Lets a running job finish, then joins.
  ~compute_thread();

  compute_thread(const compute_thread&) = delete;
  compute_thread& operator=(const compute_thread&) = delete;

  /// Runs `job` on the thread. At most one job waits to start: a job may be posted while the
  /// previous one is finishing (its last act is usually to message the actor, which then posts
  /// the next step), but not while another posted job has not started yet.
  /// The job must not throw (a worker's job catches and reports its own failures).
  void post(std::function<void()> job);

  /// True from post() until every posted job has returned.
  bool busy() const { return unfinished_.load(std::memory_order_acquire) > 0; }

private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<void()> job_;
  bool stopping_ = false;
  std::atomic<int> unfinished_{0};
  std::thread thread_;
};

} // namespace herd::actors
