// Grouping policies: who reduces with whom, and when. A policy is a plain class the group
// coordinator drives with arrivals and completions, so its decisions are tested without actors.
// docs/algorithms.md defines the algorithms; this file holds the interface and the gradient
// algorithms, which are one family: sync, solo, majority and quorum.
#pragma once

#include "herd/run_config.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herd::policy {

/// A worker reporting a fresh result of a local step (late ones are not arrivals for a policy:
/// their round has already closed).
struct arrival {
  int worker = 0;
  std::uint64_t step = 0;  // the worker's step counter after this step
  double at_seconds = 0.0; // coordinator clock
  double compute_seconds = 0.0;
};

enum class round_kind : std::uint8_t { partial, full_sync };

/// How fresh a member's contribution to a round is.
enum class freshness : std::uint8_t {
  fresh, // a gradient finished for this round (perhaps with accumulated late ones added)
  stale, // an older buffer: accumulated late gradients
  none,  // nothing to give (counts in P, adds nothing)
};

/// How the aggregator weights the members' contributions.
enum class weighting : std::uint8_t {
  uniform, // every member 1 / group size: the mean (sync), or sum / P (solo, majority); a member
           // that did not answer leaves the divisor (renormalised over those that answered)
  given,   // the policy's member_weights, renormalised over the members that answered
  uniform_planned, // every member 1 / the planned group size, answered or not: a member that did
                   // not answer adds zero (<algorithm>.missing-members = zero)
};

/// What a gradient round that completes without some of its members divides by
/// (<algorithm>.missing-members; docs/algorithms.md, "Gradient exchange").
enum class missing_members : std::uint8_t {
  renormalise, // the members that answered
  zero,        // P, the planned members: the missing ones contribute zero
};

/// The mode named `name` (renormalise, zero). Throws std::invalid_argument for another name.
missing_members missing_members_of(const std::string& name);

/// What becomes of a gradient that missed its round: a round asked for this worker's
/// contribution while the step computing it ran (<algorithm>.late-gradients; docs/algorithms.md,
/// "Late gradients").
enum class late_gradients : std::uint8_t {
  accumulate, // added, as it is, to what the next round takes
  discard,    // dropped
  scale,      // added to what the next round takes, weighted late_gradient_weight(k) for a
              // gradient that missed k rounds
};

/// The mode named `name` (accumulate, discard, scale). Throws std::invalid_argument for another.
late_gradients late_gradients_of(const std::string& name);
/// The run's mode: its partial-collective section's late-gradients, else accumulate (sync has no
/// late gradients; async's server applies every gradient as it comes).
late_gradients late_gradients_of(const config::run_config& config);
/// A late gradient's weight under late_gradients::scale: 1 / (1 + k) after missing k >= 1 rounds
/// (a half after one, a fifth after four).
float late_gradient_weight(std::uint32_t rounds_missed);

struct group_decision {
  std::vector<int> members; // ascending worker indices
  round_kind kind = round_kind::full_sync;
  weighting weights = weighting::uniform;
  std::vector<float> member_weights;    // weighting::given: one per member, same order
  std::vector<std::uint64_t> staleness; // per member, where the policy defines it (model exchange)
  std::size_t fresh_arrivals = 0;       // fresh arrivals the policy counted for this round
  bool intervention = false;            // preduce: the isolation guard built this group
  std::uint64_t step = 0;               // wagma: the local step whose models this round averages
};

/// What one member gave to a finished round.
struct member_contribution {
  int worker = 0;
  freshness kind = freshness::none;
  std::uint64_t step = 0; // the member's step counter when it answered
};

/// A finished round, as the aggregator reported it.
struct group_outcome {
  std::vector<int> members;
  std::vector<member_contribution> contributions; // the members that answered
  // The coordinator's clock when the round ended: a policy that decides by time (a wait window)
  // decides with it, not with its last arrival's. Not saved with a checkpoint's kept outcomes: a
  // resumed run hears them at 0, with its clock already past their end.
  double at_seconds = 0.0;
};

class grouping_policy {
public:
  virtual ~grouping_policy() = default;
  virtual std::string_view name() const = 0;

  /// The live workers changed (at start, or a worker was lost). A loss may complete a group that
  /// was waiting for the lost worker, so decisions can come back.
  virtual std::vector<group_decision> set_live_workers(std::vector<int> workers) = 0;

  virtual std::vector<group_decision> on_ready(const arrival& ready) = 0;

  virtual std::vector<group_decision> on_group_done(const group_outcome& outcome) = 0;

