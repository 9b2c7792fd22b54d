// The bookkeeping of nodes joining the running job, without an actor. One node joins at a time;
// the others wait for their turn. Each join makes a new generation of the data plane (a full mesh
// cannot grow) whose ranks are the live ready nodes, then the joining one; every one of those
// peers owes an answer for it, and the join is connected once all have answered. The registry
// asks the ledger what to do next and does it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace herd::cluster {

class join_ledger {
public:
  /// What the registry does after a peer answered.
  enum class next_step {
    nothing,
    fail_join,  // a peer could not connect the joining node's generation
    admit_join, // a peer connected it: admit the join once all have
    start_next, // a finished join's generation: the next may start once nobody owes an answer
  };

  /// The cluster formed with `nodes` nodes: generation 0, node i at rank i.
  void form(std::size_t nodes);

  /// `node` waits for its turn.
  void enqueue(std::size_t node) { waiting_.push_back(node); }

  /// Takes the node whose turn it is off the queue, skipping nodes that are no longer `live`;
  /// nothing while a node joins, while anyone owes an answer for a generation (a live node still
  /// connecting a failed join's plane would answer the next join's request only after it gave
  /// up), or when nobody waits.
  std::optional<std::size_t> next(const std::function<bool(std::size_t node)>& live);

  /// `node` joins now, with `peers` (the live nodes that are ready): a new generation whose ranks
  /// are the peers, then the node. Returns the generation.
  std::uint32_t begin(std::size_t node, const std::vector<std::size_t>& peers);

  /// `peer` answered for `generation` (`failed`: it could not connect), or was lost and will not.
  next_step answered(std::uint32_t generation, std::size_t peer, bool failed);

  /// The generations `peer` still owes an answer for.
  std::vector<std::uint32_t> owed_by(std::size_t peer) const;

  /// Admits the joining node (the coordinator takes the join over) if every peer connected its
  /// generation and it was not admitted before; false otherwise.
  bool admit();

  /// The join ended, done or failed: its node's slots count as its own, or as free again.
  void end() { joining_.reset(); }

  std::optional<std::size_t> joining() const { return joining_; }
  bool admitted() const { return joining_ && admitted_; }
  /// A node joins or waits to: lost workers' slots may be taken.
  bool busy() const { return joining_ || !waiting_.empty(); }
  std::uint32_t generation() const { return generation_; }
  /// The node index of each rank of the current generation.
  const std::vector<std::int32_t>& plane_nodes() const { return plane_nodes_; }

private:
  std::deque<std::size_t> waiting_;
  std::optional<std::size_t> joining_;
  bool admitted_ = false;
  std::uint32_t generation_ = 0;
  std::vector<std::int32_t> plane_nodes_;
  std::map<std::uint32_t, std::set<std::size_t>> owed_; // peers still connecting, by generation
};

} // namespace herd::cluster
