// The CUDA resources of the nccl data plane (nccl_plane.cpp): its stream and memory pool, the
// scratch memory of one reduction, and the event that says a reduction has finished. Private to
// herd::comm; included only where NCCL is built (it brings the CUDA runtime's headers).
#pragma once

#include "kernels/cuda/check.hpp"

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>

namespace herd::comm::nccl_device {

// For the watchdog's thread, which serves one plane: makes `device` current for good. (Restoring
// that thread's default device 0 would make CUDA create a context on GPU 0 in every rank's
// process.) Callers on other threads hold a device_scope for `device`, so this changes nothing
// there.
void make_current(int device);

// Why `pointer` cannot serve as `name`, a device buffer on `device`; empty when it can.
std::string device_buffer_problem(const char* name, const void* pointer, int device);

struct stream_deleter {
  void operator()(std::remove_pointer_t<cudaStream_t>* stream) const noexcept {
    (void)cudaStreamDestroy(stream); // returns at once; queued work still completes
  }
};
using owned_stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, stream_deleter>;

struct pool_deleter {
  void operator()(std::remove_pointer_t<cudaMemPool_t>* pool) const noexcept {
    (void)cudaMemPoolDestroy(pool); // memory still in use is released once freed
  }
};
using owned_pool = std::unique_ptr<std::remove_pointer_t<cudaMemPool_t>, pool_deleter>;

// Scratch memory for one reduction, stream-ordered (cudaMallocFromPoolAsync / cudaFreeAsync on
// the plane's stream): allocating and freeing never wait for the device, so a hung reduction
// cannot block the next call, and the pool (which keeps what it has) makes steady state free.
class scratch_block {
public:
  scratch_block(cudaMemPool_t pool, cudaStream_t stream, std::size_t floats);
  ~scratch_block();
  scratch_block(const scratch_block&) = delete;
  scratch_block& operator=(const scratch_block&) = delete;

  float* data() const { return data_; }

private:
  cudaStream_t stream_;
  float* data_ = nullptr;
};

// The event recorded after a reduction's last step: set once the reduction is queued, read by the
// watchdog's completion query (another thread), destroyed with the last work handle.
class reduction_event {
public:
  explicit reduction_event(int device) : device_(device) {}
  ~reduction_event();
  reduction_event(const reduction_event&) = delete;
  reduction_event& operator=(const reduction_event&) = delete;

  void record(cudaStream_t stream);

  /// Whether the reduction's result is in `out`; throws when the device reports an error.
  bool finished() const;

private:
  const int device_;
  std::atomic<cudaEvent_t> event_{nullptr};
};

} // namespace herd::comm::nccl_device
