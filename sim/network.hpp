// The data plane as an alpha-beta model: a group of k members reduces n bytes with a ring
// allreduce, 2(k-1) messages of latency alpha and 2(k-1)/k n bytes through each member's link
// (reduce-scatter, then allgather), or by recursive halving then doubling (Rabenseifner's),
// 2 ceil(log2 k) messages for the same bytes. docs/simulation.md lists the presets.
#pragma once

#include "herd/run_config.hpp"

#include <cstddef>
#include <string>

namespace herd::sim {

struct reduction_model {
  double alpha_seconds = 0.0;    // one message's latency
  double bytes_per_second = 0.0; // one link's bandwidth; 0 = infinite
  double bytes = 0.0;            // what one round reduces (the model's size)
  bool halving_doubling = false; // simulate.collective = halving-doubling; else a ring

  /// A ring's 2(k-1) alpha + 2(k-1)/k n / beta, or halving-doubling's 2 ceil(log2 k) alpha +
  /// 2(k-1)/k n / beta; 0 for a group of one (nothing to exchange).
  double reduce_seconds(std::size_t members) const;
};

/// A network's alpha and bandwidth.
struct network_preset {
  double alpha_us = 0.0;
  double bandwidth_gbs = 0.0; // GB/s (10^9 bytes)
};

/// simulate.network's preset: "one-machine", "25gbe" or "nvlink". Throws std::invalid_argument
/// for another name.
network_preset preset_of(const std::string& network);

/// The reductions of [simulate]: simulate.collective over the network's preset, with
/// simulate.alpha-us and simulate.bandwidth-gbs replacing its values where they are set
/// (non-zero).
reduction_model reduction_model_of(const config::simulate_section& simulate);

} // namespace herd::sim
