// round_report: what a finished round's report tells the policy and the metrics (staleness under
// each kind of algorithm). No actor system.
#include "actors/round_report.hpp"

#include <gtest/gtest.h>
#include <optional>
#include <string>
#include <vector>

namespace {

using herd::actors::fresh_arrival;
using herd::actors::group_done;
using herd::monitoring::training_metrics;
using herd::policy::freshness;
using herd::policy::group_decision;
using herd::policy::round_kind;

// Round 10 of workers 0, 2, 3: 0 fresh, 2 stale, 3 gave nothing.
group_done three_members() {
  group_done report;
  report.round = 10;
  report.members = {0, 2, 3};
  report.kinds = {freshness::fresh, freshness::stale, freshness::none};
  report.steps = {12, 9, 11};
  report.versions = {10, 7, 0};
  report.reduce_seconds = 0.5;
  report.bytes = 4096;
  return report;
}

// A data plane that aborts round after round ends the run on the ninth in a row; a completed round
// starts the count again, and a checkpoint's count goes on.
TEST(round_report, more_than_eight_aborted_rounds_in_a_row_end_the_run) {
  herd::actors::abort_streak streak;
  for (int round = 1; round <= 8; ++round)
    EXPECT_FALSE(streak.aborted()) << round;
  streak.completed();
  for (int round = 1; round <= 8; ++round)
    EXPECT_FALSE(streak.aborted()) << round;
  EXPECT_TRUE(streak.aborted());
  EXPECT_EQ(streak.in_a_row(), 9u);
  herd::actors::abort_streak resumed(8);
  EXPECT_TRUE(resumed.aborted());
}

// A decision's plan carries everything the policy decided: members (and their actors, by
// index), kind, weights with the members' given weights, and wagma's step.
TEST(round_report, a_plan_carries_the_decisions_members_kind_weights_and_step) {
  caf::actor_system_config config;
  caf::actor_system system{config};
  std::vector<caf::actor> workers;
  for (int i = 0; i < 4; ++i)
    workers.push_back(system.spawn([] { return caf::behavior{[](int) {}}; }));
  group_decision decision;
  decision.members = {1, 3};
  decision.kind = round_kind::partial;
  decision.weights = herd::policy::weighting::given;
  decision.member_weights = {0.75f, 0.25f};
  decision.step = 12;
  const auto plan = herd::actors::plan_of(decision, 41, 0.5f, workers);
  EXPECT_EQ(plan.round, 41u);
  EXPECT_EQ(plan.lr_scale, 0.5f);
  EXPECT_EQ(plan.members, (std::vector<std::int32_t>{1, 3}));
  EXPECT_EQ(plan.member_handles, (std::vector<caf::actor>{workers[1], workers[3]}));
  EXPECT_EQ(plan.kind, round_kind::partial);
  EXPECT_EQ(plan.weights, herd::policy::weighting::given);
  EXPECT_EQ(plan.member_weights, (std::vector<float>{0.75f, 0.25f}));
  EXPECT_EQ(plan.step, 12u);
  for (const auto& worker : workers)
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
}

// The aggregator's side: four planned members, one silent, one with nothing to give. The three
// that answered are the round's members; the two with gradients are its inputs, each weighted
// 1/3 (uniform: renormalised over those that answered, the one with nothing included).
TEST(round_report, the_answers_weigh_over_the_members_that_answered) {
  herd::actors::group_plan plan;
  plan.members = {4, 5, 6, 7};
  plan.weights = herd::policy::weighting::uniform;
  using answer = herd::actors::contribution;
  const std::vector<std::optional<answer>> answers{answer{4, 3, 11, freshness::fresh, 32, 3, false},
                                                   std::nullopt,
                                                   answer{6, 3, 9, freshness::stale, 16, 1, true},
                                                   answer{7, 3, 0, freshness::none, 0, 0, false}};
  group_done report;
  const auto inputs = herd::actors::weigh_answers(plan, answers, report);
  EXPECT_EQ(report.members, (std::vector<std::int32_t>{4, 6, 7}));
  EXPECT_EQ(report.kinds,
            (std::vector<freshness>{freshness::fresh, freshness::stale, freshness::none}));
  EXPECT_EQ(report.steps, (std::vector<std::uint64_t>{11, 9, 0}));
  EXPECT_EQ(report.fresh, 1u);
  EXPECT_EQ(report.stale, 1u);
  EXPECT_EQ(report.samples, 48u);
  EXPECT_EQ(report.in_backward, 1u);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].rank, 4);
  EXPECT_EQ(inputs[1].rank, 6);
  EXPECT_FLOAT_EQ(inputs[0].weight, 1.0f / 3.0f);
  EXPECT_FLOAT_EQ(inputs[1].weight, 1.0f / 3.0f);
  EXPECT_EQ(herd::actors::answered_positions(answers), (std::vector<std::size_t>{0, 2, 3}));
}

