// The nccl data plane's reductions (nccl_communicator.hpp): scratch from the plane's pool, the
// kernels on its stream, NCCL's transfers posted under its lock and polled until queued.
#include "comm/nccl_communicator.hpp"
#include "kernels/cuda/wire_kernels.hpp"

#include <cstdint>
#include <thread>

namespace herd::comm::nccl_detail {

namespace {

using kernels::cuda::half_format;

// How often group_reduce asks NCCL whether posted work is queued yet.
constexpr auto settle_poll = std::chrono::microseconds(20);

// Scratch slices start at multiples of 64 floats (256 bytes), so every slice is aligned for the
// weighted-sum kernel's vector loads whatever the count.
constexpr std::size_t slice_alignment_floats = 64;

// A buffer of `count` floats' stride in scratch: whole multiples of the alignment.
std::size_t aligned_stride(std::size_t count) {
  return (count + slice_alignment_floats - 1) / slice_alignment_floats * slice_alignment_floats;
}

ncclDataType_t nccl_type_of(wire_format format) {
  switch (format) {
  case wire_format::fp16:
    return ncclFloat16;
  case wire_format::bf16:
    return ncclBfloat16;
  case wire_format::fp32:
    break;
  }
  return ncclFloat32;
}

half_format half_of(wire_format format) {
  return format == wire_format::fp16 ? half_format::fp16 : half_format::bf16;
}

std::uint16_t* as_halves(float* scratch) {
  return reinterpret_cast<std::uint16_t*>(scratch);
}

} // namespace

// All ranks: own weight times own buffer into scratch, then ncclAllReduce(sum) into out. `out`
// may be `send`: the scaling has read it before the allreduce writes it (stream order). On a
// 16-bit wire the scaled values are rounded into scratch, reduced there in that format, in place,
// and widened into out.
bool nccl_communicator::run_allreduce(const std::vector<weighted_input>& inputs, const float* send,
                                      float* out, std::size_t count,
                                      const operation_options& options,
                                      const watched_operation& operation,
                                      reduction_event& finished) {
  float own_weight = 0.0f;
  for (const auto& input : inputs)
    if (input.rank == rank_)
      own_weight = input.weight;
  auto scaled = std::make_unique<scratch_block>(pool_.get(), stream_.get(),
                                                rounded() ? (count + 1) / 2 : count);
  if (rounded()) {
    kernels::cuda::narrow_on_device(stream_.get(), half_of(options_.compression), send, own_weight,
                                    residual_for(options, count), as_halves(scaled->data()), count);
  } else {
    const float* sources[] = {send};
    ops_->weighted_sum(scaled->data(), sources, &own_weight, 1, count);
  }
  void* reduced = rounded() ? static_cast<void*>(scaled->data()) : static_cast<void*>(out);
  const auto started = post([&] {
    return HERD_NCCL_START(ncclAllReduce(scaled->data(), reduced, count,
                                         nccl_type_of(options_.compression), ncclSum, comm_,
                                         stream_.get()),
                           comm_);
  });
  if (!started || !settle(*started, operation)) {
    abandon(std::move(scaled));
    return false;
  }
  if (rounded())
    kernels::cuda::widen_on_device(stream_.get(), half_of(options_.compression),
                                   as_halves(scaled->data()), out, count);
  finished.record(stream_.get());
  return true;
}

// A subset: receive every other member's buffer into scratch while sending ours to each of them
// (one group, so all transfers progress together), then one weighted sum over the k buffers in the
// order of `inputs`.
bool nccl_communicator::run_exchange(const std::vector<weighted_input>& inputs, const float* send,
                                     float* out, std::size_t count,
                                     const watched_operation& operation,
                                     reduction_event& finished) {
  std::vector<int> peers;
  std::size_t own_position = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].rank == rank_)
      own_position = i;
    else
      peers.push_back(inputs[i].rank);
  }
  const std::size_t stride = aligned_stride(count);
  // In place, the kernel may write over inputs[0] only: elsewhere the sum goes to scratch first.
  const bool sum_aside = out == send && own_position != 0;
  auto scratch = std::make_unique<scratch_block>(pool_.get(), stream_.get(),
                                                 peers.size() * stride + (sum_aside ? count : 0));
  if (!peers.empty()) {
    std::vector<std::pair<int, void*>> receives;
    for (std::size_t j = 0; j < peers.size(); ++j)
      receives.emplace_back(peers[j], scratch->data() + stride * j);
    const auto started = post([&] { return post_exchange(send, receives, count, ncclFloat32); });
    if (!started || !settle(*started, operation)) {
      abandon(std::move(scratch));
      return false;
    }
  }
  std::vector<const float*> sources;
  std::vector<float> weights;
  std::size_t next_peer = 0;
  for (const auto& input : inputs) {
    sources.push_back(input.rank == rank_ ? send : scratch->data() + stride * next_peer++);
    weights.push_back(input.weight);
  }
  float* sum = sum_aside ? scratch->data() + peers.size() * stride : out;
  ops_->weighted_sum(sum, sources.data(), weights.data(), static_cast<int>(inputs.size()), count);
  if (sum_aside)
    HERD_CUDA_CHECK(
        cudaMemcpyAsync(out, sum, count * sizeof(float), cudaMemcpyDeviceToDevice, stream_.get()));
  finished.record(stream_.get());
  return true;
}

