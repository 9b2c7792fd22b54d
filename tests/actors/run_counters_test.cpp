// run_counters: what the coordinator counts, and the run summary and progress made of it, from
// constructed counters. No actor system.
#include "actors/run_counters.hpp"

#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace {

using herd::actors::stop_cause;
using herd::actors::evaluation_point;
using herd::actors::evaluation_schedule;
using herd::actors::run_counters;
using herd::actors::run_summary;
using herd::policy::freshness;
using herd::policy::round_kind;

run_summary head() {
  run_summary run;
  run.algorithm = "majority";
  run.data_plane = "local";
  run.compute = "cpu";
  run.imbalance = "random k=1";
  run.target_accuracy = 0.8;
  run.stop_reason = stop_cause::epochs;
  return run;
}

evaluation_schedule no_evaluations() {
  return evaluation_schedule(evaluation_schedule::settings{});
}

run_counters two_workers(std::size_t samples_per_epoch = 64) {
  run_counters counters(2, samples_per_epoch);
  counters.set_workers(2);
  return counters;
}

TEST(run_counters, the_summary_names_the_run_and_counts_its_rounds) {
  auto counters = two_workers();
  counters.round_finished(round_kind::full_sync, {freshness::fresh, freshness::fresh}, 32, 0.5,
                          1000);
  counters.round_finished(round_kind::partial, {freshness::fresh, freshness::stale}, 32, 0.25,
                          1000);
  counters.round_finished(round_kind::partial, {freshness::stale, freshness::none}, 16, 0.25, 500);
  counters.isolation_interventions = 2;
  counters.aborted_rounds = 1;
  const auto summary = summarize(head(), counters, no_evaluations(), 4.0);
  EXPECT_EQ(summary.algorithm, "majority");
  EXPECT_EQ(summary.data_plane, "local");
  EXPECT_EQ(summary.imbalance, "random k=1");
  EXPECT_EQ(summary.stop_reason, stop_cause::epochs);
  EXPECT_EQ(summary.target_accuracy, 0.8);
  EXPECT_EQ(summary.workers, 2);
  EXPECT_EQ(summary.rounds, 3u);
  EXPECT_EQ(summary.full_sync_rounds, 1u);
  EXPECT_EQ(summary.partial_rounds, 2u);
  EXPECT_EQ(summary.fresh_contributions, 3u);
  EXPECT_EQ(summary.stale_contributions, 2u);
  EXPECT_EQ(summary.empty_contributions, 1u);
  EXPECT_EQ(summary.isolation_interventions, 2u);
  EXPECT_EQ(summary.aborted_rounds, 1u);
  EXPECT_EQ(summary.samples, 80u);
  EXPECT_DOUBLE_EQ(summary.epochs, 80.0 / 64.0);
  EXPECT_EQ(summary.wall_seconds, 4.0);
  EXPECT_DOUBLE_EQ(summary.samples_per_second, 20.0);
  EXPECT_DOUBLE_EQ(summary.reduce_seconds, 1.0);
  EXPECT_EQ(summary.reduce_bytes, 2500u);
}

