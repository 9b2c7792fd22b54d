// The CUDA resources of the nccl data plane (nccl_device.hpp).
#include "comm/nccl_device.hpp"

namespace herd::comm::nccl_device {

using kernels::cuda::quiet_device_scope;

void make_current(int device) {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device)
    HERD_CUDA_CHECK(cudaSetDevice(device));
}

std::string device_buffer_problem(const char* name, const void* pointer, int device) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, pointer);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string(name) + " cannot be inspected by CUDA (" + cudaGetErrorString(status) + ")";
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged)
    return std::string(name) + " is not device memory (host memory, or memory CUDA does not know)";
  if (attributes.device != device)
    return std::string(name) + " is memory of CUDA device " + std::to_string(attributes.device) +
           ", but this rank uses device " + std::to_string(device);
  return {};
}

scratch_block::scratch_block(cudaMemPool_t pool, cudaStream_t stream, std::size_t floats)
    : stream_(stream) {
  if (floats == 0)
    return;
  void* memory = nullptr;
  HERD_CUDA_CHECK(cudaMallocFromPoolAsync(&memory, floats * sizeof(float), pool, stream));
  data_ = static_cast<float*>(memory);
}

scratch_block::~scratch_block() {
  if (data_ != nullptr)
    (void)cudaFreeAsync(data_, stream_);
}

reduction_event::~reduction_event() {
  if (cudaEvent_t event = event_.load(); event != nullptr) {
    const quiet_device_scope scope(device_);
    (void)cudaEventDestroy(event);
  }
}

void reduction_event::record(cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  HERD_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  const cudaError_t recorded = cudaEventRecord(event, stream);
  if (recorded != cudaSuccess) {
    (void)cudaEventDestroy(event);
    ::herd::detail::cuda_call_failed(__FILE__, __LINE__, "cudaEventRecord(event, stream)",
                                     recorded);
  }
  event_.store(event);
}

bool reduction_event::finished() const {
  cudaEvent_t event = event_.load();
  if (event == nullptr)
    return false; // still being queued
  make_current(device_);
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaErrorNotReady)
    return false;
  if (status != cudaSuccess)
    ::herd::detail::cuda_call_failed(__FILE__, __LINE__, "cudaEventQuery(event)", status);
  return true;
}

} // namespace herd::comm::nccl_device
