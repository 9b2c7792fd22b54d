// What a finished round tells the policy and the metrics; see round_report.hpp.
#include "actors/round_report.hpp"

#include <algorithm>

namespace herd::actors {

group_plan plan_of(const policy::group_decision& decision, std::uint64_t round, float lr_scale,
                   const std::vector<caf::actor>& workers) {
  group_plan plan;
  plan.round = round;
  plan.lr_scale = lr_scale;
  plan.kind = decision.kind;
  plan.weights = decision.weights;
  plan.member_weights = decision.member_weights;
  plan.step = decision.step;
  // Reserved: growing them one member at a time asked glibc for ever larger blocks, and its
  // first block past 1 KiB consolidated every freed message first (perf, 256 workers).
  plan.members.reserve(decision.members.size());
  plan.member_handles.reserve(decision.members.size());
  for (int member : decision.members) {
    plan.members.push_back(member);
    plan.member_handles.push_back(workers.at(static_cast<std::size_t>(member)));
  }
  return plan;
}

std::vector<comm::weighted_input>
weigh_answers(const group_plan& plan, const std::vector<std::optional<contribution>>& answers,
              group_done& report) {
  std::vector<bool> answered(answers.size());
  for (std::size_t position = 0; position < answers.size(); ++position)
    answered[position] = answers[position].has_value();
  const auto weights = policy::member_weights(plan.weights, plan.member_weights, answered);
  // Each column once, not nine times over as 256 members push back one by one.
  std::vector<comm::weighted_input> inputs;
  inputs.reserve(answers.size());
  report.members.reserve(answers.size());
  report.kinds.reserve(answers.size());
  report.steps.reserve(answers.size());
  report.versions.reserve(answers.size());
  for (std::size_t position = 0; position < answers.size(); ++position) {
    if (!answered[position])
      continue;
    const auto& answer = *answers[position];
    report.members.push_back(answer.worker);
    report.kinds.push_back(answer.kind);
    report.steps.push_back(answer.step);
    report.versions.push_back(answer.version);
    report.in_backward += answer.in_backward ? 1 : 0;
    if (answer.kind == freshness::none)
      continue;
    if (answer.kind == freshness::fresh)
      ++report.fresh;
    else
      ++report.stale;
    report.samples += answer.samples;
    inputs.push_back({answer.worker, weights[position]});
  }
  return inputs;
}

std::vector<std::size_t>
answered_positions(const std::vector<std::optional<contribution>>& answers) {
  std::vector<std::size_t> positions;
  positions.reserve(answers.size());
  for (std::size_t position = 0; position < answers.size(); ++position)
    if (answers[position])
      positions.push_back(position);
  return positions;
}

policy::group_outcome outcome_of(const group_done& report) {
  policy::group_outcome outcome;
  outcome.members.assign(report.members.begin(), report.members.end());
  outcome.contributions.reserve(report.members.size());
  for (std::size_t i = 0; i < report.members.size() && i < report.kinds.size(); ++i)
    outcome.contributions.push_back(
        {report.members[i], report.kinds[i], i < report.steps.size() ? report.steps[i] : 0});
  return outcome;
}

std::optional<std::uint64_t> staleness_of(const group_done& report, std::size_t i,
                                          const policy::group_decision& planned) {
  if (!report.server_staleness.empty()) // async: the parameter server counted it
    return i < report.server_staleness.size() ? std::optional<std::uint64_t>(report.server_staleness[i])
                                              : std::nullopt;
  if (!planned.staleness.empty()) {
    const auto member =
        std::find(planned.members.begin(), planned.members.end(), report.members[i]);
    if (member == planned.members.end())
      return std::nullopt;
    return planned.staleness[static_cast<std::size_t>(member - planned.members.begin())];
  }
  if (planned.step > 0)
    return i < report.steps.size() ? planned.step - std::min(planned.step, report.steps[i]) : 0;
  if (i >= report.versions.size())
    return std::nullopt;
  return report.round - std::min(report.round, report.versions[i]);
}

std::optional<std::string> missing_members_notice(const group_done& report,
                                                  const policy::group_decision& planned) {
  if (report.unanswered.empty())
    return std::nullopt;
  const std::size_t planned_members = std::max(planned.members.size(), report.members.size());
  std::string text = "round " + std::to_string(report.round) + " completed without " +
                     std::to_string(report.unanswered.size()) + " of " +
                     std::to_string(planned_members) + " members (worker";
  text += report.unanswered.size() > 1 ? "s" : "";
  for (std::size_t i = 0; i < report.unanswered.size(); ++i)
    text += (i > 0 ? ", " : " ") + std::to_string(report.unanswered[i]);
  text += "): ";
  const std::string answered = std::to_string(report.members.size());
  switch (planned.weights) {
  case weighting::uniform_planned:
    text += "divided by all " + std::to_string(planned_members) +
            ", the missing adding zero (missing-members = zero)";
    break;
  case weighting::uniform:
    text += "divided by the " + answered + " that answered";
    break;
  case weighting::given:
    text += "weights renormalised over the " + answered + " that answered";
    break;
  }
  return text;
}

const monitoring::training_metrics::round_record&
fill_round_record(monitoring::training_metrics::round_record& round, const group_done& report,
                  const policy::group_decision& planned, const std::vector<fresh_arrival>& arrivals,
                  double now_seconds) {
  round.answered.assign(report.members.begin(), report.members.end());
  round.finished_seconds = now_seconds;
  round.full_sync = planned.kind == round_kind::full_sync;
  round.members = report.members.size();
  round.missing = report.unanswered.size();
  round.reduce_seconds = report.reduce_seconds;
  round.reduce_bytes = report.bytes;
  round.samples = report.samples;
  round.fresh = round.stale = round.none = 0;
  round.staleness_rounds.clear();
  round.fresh_arrival_seconds.clear();
  // Once, not nine times over as 256 members push back one by one.
  round.staleness_rounds.reserve(report.members.size());
  round.fresh_arrival_seconds.reserve(report.members.size());
  for (std::size_t i = 0; i < report.members.size() && i < report.kinds.size(); ++i) {
    if (report.kinds[i] != freshness::none)
      if (auto staleness = staleness_of(report, i, planned))
        round.staleness_rounds.push_back(*staleness);
    if (report.kinds[i] == freshness::fresh) {
      ++round.fresh;
      const auto& arrival = arrivals[static_cast<std::size_t>(report.members[i])];
      // Its arrival may still be on the way (it gave before the coordinator heard of it).
      if (arrival.step == (i < report.steps.size() ? report.steps[i] : 0))
        round.fresh_arrival_seconds.push_back(arrival.at_seconds);
    } else {
      ++(report.kinds[i] == freshness::stale ? round.stale : round.none);
    }
  }
  return round;
}

} // namespace herd::actors