TEST(run_counters, each_worker_s_steps_waits_and_losses_reach_the_summary) {
  std::mt19937 random(5);
  std::uniform_real_distribution<double> seconds(0.01, 0.1);
  auto counters = two_workers();
  std::vector<double> compute_total(2, 0.0);
  std::vector<double> wait_total(2, 0.0);
  for (std::uint64_t step = 1; step <= 4; ++step)
    for (int worker = 0; worker < 2; ++worker) {
      const double compute = seconds(random);
      const double wait = seconds(random);
      compute_total[static_cast<std::size_t>(worker)] += compute;
      if (step > 1) // the first step had nothing to wait for
        wait_total[static_cast<std::size_t>(worker)] += wait;
      counters.step_finished(worker, step, compute, wait, 2.0 + worker, 8,
                             worker == 1 && step == 3);
    }
  counters.worker_lost(1);
  const auto summary = summarize(head(), counters, no_evaluations(), 1.0);
  EXPECT_EQ(summary.steps, 8u);
  ASSERT_EQ(summary.per_worker.size(), 2u);
  for (int worker = 0; worker < 2; ++worker) {
    const auto& counted = summary.per_worker[static_cast<std::size_t>(worker)];
    EXPECT_EQ(counted.worker, worker);
    EXPECT_EQ(counted.steps, 4u);
    EXPECT_EQ(counted.samples, 32u);
    EXPECT_NEAR(counted.compute_seconds, compute_total[static_cast<std::size_t>(worker)], 1e-12);
    EXPECT_NEAR(counted.wait_seconds, wait_total[static_cast<std::size_t>(worker)], 1e-12);
    EXPECT_GT(counted.step_seconds.max, 0.0);
  }
  EXPECT_EQ(summary.per_worker[0].late_steps, 0u);
  EXPECT_EQ(summary.per_worker[1].late_steps, 1u);
  EXPECT_TRUE(summary.per_worker[0].live);
  EXPECT_FALSE(summary.per_worker[1].live);
  EXPECT_DOUBLE_EQ(summary.final_train_loss, 2.5); // the mean of both workers' losses
  // Steps 1 to 3 of both were compared against a barrier (step 4's wait has not been reported).
  EXPECT_EQ(summary.waiting.steps_compared, 3u);
}

TEST(run_counters, the_training_loss_is_the_mean_of_the_last_200_steps) {
  auto counters = two_workers();
  for (std::uint64_t step = 1; step <= 300; ++step)
    counters.step_finished(0, step, 0.01, 0.0, step <= 100 ? 100.0 : 1.0, 1, false);
  EXPECT_DOUBLE_EQ(counters.recent_loss(), 1.0);
  EXPECT_EQ(counters.recent_losses.size(), 200u);
}

TEST(run_counters, a_worker_that_joins_is_live_again_and_counted) {
  auto counters = two_workers();
  counters.worker_lost(0);
  EXPECT_EQ(counters.live_workers(), (std::vector<int>{1}));
  counters.worker_joined(0);
  EXPECT_EQ(counters.live_workers(), (std::vector<int>{0, 1}));
  const auto summary = summarize(head(), counters, no_evaluations(), 0.0);
  EXPECT_EQ(summary.workers_joined, 1u);
  EXPECT_TRUE(summary.per_worker[0].live);
  EXPECT_EQ(summary.samples_per_second, 0.0); // no wall time: no rate
}

TEST(run_counters, the_summary_carries_the_evaluations_and_the_final_one) {
  evaluation_schedule::settings chosen;
  chosen.target_accuracy = 0.8;
  evaluation_schedule evaluations(chosen);
  evaluation_point early;
  early.elapsed_seconds = 1.0;
  early.test_accuracy = 0.85;
  evaluations.record(early);
  evaluation_point last = early;
  last.elapsed_seconds = 2.0;
  last.test_accuracy = 0.9;
  last.test_loss = 0.3;
  evaluations.set_final(last);
  evaluations.record(last);
  const auto summary = summarize(head(), two_workers(), evaluations, 2.0);
  ASSERT_EQ(summary.evaluations.size(), 2u);
  EXPECT_EQ(summary.time_to_target_seconds, 1.0);
  EXPECT_EQ(summary.final_test_accuracy, 0.9);
  EXPECT_EQ(summary.final_test_loss, 0.3);
}

