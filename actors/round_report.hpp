// What a finished round's report (group_done) tells the grouping policy and the metrics. Plain
// functions of the report and the decision that started the round; tests call them directly.
#pragma once

#include "actors/messages.hpp"
#include "comm/data_plane.hpp"
#include "monitoring/training_metrics.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace herd::actors {

/// A worker's latest fresh arrival at the coordinator: its step, and when it came.
struct fresh_arrival {
  std::uint64_t step = 0;
  double at_seconds = 0.0;
};

/// The plan of round `round` that `decision` starts: its members (their actors from `workers`,
/// by index), its kind, weights and step as decided, and the rate factor `lr_scale`.
group_plan plan_of(const policy::group_decision& decision, std::uint64_t round, float lr_scale,
                   const std::vector<caf::actor>& workers);

/// The aggregator's weighting of a round in one process: the members that answered (`answers`,
/// by position in `plan`) take part, with the plan's weights renormalised over them (uniform: the
/// mean under sync, sum / P under the partial algorithms, where a member with nothing still
/// counts). Fills the report's per-member columns; returns the weighted inputs.
std::vector<comm::weighted_input>
weigh_answers(const group_plan& plan, const std::vector<std::optional<contribution>>& answers,
              group_done& report);

/// The positions of the members that answered, in plan order (for delivery).
std::vector<std::size_t>
answered_positions(const std::vector<std::optional<contribution>>& answers);

/// Which members answered the round and what each gave, for the policy.
policy::group_outcome outcome_of(const group_done& report);

/// The staleness of the report's member `i`: the policy's where it defines one (preduce); under
/// wagma the steps the member had still to finish of the round's step; else the rounds between
/// the parameters its gradient was computed on and this round. None where the report lacks it.
std::optional<std::uint64_t> staleness_of(const group_done& report, std::size_t i,
                                          const policy::group_decision& planned);

/// The notice for a round that completed without some of its members (report.unanswered): who
/// was missing and what the round divided by (<algorithm>.missing-members). None when every
/// member answered.
std::optional<std::string> missing_members_notice(const group_done& report,
                                                  const policy::group_decision& planned);

/// The round's metrics into `round`, the round finished at `now_seconds`: every field replaced, the
/// vectors' memory reused (the coordinator fills one record for all its rounds, which saves it
/// three allocations of up to 2 KiB a round at 256 workers); returns `round`. `arrivals` (by
/// worker) give when each fresh contributor arrived, where that arrival has reached the
/// coordinator yet.
const monitoring::training_metrics::round_record&
fill_round_record(monitoring::training_metrics::round_record& round, const group_done& report,
                  const policy::group_decision& planned, const std::vector<fresh_arrival>& arrivals,
                  double now_seconds);

/// The rule that ends a run whose data plane aborts round after round: a re-key or a lost peer
/// aborts one round or a few, a plane that cannot reduce aborts them all. More than
/// `max_in_a_row` aborted rounds in a row (of members that answered) end the run; a completed
/// round starts the count again.
class abort_streak {
public:
  static constexpr std::uint64_t max_in_a_row = 8;

  explicit abort_streak(std::uint64_t in_a_row = 0) : in_a_row_(in_a_row) {}
  void completed() { in_a_row_ = 0; }
  /// A round the plane aborted: true when it ends the run.
  bool aborted() { return ++in_a_row_ > max_in_a_row; }
  /// Aborted rounds since the last completed one (a checkpoint keeps it).
  std::uint64_t in_a_row() const { return in_a_row_; }

private:
  std::uint64_t in_a_row_;
};

} // namespace herd::actors
