// The registry's rules for admitting nodes, without an actor: when the cluster forms, which slots
// (worker indices, and so data shards) a node hosts, why a node is refused, and whether the
// settings fit the workers the nodes brought. The texts are for the operator and say what to do.
#pragma once

#include "herd/run_config.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace herd::actors {
struct node_hello;
} // namespace herd::actors

namespace herd::cluster {

/// Where the registry is: admitting nodes until cluster.min-nodes joined, waiting for the nodes
/// to connect the data plane, or running (nodes join only in place of lost workers).
enum class registry_phase { gathering, connecting, running };

/// The formation rule: the cluster forms once cluster.min-nodes nodes have joined.
inline bool cluster_complete(std::size_t nodes, int min_nodes) {
  return static_cast<int>(nodes) >= min_nodes;
}

/// Which node hosts which worker: filled when the cluster forms; a node joining the running job
/// takes the slots of lost workers.
class slot_table {
public:
  using live_test = std::function<bool(std::size_t node)>;

  /// The cluster forms: node i hosts the next `workers_per_node[i]` slots, in node order.
  /// Returns each node's slots.
  std::vector<std::vector<std::int32_t>> form(const std::vector<int>& workers_per_node) {
    std::vector<std::vector<std::int32_t>> slots(workers_per_node.size());
    for (std::size_t node = 0; node < workers_per_node.size(); ++node)
      for (int i = 0; i < workers_per_node[node]; ++i) {
        slots[node].push_back(static_cast<std::int32_t>(worker_nodes_.size()));
        worker_nodes_.push_back(static_cast<std::int32_t>(node));
      }
    return slots;
  }

  /// The slots whose node is not live, ascending: what a joining node may take.
  std::vector<std::int32_t> free(const live_test& live) const {
    std::vector<std::int32_t> free;
    for (std::size_t slot = 0; slot < worker_nodes_.size(); ++slot)
      if (!live(static_cast<std::size_t>(worker_nodes_[slot])))
        free.push_back(static_cast<std::int32_t>(slot));
    return free;
  }

  /// `node` takes the lowest `count` of the `free` slots (count <= free.size()); returns them.
  std::vector<std::int32_t> take(std::size_t node, const std::vector<std::int32_t>& free,
                                 int count) {
    std::vector<std::int32_t> taken(free.begin(), free.begin() + count);
    for (std::int32_t slot : taken)
      worker_nodes_[static_cast<std::size_t>(slot)] = static_cast<std::int32_t>(node);
    return taken;
  }

  /// The node index of every worker.
  const std::vector<std::int32_t>& worker_nodes() const { return worker_nodes_; }

private:
  std::vector<std::int32_t> worker_nodes_;
};

/// Why `hello` is refused whatever the slots: another protocol, a worker count out of range, a job
/// that is over, or a cluster of `nodes` that formed and is starting.
std::optional<std::string> hello_refusal(const actors::node_hello& hello, registry_phase phase,
                                         bool over, std::size_t nodes);

/// Why `hello` cannot join the running job of `run_workers` workers, whose `free` slots are those
/// of lost workers; `slots_taken`: nodes joining now or waiting to hold some.
std::optional<std::string> running_join_refusal(const actors::node_hello& hello,
                                                const std::vector<std::int32_t>& free,
                                                bool slots_taken, int run_workers);

/// Why `config` (train.workers counted across the nodes) cannot run on a training set of
/// `training_samples`, every problem named by its key.
std::optional<std::string> settings_refusal(const config::run_config& config,
                                            std::size_t training_samples);

/// "worker 3", "workers 4-7" or "workers 1, 4", for the operator's log.
std::string worker_list(const std::vector<std::int32_t>& slots);

/// "1 worker", "3 workers".
std::string count_of(int n, const std::string& what);

} // namespace herd::cluster