// A run that stopped at its target keeps the parameters that reached it: the rounds in flight
// then may have moved the workers' parameters either way.
TEST(run_counters, a_run_stopped_at_its_target_ends_with_the_parameters_that_reached_it) {
  evaluation_schedule::settings chosen;
  chosen.target_accuracy = 0.85;
  evaluation_schedule evaluations(chosen);
  evaluation_point below;
  below.elapsed_seconds = 1.0;
  below.test_accuracy = 0.80;
  EXPECT_FALSE(evaluations.record(below));
  evaluation_point reached;
  reached.elapsed_seconds = 2.0;
  reached.test_accuracy = 0.8538;
  reached.test_loss = 0.41;
  EXPECT_TRUE(evaluations.record(reached));
  evaluation_point after = reached;
  after.elapsed_seconds = 2.1;
  after.test_accuracy = 0.8449;
  after.test_loss = 0.44;
  evaluations.set_final(after);
  evaluations.record(after);
  auto stopped = head();
  stopped.stop_reason = stop_cause::target_accuracy;
  const auto at_target = summarize(stopped, two_workers(), evaluations, 2.1);
  EXPECT_EQ(at_target.final_test_accuracy, 0.8538);
  EXPECT_EQ(at_target.final_test_loss, 0.41);
  EXPECT_EQ(at_target.after_stop_test_accuracy, 0.8449);
  EXPECT_EQ(at_target.time_to_target_seconds, 2.0);
  // Stopped for another reason (the target reached earlier or not at all): the last parameters.
  auto epochs = head();
  epochs.stop_reason = stop_cause::epochs;
  const auto at_the_end = summarize(epochs, two_workers(), evaluations, 2.1);
  EXPECT_EQ(at_the_end.final_test_accuracy, 0.8449);
  EXPECT_FALSE(at_the_end.after_stop_test_accuracy);
}

TEST(run_counters, a_missing_final_evaluation_leaves_the_final_accuracy_empty) {
  evaluation_schedule evaluations(evaluation_schedule::settings{});
  evaluation_point earlier;
  earlier.test_accuracy = 0.7;
  evaluations.record(earlier);
  const auto summary = summarize(head(), two_workers(), evaluations, 2.0);
  EXPECT_FALSE(summary.final_test_accuracy);
  EXPECT_FALSE(summary.final_test_loss);
  EXPECT_EQ(summary.evaluations.size(), 1u);
}

TEST(run_counters, a_run_stopped_before_its_start_has_no_workers_to_report) {
  run_counters counters(4, 128);
  auto run = head();
  run.stop_reason = stop_cause::interrupted;
  const auto summary = summarize(run, counters, no_evaluations(), 0.0);
  EXPECT_EQ(summary.workers, 0);
  EXPECT_TRUE(summary.per_worker.empty());
  EXPECT_EQ(summary.stop_reason, stop_cause::interrupted);
  EXPECT_EQ(summary.epochs, 0.0);
}

TEST(run_counters, progress_reports_rates_and_the_live_workers) {
  auto counters = two_workers(100);
  counters.round_finished(round_kind::full_sync, {freshness::fresh, freshness::fresh}, 50, 0.1, 10);
  counters.step_finished(0, 1, 0.1, 0.0, 0.5, 25, false);
  counters.worker_lost(1);
  const auto now = progress_of(counters, 2.0, 0.75);
  EXPECT_EQ(now.elapsed_seconds, 2.0);
  EXPECT_DOUBLE_EQ(now.epoch, 0.5);
  EXPECT_EQ(now.rounds, 1u);
  EXPECT_EQ(now.steps, 1u);
  EXPECT_EQ(now.samples, 50u);
  EXPECT_EQ(now.train_loss, 0.5);
  EXPECT_EQ(now.test_accuracy, 0.75);
  EXPECT_DOUBLE_EQ(now.samples_per_second, 25.0);
  EXPECT_EQ(now.live_workers, 1);
  EXPECT_EQ(progress_of(counters, 0.0, std::nullopt).samples_per_second, 0.0);
}

TEST(run_counters, without_an_epoch_size_no_epoch_passes) {
  auto counters = two_workers(0);
  counters.round_finished(round_kind::partial, {freshness::fresh}, 50, 0.0, 0);
  EXPECT_EQ(counters.epochs(), 0.0);
}

} // namespace
