// A node's way to its coordinator: through the gate (control_gate.hpp), retried with a back-off
// until a deadline, saying why it waits; and the two helpers every part of the node uses, its
// stop flag and its notices.
#pragma once

#include <caf/fwd.hpp>

#include <chrono>
#include <string>

#include "cluster/cluster_node.hpp"
#include "cluster/control_gate.hpp"

namespace herd::cluster {

using node_clock = std::chrono::steady_clock;

/// Whether the node was asked to leave (options.leave: a stop signal).
bool leaving(const node_options& options);

/// Hands `text` to options.on_notice, if set.
void notify(const node_options& options, const std::string& text);

/// The coordinator's registry, connected through the gate, retrying until `deadline`: nodes may
/// start before the coordinator. A refusal or a failed TLS handshake ends the attempts at once (a
/// wrong token, version or certificate does not get better by waiting), as does leaving(). Null
/// when it did not connect; `outcome` says why.
caf::actor dial_coordinator(caf::actor_system& system, const node_options& options,
                            gate_dialer& gate, node_clock::time_point deadline,
                            gate_connection& outcome);

/// How long a leaving node waits for the coordinator to let it go (depart_atom: its workers
/// leave the rounds, its reducer and data plane serve those in flight, so that no peer's
/// reduction fails on its closed data plane): 10 s, or cluster.data-timeout-ms if shorter, from the
/// ask or, where the departure waited for a join under way, from the start of its turn. Rounds
/// end in milliseconds as a rule, and a preempted VM's notice gives some 30 s in all.
std::chrono::milliseconds departure_wait(const config::cluster_section& cluster);

} // namespace herd::cluster