  /// The coordinator clock reached `now_seconds` (at or after next_deadline()).
  virtual std::vector<group_decision> on_time(double /*now_seconds*/) { return {}; }

  /// When the policy next needs on_time() (coordinator clock), if ever.
  virtual std::optional<double> next_deadline() const { return std::nullopt; }

  /// True when workers exchange models (average them) rather than gradients.
  virtual bool exchanges_models() const { return false; }

  /// True when a worker late for its step's round blends that round's result with its fresh
  /// model (wagma) instead of taking part on time only.
  virtual bool blends_late_models() const { return false; }

  /// True when an on-time member also blends its round's result with its own model, (sum + own) /
  /// (S + 1), instead of taking sum / S (wagma.blend = reference).
  virtual bool blends_on_time_models() const { return false; }

  /// True when a parameter server applies each round's reduced gradient and the members take its
  /// parameters after it as the round's result (async), instead of applying the result themselves.
  virtual bool applies_at_server() const { return false; }

  /// The workers it counts live (ascending): those of set_live_workers(), or of a loaded state.
  virtual std::vector<int> live_workers() const = 0;

  /// Everything the policy knows, as bytes, for checkpoints (docs/checkpoints.md).
  virtual std::string save_state() const = 0;
  /// Continues from save_state()'s bytes (a policy of the same kind and settings). Throws
  /// std::runtime_error when they are not such a state.
  virtual void load_state(const std::string& state) = 0;
};

/// The gradient-exchange family (docs/algorithms.md, "Gradient exchange"): every round's group is
/// every live worker, and a round activates once `threshold` live workers have a fresh gradient
/// that no round has taken yet. threshold = max(1, ceil(fraction * P)): sync is fraction 1,
/// majority 1/2, solo 0 (the first arrival). Every `sync_every`-th round (0 = never) waits for all
/// P (a full synchronous round, bounding staleness). One round is in flight at a time: a round's
/// contributions decide which arrivals it consumed, and an arrival it consumed must not count again
/// for the next one (workers that finish before the aggregator asks them give fresh data even
/// though their arrival reached the coordinator after the activation). A round's weights are
/// uniform: with `missing` renormalise over the members that answered, with zero over all P.
class quorum_policy final : public grouping_policy {
public:
  quorum_policy(std::string name, double fraction, int sync_every,
                missing_members missing = missing_members::renormalise);

  std::string_view name() const override { return name_; }
  std::vector<group_decision> set_live_workers(std::vector<int> workers) override;
  std::vector<group_decision> on_ready(const arrival& ready) override;
  std::vector<group_decision> on_group_done(const group_outcome& outcome) override;

  std::string save_state() const override;
  void load_state(const std::string& state) override;
  std::vector<int> live_workers() const override { return live_; }

  /// Fresh arrivals needed for the next round to activate.
  std::size_t threshold() const;

private:
  std::vector<group_decision> activate_if_due();
  bool next_round_is_full_sync() const;
  std::size_t count_fresh() const; // a scan of the live workers, after their set changed

  std::string name_;
  double fraction_;
  int sync_every_;
  missing_members missing_;
  std::vector<int> live_;                    // ascending
  std::vector<std::uint64_t> ready_step_;    // by worker: latest fresh arrival's step
  std::vector<std::uint64_t> consumed_step_; // by worker: latest step a round took fresh
  // Derived, not saved: live workers whose ready step is past their consumed one. Kept as arrivals
  // and rounds change them, so that an arrival costs O(1): counting them at every arrival made a
  // round of P workers cost O(P^2).
  std::size_t fresh_ = 0;
  bool in_flight_ = false;
  std::uint64_t rounds_activated_ = 0;
};

/// The baseline: every round waits for every live worker.
std::unique_ptr<quorum_policy> make_sync_policy();

/// The policy of config.train.algorithm with its section's settings. Throws
/// std::invalid_argument for an unknown algorithm.
std::unique_ptr<grouping_policy> make_policy(const config::run_config& config);

/// The settings section of a partial-collective algorithm (solo, majority, quorum); null for
/// the others.
const config::partial_section* partial_settings(const config::run_config& config);

/// Weight of each member of a round, in the members' order: 0 for a member that did not answer;
/// the others share 1, uniformly or in proportion to the `given` weights; under uniform_planned
/// each of them weighs 1 / all members, so the weights sum to the share that answered.
std::vector<float> member_weights(weighting weights, const std::vector<float>& given,
                                  const std::vector<bool>& answered);

} // namespace herd::policy
