// The actor-system settings every process of a cluster shares: Herd's message types, the
// middleman, the scheduler, and the heartbeat that detects a hung peer.
#pragma once

#include "config/run_config.hpp"

#include <caf/fwd.hpp>

#include <cstdint>

namespace herd::actors {

/// Heartbeats every cluster.heartbeat-ms; a peer silent for cluster.node-timeout-ms is down.
/// Every process needs the same (shared/stack.md section 1.5), or a healthy idle peer looks dead.
/// With cluster.tls-ca set, loads CAF's OpenSSL module: both ends must present a certificate
/// signed by that CA.
void configure_remoting(caf::actor_system_config& system_config,
                        const config::cluster_section& cluster);

/// Publishes `actor` on 127.0.0.1 (any free port; the gate is the public face), over TLS when
/// configured.
caf::expected<std::uint16_t> publish_on_loopback(const caf::actor& actor,
                                                 const config::cluster_section& cluster);

/// The actor published at 127.0.0.1:`port` (a gate_dialer's), over TLS when configured.
caf::expected<caf::actor> remote_on_loopback(caf::actor_system& system, std::uint16_t port,
                                             const config::cluster_section& cluster);

} // namespace herd::actors
