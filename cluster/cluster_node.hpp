// One node of a cluster (`herd node`): joins the coordinator over CAF's middleman, receives the
// run's settings and its workers' indices, connects the data plane (Gloo) with the other nodes,
// and hosts its workers and its node reducer until the coordinator says the job is over (or is
// lost). No CAF in this header.
#pragma once

#include "actors/worker_probe.hpp"
#include "comm/data_plane.hpp"
#include "herd/dataset.hpp"
#include "herd/ops.hpp"
#include "herd/run_config.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herd::comm {
struct gloo_plane_options;
} // namespace herd::comm

namespace herd::cluster {

struct node_options {
  std::string coordinator_host;
  std::uint16_t coordinator_port = 0;
  int workers = 1;
  /// The address this node's data plane listens on and the other nodes dial; empty: the address
  /// this host uses to reach the coordinator.
  std::string data_host;
  std::string name; // empty: this host's name
  /// cluster.* settings that apply before the node has the run's: heartbeat and timeouts.
  config::cluster_section cluster;
  /// Where this node keeps its parts of the run's checkpoints (its own disk); empty: the run's
  /// checkpoint.dir, as the coordinator's settings name it. A node lists the parts it holds there
  /// when it joins, so that a coordinator resuming a checkpoint gives it its part's workers.
  std::string checkpoint_dir;
  /// Loads the dataset the run's settings name (data.dataset, data.path), on this machine.
  std::function<std::shared_ptr<const models::train_test_split>(const config::run_config&)>
      load_data;
  const kernels::ops* ops = &kernels::cpu_ops();
  /// Lines for the operator (joined, connected, the job is over); may be empty.
  std::function<void(const std::string&)> on_notice;
  std::shared_ptr<actors::worker_probe> probe; // for tests
  /// For tests: makes this node's rank `rank` of `size` of the data plane between nodes of
  /// `generation`, instead of Gloo (an emulated plane with NCCL's matching rule).
  std::function<std::shared_ptr<comm::data_plane>(std::uint32_t generation, int rank, int size)>
      make_plane;
  /// For tests: changes this node's Gloo options for the data plane of `generation` before it
  /// connects (a wrong key shows a refused peer re-keyed).
  std::function<void(std::uint32_t generation, comm::gloo_plane_options& options)> adjust_plane;
  /// Borrowed, may be null: once true the node leaves the job (checked every 100 ms), its
  /// workers stop and the coordinator counts them lost at once; another node may then join in
  /// their place. `herd node` sets it on Ctrl-C or SIGTERM (a VM's preemption notice).
  const std::atomic<bool>* leave = nullptr;
};

struct node_outcome {
  bool ok = false;
  std::string error;               // why the node ended early, naming what failed
  std::vector<int> worker_indices; // the run's indices of the workers it hosted
  bool joined_running = false;     // it joined the running job in place of lost workers
  bool left = false;               // it left before the job was over (node_options::leave)
  bool lost_coordinator = false;   // its connection to the coordinator broke while the job ran
  int workers = 0;
};

/// Joins, runs the node's part of the job and returns when it is over. Retries connecting to the
/// coordinator until cluster.join-timeout-s. A node that loses the coordinator while the job runs
/// (it was paused, or cut off, longer than cluster.node-timeout-ms, and so declared lost) joins
/// the running job again in place of its lost workers, trying for cluster.rejoin-s; when a
/// coordinator restarted with --resume answers instead, the node goes on from its checkpoint part.
node_outcome run_node(const node_options& options);

} // namespace herd::cluster
