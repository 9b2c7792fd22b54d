// Threads that each run one job (a blocking data-plane reduction, a gate's handshake), reaped
// as they finish and joined when the set goes. No CAF.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

namespace herd::cluster {

class thread_set {
public:
  thread_set() = default;
  thread_set(const thread_set&) = delete;
  thread_set& operator=(const thread_set&) = delete;
  ~thread_set() { join_all(); }

  /// Runs `job` on a new thread (after joining the threads that have finished).
  template <class Job>
  void run(Job job) {
    std::lock_guard<std::mutex> guard(mutex_);
    reap();
    threads_.emplace_back();
    auto& entry = threads_.back();
    entry.thread = std::thread([job = std::move(job), done = entry.done]() mutable {
      job();
      done->store(true);
    });
  }

  /// Waits for every thread. A job that ends up here itself (it dropped the last reference to
  /// the set's owner) is detached instead: it is finishing anyway.
  void join_all() {
    std::list<entry_type> threads;
    {
      std::lock_guard<std::mutex> guard(mutex_);
      threads.swap(threads_);
    }
    for (auto& entry : threads) {
      if (entry.thread.get_id() == std::this_thread::get_id())
        entry.thread.detach();
      else if (entry.thread.joinable())
        entry.thread.join();
    }
  }

private:
  struct entry_type {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  };

  void reap() {
    for (auto entry = threads_.begin(); entry != threads_.end();) {
      if (entry->done->load()) {
        entry->thread.join();
        entry = threads_.erase(entry);
      } else {
        ++entry;
      }
    }
  }

  std::mutex mutex_;
  std::list<entry_type> threads_;
};

} // namespace herd::cluster
