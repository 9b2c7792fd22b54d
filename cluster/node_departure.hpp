// How a node leaves its job on a stop signal (node_options::leave): it asks the coordinator to let
// it go and waits for the answer a bounded time; a coordinator with a join or a re-key under way
// queues the departure behind it (its own steps are bounded, so the node then waits without a
// bound of its own) and restarts the node's wait once the departure's turn has come. A plain
// class: the node's serve loop reports events, tests drive it directly.
#pragma once

#include <chrono>
#include <optional>

namespace herd::cluster {

class node_departure {
public:
  using clock = std::chrono::steady_clock;

  /// `wait`: how long the node waits for the answer (departure_wait of the run's settings).
  explicit node_departure(clock::duration wait) : wait_(wait) {}

  /// The node asked to depart at `now`.
  void ask(clock::time_point now) { until_ = now + wait_; }
  /// The coordinator queued the departure behind a join or a re-key under way.
  void queued() { until_ = clock::time_point::max(); }
  /// The departure's turn came at `now`: the node waits for the answer again from then.
  void turn(clock::time_point now) { ask(now); }
  /// The coordinator's answer: whether it let the node go once the rounds it was in had ended.
  void answered(bool released) { released_ = released; }

  /// Whether the node has asked to depart (a lost coordinator is then no failure).
  bool asked() const { return until_.has_value(); }
  /// Whether the node stops waiting for the answer at `now`.
  bool gave_up(clock::time_point now) const { return until_ && now >= *until_; }
  /// Whether the coordinator let the node go after its rounds ended.
  bool released() const { return released_; }

private:
  clock::duration wait_;
  std::optional<clock::time_point> until_;
  bool released_ = false;
};

} // namespace herd::cluster
