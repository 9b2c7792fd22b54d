// What CUDA devices this process can use. Compiled with nvcc when the build has CUDA
// (HERD_WITH_CUDA); without it, the query says so. No CUDA headers here, so any file may ask.
#pragma once

#include <string>
#include <vector>

namespace herd::kernels::cuda {

struct device_description {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  double memory_gib = 0.0;
  int multiprocessors = 0;
};

struct device_query {
  bool compiled_with_cuda = false;
  std::vector<device_description> devices;
  /// Why there are no devices: "built without CUDA", or the runtime's words (error 35, "CUDA
  /// driver version is insufficient for CUDA runtime version", on a machine with no driver).
  std::string unavailable_reason;
  int runtime_version = 0; // e.g. 13000
  int driver_version = 0;  // 0 when there is no driver
};

/// Asks the CUDA runtime once; never throws, never aborts, with or without a GPU.
device_query query_devices();

/// One line for `herd --version` and logs: "CUDA 13.0: 1 device (NVIDIA H200, sm_90, 139.8 GiB)".
std::string describe(const device_query& query);

} // namespace herd::kernels::cuda
