// One global order for the reductions between processes. A plane whose pairs match operations in
// issue order (NCCL: the n-th send from a to b meets b's n-th receive from a, and each rank runs
// its operations one after another) needs every rank to issue the reductions it shares with a
// peer in the same order as that peer does. The aggregators of the coordinator's process order
// rounds to the nodes concurrently, and each node reduces every round on a thread of its own, so
// without help two nodes can issue the same two rounds in opposite orders.
//
// The `sequencer` lives in the coordinator's process, shared by its aggregators: it gives each
// reduction between nodes a ticket and, for each node of the group, that node's next sequence
// number (per data-plane generation). Tickets are taken under one lock, so the numbers of every
// node follow one total order. Each node's `issue_gate` lets the reduction with sequence number n
// reach the plane only once every number below n has been issued or given back: two nodes then
// issue the reductions they share in ticket order, and no cycle of waits can form (the lowest
// ticket not yet done is at the head of every member's queue).
//
// Plain C++, no CAF: tested with threads (tests/comm/sequencer_test.cpp).
#pragma once

#include "comm/errors.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace herd::comm {

/// What the sequencer hands out for one reduction: a global ticket (for messages) and, for each
/// node of the group in the order given, its sequence number. Sequence numbers start at 1 for
/// every node in every generation; 0 means "not sequenced" (issue at once).
struct reduction_tickets {
  std::uint64_t ticket = 0;
  std::vector<std::uint64_t> sequences;
};

class sequencer {
public:
  /// One reduction among `nodes` (node indices) through data-plane generation `generation`.
  /// Thread-safe; the order of calls is the global order.
  reduction_tickets take(std::uint32_t generation, const std::vector<int>& nodes);

  /// Tickets handed out so far.
  std::uint64_t tickets() const;

private:
  mutable std::mutex mutex_;
  std::uint64_t ticket_ = 0;
  // (generation, node) -> the last sequence number handed to that node.
  std::map<std::pair<std::uint32_t, int>, std::uint64_t> last_;
};

/// One node's side: the reductions of a generation reach the plane in sequence order. Every
/// sequence number the sequencer gave this node must end in exactly one `done` (issued, or given
/// back: a refused order, a round abandoned before its reduction, a failed pre-reduction), or the
/// later ones wait until the deadline of wait_turn. Thread-safe.
class issue_gate {
public:
  /// Blocks until every number of `generation` below `sequence` is done. Returns ok when it is
  /// this number's turn; `timeout` when `timeout` passed first (then the numbers below it are given
  /// up: a late one is refused, so this node never issues out of order, and the later numbers go
  /// on); `aborted` when this number itself was given up that way, or the gate is closed.
  status wait_turn(std::uint32_t generation, std::uint64_t sequence,
                   std::chrono::milliseconds timeout);

  /// `sequence` has been issued to the plane, or never will be. Idempotent; a given-up number is
  /// ignored.
  void done(std::uint32_t generation, std::uint64_t sequence);

  /// The generations below `generation` are no longer used (their plane is gone); their waiters
  /// end `aborted`.
  void forget_before(std::uint32_t generation);

  /// Ends every wait, `aborted` (the node is shutting down).
  void close();

private:
  struct line {
    std::uint64_t next = 1;             // the lowest number not yet done
    std::set<std::uint64_t> done_ahead; // numbers above `next` already done
  };

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::uint32_t, line> lines_; // by generation
  std::uint32_t oldest_ = 0;            // generations below it are forgotten
  bool closed_ = false;
};

} // namespace herd::comm
