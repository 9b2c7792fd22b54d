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
struct part_record;
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

  /// The cluster resumes a checkpoint: node i hosts exactly `node_slots[i]` (together, every slot
  /// once).
  void assign(const std::vector<std::vector<std::int32_t>>& node_slots) {
    std::size_t count = 0;
    for (const auto& slots : node_slots)
      count += slots.size();
    worker_nodes_.assign(count, 0);
    for (std::size_t node = 0; node < node_slots.size(); ++node)
      for (std::int32_t slot : node_slots[node])
        worker_nodes_.at(static_cast<std::size_t>(slot)) = static_cast<std::int32_t>(node);
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

/// `text` with its control characters and the bytes that are not UTF-8 written as escapes
/// ("line\\nbreak", "\\x1b", "\\xff"): a node's name as a log line may hold it, which a newline
/// would split (or forge another line with); a JSON report or a metrics label takes UTF-8 only.
std::string printable(const std::string& text);

/// Why `hello` is refused whatever the slots: a name with a control character, another protocol, a
/// worker count out of range, heartbeats that the node's or this coordinator's (`mine`) node
/// timeout would miss, a job that is over, or a cluster of `nodes` that formed and is starting.
std::optional<std::string> hello_refusal(const actors::node_hello& hello,
                                         const config::cluster_section& mine, registry_phase phase,
                                         bool over, std::size_t nodes);

/// Why `hello` cannot join the running job of `run_workers` workers, whose `free` slots are those
/// of lost workers; `slots_taken`: nodes joining now or waiting to hold some.
std::optional<std::string> running_join_refusal(const actors::node_hello& hello,
                                                const std::vector<std::int32_t>& free,
                                                bool slots_taken, int run_workers);

/// A coordinator resuming a cluster's checkpoint `checkpoint` takes each node for the part it
/// holds: the index in `parts` of the first part not yet `claimed` that `hello` lists, or why the
/// node is refused (it holds none of them, or offers another number of workers than its part).
struct part_claim {
  std::optional<std::size_t> part;
  std::string refusal;
};
part_claim claim_part(const actors::node_hello& hello,
                      const std::vector<actors::part_record>& parts,
                      const std::vector<bool>& claimed, const std::string& checkpoint);

/// What a coordinator that does not resume says of a node that holds checkpoint parts (after the
/// node's label): the job starts from the first step.
std::string unresumed_parts(const actors::node_hello& hello);

/// Why `config` (train.workers counted across the nodes) cannot run on a training set of
/// `training_samples`, every problem named by its key.
std::optional<std::string> settings_refusal(const config::run_config& config,
                                            std::size_t training_samples);

/// "worker 3", "workers 4-7" or "workers 1, 4", for the operator's log.
std::string worker_list(const std::vector<std::int32_t>& slots);

/// "1 worker", "3 workers".
std::string count_of(int n, const std::string& what);

} // namespace herd::cluster
