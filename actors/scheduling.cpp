// Herd's CAF scheduler policy and send batches; see scheduling.hpp.
#include "actors/scheduling.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/policy/unprofiled.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/coordinator.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace herd::actors {
namespace {

// The ready actors of one actor system, and its sleeping scheduler threads.
struct ready_queue {
  std::deque<caf::resumable*> jobs; // a block per 64 actors, not a list node per actor
  std::mutex lock;
  std::condition_variable cv;
  std::size_t sleeping = 0;  // threads waiting on cv
  std::size_t signalled = 0; // of them, already woken and not yet up
  std::atomic<std::uint64_t> wakes{0};

  // How many of the sleeping threads may be woken for `ready` more actors; marks them signalled.
  // Called with `lock` held.
  std::size_t claim_sleepers(std::size_t ready) {
    const std::size_t wakeable = sleeping - signalled;
    const std::size_t woken = std::min(ready, wakeable);
    signalled += woken;
    return woken;
  }

  // Wakes `count` threads claimed by claim_sleepers(), after `lock` was released: a thread
  // woken inside the lock would only wait for it again.
  void wake(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
      cv.notify_one();
    wakes.fetch_add(count, std::memory_order_relaxed);
  }
};

// This thread's open send batches: how deep, and the actors made ready in them so far (in one
// queue; a send to another system's queue wakes the first queue's share first).
struct open_batch {
  int depth = 0;
  ready_queue* queue = nullptr;
  std::size_t ready = 0;
};
thread_local open_batch this_thread_batch;

void flush(open_batch& batch) {
  if (batch.queue == nullptr || batch.ready == 0)
    return;
  std::size_t woken = 0;
  {
    std::lock_guard<std::mutex> guard(batch.queue->lock);
    woken = batch.queue->claim_sleepers(batch.ready);
  }
  batch.queue->wake(woken);
  batch.queue = nullptr;
  batch.ready = 0;
}

void push(ready_queue& queue, caf::resumable* job) {
  auto& batch = this_thread_batch;
  if (batch.depth > 0 && batch.queue != &queue)
    flush(batch);
  std::size_t woken = 0;
  {
    std::lock_guard<std::mutex> guard(queue.lock);
    queue.jobs.push_back(job);
    if (batch.depth == 0)
      woken = queue.claim_sleepers(1);
  }
  if (batch.depth > 0) {
    batch.queue = &queue;
    ++batch.ready;
  } else {
    queue.wake(woken);
  }
}

// CAF's work sharing, with the wakes above (the customisation points of caf::scheduler::worker
// and caf::scheduler::coordinator).
class batching_sharing : public caf::policy::unprofiled {
public:
  struct coordinator_data : ready_queue {
    explicit coordinator_data(caf::scheduler::abstract_coordinator*) {}
  };
  struct worker_data {
    explicit worker_data(caf::scheduler::abstract_coordinator*) {}
  };

  template <class Coordinator>
  void central_enqueue(Coordinator* self, caf::resumable* job) {
    push(d(self), job);
  }
  template <class Worker>
  void external_enqueue(Worker* self, caf::resumable* job) {
    push(d(self->parent()), job);
  }
  template <class Worker>
  void internal_enqueue(Worker* self, caf::resumable* job) {
    push(d(self->parent()), job);
  }
  template <class Worker>
  void resume_job_later(Worker* self, caf::resumable* job) {
    push(d(self->parent()), job); // the actor yielded: to the back of the queue
  }

  template <class Worker>
  caf::resumable* dequeue(Worker* self) {
    ready_queue& queue = d(self->parent());
    std::unique_lock<std::mutex> guard(queue.lock);
    while (queue.jobs.empty()) {
      ++queue.sleeping;
      queue.cv.wait(guard);
      --queue.sleeping;
      if (queue.signalled > 0) // woken, or woke by itself while signalled: either way up now
        --queue.signalled;
    }
    caf::resumable* job = queue.jobs.front();
    queue.jobs.pop_front();
    return job;
  }

  template <class Worker, class Function>
  void foreach_resumable(Worker*, Function) {} // no queue per worker

  template <class Coordinator, class Function>
  void foreach_central_resumable(Coordinator* self, Function f) {
    ready_queue& queue = d(self);
    std::lock_guard<std::mutex> guard(queue.lock);
    while (!queue.jobs.empty()) {
      caf::resumable* job = queue.jobs.front();
      queue.jobs.pop_front();
      f(job);
    }
  }
};

using herd_coordinator = caf::scheduler::coordinator<batching_sharing>;

} // namespace

void use_herd_scheduler(caf::actor_system_config& config, std::size_t threads) {
  if (threads == 0)
    threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 2, 8);
  config.set("scheduler.max-threads", threads);
  // A scheduler module given by the configuration takes the place of the one that
  // scheduler.policy names.
  config.module_factories.push_back([](caf::actor_system& system) -> caf::actor_system::module* {
    return new herd_coordinator(system);
  });
}

send_batch::send_batch() {
  ++this_thread_batch.depth;
}

send_batch::~send_batch() {
  if (--this_thread_batch.depth == 0)
    flush(this_thread_batch);
}

std::uint64_t scheduler_wakes(caf::actor_system& system) {
  auto* scheduler = dynamic_cast<herd_coordinator*>(&system.scheduler());
  return scheduler == nullptr ? 0 : scheduler->data().wakes.load(std::memory_order_relaxed);
}

std::size_t scheduler_sleeping(caf::actor_system& system) {
  auto* scheduler = dynamic_cast<herd_coordinator*>(&system.scheduler());
  if (scheduler == nullptr)
    return 0;
  ready_queue& queue = scheduler->data();
  std::lock_guard<std::mutex> guard(queue.lock);
  return queue.sleeping - queue.signalled;
}

} // namespace herd::actors
