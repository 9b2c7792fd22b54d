// The data plane: how tensors move between workers, behind one interface drawn as PyTorch c10d's
// Backend and Gloo's transports are. Every plane implements all of it; an operation a plane lacks
// answers "this plane does not support X" (a result, not an exception), and every operation
// returns a work handle whose result is a typed status (comm/errors.hpp). The planes: `local`
// (workers of one process, below), `gloo` (CPU processes, gloo_plane.hpp), `nccl` (GPUs in
// separate processes, nccl_plane.hpp). No CAF: the actors decide who reduces with whom.
#pragma once

#include "comm/bucket_layout.hpp"
#include "comm/errors.hpp"
#include "comm/gradient_marks.hpp"
#include "herd/ops.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace herd::comm {

/// An operation that may still be running (c10d's Work).
class work {
public:
  virtual ~work() = default;
  /// Blocks until the operation ends or `timeout` passes; its result, or `timeout` when the wait
  /// ran out first (then is_completed() is still false). wait(0ms) asks without blocking.
  virtual status wait(std::chrono::milliseconds timeout) = 0;
  virtual bool is_completed() const = 0;
};

/// An operation that ended before its handle was returned.
inline std::shared_ptr<work> ended_work(status result) {
  class ended final : public work {
  public:
    explicit ended(status result) : result_(std::move(result)) {}
    status wait(std::chrono::milliseconds) override { return result_; }
    bool is_completed() const override { return true; }

  private:
    status result_;
  };
  return std::make_shared<ended>(std::move(result));
}

/// One member's part of a group reduction: its rank's send buffer, scaled by `weight`.
struct weighted_input {
  int rank = 0;
  float weight = 0.0f;
};

/// What a plane may support (capability queries).
enum class operation { attach, group_reduce, broadcast };

struct operation_options {
  /// Tells apart operations in flight at once: each member of a group passes the same tag, and
  /// concurrent operations differ (gloo matches messages by it; local and nccl ignore it).
  std::uint64_t tag = 0;
  /// The operation's deadline; zero or negative: the plane's own (c10d's kUnsetTimeout).
  std::chrono::milliseconds timeout{0};
  /// A reduction of one part of a buffer (a bucket): its `count` floats are floats
  /// [part_offset, part_offset + count) of a buffer of `whole_count` (0: the reduction is the
  /// whole buffer). The local plane reads the attached buffers from part_offset on. Gloo sums
  /// each element in the order a reduction of the whole buffer would (its ring cuts its chunks
  /// from the whole), so a buffer reduced part by part, in any parts, ends with the bits it ends
  /// with reduced at once, and error feedback keeps each element's residual whatever part it
  /// travels in. NCCL sums in an order of its own.
  std::size_t whole_count = 0;
  std::size_t part_offset = 0;
  /// A plane reading buffers that a backward pass still writes (data_plane::attach_marks) reduces
  /// them in these buckets of the whole buffer, each as soon as it is final (none: the part at
  /// once, once all of it is final). A bucket holds each element's sum as the whole would: the
  /// same bits.
  bucket_layout buckets{};
};

/// Why `options` cannot describe a part of a reduction of `count` floats ("" when it can).
std::string part_error(std::size_t count, const operation_options& options);

class data_plane {
public:
  virtual ~data_plane() = default;

  /// "local", "gloo", "nccl".
  virtual std::string_view name() const = 0;
  /// Whether `op` does more here than answer `unsupported`.
  virtual bool supports(operation op) const = 0;
  /// Where every buffer handed to this plane must live.
  virtual const kernels::memory& memory() const = 0;
  /// Whether two ranks match the operations they share in the order each issues them (NCCL: the
  /// n-th send from a to b meets b's n-th receive from a), rather than by tag (Gloo). Callers of
  /// such a plane issue the operations they share in one global order (comm/sequencer.hpp), and
  /// its operations return once queued, so "issued" is when the call returns.
  virtual bool matches_in_issue_order() const { return false; }

  /// Makes `rank`'s send buffer of `count` floats readable in place by reductions (a plane whose
  /// ranks share one process). The owner keeps it alive until detach() and does not write it
  /// while a reduction that reads it is in flight; detach() waits for such reductions.
  virtual status attach(int /*rank*/, const float* /*send_buffer*/, std::size_t /*count*/) {
    return does_not_support("attach");
  }
  virtual status detach(int /*rank*/) { return does_not_support("detach"); }
  /// `rank`'s attached buffer is written by backward passes that `marks` follows: while a pass
  /// runs, a reduction reads each part of the buffer only once the marks say it is final, and the
  /// parts in buckets (operation_options::buckets) as they become final, from the end.
  /// Until detach(). Only planes that attach buffers.
  virtual status attach_marks(int /*rank*/, std::shared_ptr<const gradient_marks> /*marks*/) {
    return does_not_support("attach_marks");
  }

  /// out = sum over `inputs` of weight * (that rank's send buffer), `count` floats, among any
  /// subset of ranks. A plane that attaches buffers reads every input's in place, one call per
  /// group, with `send` null. Across processes every member calls with the same inputs (in the
  /// same order), count and tag, passing its own `send`; `out` may be `send`. The caller writes
  /// neither until the work has ended, and `out` is unspecified after a failure.
  virtual std::shared_ptr<work> group_reduce(const std::vector<weighted_input>& /*inputs*/,
                                             const float* /*send*/, float* /*out*/,
                                             std::size_t /*count*/,
                                             const operation_options& /*options*/) {
    return ended_work(does_not_support("group_reduce"));
  }

  /// Ends this rank's part of the operation of `tag` at once with `aborted` (naming `why`), if it
  /// still runs or has not started yet: another member failed, so it cannot complete, and waiting
  /// for that member would take until the deadline. A plane whose operations have ended when the
  /// call returns (local) or cannot end one alone (nccl) does nothing.
  virtual void cancel(std::uint64_t /*tag*/, const std::string& /*why*/) {}

  /// Copies `root`'s `count` floats of `data` into `data` on every other rank of `ranks`; each
  /// rank of `ranks` calls it alike (a node joining the job takes a live worker's state).
  virtual std::shared_ptr<work> broadcast(float* /*data*/, std::size_t /*count*/,
                                          const std::vector<int>& /*ranks*/, int /*root*/,
                                          const operation_options& /*options*/) {
    return ended_work(does_not_support("broadcast"));
  }

protected:
  status does_not_support(const char* operation_name) const {
    return {outcome::unsupported,
            std::string(name()) + " plane does not support " + operation_name};
  }
};

/// Workers of one process: a reduction is one pass of ops.weighted_sum over the attached buffers,
/// read in place (zero copy), on the calling thread, complete (ops.synchronize()) when
/// group_reduce returns. Buffers live in ops.memory(): on a GPU, the workers on it reduce with the
/// device kernel (NCCL cannot host two ranks on one GPU). Reductions may run on several threads
/// at once, so `ops` must allow concurrent weighted_sum and synchronize (the CPU and CUDA ops do).
std::unique_ptr<data_plane> make_local_plane(const kernels::ops& ops);

} // namespace herd::comm
