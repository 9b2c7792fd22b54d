// The actor-system settings every process of a cluster shares (Herd's message types, the
// middleman, the scheduler, the heartbeat that detects a hung peer), and how connections that
// the gate admitted reach CAF: CAF never listens and never dials itself (control_gate.hpp). A
// connection reaches CAF as the peer's own socket (with TLS, with the session the gate began on
// it), read by a checked scribe: every frame goes through basp_check before CAF's remoting sees
// it, and a peer that breaks the framing is dropped (its connection closed, as if it had hung up)
// before CAF allocates or parses a byte of the frame.
#pragma once

#include "herd/run_config.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "cluster/control_gate.hpp"

namespace herd::cluster {

/// Heartbeats every cluster.heartbeat-ms; a peer silent for cluster.node-timeout-ms is down.
/// Every process needs the same, or a healthy idle peer looks dead.
void configure_remoting(caf::actor_system_config& system_config,
                        const config::cluster_section& cluster);

/// The gate's settings from the cluster section: the token and the TLS files.
gate_settings gate_settings_of(const config::cluster_section& cluster);

/// Greets the connections the gate admits with one published actor.
class connection_server {
public:
  /// `published` is what every connecting node gets from its handshake; `port` is the number the
  /// handshakes carry (the gate's public port).
  connection_server(caf::actor_system& system, caf::actor published, std::uint16_t port);
  ~connection_server();
  connection_server(const connection_server&) = delete;
  connection_server& operator=(const connection_server&) = delete;

  /// Hands CAF one admitted connection (it owns the descriptor from here). Safe from any thread.
  bool serve(admitted_connection connection);

  /// Stops publishing (before the actor system goes: a published actor keeps it waiting).
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Opens a connection through `dialer` and returns the actor the coordinator publishes; null,
/// with `outcome` saying why, when it cannot.
caf::actor remote_through_gate(caf::actor_system& system, gate_dialer& dialer,
                               gate_connection& outcome, std::chrono::milliseconds timeout);

} // namespace herd::cluster
