// The `nccl` data plane: GPUs in separate processes, one rank per GPU, joined by one NCCL
// communicator per job, over which any subset of ranks runs a weighted group reduction; a watchdog
// aborts the communicator when an operation fails or hangs. No CUDA or NCCL header here: the unique
// id travels as bytes, device buffers as float*, the CUDA stream as void*. Built without NCCL
// (HERD_WITH_NCCL off), everything here throws comm_error (`unsupported`) "built without NCCL".
#pragma once

#include "comm/data_plane.hpp"
#include "comm/wire_format.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

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
  /// Bounds the communicator's initialisation, a reduction without a deadline of its own (from
  /// the call to the result on the device) and the finalisation at destruction.
  std::chrono::milliseconds timeout{30000};
  full_group_algorithm full_group = full_group_algorithm::allreduce;
  /// How often the watchdog polls a running reduction (and so the latency of its completion).
  std::chrono::milliseconds poll_interval{1};
  /// How a reduction's values cross the wire (comm.compression): fp32 as they are; fp16 or bf16
  /// rounded once by their sender, which halves the bytes (see group_reduce below).
  wire_format compression = wire_format::fp32;
  /// With fp16 or bf16: what each rounding of this rank's values took is added to that element
  /// before its next rounding (comm.error-feedback); ignored with fp32.
  bool error_feedback = false;
};

/// One process's rank of an NCCL communicator of `size` ranks (ncclCommInitRankConfig with
/// blocking = 0, so initialisation and every operation can be watched and aborted), device memory
/// on options.device only. It supports group_reduce among any subset of the ranks (every member
/// sums in the order of `inputs`, so all get the same bits); not attach or broadcast.
///
/// Algorithms (docs/gpu.md has their costs): a subset, or all ranks with `exchange`, swaps buffers
/// in one ncclGroupStart/End and adds them in one pass of the device weighted-sum kernel; all
/// ranks with `allreduce` scale the own buffer, then run ncclAllReduce(sum).
///
/// Results: a bad call (a rank outside the communicator, a duplicate, this rank missing, a host
/// pointer, out overlapping send other than in place, a part outside its whole buffer) fails
/// alone, `invalid_argument`. A failure in NCCL or CUDA, an asynchronous NCCL error, or a
/// reduction (or the initialisation) past its deadline makes the watchdog abort the communicator
/// (ncclCommAbort): the overdue reduction ends `timeout`, every other in flight and every later
/// call `aborted`, all with one message, e.g.
///   "nccl rank 0 of 4 (device 0): group reduction among ranks [0, 2] (1000 floats) did not finish
///    within 30000 ms; the communicator was aborted".
///
/// A 16-bit wire (options.compression): each member rounds its weighted values (plus its
/// residual, with error feedback) once, on the device, to the bits the CPU's rounding gives
/// (comm/wire_format.hpp). A subset then exchanges the rounded values and every member adds
/// them, widened, in the order of `inputs`: all members get the same bits. All ranks with
/// `allreduce` run ncclAllReduce on the 16-bit values, in which NCCL rounds each partial sum to
/// the format again, and widen the result; with fp16 a partial sum past 65504 becomes infinite
/// there. Error feedback keeps one residual per element of the whole buffer (a part's elements
/// by operation_options::part_offset); only this rank's own rounding feeds it, not NCCL's.
///
/// Streams and order: the caller has finished writing `send` before the call (or ordered its
/// writes before it on stream()); the reduction runs on stream(), so work queued there afterwards
/// sees the result. Each rank's reductions run one after another, so members must issue those
/// they share in one global order (the coordinator's round order): NCCL matches a pair's sends
/// and receives in issue order, and a cycle (a waits for b, b for c, c for a) hangs until the
/// watchdogs abort. group_reduce returns once the reduction is queued (a first reduction with a
/// peer also connects to it, under the same deadline). A call makes options.device current for
/// its duration, then restores the caller's: call from a thread that uses this device.
class nccl_plane : public data_plane {
public:
  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  /// The cudaStream_t (as void*) on which every reduction runs, owned by the plane.
  virtual void* stream() const = 0;
  /// Whether the communicator has been aborted; then abort_reason() is what every call fails with.
  virtual bool aborted() const = 0;
  virtual std::string abort_reason() const = 0;

  std::string_view name() const override { return "nccl"; }
  bool supports(operation op) const override { return op == operation::group_reduce; }
  bool matches_in_issue_order() const override { return true; }

protected:
  nccl_plane(int rank, int size, int device) : rank_(rank), size_(size), device_(device) {}
  const int rank_;
  const int size_;
  const int device_;
};

/// Joins the communicator `id` as `rank` of `size` on options.device. Throws
/// std::invalid_argument for a bad rank, size or timeout, and comm_error when the device cannot be
/// used or the initialisation fails or does not finish within options.timeout (then the
/// communicator is aborted, and the message says so). Destroying the plane finalises the
/// communicator (waiting at most options.timeout for reductions in flight and for the other ranks
/// of this host, which NCCL synchronises with), or aborts it; never throws. A reduction's deadline
/// is its operation_options.timeout, or options.timeout when unset; the tag is unused.
/// What this build does for NCCL, for `herd devices`: "NCCL 2.21.5", or "built without NCCL".
std::string nccl_description();

std::unique_ptr<nccl_plane> make_nccl_plane(int rank, int size, const nccl_unique_id& id,
                                            nccl_plane_options options);

} // namespace herd::comm
