// The alpha-beta ring; see network.hpp.
#include "sim/network.hpp"

#include "kernels/check.hpp"

#include <cmath>

namespace herd::sim {

double reduction_model::reduce_seconds(std::size_t members) const {
  if (members <= 1)
    return 0.0;
  const double k = static_cast<double>(members);
  const double messages = halving_doubling ? std::ceil(std::log2(k)) : k - 1.0;
  const double latency = 2.0 * messages * alpha_seconds;
  const double transfer =
      bytes_per_second > 0.0 ? 2.0 * (k - 1.0) / k * bytes / bytes_per_second : 0.0;
  return latency + transfer;
}

network_preset preset_of(const std::string& network) {
  // Orders of magnitude, not measurements of one system (docs/simulation.md says where they come
  // from): shared memory between processes of one host; TCP over 25 Gb/s Ethernet; NCCL over
  // NVLink between the GPUs of one node.
  if (network == "one-machine")
    return {5.0, 10.0};
  if (network == "25gbe")
    return {25.0, 3.125};
  if (network == "nvlink")
    return {3.0, 150.0};
  HERD_CHECK(false, "simulate.network \"" << network << "\": use one-machine, 25gbe or nvlink");
  return {};
}

reduction_model reduction_model_of(const config::simulate_section& simulate) {
  const auto preset = preset_of(simulate.network);
  const double alpha_us = simulate.alpha_us > 0.0 ? simulate.alpha_us : preset.alpha_us;
  const double gbs = simulate.bandwidth_gbs > 0.0 ? simulate.bandwidth_gbs : preset.bandwidth_gbs;
  return {alpha_us * 1e-6, gbs * 1e9, simulate.model_mb * 1e6,
          simulate.collective == "halving-doubling"};
}

} // namespace herd::sim
