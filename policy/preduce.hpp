// Partial reduce (docs/algorithms.md, "Partial reduce"): workers exchange models in small groups of
// whoever is ready first, averaged with staleness-aware weights, while an isolation guard keeps
// fast workers from drifting away from slow ones. Three plain classes, no actors: the weights,
// the guard and the grouping policy the coordinator drives (which also keeps every replica's
// model version, the staleness the weights use).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace herd::policy {

/// Staleness-aware member weights: s_i = max_j v_i - v_i (model versions behind the group's
/// freshest member), w_i proportional to exp(-decay * s_i), normalised to sum 1. decay 0 is the
/// uniform average, and so are equal versions.
class staleness_weighting {
public:
  explicit staleness_weighting(double decay); // decay >= 0

  double decay() const { return decay_; }

  /// Each member's staleness, in the members' order.
  static std::vector<std::uint64_t> staleness(const std::vector<std::uint64_t>& versions);

  /// Each member's weight, in the members' order (`versions` not empty).
  std::vector<float> weights(const std::vector<std::uint64_t>& versions) const;

private:
  double decay_;
};

/// Tracks which live workers groups have connected (union-find) since the last point at which
/// all of them were connected, and says when the next group must join different components:
/// soon enough that all are connected again within `connect_every` groups of that point.
/// connect_every below 0 is automatic (automatic_connect_every() of the live workers and group
/// size), 0 turns the guard off.
class isolation_guard {
public:
  explicit isolation_guard(int connect_every, int group_size = 2);

  /// The fewest groups of `group_size` that connect `workers` workers: ceil((P - 1) / (g - 1)),
  /// g = min(group_size, P) (a group merges at most g - 1 components); 0 for one worker.
  static std::size_t min_connecting_groups(std::size_t workers, std::size_t group_size);
  /// The automatic connect_every: four times min_connecting_groups(), and never below 16 (the old
  /// fixed default), so it can be met at any P while leaving room for the groups that form on
  /// their own to connect everyone first.
  static std::size_t automatic_connect_every(std::size_t workers, std::size_t group_size);

  bool enabled() const { return connect_every_ != 0; }
  /// The groups a period may take over the current live workers (0 when off).
  std::size_t period() const;

  /// Starts a new period over these workers (each its own component).
  void set_live_workers(const std::vector<int>& workers);

  /// A group formed: its members' components merge. When that connects every live worker, a new
  /// period starts; returns true then.
  bool record_group(const std::vector<int>& members);

  /// True when the next group must join components: the groups left in this period are no more
  /// than the groups the merges still needed take, min_connecting_groups(components, group_size)
  /// (a group of g members merges at most g - 1 components).
  bool intervention_due() const;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(connect_every_, group_size_, live_, parent_, components_, groups_since_connected_);
  }

  /// Why a loaded guard cannot be one (worker indices outside its slots, a component without a
  /// root, which find() would follow forever); empty when it can.
  std::string damage() const;

  bool same_component(int a, int b) const;
  std::size_t components() const;
  std::size_t groups_since_connected() const { return groups_since_connected_; }

private:
  int find(int worker) const;

  int connect_every_;
  int group_size_;
  std::vector<int> live_;           // ascending
  mutable std::vector<int> parent_; // by worker index; -1 for a worker that is not live
  std::size_t components_ = 0;
  std::size_t groups_since_connected_ = 0;
};

/// The settings of preduce_policy (config [preduce], with times in seconds).
struct preduce_settings {
  int group_size = 2;
  double wait_window_seconds = 0.02;
  double staleness_decay = 0.0;
  int connect_every = -1; // below 0 = automatic, 0 = the guard is off
  double connect_wait_seconds = 0.2;
  int sync_every = 0; // a global average every this many groups; 0 = never
};

/// The policy's settings from config [preduce].
preduce_settings preduce_settings_of(const config::preduce_section& section);

