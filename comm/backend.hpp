// The data plane: how tensors move between workers, behind one interface (as Gloo's transports
// and PyTorch c10d's backends do). `local` reads the workers' buffers in place inside one process;
// `gloo` (CPU processes) and `nccl` (GPUs) implement the same interface in later work.
// No CAF here: the control plane (actors) decides who reduces with whom, the backend moves data.
#pragma once

#include "kernels/ops.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace herd::comm {

/// Handle to a data-plane operation that may still be running.
class work {
public:
  virtual ~work() = default;
  /// Blocks until the operation completes or `timeout` passes; true when it completed
  /// (successfully or not).
  virtual bool wait(std::chrono::milliseconds timeout) = 0;
  virtual bool is_completed() const = 0;
  /// Empty on success (or while running); otherwise what went wrong, in words.
  virtual std::string error() const = 0;
};

/// One member's part of a group reduction: its rank's send buffer, scaled by `weight`.
struct weighted_input {
  int rank = 0;
  float weight = 0.0f;
};

class backend {
public:
  virtual ~backend() = default;

  virtual std::string_view name() const = 0;

  /// Makes `rank`'s send buffer of `count` floats visible to reductions. The owner keeps it alive
  /// until detach() and does not write it while a reduction that reads it is in flight.
  virtual void attach(int rank, const float* send_buffer, std::size_t count) = 0;
  virtual void detach(int rank) = 0;

  /// out = sum over `inputs` of weight * send_buffer(rank), `count` floats. Errors (an unknown
  /// rank, a size mismatch) come back through the work handle, not as exceptions.
  virtual std::shared_ptr<work> group_reduce(const std::vector<weighted_input>& inputs, float* out,
                                             std::size_t count) = 0;
};

/// Workers of one process: a reduction is one pass of ops.weighted_sum over the attached buffers,
/// read in place (zero copy), on the calling thread; it is complete (ops.synchronize()) when
/// group_reduce returns. Buffers and `out` are in ops.memory(): on a GPU, several workers on that
/// GPU reduce with the device kernel (NCCL cannot host two ranks on one GPU). Reductions run on
/// several threads at once, so `ops` must allow concurrent weighted_sum and synchronize (the CPU
/// ops and the CUDA ops do).
std::unique_ptr<backend> make_local_backend(const kernels::ops& ops);

} // namespace herd::comm
