// The nccl data plane's communicator (nccl_plane.hpp), private to herd::comm: nccl_plane.cpp has
// its lifetime, the watchdog's callbacks and the checks of a call; nccl_reductions.cpp the
// reductions on the device. Brings the CUDA runtime's and NCCL's headers.
#pragma once

#include "comm/nccl_check.hpp"
#include "comm/nccl_device.hpp"
#include "comm/nccl_plane.hpp"
#include "comm/watchdog.hpp"
#include "kernels/cuda/cuda_ops.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace herd::comm::nccl_detail {

using nccl_device::owned_pool;
using nccl_device::owned_stream;
using nccl_device::reduction_event;
using nccl_device::scratch_block;

class nccl_communicator final : public nccl_plane {
public:
  nccl_communicator(int rank, int size, const nccl_unique_id& id, nccl_plane_options options);
  ~nccl_communicator() override;

  void* stream() const override { return stream_.get(); }
  bool aborted() const override { return watchdog_->aborted(); }
  std::string abort_reason() const override { return watchdog_->abort_message(); }
  const kernels::memory& memory() const override {
    return kernels::cuda::device_memory(options_.device);
  }
  std::shared_ptr<work> group_reduce(const std::vector<weighted_input>& inputs, const float* send,
                                     float* out, std::size_t count,
                                     const operation_options& options) override;

private:
  void initialise(const nccl_unique_id& id);
  void finalise();
  std::string check_call(const std::vector<weighted_input>& inputs, const float* send,
                         const float* out, std::size_t count) const;
  bool run_allreduce(const std::vector<weighted_input>& inputs, const float* send, float* out,
                     std::size_t count, const operation_options& options,
                     const watched_operation& operation, reduction_event& finished);
  bool run_exchange(const std::vector<weighted_input>& inputs, const float* send, float* out,
                    std::size_t count, const watched_operation& operation,
                    reduction_event& finished);
  bool run_rounded_exchange(const std::vector<weighted_input>& inputs, const float* send,
                            float* out, std::size_t count, const operation_options& options,
                            const watched_operation& operation, reduction_event& finished);
  // Holding nccl_mutex_: one send of `send` to, and one receive into its buffer from, every peer
  // of `receives`, fused in one group.
  ncclResult_t post_exchange(const void* send, const std::vector<std::pair<int, void*>>& receives,
                             std::size_t count, ncclDataType_t type);
  bool rounded() const { return options_.compression != wire_format::fp32; }
  float* residual_for(const operation_options& options, std::size_t count);
  bool settle(ncclResult_t state, const watched_operation& operation);
  // Keeps the scratch of a reduction that the abort ended until the plane goes: settle returns
  // once the abort has taken the communicator, while NCCL's background job may still queue
  // kernels that use the block until the abort has joined it. (After an abort every later call
  // fails at once, so nothing is kept for long.) Holding calls_mutex_.
  void abandon(std::unique_ptr<scratch_block> block) { abandoned_.push_back(std::move(block)); }

  // Runs `call` (NCCL calls on comm_) holding nccl_mutex_; nothing when the communicator is gone.
  template <class Call>
  std::optional<ncclResult_t> post(Call&& call) {
    const std::lock_guard<std::mutex> lock(nccl_mutex_);
    if (comm_ == nullptr)
      return std::nullopt;
    return call();
  }

  // The watchdog's callbacks.
  bool communicator_ready();
  std::string async_error();
  std::string abort_communicator();
  std::string drain_stream();

  const nccl_plane_options options_;
  const std::string subject_;
  owned_stream stream_;
  owned_pool pool_;
  std::unique_ptr<kernels::ops> ops_; // the weighted sum, on stream_

  std::mutex calls_mutex_; // one group_reduce (or the destructor) at a time
  std::vector<std::unique_ptr<scratch_block>> abandoned_; // see abandon(); under calls_mutex_
  std::unique_ptr<scratch_block> residual_; // error feedback's (residual_for); under calls_mutex_
  std::size_t residual_floats_ = 0;
  std::mutex nccl_mutex_; // comm_ and every NCCL call on it
  ncclComm_t comm_ = nullptr;

  std::unique_ptr<watchdog> watchdog_; // last: its callbacks use everything above
};

} // namespace herd::comm::nccl_detail
