// What `herd coordinator` and `herd node` check before they open the control plane: the cluster
// token read from cluster.token-file, and a coordinator that would let anyone on the network in.
#pragma once

#include "herd/run_config.hpp"

#include <string>

namespace herd::cli {

/// The shortest token accepted on an address other machines can reach.
constexpr std::size_t min_network_token_bytes = 16;

/// With cluster.token-file set, reads the token from it (surrounding white space removed) into
/// cluster.token and clears cluster.token-file. Throws std::invalid_argument naming the key and the
/// file when it cannot be used. Returns a warning for the operator ("" when none): a file others
/// may read.
std::string resolve_cluster_token(config::cluster_section& cluster);

/// True when every address `host` stands for is a loopback address (127.0.0.0/8, ::1), so only
/// this machine can connect. Throws std::invalid_argument naming --listen when `host` does not
/// resolve.
bool is_loopback_host(const std::string& host);

/// Throws std::invalid_argument naming --data-host when the data plane cannot listen on `host`:
/// a name that does not resolve, or no address of this machine (tried: a socket bound there).
void check_data_host(const std::string& host);

/// Why the coordinator must not listen on `host` with these settings ("" when it may): a name
/// that does not resolve, or an address other machines reach, without a token or with one short
/// enough to guess. `defaulted_to`: the address --listen was left at, when it was not given
/// (the message then says so, rather than read as if the user had typed it).
std::string listen_problem(const std::string& host, const config::cluster_section& cluster,
                           const std::string& defaulted_to = {});

} // namespace herd::cli
