// The aggregator actor: holds every round it is given until its members have answered, then runs
// its reduction, waiting for the data plane in the handler, so one at a time (a pool of them runs
// groups in parallel). It asks every member for its contribution, weights them, drives the
// data plane, hands every member the result and reports the round to the coordinator.
//
// Messages it answers:
//   group_plan        run this round (docs/algorithms.md, "One round, end to end", steps 3, 4)
//   cluster_topology  across processes: a node joined; rounds from now on use this plane
// Messages it sends: (contribute_atom, round, step) to the members (in one process a plain
// message, answered by one: a contribution), round_result to the members, group_done to the
// coordinator.
//
// Across processes (node_reducers set) it asks each node of the group for its members'
// contributions at once (contribution_asks to its node reducer, which asks them) and reduces
// nothing itself: every node of the group gets a reduce_order (its members' weighted sum, then the
// sum over the group's nodes through the data plane), and once every node holds the result,
// (commit_atom, round, true) makes them deliver it. If any node failed or was lost, every node is
// told (commit_atom, round, false): its members skip the round (group_done.aborted), so no replica
// applies what another did not. The nodes still reducing a round that failed on one are told
// (cancel_atom, round, why) at once.
//
// Under async (parameter_server set) the reduced gradient goes to the parameter server as a
// server_update; the members receive the parameters it writes into the same buffer.
#pragma once

#include "comm/bucket_layout.hpp"
#include "comm/buffer_pool.hpp"
#include "comm/data_plane.hpp"
#include "comm/sequencer.hpp"

#include <caf/actor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace herd::actors {

struct control_costs;

struct aggregator_setup {
  std::shared_ptr<comm::data_plane> plane;    // in one process: reads members' attached buffers
  std::shared_ptr<comm::buffer_pool> results; // buffers of the model's parameter count
  /// How long a member may take to answer a contribution request. Members answer from their
  /// actor thread while computing, so this only fires for a member that died or hangs. In one
  /// process it also bounds the plane's reduction of a round (its operation's deadline and the
  /// wait for it) and, under async, the parameter server's answer to an update.
  std::chrono::milliseconds contribution_timeout{30000};
  /// Many processes: the node index of every worker, and every node's reducer by index, and the
  /// data plane's generation. Empty: all workers live in this process and `plane` reduces.
  std::vector<int> worker_nodes;
  std::vector<caf::actor> node_reducers;
  std::uint32_t generation = 0;
  /// Non-null: the aggregator adds its handlers' time to it (control_costs.hpp).
  std::shared_ptr<control_costs> costs;
  /// Gradient buckets (comm.bucket-mb; none: no buckets): in one process, a member's gradient
  /// that backward still writes is reduced in these buckets as backward finishes them.
  comm::bucket_layout buckets;
  /// Many processes: how long a node may take to reduce its part.
  std::chrono::milliseconds reduce_timeout{30000};
  /// Many processes: shared by every aggregator of the pool, it gives each reduction between
  /// nodes its ticket and each node of the group its sequence number, which the node issues in
  /// order (comm/sequencer.hpp). Null: orders carry none and nodes issue as they come (a plane
  /// that matches by tag does not need the order; tests turn it off to show that NCCL's does).
  std::shared_ptr<comm::sequencer> sequencer;
  /// async (one process only): the parameter server. Each round's reduced gradient goes to it, and
  /// the members receive the parameters it answers with instead of the gradient.
  caf::actor parameter_server;
};

caf::actor spawn_aggregator(caf::actor_system& system, aggregator_setup setup,
                            const caf::actor& coordinator);

} // namespace herd::actors