// A subset on a 16-bit wire: each member rounds its weighted values (plus its residual) once and
// sends those; every member widens the k rounded buffers it then holds and adds them with weight 1
// in the order of `inputs`, so all get the same bits. Scratch holds k float slices, then k 16-bit
// slices of the same stride; `out` may be `send`, which the rounding has read before the sum.
bool nccl_communicator::run_rounded_exchange(const std::vector<weighted_input>& inputs,
                                             const float* send, float* out, std::size_t count,
                                             const operation_options& options,
                                             const watched_operation& operation,
                                             reduction_event& finished) {
  const auto format = half_of(options_.compression);
  const std::size_t k = inputs.size();
  const std::size_t stride = aligned_stride(count);
  auto scratch = std::make_unique<scratch_block>(pool_.get(), stream_.get(), k * stride * 3 / 2);
  std::uint16_t* halves = as_halves(scratch->data() + k * stride);
  std::uint16_t* own = nullptr;
  std::vector<std::pair<int, void*>> receives;
  for (std::size_t j = 0; j < k; ++j) {
    if (inputs[j].rank != rank_) {
      receives.emplace_back(inputs[j].rank, halves + stride * j);
      continue;
    }
    own = halves + stride * j;
    kernels::cuda::narrow_on_device(stream_.get(), format, send, inputs[j].weight,
                                    residual_for(options, count), own, count);
  }
  if (!receives.empty()) {
    const auto started = post(
        [&] { return post_exchange(own, receives, count, nccl_type_of(options_.compression)); });
    if (!started || !settle(*started, operation)) {
      abandon(std::move(scratch));
      return false;
    }
  }
  std::vector<const float*> sources;
  for (std::size_t j = 0; j < k; ++j) {
    float* widened = scratch->data() + stride * j;
    kernels::cuda::widen_on_device(stream_.get(), format, halves + stride * j, widened, count);
    sources.push_back(widened);
  }
  const std::vector<float> ones(k, 1.0f);
  ops_->weighted_sum(out, sources.data(), ones.data(), static_cast<int>(k), count);
  finished.record(stream_.get());
  return true;
}

// Error feedback's residual for floats [part_offset, part_offset + count) of the buffer reduced
// (null without it): one float per element of the whole buffer, zero at first and again whenever
// the whole buffer's size changes. Holding calls_mutex_; used in stream order only.
float* nccl_communicator::residual_for(const operation_options& options, std::size_t count) {
  if (!options_.error_feedback)
    return nullptr;
  const std::size_t whole = options.whole_count == 0 ? count : options.whole_count;
  if (residual_ == nullptr || residual_floats_ != whole) {
    residual_.reset(); // freed in stream order, after the reductions that used it
    residual_ = std::make_unique<scratch_block>(pool_.get(), stream_.get(), whole);
    residual_floats_ = whole;
    HERD_CUDA_CHECK(cudaMemsetAsync(residual_->data(), 0, whole * sizeof(float), stream_.get()));
  }
  return residual_->data() + options.part_offset;
}

ncclResult_t nccl_communicator::post_exchange(const void* send,
                                              const std::vector<std::pair<int, void*>>& receives,
                                              std::size_t count, ncclDataType_t type) {
  HERD_NCCL_CHECK(ncclGroupStart(), comm_);
  try {
    for (const auto& [peer, buffer] : receives) {
      HERD_NCCL_START(ncclSend(send, count, type, peer, comm_, stream_.get()), comm_);
      HERD_NCCL_START(ncclRecv(buffer, count, type, peer, comm_, stream_.get()), comm_);
    }
  } catch (...) {
    (void)ncclGroupEnd(); // the group is this thread's: close it before the abort
    throw;
  }
  return HERD_NCCL_START(ncclGroupEnd(), comm_);
}

// Waits until the communicator says the posted work is queued on the stream (ncclSuccess). False
// when the watchdog ended the operation meanwhile (its deadline, or an error: the communicator is
// gone); throws when NCCL reports an error first.
bool nccl_communicator::settle(ncclResult_t state, const watched_operation& operation) {
  while (state == ncclInProgress) {
    if (operation.is_completed())
      return false;
    std::this_thread::sleep_for(settle_poll);
    const std::lock_guard<std::mutex> lock(nccl_mutex_);
    if (comm_ == nullptr)
      return false;
    HERD_NCCL_CHECK(ncclCommGetAsyncError(comm_, &state), comm_);
  }
  if (state != ncclSuccess)
    throw std::runtime_error("NCCL reported " + detail::nccl_words(state, nullptr));
  return true;
}

} // namespace herd::comm::nccl_detail