TEST(round_report, the_policy_hears_who_answered_and_what_each_gave) {
  const auto outcome = outcome_of(three_members());
  EXPECT_EQ(outcome.members, (std::vector<int>{0, 2, 3}));
  ASSERT_EQ(outcome.contributions.size(), 3u);
  EXPECT_EQ(outcome.contributions[1].worker, 2);
  EXPECT_EQ(outcome.contributions[1].kind, freshness::stale);
  EXPECT_EQ(outcome.contributions[1].step, 9u);
}

TEST(round_report, gradient_staleness_counts_the_rounds_since_the_parameters_it_was_computed_on) {
  const auto report = three_members();
  const group_decision planned; // no staleness of the policy's, no step
  EXPECT_EQ(staleness_of(report, 0, planned), 0u);
  EXPECT_EQ(staleness_of(report, 1, planned), 3u);
  auto unversioned = report;
  unversioned.versions.clear();
  EXPECT_FALSE(staleness_of(unversioned, 0, planned));
}

TEST(round_report, preduce_staleness_is_the_policy_s_for_that_member) {
  group_decision planned;
  planned.members = {2, 3};
  planned.staleness = {4, 1};
  const auto report = three_members();
  EXPECT_FALSE(staleness_of(report, 0, planned)); // worker 0 was not in the decision
  EXPECT_EQ(staleness_of(report, 1, planned), 4u);
  EXPECT_EQ(staleness_of(report, 2, planned), 1u);
}

TEST(round_report, wagma_staleness_is_the_steps_a_member_had_still_to_finish) {
  group_decision planned;
  planned.step = 11;
  const auto report = three_members();
  EXPECT_EQ(staleness_of(report, 0, planned), 0u); // ahead of the round's step
  EXPECT_EQ(staleness_of(report, 1, planned), 2u);
  EXPECT_EQ(staleness_of(report, 2, planned), 0u);
}

TEST(round_report, the_metrics_count_each_kind_and_the_fresh_arrivals_that_came) {
  group_decision planned;
  planned.kind = round_kind::partial;
  std::vector<fresh_arrival> arrivals(4);
  arrivals[0] = {12, 3.25}; // worker 0's fresh step 12 arrived at 3.25 s
  training_metrics::round_record round;
  fill_round_record(round, three_members(), planned, arrivals, 4.0);
  EXPECT_FALSE(round.full_sync);
  EXPECT_EQ(round.answered, three_members().members); // the result went to them at 4.0 s
  EXPECT_EQ(round.finished_seconds, 4.0);
  EXPECT_EQ(round.members, 3u);
  EXPECT_EQ(round.fresh, 1u);
  EXPECT_EQ(round.stale, 1u);
  EXPECT_EQ(round.none, 1u);
  EXPECT_EQ(round.staleness_rounds, (std::vector<std::uint64_t>{0, 3})); // not for "none"
  EXPECT_EQ(round.fresh_arrival_seconds, (std::vector<double>{3.25}));
  EXPECT_EQ(round.reduce_seconds, 0.5);
  EXPECT_EQ(round.reduce_bytes, 4096u);
}

