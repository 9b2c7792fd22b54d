// The nccl data plane (see nccl_plane.hpp): one non-blocking NCCL communicator, group reductions
// by grouped ncclSend/ncclRecv (or ncclAllReduce for all ranks) followed by the device weighted
// sum, and a watchdog (comm/watchdog.hpp) that aborts the communicator on an error or a deadline.
// This file: the communicator's lifetime, the watchdog's callbacks and the checks of a call; the
// reductions themselves are in nccl_reductions.cpp. Host code only (the kernels are
// kernels/cuda's), so g++ compiles it.
//
// How NCCL's non-blocking mode is used (nccl.h and NCCL's src/init.cc and src/group.cc, 2.28):
// * With config.blocking = 0, ncclCommInitRankConfig, ncclGroupEnd, ncclAllReduce and
//   ncclCommFinalize may return ncclInProgress: the work goes on in an NCCL thread, and
//   ncclCommGetAsyncError says ncclInProgress until it is done (ncclSuccess) or has failed. No
//   other NCCL call on the communicator, and no kernel on the stream NCCL uses, may come before it
//   says ncclSuccess ("Attempt to use communicator before the previous operation returned
//   ncclSuccess"), so group_reduce polls it, under the operation's deadline, before it returns.
// * ncclCommGetAsyncError is not a plain read: once a background group job is done it joins that
//   job's thread, so two threads must not call it at once. Every NCCL call on the communicator,
//   the watchdog's queries included, holds nccl_mutex_, briefly (none of them blocks in
//   non-blocking mode). The abort, which can block, takes the communicator out under the lock and
//   runs outside it.
// * ncclCommAbort sets the communicator's abort flags (NCCL's kernels, proxy and bootstrap sockets
//   poll them), joins an initialisation or group job still running, and frees everything; it
//   blocks even on a non-blocking communicator (a communicator being destroyed makes its group
//   blocking). It is how a hung initialisation or a hung operation ends.
// * ncclCommDestroy without ncclCommFinalize synchronises with the host's other ranks
//   (commDestroySync's intra-node barrier), blocking; ncclCommFinalize does that work in the
//   background. So the destructor finalises under the deadline, then destroys.
#include "comm/nccl_communicator.hpp"
#include "kernels/cuda/wire_kernels.hpp"

#include <cstdint>
#include <cstring>
#include <thread>

