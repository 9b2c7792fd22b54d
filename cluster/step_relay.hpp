// A node's relay for its workers' step reports (herd node). Every worker of the node sends it
// its step_ready; it sends the coordinator the reports that reached it since it last did, as one
// step_batch, as soon as it has handled them all: a node of eight workers whose steps end
// together costs the coordinator's process one message from across the network, not eight. It
// holds nothing back for a batch to fill: a report alone goes on at once, after one hop within
// the process.
//
// Messages it answers:
//   step_ready   kept, and on its way with the others kept meanwhile once they are handled
//   (flush_atom) -> ()  every report it holds is on its way to the coordinator: a worker asks
//                       before it answers a stop, so that its last report does not arrive after
//                       its answer (the relay's batch and the answer then leave this process in
//                       that order, over one connection)
#pragma once

#include <caf/fwd.hpp>

namespace herd::cluster {

caf::actor spawn_step_relay(caf::actor_system& system, const caf::actor& coordinator);

} // namespace herd::cluster
