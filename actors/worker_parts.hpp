// Pieces of a worker outside its actor (worker.cpp): what its sampler draws from, how its
// compute thread tells gradient buckets about backward's progress, how it times steps, and the
// state a worker joining the running job adopts from it.
#pragma once

#include "actors/worker.hpp"
#include "comm/gradient_marks.hpp"
#include "models/sampler.hpp"

#include <chrono>
#include <functional>
#include <utility>

namespace herd::actors {

struct worker_state;

/// Seconds from `start` until now on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// What a worker joining the running job adopts: the worker's step counter and rounds applied,
/// `params` and `optimizer`'s state and steps, downloaded through `ops` (the actor's).
worker_state state_of(const kernels::ops& ops, const models::tensor& params,
                      const models::optimizer& optimizer, std::uint64_t steps,
                      std::uint64_t rounds_applied);

/// data.bucket-by-length: the lengths of the shard's texts and the run's shared batch order
/// (none unless the setup asks for it and the data are texts).
models::length_buckets length_buckets_of(const worker_setup& setup);

/// The compute thread's side of gradient buckets: the first part of the gradient made final
/// announces the step (to the actor, which decides), and backward's progress goes to the send
/// buffer's marks as it comes. An injected delay stands for a slower step: a step of worker
/// `setup.index` that the imbalance delays leaves its marks to the step's end (after the delay),
/// and is announced only where setup.announce_delayed_steps. With no marks (the step does not
/// write into the send buffer, or no buckets), it does nothing.
class announcing_progress final : public models::gradient_progress {
public:
  announcing_progress(const worker_setup& setup, std::uint64_t step, comm::gradient_marks* marks,
                      std::function<void()> announce)
      : marks_(marks), live_(!setup.imbalance || !setup.imbalance->slows(setup.index, step)),
        announce_(live_ || setup.announce_delayed_steps ? std::move(announce) : nullptr) {}

  void final_from(std::size_t begin) override {
    if (marks_ == nullptr)
      return;
    if (announce_)
      std::exchange(announce_, nullptr)();
    if (live_)
      marks_->final_from(begin);
  }

private:
  comm::gradient_marks* marks_;
  bool live_;
  std::function<void()> announce_;
};

} // namespace herd::actors