/// Forms groups from a FIFO queue of ready workers (each finished a local step and waits for its
/// group's average). A group is the first `group_size` queued workers; or, once the oldest has
/// waited `wait_window_seconds`, all queued workers if there are at least two. Many groups are
/// in flight at once; a worker is in at most one (its next arrival can reach the coordinator
/// before its group's completion: it is held until then, and queued in arrival order). When the
/// isolation guard says so, the group is built across components: the oldest queued worker, then
/// the oldest queued worker of each other component, then the rest in queue order, once
/// `group_size` workers are queued or the wait window has passed, as for any group; if no other
/// component has a queued worker, the group waits for one at most `connect_wait_seconds`, then
/// forms as usual. Every `sync_every` groups a global average of all live workers follows, once
/// they all are queued (no partial group forms meanwhile). A group's decision carries its members'
/// staleness weights; the global average is the plain mean (it makes all replicas one model, as
/// synchronous averaging does).
///
/// Model versions: the policy keeps every replica's version, the local updates that went into its
/// model. A step adds one (an arrival's step counter says how many steps since the last); a
/// group's result takes the highest version among the members that answered, and every one of them
/// takes it with the result. A member's staleness is the version gap to the group's freshest
/// member. A worker that comes back after it had arrived (it adopted a live peer's state) starts
/// at the lowest live version.
class preduce_policy final : public grouping_policy {
public:
  explicit preduce_policy(preduce_settings settings);

  std::string_view name() const override { return "preduce"; }
  bool exchanges_models() const override { return true; }
  std::vector<group_decision> set_live_workers(std::vector<int> workers) override;
  std::vector<group_decision> on_ready(const arrival& ready) override;
  std::vector<group_decision> on_group_done(const group_outcome& outcome) override;
  std::vector<group_decision> on_time(double now_seconds) override;
  std::optional<double> next_deadline() const override;
  std::string save_state() const override;
  void load_state(const std::string& state) override;
  std::vector<int> live_workers() const override { return live_; }

  /// Groups the isolation guard built across components.
  std::uint64_t interventions() const { return interventions_; }
  std::size_t queued() const { return queue_.size(); }
  const isolation_guard& guard() const { return guard_; }
  /// The worker's model version as the policy last heard of it (0 for a worker never seen).
  std::uint64_t version_of(int worker) const;

private:
  struct queued_worker {
    int worker = 0;
    std::uint64_t step = 0;
    double since = 0.0;        // coordinator clock when it joined the queue
    std::uint64_t version = 0; // its model's version

    template <class Archive>
    void serialize(Archive& archive) {
      archive(worker, step, since, version);
    }
  };

  /// The version of `worker`'s model after the step whose counter is `step`.
  std::uint64_t version_after(int worker, std::uint64_t step);
  void enqueue(queued_worker ready);
  std::vector<group_decision> form_groups();
  group_decision make_group(std::vector<std::size_t> positions, round_kind kind);
  std::optional<std::vector<std::size_t>> guarded_group();
  bool global_average_due() const;
  bool live(int worker) const;

  preduce_settings settings_;
  staleness_weighting weighting_;
  isolation_guard guard_;
  std::vector<int> live_; // ascending
  std::deque<queued_worker> queue_;
  std::vector<std::uint64_t> version_;   // by worker: its model's version as of last_step_
  std::vector<std::uint64_t> last_step_; // by worker: step counter of its last arrival (0: none
                                         // yet); unknown (it came back) is the maximum
  std::vector<int> in_group_;            // workers in a group in flight (ascending)
  std::vector<queued_worker> early_;     // arrivals of such workers, queued once the group is done
  std::uint64_t partial_groups_ = 0;     // formed since the last global average
  std::uint64_t interventions_ = 0;
  std::optional<double> guard_waiting_since_; // a guard's group is waiting for a component
  double now_ = 0.0;
};

} // namespace herd::policy
