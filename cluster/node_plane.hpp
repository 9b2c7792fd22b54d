// The Gloo options of a node's data plane: what the run's [comm] settings and the coordinator's
// key for a generation make of them, apart from the node's actors so that tests check that every
// setting arrives. No CAF.
#pragma once

#include "comm/gloo_plane.hpp"
#include "herd/run_config.hpp"

#include <chrono>
#include <cstddef>
#include <string>

namespace herd::cluster {

/// The options of a plane listening on `hostname`, its store keys under `prefix`, waiting at
/// most `timeout`: comm.compression, comm.error-feedback and comm.connections; with `key` (the
/// coordinator's for the generation, "" = in the clear) sealed by comm.seal-threads threads.
/// Throws comm::comm_error (invalid_argument) for a key that is not a plane key's size.
comm::gloo_plane_options node_plane_options(const config::run_config& config,
                                            const std::string& hostname,
                                            const std::string& prefix,
                                            std::chrono::milliseconds timeout,
                                            const std::string& key);

/// What a node tells its operator once its plane listening on `hostname` connected `nodes`
/// nodes: "data plane connected (HOST, N nodes, ...)", naming comm.compression (and
/// comm.error-feedback) when on, whether it is sealed (with comm.seal-threads) or in the clear,
/// and comm.connections when more than one.
std::string plane_connected_text(const config::run_config& config, const std::string& hostname,
                                 std::size_t nodes, bool sealed);

/// What a node and its coordinator say while a data plane has not connected after `seconds`: the
/// nodes dial each other on ports the kernel picks, which a firewall may block, and what to admit.
std::string plane_waiting_text(long long seconds);

} // namespace herd::cluster
