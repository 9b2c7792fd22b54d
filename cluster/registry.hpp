// The registry actor: the coordinator's face to the nodes, the one actor the connection server
// publishes. It admits nodes until cluster.min-nodes have joined (admission.hpp), hands each its
// slots (slots.hpp) and the run's settings, keeps the data plane's rendezvous keys
// (rendezvous_keys.hpp), starts the run once every node is ready, and lets a node join the
// running job in place of lost workers, one at a time (join_ledger.hpp).
//
// Messages it answers:
//   node_hello                    -> node_welcome  admit a node (or refuse it, saying why)
//   node_ready                                     a welcomed node's workers and reducer are up
//   (store_set_atom, key, value)                   a rendezvous key (welcomed nodes only)
//   (store_get_atom, key)         -> value         answered once the key is set
//   (store_peek_atom, key)        -> (set, value)  answered at once
//   (leave_atom, why)                              a node's joining actor: it is about to leave
//   (depart_atom, why)                             a node leaves the running job: answered with
//                                                  (depart_atom, bool) once its rounds have ended
//   stop_atom                                      stop the run (or the wait for nodes)
//   (job_over_atom, failure, ending) -> bool       tell the nodes (whether the run failed and why,
//                                                  how it ended); answered once they know
//   (join_done_atom, node, error)                  the coordinator finished a node's join (node -1:
//                                                  it uses the re-keyed data plane)
//   plane_refusal                                  a node refused a peer's data-plane messages: the
//                                                  data plane is re-keyed (a new generation)
// Messages it sends: plane_rebuild, leave_atom and depart_atom to nodes, node_admission,
// plane_rekey and run_start to the group coordinator.
#pragma once

#include "actors/run_parts.hpp"
#include "herd/dataset.hpp"

#include <caf/fwd.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "cluster/cluster_session.hpp"

namespace herd::actors {
struct run_checkpoint;
} // namespace herd::actors

namespace herd::checkpoint {
class directory_lock;
} // namespace herd::checkpoint

namespace herd::cluster {

/// What the registry builds the run from; shared with the session.
struct registry_context {
  config::run_config config; // train.workers is set when the cluster forms
  std::shared_ptr<const models::train_test_split> data;
  cluster_options options;
  std::shared_ptr<actors::run_outcome> result;
  std::string job; // names this run's keys in the rendezvous store
  /// Non-null: the run goes on from this cluster checkpoint (file `resume_file`). The cluster
  /// forms once a node holding each of its parts joined, each with its part's workers.
  std::shared_ptr<const actors::run_checkpoint> resume;
  std::string resume_file;
  /// The run's hold on checkpoint.dir, taken when the session starts (before any node joins, so
  /// that a second coordinator into the same directory is refused at once) and handed to the
  /// checkpoints once the run is assembled. Null without checkpoint.dir.
  std::shared_ptr<checkpoint::directory_lock> checkpoint_lock;
  // Read by effective_config() from another thread once the run started.
  mutable std::mutex config_mutex;
  std::atomic<bool> started{false}; // every node ready, the run's actors spawned
};

caf::actor spawn_registry(caf::actor_system& system, std::shared_ptr<registry_context> context);

} // namespace herd::cluster
