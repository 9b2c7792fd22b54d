// The one-line description of a device query, and the CPU-only build's query.
#include "kernels/cuda/device.hpp"

#include <cstdio>

namespace herd::kernels::cuda {

#ifndef HERD_WITH_CUDA
device_query query_devices() {
  device_query query;
  query.unavailable_reason = "built without CUDA";
  return query;
}
#endif

std::string describe(const device_query& query) {
  if (!query.compiled_with_cuda)
    return "CUDA: off (" + query.unavailable_reason + ")";
  char version[32];
  std::snprintf(version, sizeof version, "CUDA %d.%d", query.runtime_version / 1000,
                (query.runtime_version % 1000) / 10);
  std::string text = version;
  if (query.devices.empty())
    return text + ": no device (" + query.unavailable_reason + ")";
  text += ": " + std::to_string(query.devices.size()) +
          (query.devices.size() == 1 ? " device" : " devices");
  for (const auto& device : query.devices) {
    char line[160];
    std::snprintf(line, sizeof line, "%s%s, sm_%d%d, %.1f GiB",
                  &device == &query.devices.front() ? " (" : "; ", device.name.c_str(),
                  device.compute_major, device.compute_minor, device.memory_gib);
    text += line;
  }
  return text + ")";
}

} // namespace herd::kernels::cuda
