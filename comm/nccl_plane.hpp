// The `nccl` data plane: GPUs in separate processes, one rank per GPU, joined by one NCCL
// communicator per job, over which any subset of ranks runs a weighted group reduction; a watchdog
// aborts the communicator when an operation fails or hangs. No CUDA or NCCL header here: the unique
// id travels as bytes, device buffers as float*, the CUDA stream as void*. Built without NCCL
// (HERD_WITH_NCCL off), everything here throws comm_error "built without NCCL".
#pragma once

#include "comm/backend.hpp"          // work, weighted_input
#include "comm/rendezvous_store.hpp" // comm_error

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace herd::comm {

/// NCCL's unique id (ncclUniqueId, NCCL_UNIQUE_ID_BYTES = 128) as plain bytes, which the control
/// plane carries: the coordinator makes one per job and sends it to every node (no extra
/// rendezvous service).
struct nccl_unique_id {
  static constexpr std::size_t size_bytes = 128;
  std::array<char, size_bytes> bytes{};

  std::string to_bytes() const { return std::string(bytes.data(), bytes.size()); }
  /// Throws std::invalid_argument unless `data` holds exactly size_bytes bytes.
  static nccl_unique_id from_bytes(std::string_view data) {
    if (data.size() != size_bytes)
      throw std::invalid_argument("an NCCL unique id has " + std::to_string(size_bytes) +
                                  " bytes, got " + std::to_string(data.size()));
    nccl_unique_id id;
    data.copy(id.bytes.data(), size_bytes);
    return id;
  }
  friend bool operator==(const nccl_unique_id& a, const nccl_unique_id& b) {
    return a.bytes == b.bytes;
  }
  friend bool operator!=(const nccl_unique_id& a, const nccl_unique_id& b) { return !(a == b); }
};

/// A fresh id (ncclGetUniqueId), for one communicator. It also starts NCCL's bootstrap root in
/// this process, which must stay alive until every rank has joined. Throws comm_error.
nccl_unique_id make_nccl_unique_id();

/// How a reduction among all ranks of the communicator runs (a smaller group always exchanges).
enum class full_group_algorithm {
  allreduce, // scale the own buffer, then ncclAllReduce(sum): 2(k-1)/k of the data per rank
  exchange,  // the subset algorithm (see group_reduce): (k-1) times the data per rank
};

struct nccl_plane_options {
  int device = 0; // the CUDA device of this rank; NCCL refuses two ranks on one device
  /// Bounds the communicator's initialisation, each reduction (from the call to the result on
  /// the device) and the finalisation at destruction; past it the communicator is aborted.
  std::chrono::milliseconds timeout{30000};
  full_group_algorithm full_group = full_group_algorithm::allreduce;
  /// How often the watchdog polls a running reduction (and so the latency of its completion).
  std::chrono::milliseconds poll_interval{1};
};

/// One process's rank of an NCCL communicator of `size` ranks (ncclCommInitRankConfig with
/// blocking = 0, so initialisation and every operation can be watched and aborted).
///
/// group_reduce() is the data plane's weighted group reduction (comm::backend::group_reduce's
/// semantics) among any subset of the ranks:
///   out = sum over inputs of weight * (that rank's send buffer), `count` floats,
/// where each member passes its own `send`. Every member of the group calls it with the same
/// inputs (ranks and weights, in the same order) and count. Members sum in the order of `inputs`,
/// so all of them get the same bits.
///
/// Algorithms, per member, for k members and n floats:
/// - a subset (or all ranks with full_group_algorithm::exchange): in one ncclGroupStart/End the
///   member sends its n floats to each of the other k-1 members and receives theirs, then one pass
///   of the device weighted-sum kernel (kernels::cuda::make_cuda_ops()->weighted_sum) adds the k
///   buffers. It sends and receives (k-1)n floats (the group moves k(k-1)n), in one step, with
///   (k-1)n floats of scratch: the same volume as a ring allreduce (2(k-1)/k n) for k = 2, k/2
///   times it above; right for the small groups of WAGMA (sqrt(P)) and P-Reduce, not for large
///   ones (those would want ncclCommSplit communicators cached per pattern).
/// - all ranks with full_group_algorithm::allreduce: the member's weight times its buffer goes
///   into scratch (one pass), then ncclAllReduce(sum) into out: NCCL's bandwidth-optimal
///   2(k-1)/k n per member, n floats of scratch.
///
/// Errors never throw out of group_reduce: they come back through the work handle, whose error()
/// names the rank, the operation and the cause. A bad call (a rank outside the communicator, a
/// duplicate, this rank missing, a host pointer) fails alone. Anything that fails in NCCL or CUDA,
/// an asynchronous NCCL error, or a reduction that does not finish within options.timeout aborts
/// the communicator (ncclCommAbort): every reduction in flight fails with
///   "nccl rank 0 of 4 (device 0): group reduction among ranks [0, 2] (1000 floats) did not finish
///    within 30000 ms; the communicator was aborted"
/// and every later call fails at once with the same words. A rank that is not in a group takes no
/// part in it; peers that wait for a rank that never calls reach their timeout.
///
/// Buffers: `send` and `out` are device memory on options.device, `count` floats each; `out` may
/// be `send` (in place), other overlaps are refused. The caller has finished writing `send` before
/// the call (or ordered its writes before on stream()), and neither writes `send` nor touches
/// `out` until the work has ended; `out` is unspecified after a failure. The reduction runs on
/// stream(), so work queued there afterwards sees the result.
///
/// Order: calls are serialised (one group_reduce at a time) and each rank's reductions run one
/// after another on its stream, so members must issue the reductions they share in one global
/// order (the coordinator's round order): NCCL matches a pair's sends and receives in issue order,
/// and if rank a's next reduction waits for b while b's waits for c and c's for a, all three hang
/// until their watchdogs abort. group_reduce returns once the reduction is queued on the device
/// (normally microseconds; the first reduction with a peer also connects to it, under the same
/// deadline); the work ends when the result is in `out`. Like kernels/cuda's ops, a call makes
/// options.device current for its duration and then restores the caller's device, so call from a
/// thread that uses this device (CUDA would otherwise make a context on the thread's device 0).
class nccl_plane {
public:
  /// Joins the communicator `id` as `rank` of `size` on options.device. Throws
  /// std::invalid_argument for a bad rank, size or timeout, and comm_error when the device cannot
  /// be used or the initialisation fails or does not finish within options.timeout (then the
  /// communicator is aborted, and the message says so).
  nccl_plane(int rank, int size, const nccl_unique_id& id, nccl_plane_options options);
  /// Finalises the communicator (waiting at most options.timeout for reductions in flight and for
  /// the other ranks of this host, which NCCL synchronises with), or aborts it; never throws.
  ~nccl_plane();
  nccl_plane(const nccl_plane&) = delete;
  nccl_plane& operator=(const nccl_plane&) = delete;

  int rank() const;
  int size() const;
  int device() const;
  /// The cudaStream_t (as void*) on which every reduction runs, owned by the plane.
  void* stream() const;

  std::shared_ptr<work> group_reduce(const std::vector<weighted_input>& inputs, const float* send,
                                     float* out, std::size_t count);

  /// Whether the communicator has been aborted; then abort_reason() is what every call fails with.
  bool aborted() const;
  std::string abort_reason() const;

private:
  class impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herd::comm
