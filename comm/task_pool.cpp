#include "comm/task_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>
#include <string>

namespace herd::comm {

struct task_pool::call {
  const std::function<void(std::size_t)>* work = nullptr;
  std::size_t n = 0;
  std::atomic<std::size_t> next{0}; // the next piece to claim
  std::mutex mutex;
  std::condition_variable ended;
  std::size_t done = 0;                   // under mutex
  std::vector<std::exception_ptr> errors; // by piece, under mutex

  // Claims and runs pieces until none is left; false once there were none to claim.
  bool run_some() {
    bool ran = false;
    for (std::size_t piece = next.fetch_add(1); piece < n; piece = next.fetch_add(1)) {
      ran = true;
      std::exception_ptr error;
      try {
        (*work)(piece);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> guard(mutex);
      if (error)
        errors[piece] = error;
      if (++done == n)
        ended.notify_all();
    }
    return ran;
  }
};

task_pool::task_pool(int threads) {
  if (threads < 1)
    throw std::invalid_argument("task_pool: " + std::to_string(threads) +
                                " threads; at least 1 is needed");
  for (int i = 1; i < threads; ++i)
    helpers_.emplace_back([this] { help(); });
}

task_pool::~task_pool() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& helper : helpers_)
    helper.join();
}

int task_pool::default_threads() {
  const auto cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores / 2, 1, 4);
}

void task_pool::run(std::size_t n, const std::function<void(std::size_t)>& work) {
  if (n == 0)
    return;
  auto job = std::make_shared<call>();
  job->work = &work;
  job->n = n;
  job->errors.resize(n);
  if (!helpers_.empty() && n > 1) {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      calls_.push_back(job);
    }
    wake_.notify_all();
  }
  job->run_some();
  {
    std::unique_lock<std::mutex> lock(job->mutex);
    job->ended.wait(lock, [&] { return job->done == n; });
  }
  for (const auto& error : job->errors)
    if (error)
      std::rethrow_exception(error);
}

void task_pool::help() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !calls_.empty(); });
    if (stopping_)
      return;
    const std::shared_ptr<call> job = calls_.front();
    lock.unlock();
    const bool ran = job->run_some();
    lock.lock();
    // Nothing left to claim: the call leaves the queue (its own thread waits for what still runs).
    if (!ran || job->next.load() >= job->n) {
      auto at = std::find(calls_.begin(), calls_.end(), job);
      if (at != calls_.end())
        calls_.erase(at);
    }
  }
}

} // namespace herd::comm