namespace herd::comm {

namespace nccl_detail {

namespace {

using kernels::cuda::device_scope;
using kernels::cuda::quiet_device_scope;
using nccl_device::device_buffer_problem;
using nccl_device::make_current;

using std::chrono::milliseconds;

static_assert(NCCL_UNIQUE_ID_BYTES == nccl_unique_id::size_bytes,
              "nccl_unique_id must hold exactly an ncclUniqueId");
static_assert(sizeof(ncclUniqueId) == nccl_unique_id::size_bytes,
              "nccl_unique_id must hold exactly an ncclUniqueId");

// How long past its deadline an operation may take to end: the watchdog's abort (NCCL joins its
// threads and waits for its kernels to notice the abort flag) and the stream's draining.
constexpr milliseconds abort_allowance = std::chrono::seconds(60);

std::string describe(const std::vector<int>& ranks) {
  std::string text = "[";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return text + "]";
}

} // namespace

nccl_communicator::nccl_communicator(int rank, int size, const nccl_unique_id& id,
                                     nccl_plane_options options)
    : nccl_plane(rank, size, options.device), options_(options),
      subject_("nccl rank " + std::to_string(rank) + " of " + std::to_string(size) + " (device " +
               std::to_string(options.device) + ")") {
  if (size < 1 || rank < 0 || rank >= size)
    throw std::invalid_argument("nccl_plane: rank " + std::to_string(rank) +
                                " is outside a communicator of size " + std::to_string(size));
  if (options.device < 0)
    throw std::invalid_argument("nccl_plane: device " + std::to_string(options.device) +
                                " is negative");
  if (options.timeout.count() <= 0 || options.poll_interval.count() <= 0)
    throw std::invalid_argument(subject_ + ": timeout (" + std::to_string(options.timeout.count()) +
                                " ms) and poll_interval (" +
                                std::to_string(options.poll_interval.count()) +
                                " ms) must be positive");
  try {
    const device_scope scope(options_.device);
    cudaStream_t stream = nullptr;
    HERD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_.reset(stream);
    cudaMemPoolProps properties{};
    properties.allocType = cudaMemAllocationTypePinned;
    properties.handleTypes = cudaMemHandleTypeNone;
    properties.location.type = cudaMemLocationTypeDevice;
    properties.location.id = options_.device;
    cudaMemPool_t pool = nullptr;
    HERD_CUDA_CHECK(cudaMemPoolCreate(&pool, &properties));
    pool_.reset(pool);
    // Keep freed scratch for the next reduction instead of returning it at every synchronisation.
    std::uint64_t keep_everything = UINT64_MAX;
    HERD_CUDA_CHECK(
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
    ops_ = kernels::cuda::make_cuda_ops(options_.device, stream);
    // Loaded now, not at the first reduction, where loading could wait for a stalled stream
    // (measured on an H200: group_reduce then returned only once the stream moved on).
    kernels::cuda::load_weighted_sum_kernels(options_.device);
    if (rounded())
      kernels::cuda::load_wire_kernels(options_.device);
  } catch (const std::exception& failure) {
    throw comm_error(outcome::failed, subject_ + ": cannot use CUDA device " +
                                          std::to_string(options_.device) + ": " + failure.what());
  }
  watchdog_options polling;
  polling.busy_poll = options_.poll_interval;
  watchdog_ = std::make_unique<watchdog>(
      subject_, [this] { return async_error(); },
      [this](const std::string&) { return abort_communicator(); }, polling);
  initialise(id);
}

void nccl_communicator::initialise(const nccl_unique_id& id) {
  ncclUniqueId nccl_id{};
  std::memcpy(nccl_id.internal, id.bytes.data(), nccl_unique_id::size_bytes);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  try {
    const device_scope scope(options_.device); // the communicator takes the current device
    const std::lock_guard<std::mutex> lock(nccl_mutex_);
    HERD_NCCL_START(ncclCommInitRankConfig(&comm_, size_, nccl_id, rank_, &config), comm_);
  } catch (const std::exception& failure) {
    // A failed call may still have made a communicator (in error): the abort frees it.
    const quiet_device_scope scope(options_.device);
    throw comm_error(
        outcome::aborted,
        watchdog_->abort(std::string("communicator initialisation failed: ") + failure.what()));
  }
  auto operation = watchdog_->watch(
      "communicator initialisation", [this] { return communicator_ready(); }, options_.timeout);
  const status initialised = operation->wait(options_.timeout + abort_allowance);
  if (!operation->is_completed())
    throw comm_error(outcome::timeout,
                     subject_ + ": communicator initialisation did not end within " +
                         std::to_string((options_.timeout + abort_allowance).count()) +
                         " ms, even counting the abort");
  if (!initialised.ok())
    throw comm_error(initialised);
}

nccl_communicator::~nccl_communicator() {
  const std::lock_guard<std::mutex> one_call(calls_mutex_);
  try {
    finalise();
  } catch (const std::exception& failure) {
    const quiet_device_scope scope(options_.device);
    watchdog_->abort(std::string("finalisation failed: ") + failure.what());
  }
  watchdog_.reset(); // before the stream, the pool and the ops its callbacks use
  const quiet_device_scope scope(options_.device);
  abandoned_.clear(); // the abort, if any, has returned: NCCL uses them no more
}

void nccl_communicator::finalise() {
  if (watchdog_->aborted())
    return;
  if (!post([this] { return HERD_NCCL_START(ncclCommFinalize(comm_), comm_); }))
    return;
  auto operation = watchdog_->watch(
      "finalisation", [this] { return communicator_ready(); }, options_.timeout);
  if (!operation->wait(options_.timeout + abort_allowance).ok())
    return; // the watchdog aborted the communicator
  const device_scope scope(options_.device);
  const std::lock_guard<std::mutex> lock(nccl_mutex_);
  // Gone whatever the destroy says: a communicator is not aborted after a destroy.
  ncclComm_t closing = std::exchange(comm_, nullptr);
  HERD_NCCL_CHECK(ncclCommDestroy(closing), nullptr);
}

bool nccl_communicator::communicator_ready() {
  const std::lock_guard<std::mutex> lock(nccl_mutex_);
  if (comm_ == nullptr)
    return false;
  ncclResult_t state = ncclInProgress;
  HERD_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state), comm_);
  return state == ncclSuccess; // an error: async_error() reports it, in the same polling round
}

std::string nccl_communicator::async_error() {
  const std::lock_guard<std::mutex> lock(nccl_mutex_);
  if (comm_ == nullptr)
    return {};
  ncclResult_t state = ncclSuccess;
  HERD_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state), comm_);
  if (state == ncclSuccess || state == ncclInProgress)
    return {};
  return "NCCL reported an asynchronous error: " + detail::nccl_words(state, comm_);
}

