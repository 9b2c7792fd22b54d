// The bookkeeping of nodes joining the running job, without an actor. One node joins at a time;
// the others wait for their turn. Each join makes a new generation of the data plane (a full mesh
// cannot grow) whose ranks are the live ready nodes, then the joining one; every one of those
// peers owes an answer for it, and the join is connected once all have answered. A re-key (a node
// refused a peer's data-plane messages) makes a new generation among the live ready nodes alone,
// with a fresh key: it takes a join's turn, and a join that starts first makes it unneeded. A node
// leaving the job departs when nothing else is under way, and nothing starts while it does. The
// registry asks the ledger what to do next and does it.
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
    fail_rekey, // a node could not connect the re-keyed generation
    rekeyed,    // every node connected it: the coordinator may use it
  };

  /// The cluster formed with `nodes` nodes: generation 0, node i at rank i.
  void form(std::size_t nodes);

  /// `node` waits for its turn.
  void enqueue(std::size_t node) { waiting_.push_back(node); }

  /// Takes the node whose turn it is off the queue, skipping nodes that are no longer `live`;
  /// nothing while a node joins, re-keys or departs, while anyone owes an answer for a
  /// generation (a live node still connecting a failed join's plane would answer the next join's
  /// request only after it gave up), while a node waits to depart, or when nobody waits.
  std::optional<std::size_t> next(const std::function<bool(std::size_t node)>& live);

  /// `node` joins now, with `peers` (the live nodes that are ready): a new generation whose ranks
  /// are the peers, then the node. Returns the generation.
  std::uint32_t begin(std::size_t node, const std::vector<std::size_t>& peers);

  /// A node refused a peer's messages in `generation`: a re-key is wanted if that is the newest
  /// generation (an older one is no longer used once its rounds end, and a newer one has a fresh
  /// key already). Returns whether that is new (the first report of it).
  bool want_rekey(std::uint32_t generation);
  /// Whether a wanted re-key may start now: nothing under way, nobody owes an answer.
  bool rekey_due() const { return rekey_wanted_ && idle(); }
  /// The re-key starts: a new generation whose ranks are `nodes` (the live ready ones), each
  /// owing an answer. Returns the generation.
  std::uint32_t begin_rekey(const std::vector<std::size_t>& nodes);
  bool rekeying() const { return rekeying_; }

  /// `peer` answered for `generation` (`failed`: it could not connect), or was lost and will not.
  next_step answered(std::uint32_t generation, std::size_t peer, bool failed);

  /// The generations `peer` still owes an answer for.
  std::vector<std::uint32_t> owed_by(std::size_t peer) const;

  /// Admits the joining node (the coordinator takes the join over) if every peer connected its
  /// generation and it was not admitted before; false otherwise.
  bool admit();

  /// The join or re-key ended, done or failed: a joined node's slots count as its own, or as free
  /// again.
  void end() {
    joining_.reset();
    rekeying_ = false;
  }

  /// `node` asks to leave the running job: it waits for its turn as a join does, before joins
  /// (it leaves within seconds or not at all) and after a re-key that is due (a failed one's
  /// retry holds the rounds, and the registry asks rekey_due() first). A node that left while a
  /// join connected a generation would owe an answer for it that never comes.
  void enqueue_departure(std::size_t node) { departures_.push_back(node); }
  /// Takes the first departing node that is still `live` off its queue, once nothing is under
  /// way and nobody owes an answer; nothing otherwise. It departs until end_departure().
  std::optional<std::size_t> next_departure(const std::function<bool(std::size_t node)>& live);
  void end_departure() { departing_.reset(); }
  /// Whether `node` asked to leave (it waits for its turn, or departs now).
  bool leaving(std::size_t node) const;

  std::optional<std::size_t> joining() const { return joining_; }
  std::optional<std::size_t> departing() const { return departing_; }
  bool admitted() const { return joining_ && admitted_; }
  /// A node joins or waits to: lost workers' slots may be taken.
  bool busy() const { return joining_ || !waiting_.empty(); }
  std::uint32_t generation() const { return generation_; }
  /// The node index of each rank of the current generation.
  const std::vector<std::int32_t>& plane_nodes() const { return plane_nodes_; }

private:
  bool idle() const { return !joining_ && !rekeying_ && !departing_ && owed_.empty(); }

  std::deque<std::size_t> waiting_;
  std::optional<std::size_t> joining_;
  std::deque<std::size_t> departures_;
  std::optional<std::size_t> departing_;
  bool admitted_ = false;
  bool rekeying_ = false;
  bool rekey_wanted_ = false;
  std::uint32_t generation_ = 0;
  std::vector<std::int32_t> plane_nodes_;
  std::map<std::uint32_t, std::set<std::size_t>> owed_; // peers still connecting, by generation
};

} // namespace herd::cluster
