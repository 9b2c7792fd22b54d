// The aggregator's rounds in flight (aggregator.cpp), by round number. A finished round's state
// is kept for the next round, map node and vectors included: at 256 members a round holds about
// 14 KiB of answers and 1 KiB of positions, and allocating those afresh every round, in a
// process whose scheduler threads keep freeing small messages, costs the allocator a
// consolidation of its fast bins each time. Includes the message vocabulary (CAF): internal to
// herd::actors, for aggregator.cpp and its tests.
#pragma once

#include "actors/messages.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace herd::actors {

/// One round the aggregator runs: its plan, the members' answers, and, across processes, the
/// nodes' reductions.
struct aggregator_round {
  using clock_type = std::chrono::steady_clock;

  group_plan plan;
  std::vector<std::optional<contribution>> answers; // by member position
  std::vector<bool> settled;                        // answered or given up, by position
  std::vector<std::int32_t> position_of;            // by worker index; -1: not a member
  std::size_t outstanding = 0;
  clock_type::time_point started;
  struct {
    std::vector<std::int32_t> unanswered;
    std::vector<std::string> reasons;
  } plan_failures;
  // Across processes, once the contributions are in: the report so far, the nodes still
  // reducing, the members that get the result, and the first node's failure.
  group_done report;
  std::set<int> reducing_nodes;
  std::vector<int> group_nodes;
  comm::status reduce_failure;
  clock_type::time_point reduce_started;
  // The shortest time a node took from its order to the end of the reduction: the node whose
  // order came last waited for no peer's, so this is the data plane's time, not the orders'
  // way there (a coordinator paused while sending them made every other node wait).
  std::optional<double> node_seconds;

  /// As a new round's, every field back to its start, the vectors keeping their memory.
  void reset() {
    auto kept_answers = std::move(answers);
    auto kept_settled = std::move(settled);
    auto kept_positions = std::move(position_of);
    *this = aggregator_round{};
    answers = std::move(kept_answers);
    answers.clear();
    settled = std::move(kept_settled);
    settled.clear();
    position_of = std::move(kept_positions);
    std::fill(position_of.begin(), position_of.end(), -1);
  }
};

/// The rounds in flight, and the last finished one's memory.
class aggregator_rounds {
public:
  using map = std::map<std::uint64_t, aggregator_round>;

  /// Round `round`'s state, fresh: the last finished round's, reset, where there is one.
  aggregator_round& open(std::uint64_t round) {
    if (spare_.empty())
      return in_flight_[round];
    spare_.key() = round;
    spare_.mapped().reset();
    return in_flight_.insert(std::move(spare_)).position->second;
  }
  /// The round is over: out of the rounds in flight, its memory kept for the next open().
  void close(map::iterator round) { spare_ = in_flight_.extract(round); }

  map::iterator find(std::uint64_t round) { return in_flight_.find(round); }
  map::iterator end() { return in_flight_.end(); }
  bool holds(std::uint64_t round) const { return in_flight_.count(round) != 0; }
  const map& in_flight() const { return in_flight_; }

private:
  map in_flight_;
  map::node_type spare_;
};

} // namespace herd::actors