// The communicator leaves comm_ under the lock, so no other thread calls NCCL on it again, and is
// aborted outside it: the abort can block until the stream moves (it frees device memory), and a
// caller polling its operation (settle) must still see comm_ gone and return meanwhile.
std::string nccl_communicator::abort_communicator() {
  ncclComm_t aborting = nullptr;
  {
    const std::lock_guard<std::mutex> lock(nccl_mutex_);
    if (comm_ == nullptr)
      return {}; // none was made, or it was destroyed: nothing to abort
    aborting = std::exchange(comm_, nullptr);
  }
  const ncclResult_t result = ncclCommAbort(aborting);
  std::string outcome = result == ncclSuccess
                            ? "the communicator was aborted"
                            : "ncclCommAbort failed: " + detail::nccl_words(result, nullptr);
  return outcome + drain_stream();
}

// Once the communicator is aborted its kernels end; this waits (bounded) until the stream has
// run what was queued behind them, so that a failed reduction's buffers are no longer written.
// Empty when it drained; otherwise why the caller should not trust the buffers yet.
std::string nccl_communicator::drain_stream() {
  try {
    make_current(options_.device);
  } catch (const std::exception& failure) {
    return std::string("; its stream could not be checked: ") + failure.what();
  }
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream_.get());
    if (status == cudaSuccess)
      return {};
    if (status != cudaErrorNotReady) {
      (void)cudaGetLastError();
      return std::string("; the device reported ") + cudaGetErrorName(status) + " (" +
             cudaGetErrorString(status) + ")";
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return "; its stream still had work " + std::to_string(options_.timeout.count()) +
             " ms later, so the buffers of the failed reductions may still be written";
    std::this_thread::sleep_for(milliseconds(1));
  }
}

