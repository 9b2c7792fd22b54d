// device_memory(): one CUDA device's memory (include/herd/memory.hpp), made on first use and kept
// for the program's life. See cuda_ops.hpp for the contract.
#include "kernels/check.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cuda_ops.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace herd::kernels::cuda {

namespace {

std::string mebibytes(std::size_t bytes) {
  return std::to_string((bytes + (std::size_t{1} << 19)) >> 20) + " MiB";
}

int checked_device(int device) {
  int count = 0;
  HERD_CUDA_CHECK(cudaGetDeviceCount(&count));
  HERD_CHECK(device >= 0 && device < count,
             "no CUDA device " << device << "; this machine has " << count);
  return device;
}

// One device's memory (include/herd/memory.hpp): synchronous, device-wide copies for setup and
// checks.
class device_memory_space final : public memory {
public:
  explicit device_memory_space(int device)
      : device_(device), name_("cuda:" + std::to_string(device)) {}

  std::string_view name() const override { return name_; }
  bool host_accessible() const override { return false; }

  // Out of memory says how much was asked for, what is free, and what a run can change.
  void* allocate(std::size_t bytes) const override {
    const device_scope scope(device_);
    void* pointer = nullptr;
    const cudaError_t status = cudaMalloc(&pointer, bytes);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError(); // not sticky: the device works on
      std::size_t free = 0;
      std::size_t total = 0;
      const bool known = cudaMemGetInfo(&free, &total) == cudaSuccess;
      (void)cudaGetLastError();
      throw std::runtime_error(
          name_ + " is out of memory: " + mebibytes(bytes) + " asked for, " +
          (known ? mebibytes(free) + " free of " + mebibytes(total) : "how much is free unknown") +
          ". A run on the GPU keeps each worker's model, gradient, optimizer state and the "
          "activations of train.batch-size samples on the device: fewer train.workers or a "
          "smaller train.batch-size need less");
    }
    HERD_CUDA_CHECK(status);
    return pointer;
  }

  void release(void* pointer) const noexcept override {
    if (pointer == nullptr)
      return;
    const quiet_device_scope scope(device_);
    cudaFree(pointer); // a failed free only leaks; never throws
  }

  // Every copy waits for the whole device before and after: the streams of the ops objects may
  // still be writing the source, and the caller reuses the destination at once.
  void copy(void* destination, const void* source, std::size_t bytes) const override {
    transfer(destination, source, bytes, cudaMemcpyDeviceToDevice);
  }
  void upload(void* destination, const void* host_source, std::size_t bytes) const override {
    transfer(destination, host_source, bytes, cudaMemcpyHostToDevice);
  }
  void download(void* host_destination, const void* source, std::size_t bytes) const override {
    transfer(host_destination, source, bytes, cudaMemcpyDeviceToHost);
  }
  void zero(void* destination, std::size_t bytes) const override {
    const device_scope scope(device_);
    HERD_CUDA_CHECK(cudaDeviceSynchronize());
    HERD_CUDA_CHECK(cudaMemset(destination, 0, bytes));
    HERD_CUDA_CHECK(cudaDeviceSynchronize());
  }

private:
  void transfer(void* destination, const void* source, std::size_t bytes,
                cudaMemcpyKind kind) const {
    if (bytes == 0)
      return;
    const device_scope scope(device_);
    HERD_CUDA_CHECK(cudaDeviceSynchronize());
    HERD_CUDA_CHECK(cudaMemcpy(destination, source, bytes, kind));
    HERD_CUDA_CHECK(cudaDeviceSynchronize());
  }

  int device_;
  std::string name_;
};

} // namespace

const memory& device_memory(int device) {
  checked_device(device);
  // One per device, made on first use and kept for the program's life: buffers may outlive any
  // ops object, and their destructors release through it.
  // Never destroyed: a buffer released during static destruction still finds its memory.
  static auto* made_mutex = new std::mutex;
  static auto* made = new std::map<int, std::unique_ptr<device_memory_space>>;
  const std::lock_guard<std::mutex> lock(*made_mutex);
  auto& space = (*made)[device];
  if (!space)
    space = std::make_unique<device_memory_space>(device);
  return *space;
}

} // namespace herd::kernels::cuda
