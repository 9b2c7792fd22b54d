// The node reducer actor: one per process of a cluster (herd node). It carries out an
// aggregator's reduce_order for the workers of its process: their weighted sum read in place
// through the local plane (the pre-reduction), then the sum of that buffer over the group's
// nodes through the plane between processes, on a thread of its own so the actor stays
// responsive. Both are comm::data_plane; it never asks which planes they are, only whether the
// one between processes matches in issue order (NCCL): then the reductions reach it in the
// sequence order their orders carry (comm/sequencer.hpp, the node's issue_gate), and if not, with
// gradient buckets, whether it reduces bucket by bucket as backward finishes them
// (round_reduction.hpp).
// It holds the result until the aggregator commits the round, then hands it to its members.
//
// Messages it answers:
//   reduce_order                 -> reduce_done   reduce this node's part of a round
//   (commit_atom, round, deliver)                 deliver the held result (true) or tell the
//                                                 members to skip the round (false)
//   (cancel_atom, round, why)                     another node failed the round: its data-plane
//                                                 reduction here ends now, not at its deadline
//   plane_update                                  a data plane generation this node connected
//                                                 (kept until an order names a newer one)
//   state_transfer               -> reduce_done   a node joins the running job: send a local
//                                                 worker's state to it, or have the local
//                                                 workers adopt the state received
//   (checkpoint_atom, part_request) -> part_record  write the local workers' states (once they
//                                                 are at rest) as this node's checkpoint part
//   contribution_asks -> contribution_answers    ask these local workers for their
//                                                 contributions to a round (the aggregator asks
//                                                 once per node, not once per member)
#pragma once

#include "comm/bucket_layout.hpp"
#include "comm/buffer_pool.hpp"
#include "comm/data_plane.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "cluster/node_parts.hpp"

namespace herd::cluster {

struct node_reducer_setup {
  int node = 0;                            // this process's node index
  std::shared_ptr<comm::data_plane> local; // the workers' send buffers, attached by index
  std::shared_ptr<comm::data_plane> plane; // between processes; null when alone
  std::uint32_t generation = 0;            // the plane's
  std::vector<int> plane_nodes;            // the node index of each of the plane's ranks
  std::shared_ptr<comm::buffer_pool> results;
  std::size_t optimizer_state = 0; // floats of a worker's optimizer state (a transfer's size)
  std::chrono::milliseconds data_timeout{30000}; // one data-plane reduction, at most
  comm::bucket_layout buckets;       // gradient buckets (comm.bucket-mb): round_reduction.hpp
  std::map<int, caf::actor> workers; // this process's workers, by index
  part_store parts;                  // where its checkpoint parts go
  /// Says what the node's log should show (its workers took a live model); may be empty. Called
  /// on the reducer's thread.
  std::function<void(const std::string&)> notice;
};

caf::actor spawn_node_reducer(caf::actor_system& system, node_reducer_setup setup);

} // namespace herd::cluster