TEST(round_report, a_fresh_arrival_still_on_its_way_has_no_arrival_time) {
  std::vector<fresh_arrival> arrivals(4);
  arrivals[0] = {11, 2.0}; // the coordinator has heard of step 11 only
  group_decision planned;
  planned.kind = round_kind::full_sync;
  training_metrics::round_record round;
  fill_round_record(round, three_members(), planned, arrivals, 2.5);
  EXPECT_TRUE(round.full_sync);
  EXPECT_TRUE(round.fresh_arrival_seconds.empty());
}

// The coordinator fills one record for every round: what a round leaves in it is gone after the
// next one's.
TEST(round_report, a_record_filled_again_holds_only_the_newer_round) {
  group_decision planned;
  planned.kind = round_kind::partial;
  std::vector<fresh_arrival> arrivals(6);
  arrivals[0] = {12, 3.25};
  training_metrics::round_record round;
  fill_round_record(round, three_members(), planned, arrivals, 4.0);
  group_done smaller;
  smaller.round = 9;
  smaller.members = {5};
  smaller.kinds = {freshness::stale};
  smaller.steps = {2};
  smaller.versions = {8};
  smaller.stale = 1;
  smaller.unanswered = {1};
  planned.kind = round_kind::full_sync;
  fill_round_record(round, smaller, planned, arrivals, 5.0);
  training_metrics::round_record fresh_record;
  fill_round_record(fresh_record, smaller, planned, arrivals, 5.0);
  EXPECT_TRUE(round.full_sync);
  EXPECT_EQ(round.answered, std::vector<std::int32_t>{5});
  EXPECT_EQ(round.members, 1u);
  EXPECT_EQ(round.missing, 1u);
  EXPECT_EQ(round.fresh, 0u);
  EXPECT_EQ(round.stale, 1u);
  EXPECT_EQ(round.none, 0u);
  EXPECT_EQ(round.staleness_rounds, fresh_record.staleness_rounds);
  EXPECT_EQ(round.staleness_rounds, (std::vector<std::uint64_t>{1}));
  EXPECT_TRUE(round.fresh_arrival_seconds.empty());
  EXPECT_EQ(round.reduce_bytes, 0u);
  EXPECT_EQ(round.finished_seconds, 5.0);
}

// A gradient round without some members: counted in the metrics and told in a notice that says
// what it divided by (<algorithm>.missing-members).
TEST(round_report, a_round_without_some_members_is_counted_and_says_its_divisor) {
  auto report = three_members();
  report.unanswered = {1, 5};
  report.unanswered_reasons = {"timed out", "its node was lost"};
  group_decision planned;
  planned.kind = round_kind::partial;
  planned.members = {0, 1, 2, 3, 5};
  planned.weights = herd::policy::weighting::uniform;
  const std::vector<fresh_arrival> arrivals(6);
  training_metrics::round_record round;
  fill_round_record(round, report, planned, arrivals, 1.0);
  EXPECT_EQ(round.missing, 2u);
  EXPECT_EQ(missing_members_notice(report, planned),
            "round 10 completed without 2 of 5 members (workers 1, 5): divided by the 3 that "
            "answered");
  planned.weights = herd::policy::weighting::uniform_planned;
  EXPECT_EQ(missing_members_notice(report, planned),
            "round 10 completed without 2 of 5 members (workers 1, 5): divided by all 5, the "
            "missing adding zero (missing-members = zero)");
  const auto everyone = three_members();
  fill_round_record(round, everyone, planned, arrivals, 1.0);
  EXPECT_EQ(round.missing, 0u);
  EXPECT_FALSE(missing_members_notice(everyone, planned));
}

} // namespace