std::string nccl_communicator::check_call(const std::vector<weighted_input>& inputs,
                                          const float* send, const float* out,
                                          std::size_t count) const {
  std::vector<int> ranks;
  ranks.reserve(inputs.size());
  for (const auto& input : inputs)
    ranks.push_back(input.rank);
  if (ranks.empty())
    return "inputs is empty; it must list this rank " + std::to_string(rank_);
  std::vector<bool> seen(static_cast<std::size_t>(size_), false);
  for (int rank : ranks) {
    if (rank < 0 || rank >= size_)
      return "rank " + std::to_string(rank) + " in " + describe(ranks) +
             " is outside the communicator of " + std::to_string(size_) + " ranks";
    if (seen[static_cast<std::size_t>(rank)])
      return "rank " + std::to_string(rank) + " appears twice in " + describe(ranks);
    seen[static_cast<std::size_t>(rank)] = true;
  }
  if (!seen[static_cast<std::size_t>(rank_)])
    return "this rank " + std::to_string(rank_) + " is not in " + describe(ranks);
  if (count == 0)
    return {};
  if (send == nullptr || out == nullptr)
    return "send and out must be device buffers of " + std::to_string(count) +
           " floats, but one is null";
  if (send != out) {
    const auto send_at = reinterpret_cast<std::uintptr_t>(send);
    const auto out_at = reinterpret_cast<std::uintptr_t>(out);
    const std::uintptr_t bytes = count * sizeof(float);
    if (send_at < out_at + bytes && out_at < send_at + bytes)
      return "out overlaps send without being send (in place)";
  }
  if (auto problem = device_buffer_problem("send", send, options_.device); !problem.empty())
    return problem;
  return device_buffer_problem("out", out, options_.device);
}

std::shared_ptr<work> nccl_communicator::group_reduce(const std::vector<weighted_input>& inputs,
                                                      const float* send, float* out,
                                                      std::size_t count,
                                                      const operation_options& options) {
  const auto timeout = options.timeout.count() > 0 ? options.timeout : options_.timeout;
  const std::lock_guard<std::mutex> one_call(calls_mutex_);
  std::optional<device_scope> scope;
  try {
    scope.emplace(options_.device);
  } catch (const std::exception& failure) {
    return ended_work({outcome::failed, subject_ + ": group_reduce: " + failure.what()});
  }
  auto problem = check_call(inputs, send, out, count);
  if (problem.empty())
    problem = part_error(count, options);
  if (!problem.empty())
    return ended_work({outcome::invalid_argument, subject_ + ": group_reduce: " + problem});
  std::vector<int> members;
  members.reserve(inputs.size());
  for (const auto& input : inputs)
    members.push_back(input.rank);
  const std::string description = "group reduction among ranks " + describe(members) + " (" +
                                  std::to_string(count) + " floats)";
  if (count == 0)
    return watchdog_->aborted() ? ended_work({outcome::aborted, watchdog_->abort_message()})
                                : ended_work({});
  auto finished = std::make_shared<reduction_event>(options_.device);
  auto operation = watchdog_->watch(
      description, [finished] { return finished->finished(); }, timeout);
  if (operation->is_completed())
    return operation; // the communicator was aborted earlier: the operation says why
  try {
    const bool all_reduce = inputs.size() == static_cast<std::size_t>(size_) &&
                            options_.full_group == full_group_algorithm::allreduce;
    if (all_reduce)
      run_allreduce(inputs, send, out, count, options, *operation, *finished);
    else if (rounded())
      run_rounded_exchange(inputs, send, out, count, options, *operation, *finished);
    else
      run_exchange(inputs, send, out, count, *operation, *finished);
  } catch (const std::exception& failure) {
    // The communicator's state is unknown after a failed call: abort it (the operation fails).
    watchdog_->abort(description + " failed: " + failure.what());
  }
  return operation;
}

} // namespace nccl_detail

nccl_unique_id make_nccl_unique_id() {
  ncclUniqueId raw{};
  try {
    HERD_NCCL_CHECK(ncclGetUniqueId(&raw), nullptr);
  } catch (const std::exception& failure) {
    throw comm_error(outcome::failed, std::string("make_nccl_unique_id: ") + failure.what());
  }
  nccl_unique_id id;
  std::memcpy(id.bytes.data(), raw.internal, nccl_unique_id::size_bytes);
  return id;
}

std::string nccl_description() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess)
    return "NCCL (version unknown)";
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9.
  return "NCCL " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) +
         "." + std::to_string(version % 100);
}

std::unique_ptr<nccl_plane> make_nccl_plane(int rank, int size, const nccl_unique_id& id,
                                            nccl_plane_options options) {
  return std::make_unique<nccl_detail::nccl_communicator>(rank, size, id, options);
}

} // namespace herd::comm
