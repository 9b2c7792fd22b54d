// CUDA device discovery; see device.hpp. Every runtime call is checked, and a failure becomes
// the query's unavailable_reason rather than an abort: a CPU-only machine is a normal case.
#include "kernels/cuda/device.hpp"

#include <cuda_runtime.h>
#include <string>

namespace herd::kernels::cuda {

namespace {

std::string runtime_error_text(cudaError_t status, const char* call) {
  return std::string(call) + " failed with CUDA error " + std::to_string(static_cast<int>(status)) +
         " (" + cudaGetErrorString(status) + ")";
}

} // namespace

device_query query_devices() {
  device_query query;
  query.compiled_with_cuda = true;
  cudaRuntimeGetVersion(&query.runtime_version);
  cudaDriverGetVersion(&query.driver_version);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Without a driver the runtime reports it as one too old for it: say what is the case.
    const auto version = [](int v) {
      return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    };
    if (status == cudaErrorInsufficientDriver && query.driver_version == 0)
      query.unavailable_reason = "no NVIDIA driver on this machine: no GPU, or its driver is not "
                                 "installed";
    else if (status == cudaErrorInsufficientDriver)
      query.unavailable_reason = "the NVIDIA driver supports CUDA " +
                                 version(query.driver_version) + ", older than this build's CUDA " +
                                 version(query.runtime_version) + ": update the driver";
    else if (status == cudaErrorNoDevice)
      query.unavailable_reason = "no CUDA device found";
    else
      query.unavailable_reason = runtime_error_text(status, "cudaGetDeviceCount");
    cudaGetLastError(); // clear the sticky error so later calls start clean
    return query;
  }
  if (count == 0) {
    query.unavailable_reason = "no CUDA device found";
    return query;
  }
  for (int index = 0; index < count; ++index) {
    cudaDeviceProp properties{};
    const cudaError_t got = cudaGetDeviceProperties(&properties, index);
    if (got != cudaSuccess) {
      query.unavailable_reason = runtime_error_text(got, "cudaGetDeviceProperties");
      query.devices.clear();
      return query;
    }
    device_description device;
    device.index = index;
    device.name = properties.name;
    device.compute_major = properties.major;
    device.compute_minor = properties.minor;
    device.memory_gib = static_cast<double>(properties.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    device.multiprocessors = properties.multiProcessorCount;
    query.devices.push_back(device);
  }
  return query;
}

} // namespace herd::kernels::cuda
