// One training run across processes, coordinator side (`herd coordinator`): the group
// coordinator, the aggregators, the evaluator and the metrics live here; workers live in node
// processes (cluster_node) that join over CAF's middleman. The coordinator is also the
// rendezvous point of the data plane: nodes exchange their Gloo addresses through it.
// No CAF in this header.
#pragma once

#include "actors/run_observer.hpp"
#include "herd/config.hpp"
#include "herd/dataset.hpp"
#include "herd/metrics.hpp"
#include "herd/run_config.hpp"
#include "herd/run_summary.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herd::actors {
struct run_checkpoint;
} // namespace herd::actors

namespace herd::cluster {

/// What a run across processes cannot do yet, as configuration errors (empty: nothing):
/// train.backend = cuda (the NCCL plane is not wired into the cluster) and train.algorithm =
/// async. herd coordinator reports them before it loads any data; cluster_session throws them.
std::vector<config::config_error> cluster_refusals(const config::run_config& config);

struct cluster_options {
  std::string listen_host = "0.0.0.0"; // the address nodes connect to
  std::uint16_t port = 0;              // 0: any free port (see cluster_session::port())
  actors::run_observer* observer =
      nullptr; // progress, evaluations and notices (nodes joining, lost)
  std::chrono::milliseconds progress_interval{250};
  std::shared_ptr<monitoring::registry> metrics; // as session_options::metrics
  std::string node_name;                         // the metrics' `node` label
  /// Reductions between nodes carry a ticket and each node issues them in ticket order
  /// (comm/sequencer.hpp), which a plane that matches in issue order (NCCL) needs. Tests only
  /// turn it off, to show that a plane with NCCL's rule then mismatches.
  bool ticket_order = true;
  /// Non-null: the run goes on from this checkpoint of a cluster (load_cluster_checkpoint()),
  /// read from `resume_file`: the cluster forms once a node holding each of its parts joined.
  std::shared_ptr<const actors::run_checkpoint> resume;
  std::string resume_file;
};

/// Reads the checkpoint a coordinator resumes from (a file, or the newest in a directory) for a
/// run of `config` over `data`, with its worker count (the nodes bring the workers; the count is
/// the checkpoint's). Throws checkpoint::checkpoint_error naming the file and the problem: damaged,
/// of another structure, or written by herd train (one process: no nodes hold its workers).
struct loaded_cluster_checkpoint {
  std::string file;
  std::shared_ptr<const actors::run_checkpoint> state;
  int workers = 0;
};
loaded_cluster_checkpoint load_cluster_checkpoint(const config::run_config& config,
                                                  const models::train_test_split& data,
                                                  const std::string& path);

class cluster_session {
public:
  /// Listens on options.listen_host:port at once; throws std::runtime_error naming the address
  /// when it cannot. `data` is the coordinator's copy of the dataset: the test set for evaluation,
  /// the training set's size to check the nodes' against. config.train.workers is replaced by
  /// the sum of the nodes' workers once cluster.min-nodes nodes have joined.
  cluster_session(config::run_config config, std::shared_ptr<const models::train_test_split> data,
                  cluster_options options = {});
  /// Stops a run that is still going (as request_stop()), tells the nodes, shuts down.
  ~cluster_session();

  cluster_session(const cluster_session&) = delete;
  cluster_session& operator=(const cluster_session&) = delete;

  /// The port nodes connect to.
  std::uint16_t port() const;

  /// The connections the gate admitted that are open now (nodes, and peers not yet dropped).
  int connections() const;

  /// Asks the run to stop early (or, before it started, to give up waiting for nodes).
  /// Thread-safe; returns at once.
  void request_stop();

  /// The summary, once the run has ended; nothing if `timeout` passed first. Nodes are told the
  /// job is over when it is returned.
  std::optional<actors::run_summary> wait_for(std::chrono::milliseconds timeout);

  /// The configuration as run, workers counted across nodes; valid once the run started.
  config::run_config effective_config() const;

  /// Whether the run has started (the cluster formed and every node is ready). Thread-safe.
  bool started() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herd::cluster
