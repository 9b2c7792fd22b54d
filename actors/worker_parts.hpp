// Pieces of a worker outside its actor (worker.cpp): what its sampler draws from, and how its
// compute thread tells gradient buckets about backward's progress.
#pragma once

#include "actors/worker.hpp"
#include "comm/gradient_marks.hpp"
#include "models/sampler.hpp"

#include <functional>
#include <utility>

namespace herd::actors {

/// data.bucket-by-length: the lengths of the shard's texts and the run's shared batch order
/// (none unless the setup asks for it and the data are texts).
models::length_buckets length_buckets_of(const worker_setup& setup);

/// The compute thread's side of gradient buckets: the first part of the gradient made final
/// announces the step (to the actor, which decides), and with `live` backward's progress goes to
/// the send buffer's marks as it comes (else the step sets them when it ends). With no marks
/// (the step does not write into the send buffer, or no buckets), it does nothing.
class announcing_progress final : public models::gradient_progress {
public:
  announcing_progress(comm::gradient_marks* marks, bool live, std::function<void()> announce)
      : marks_(marks), live_(live), announce_(std::move(announce)) {}

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
