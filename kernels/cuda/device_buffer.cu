// The CUDA runtime calls behind device_buffer<T>; every one checked.
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace herd::kernels::cuda::detail {

void* device_allocate(std::size_t bytes) {
  void* pointer = nullptr;
  HERD_CUDA_CHECK(cudaMalloc(&pointer, bytes));
  return pointer;
}

void device_release(void* pointer) noexcept {
  if (pointer != nullptr)
    cudaFree(pointer); // a destructor must not throw; a failed free only leaks
}

void copy_host_to_device(void* device_destination, const void* host_source, std::size_t bytes) {
  // From pageable memory cudaMemcpy may return before the data reaches the device, and it does not
  // wait for non-blocking streams: synchronise on both sides so the copy is simply done.
  HERD_CUDA_CHECK(cudaDeviceSynchronize());
  HERD_CUDA_CHECK(cudaMemcpy(device_destination, host_source, bytes, cudaMemcpyHostToDevice));
  HERD_CUDA_CHECK(cudaDeviceSynchronize());
}

void copy_device_to_host(void* host_destination, const void* device_source, std::size_t bytes) {
  HERD_CUDA_CHECK(cudaDeviceSynchronize());
  HERD_CUDA_CHECK(cudaMemcpy(host_destination, device_source, bytes, cudaMemcpyDeviceToHost));
}

} // namespace herd::kernels::cuda::detail
