// A node joining the running job, on the group coordinator's side: the coordinator's join_hook
// (actors/group_coordinator.hpp). It checks the registry's node_admission, sends the new
// cluster_topology to the aggregators, holds the policy's inputs while the rounds in flight drain,
// has two node reducers move a live worker's state to the new workers (state_transfer), then has
// the coordinator count them live and resume, and answers (join_done_atom, node, error). It also
// carries out the registry's re-keys of the data plane (plane_rekey): rounds are held from the
// moment a node refused a peer until the new generation is connected and the rounds in flight
// have ended; then the aggregators get its topology, and it answers (join_done_atom, -1, error).
#pragma once

#include "actors/group_coordinator.hpp"
#include "herd/run_config.hpp"

#include <functional>
#include <memory>

namespace herd::cluster {

/// Makes the join hook of a coordinator that runs `config`.
std::function<std::unique_ptr<actors::join_hook>(actors::coordinator_port&)>
node_joins(const config::run_config& config);

} // namespace herd::cluster
