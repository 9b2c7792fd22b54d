// A worker's compute thread; see compute_thread.hpp.
#include "actors/compute_thread.hpp"

#include "kernels/check.hpp"

#include <pthread.h>

namespace herd::actors {

compute_thread::compute_thread(const std::string& name) : thread_([this] { run(); }) {
  pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
}

compute_thread::~compute_thread() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void compute_thread::post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    HERD_CHECK(!job_, "compute_thread::post while another posted job has not started");
    HERD_CHECK(!stopping_, "compute_thread::post after shutdown began");
    job_ = std::move(job);
    unfinished_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_one();
}

void compute_thread::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || job_; });
      if (!job_)
        return; // stopping, nothing left to run
      job = std::move(job_);
      job_ = nullptr;
    }
    job();
    unfinished_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

} // namespace herd::actors
