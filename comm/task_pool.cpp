#include "comm/task_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <sched.h>
#include <stdexcept>
#include <string>

namespace herd::comm {

namespace {

// How long a thread that ran out of work polls for more before it sleeps: waking a sleeping
// thread costs tens of microseconds on a virtual machine, about what sealing a piece takes, and a
// reduction hands over a message every few hundred microseconds.
constexpr std::chrono::microseconds spin{50};

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Polls `ready` for at most `spin`; whether it became true.
template <class Ready>
bool spin_until(Ready&& ready) {
  const auto give_up = std::chrono::steady_clock::now() + spin;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= give_up)
      return false;
    for (int i = 0; i < 64; ++i)
      relax();
  }
  return true;
}

// With `lock` held (as on return): until `stopping` or work is queued (`queued`, which the owner
// stores under the lock), polling `queued` without the lock for `spin` first, then sleeping.
void wait_for_work(std::unique_lock<std::mutex>& lock, std::condition_variable& wake,
                   const std::atomic<std::size_t>& queued, const bool& stopping) {
  if (queued.load() == 0 && !stopping) {
    lock.unlock();
    spin_until([&] { return queued.load() > 0; });
    lock.lock();
  }
  wake.wait(lock, [&] { return stopping || queued.load() > 0; });
}

} // namespace

struct task_pool::call {
  const std::function<void(std::size_t)>* work = nullptr;
  std::size_t n = 0;
  std::atomic<std::size_t> next{0}; // the next piece to claim
  std::atomic<std::size_t> done{0}; // pieces that have ended
  std::mutex mutex;
  std::condition_variable ended;
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
      if (done.fetch_add(1) + 1 == n)
        ended.notify_all();
    }
    return ran;
  }
};

task_pool::task_pool(int threads) {
  if (threads < 1)
    throw std::invalid_argument("task_pool: " + std::to_string(threads) +
                                " threads; at least 1 is needed");
  try {
    for (int i = 1; i < threads; ++i)
      helpers_.emplace_back([this] { help(); });
  } catch (...) { // no thread to be had: the ones started are stopped before this fails
    stop();
    throw;
  }
}

task_pool::~task_pool() {
  stop();
}

void task_pool::stop() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& helper : helpers_)
    helper.join();
  helpers_.clear();
}

// The cores this process may run on (its affinity, as taskset or a container's cpuset set it),
// not every core of the machine.
int task_pool::default_threads() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  int cores = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0
                  ? CPU_COUNT(&allowed)
                  : static_cast<int>(std::thread::hardware_concurrency());
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
      queued_.store(calls_.size());
    }
    wake_.notify_all();
  }
  job->run_some();
  if (!spin_until([&] { return job->done.load() == n; })) {
    std::unique_lock<std::mutex> lock(job->mutex);
    job->ended.wait(lock, [&] { return job->done.load() == n; });
  }
  // Each piece wrote its error before it counted itself done. The first one leaves the call
  // (which a helper may still hold) before it is thrown, so that only this thread owns it.
  std::exception_ptr first;
  {
    std::lock_guard<std::mutex> guard(job->mutex);
    for (auto& error : job->errors)
      if (error && !first)
        first = std::move(error);
    job->errors.clear();
  }
  if (first)
    std::rethrow_exception(first);
}

void task_pool::help() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wait_for_work(lock, wake_, queued_, stopping_);
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
      queued_.store(calls_.size());
    }
  }
}

ordered_thread::ordered_thread() : thread_([this] { serve(); }) {}

ordered_thread::~ordered_thread() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ordered_thread::give(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    jobs_.push_back(std::move(job));
    queued_.store(jobs_.size());
  }
  wake_.notify_one();
}

void ordered_thread::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wait_for_work(lock, wake_, queued_, stopping_);
    if (jobs_.empty()) // and stopping: every job given has run
      return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    queued_.store(jobs_.size());
    lock.unlock();
    job();
    lock.lock();
  }
}

} // namespace herd::comm
