// evaluation_schedule: when a run evaluates, which replicas make the model, what the evaluations
// found; replica_mean: the model of the run under model averaging. No actor system.
#include "actors/evaluation_schedule.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <memory>
#include <random>
#include <vector>

namespace {

using herd::actors::stop_cause;
using herd::actors::evaluation_point;
using herd::actors::evaluation_schedule;
using herd::actors::replica_mean;

evaluation_schedule::settings every(std::uint64_t rounds, double target = 0.0) {
  evaluation_schedule::settings chosen;
  chosen.every_rounds = rounds;
  chosen.target_accuracy = target;
  return chosen;
}

evaluation_point point_at(double elapsed_seconds, double accuracy) {
  evaluation_point point;
  point.elapsed_seconds = elapsed_seconds;
  point.test_accuracy = accuracy;
  return point;
}

std::vector<float> random_parameters(std::mt19937& random, std::size_t count) {
  std::normal_distribution<float> value(0.0f, 1.0f);
  std::vector<float> parameters(count);
  for (auto& parameter : parameters)
    parameter = value(random);
  return parameters;
}

TEST(evaluation_schedule, evaluates_every_eval_every_rounds) {
  evaluation_schedule schedule(every(3));
  EXPECT_FALSE(schedule.deferred());
  std::vector<std::uint64_t> due;
  for (std::uint64_t rounds = 1; rounds <= 10; ++rounds)
    if (schedule.start_periodic(rounds, 0.0)) {
      due.push_back(rounds);
      schedule.periodic_ended();
    }
  EXPECT_EQ(due, (std::vector<std::uint64_t>{3, 6, 9}));
}

TEST(evaluation_schedule, a_round_due_while_an_evaluation_runs_is_skipped) {
  evaluation_schedule schedule(every(2));
  EXPECT_TRUE(schedule.start_periodic(2, 0.0));
  EXPECT_FALSE(schedule.start_periodic(4, 0.0)); // the one of round 2 is still out
  schedule.periodic_ended();
  EXPECT_FALSE(schedule.start_periodic(5, 0.0));
  EXPECT_TRUE(schedule.start_periodic(6, 0.0));
}

// train.eval-every-epochs: at each multiple of the setting the epochs pass (exactly reaching one
// counts), whatever the rounds; train.eval-every is not used then.
TEST(evaluation_schedule, evaluates_each_time_the_epochs_pass_a_multiple_of_eval_every_epochs) {
  auto chosen = every(1);
  chosen.every_epochs = 0.5;
  evaluation_schedule schedule(chosen);
  std::vector<double> due;
  for (int round = 1; round <= 12; ++round) {
    const double epochs = round * 0.2; // 0.2 epochs a round: 1.0 lands on a multiple exactly
    if (schedule.start_periodic(static_cast<std::uint64_t>(round), epochs)) {
      due.push_back(epochs);
      schedule.periodic_ended();
    }
  }
  ASSERT_EQ(due.size(), 4u);
  EXPECT_DOUBLE_EQ(due[0], 0.6);
  EXPECT_DOUBLE_EQ(due[1], 1.0);
  EXPECT_DOUBLE_EQ(due[2], 1.6);
  EXPECT_DOUBLE_EQ(due[3], 2.0);
}

// A multiple passed while an evaluation runs is evaluated once it has ended, not skipped; after a
// resume the multiples count from the checkpoint's epochs, so the first round may pass one.
TEST(evaluation_schedule, a_multiple_passed_during_an_evaluation_comes_after_it) {
  auto chosen = every(1);
  chosen.every_epochs = 1.0;
  evaluation_schedule schedule(chosen);
  EXPECT_TRUE(schedule.start_periodic(1, 1.1));
  EXPECT_FALSE(schedule.start_periodic(2, 2.1)); // the evaluation at 1.1 is still out
  schedule.periodic_ended();
  EXPECT_TRUE(schedule.start_periodic(3, 2.3));
  schedule.periodic_ended();
  EXPECT_FALSE(schedule.start_periodic(4, 2.9));

  evaluation_schedule resumed(chosen);
  resumed.resume_from(schedule, 4.2);
  EXPECT_FALSE(resumed.start_periodic(5, 4.6));
  EXPECT_TRUE(resumed.start_periodic(6, 5.0));
  evaluation_schedule crossing(chosen);
  crossing.resume_from(schedule, 4.98); // the first round after it passes 5
  EXPECT_TRUE(crossing.start_periodic(5, 5.02));
}

TEST(evaluation_schedule, a_snapshot_interval_takes_snapshots_instead_of_evaluating) {
  auto chosen = every(1);
  chosen.snapshot_interval_seconds = 2.0;
  evaluation_schedule schedule(chosen);
  EXPECT_TRUE(schedule.deferred());
  for (std::uint64_t rounds = 1; rounds <= 4; ++rounds)
    EXPECT_FALSE(schedule.start_periodic(rounds, 0.0));
  EXPECT_TRUE(schedule.snapshot_due(0.25)); // the first progress tick
  EXPECT_FALSE(schedule.snapshot_due(1.0));
  EXPECT_FALSE(schedule.snapshot_due(2.0));
  EXPECT_TRUE(schedule.snapshot_due(2.25));
  EXPECT_FALSE(schedule.snapshot_due(4.0));
  EXPECT_TRUE(schedule.snapshot_due(4.5));
}

TEST(evaluation_schedule, without_a_snapshot_interval_no_snapshot_is_due) {
  evaluation_schedule schedule(every(5));
  EXPECT_FALSE(schedule.snapshot_due(0.0));
  EXPECT_FALSE(schedule.snapshot_due(1000.0));
}

TEST(evaluation_schedule, kept_snapshots_wait_in_order_until_dropped) {
  auto chosen = every(1);
  chosen.snapshot_interval_seconds = 1.0;
  evaluation_schedule schedule(chosen);
  const auto first = std::make_shared<const std::vector<float>>(3, 1.0f);
  const auto second = std::make_shared<const std::vector<float>>(3, 2.0f);
  schedule.keep({point_at(1.0, 0.0), first});
  schedule.keep({point_at(2.0, 0.0), second});
  ASSERT_EQ(schedule.kept().size(), 2u);
  EXPECT_EQ(schedule.kept()[0].parameters, first);
  EXPECT_EQ(schedule.kept()[1].point.elapsed_seconds, 2.0);
  schedule.drop_kept();
  EXPECT_TRUE(schedule.kept().empty());
}

// Kept snapshots stay within max_kept_bytes: past it every second one goes (the first stays)
// and the interval doubles, so that a long run's curve gets coarser instead of filling memory.
TEST(evaluation_schedule, kept_snapshots_are_thinned_to_stay_within_their_budget) {
  auto chosen = every(1);
  chosen.snapshot_interval_seconds = 1.0;
  chosen.max_kept_bytes = 4 * 3 * sizeof(float); // four snapshots of 3 floats
  evaluation_schedule schedule(chosen);
  double at = 0.0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(schedule.snapshot_due(at));
    EXPECT_FALSE(schedule.keep(
        {point_at(at, 0.0), std::make_shared<const std::vector<float>>(3, static_cast<float>(i))}));
    at += 1.0;
  }
  ASSERT_TRUE(schedule.snapshot_due(at));
  EXPECT_TRUE(
      schedule.keep({point_at(at, 0.0), std::make_shared<const std::vector<float>>(3, 4.0f)}))
      << "the fifth is over the budget";
  ASSERT_EQ(schedule.kept().size(), 3u);
  EXPECT_EQ(schedule.kept()[0].point.elapsed_seconds, 0.0);
  EXPECT_EQ(schedule.kept()[1].point.elapsed_seconds, 2.0);
  EXPECT_EQ(schedule.kept()[2].point.elapsed_seconds, 4.0);
  EXPECT_EQ(schedule.snapshot_interval_seconds(), 2.0);
  EXPECT_FALSE(schedule.snapshot_due(5.0)) << "the next one two seconds on";
  EXPECT_TRUE(schedule.snapshot_due(6.0));
  schedule.drop_kept();
  EXPECT_FALSE(
      schedule.keep({point_at(6.0, 0.0), std::make_shared<const std::vector<float>>(3, 0.0f)}))
      << "dropping the kept ones frees their budget";
}

TEST(evaluation_schedule, one_replica_shows_the_model_under_gradient_exchange) {
  evaluation_schedule schedule(every(1));
  EXPECT_EQ(schedule.sources({2, 3, 5}), (std::vector<int>{2}));
  EXPECT_TRUE(schedule.sources({}).empty());
}

TEST(evaluation_schedule, every_live_replica_makes_the_model_under_model_averaging) {
  auto chosen = every(1);
  chosen.mean_of_replicas = true;
  evaluation_schedule schedule(chosen);
  EXPECT_EQ(schedule.sources({0, 1, 4}), (std::vector<int>{0, 1, 4}));
  EXPECT_TRUE(schedule.sources({}).empty());
}

TEST(evaluation_schedule, the_first_evaluation_at_the_target_sets_the_time_to_target) {
  evaluation_schedule schedule(every(1, 0.8));
  EXPECT_FALSE(schedule.record(point_at(1.5, 0.5)));
  EXPECT_FALSE(schedule.record(point_at(2.5, 0.79)));
  EXPECT_FALSE(schedule.time_to_target());
  EXPECT_TRUE(schedule.record(point_at(3.5, 0.8)));
  EXPECT_FALSE(schedule.record(point_at(4.5, 0.9)));
  ASSERT_TRUE(schedule.time_to_target());
  EXPECT_EQ(*schedule.time_to_target(), 3.5);
  EXPECT_EQ(schedule.evaluations().size(), 4u);
  EXPECT_EQ(schedule.latest_accuracy(), 0.9);
}

TEST(evaluation_schedule, without_a_target_no_evaluation_reaches_it) {
  evaluation_schedule schedule(every(1));
  EXPECT_FALSE(schedule.latest_accuracy());
  EXPECT_FALSE(schedule.record(point_at(1.0, 1.0)));
  EXPECT_FALSE(schedule.time_to_target());
}

TEST(evaluation_schedule, the_final_evaluation_is_kept_apart_from_the_others) {
  evaluation_schedule schedule(every(1, 0.9));
  EXPECT_FALSE(schedule.final_point());
  schedule.record(point_at(1.0, 0.5));
  schedule.set_final(point_at(2.0, 0.95));
  EXPECT_TRUE(schedule.record(point_at(2.0, 0.95)));
  ASSERT_TRUE(schedule.final_point());
  EXPECT_EQ(schedule.final_point()->test_accuracy, 0.95);
  EXPECT_EQ(*schedule.time_to_target(), 2.0);
}

// A run resumed from a checkpoint counts the target in force, not the checkpoint's: a raised
// target that no evaluation so far reached is still to reach (and stops the run when it is), a
// lowered one was reached by the first evaluation at it. The parameters the checkpoint kept go on
// only with the evaluation that took them.
TEST(evaluation_schedule, a_resumed_run_counts_its_own_target_over_the_evaluations_so_far) {
  evaluation_schedule before(every(1, 0.8));
  before.record(point_at(1.0, 0.7));
  const auto kept = std::make_shared<const std::vector<float>>(std::vector<float>{1.0f, 2.0f});
  EXPECT_TRUE(before.record(point_at(2.0, 0.85), kept));

  evaluation_schedule same(every(1, 0.8));
  same.resume_from(before, 0.0);
  EXPECT_EQ(same.time_to_target(), 2.0);
  EXPECT_EQ(same.target_parameters(), kept);
  EXPECT_EQ(same.evaluations().size(), 2u);

  evaluation_schedule raised(every(1, 0.9));
  raised.resume_from(before, 0.0);
  EXPECT_FALSE(raised.time_to_target());
  EXPECT_FALSE(raised.target_point());
  EXPECT_FALSE(raised.target_parameters());
  EXPECT_FALSE(raised.record(point_at(3.0, 0.88)));
  EXPECT_TRUE(raised.record(point_at(4.0, 0.91)));
  EXPECT_EQ(raised.time_to_target(), 4.0);

  evaluation_schedule lowered(every(1, 0.6));
  lowered.resume_from(before, 0.0);
  EXPECT_EQ(lowered.time_to_target(), 1.0);
  EXPECT_FALSE(lowered.target_parameters()) << "kept for another evaluation";

  evaluation_schedule none(every(1));
  none.resume_from(before, 0.0);
  EXPECT_FALSE(none.time_to_target());
}

evaluation_schedule::settings patient(std::uint64_t patience) {
  auto chosen = every(1);
  chosen.patience = patience;
  return chosen;
}

std::shared_ptr<const std::vector<float>> parameters_of(float value) {
  return std::make_shared<const std::vector<float>>(std::vector<float>{value});
}

// train.patience: the run stops once that many evaluations in a row did not beat the best (an
// equal accuracy does not, nor does NaN), and it keeps the best one's parameters wherever it
// stops, unless it stopped at its target.
TEST(evaluation_schedule, patience_stops_after_evaluations_that_do_not_beat_the_best_and_keeps_it) {
  evaluation_schedule schedule(patient(2));
  schedule.record(point_at(1.0, 0.5), parameters_of(1));
  schedule.record(point_at(2.0, 0.7), parameters_of(2));
  schedule.record(point_at(3.0, 0.7), parameters_of(3)); // equal: no better
  EXPECT_FALSE(schedule.plateaued());
  schedule.record(point_at(4.0, std::nan("")), parameters_of(4));
  EXPECT_TRUE(schedule.plateaued());
  ASSERT_TRUE(schedule.best_point());
  EXPECT_EQ(schedule.best_point()->elapsed_seconds, 2.0);
  schedule.set_final(point_at(5.0, 0.6));
  schedule.record(point_at(5.0, 0.6), parameters_of(5));
  for (const auto reason : {stop_cause::plateau, stop_cause::epochs, stop_cause::max_seconds}) {
    EXPECT_EQ(schedule.kept_point(reason)->elapsed_seconds, 2.0) << reason;
    EXPECT_EQ(schedule.kept_parameters(reason, parameters_of(9))->front(), 2.0f) << reason;
  }
  // A better evaluation starts the count again.
  schedule.record(point_at(6.0, 0.8), parameters_of(6));
  EXPECT_FALSE(schedule.plateaued());
  EXPECT_EQ(schedule.kept_parameters(stop_cause::plateau, nullptr)->front(), 6.0f);
  // The final evaluation does not count: the final checkpoint, written before it, holds the best
  // so far, and what the run keeps is what the checkpoint serves.
  schedule.set_final(point_at(7.0, 0.9));
  schedule.record(point_at(7.0, 0.9), parameters_of(7), true);
  EXPECT_EQ(schedule.best_point()->elapsed_seconds, 6.0);
  EXPECT_EQ(schedule.kept_parameters(stop_cause::epochs, parameters_of(7))->front(), 6.0f);

  // Without patience: never a plateau, and the final parameters are kept.
  evaluation_schedule impatient(every(1));
  for (double accuracy : {0.7, 0.6, 0.5, 0.4})
    impatient.record(point_at(accuracy, accuracy), parameters_of(1));
  EXPECT_FALSE(impatient.plateaued());
  EXPECT_FALSE(impatient.best_point());
  impatient.set_final(point_at(9.0, 0.4));
  EXPECT_EQ(impatient.kept_point(stop_cause::epochs)->elapsed_seconds, 9.0);
  EXPECT_EQ(impatient.kept_parameters(stop_cause::epochs, parameters_of(9))->front(), 9.0f);
}

TEST(evaluation_schedule, a_target_stop_keeps_the_targets_parameters_over_the_best) {
  auto settings = patient(5);
  settings.target_accuracy = 0.8;
  evaluation_schedule schedule(settings);
  EXPECT_TRUE(schedule.record(point_at(1.0, 0.85), parameters_of(1)));
  schedule.set_final(point_at(2.0, 0.9));
  schedule.record(point_at(2.0, 0.9), parameters_of(2)); // the best, after the stop
  EXPECT_EQ(schedule.kept_parameters(stop_cause::target_accuracy, nullptr)->front(), 1.0f);
  EXPECT_EQ(schedule.kept_point(stop_cause::target_accuracy)->elapsed_seconds, 1.0);
}

// Resumed, the best and the count since it come from the evaluations so far; the checkpoint's
// parameters go on only with the evaluation that took them, and without them (a checkpoint of
// format 7, or of a run without patience) the patience starts afresh.
TEST(evaluation_schedule, a_resumed_run_counts_its_patience_from_the_evaluations_so_far) {
  evaluation_schedule before(patient(3));
  before.record(point_at(1.0, 0.7), parameters_of(1));
  before.record(point_at(2.0, 0.6), parameters_of(2));
  before.record(point_at(3.0, 0.65), parameters_of(3));
  evaluation_schedule resumed(patient(3));
  resumed.resume_from(before, 0.0);
  EXPECT_EQ(resumed.best_parameters()->front(), 1.0f);
  EXPECT_FALSE(resumed.plateaued());
  resumed.record(point_at(4.0, 0.69), parameters_of(4));
  EXPECT_TRUE(resumed.plateaued()); // the third in a row below 0.7

  evaluation_schedule shorter(patient(2));
  shorter.resume_from(before, 0.0);
  EXPECT_TRUE(shorter.plateaued());

  evaluation_schedule from_moved(patient(3));
  auto saved = before;
  saved.restore_best(point_at(2.0, 0.6), parameters_of(2)); // not the best of the evaluations
  from_moved.resume_from(saved, 0.0);
  EXPECT_FALSE(from_moved.best_point());
  from_moved.record(point_at(4.0, 0.5), parameters_of(4));
  EXPECT_EQ(from_moved.kept_parameters(stop_cause::plateau, nullptr)->front(), 4.0f);
  EXPECT_FALSE(from_moved.plateaued());
}

TEST(replica_mean, is_the_element_wise_mean_of_the_replicas) {
  std::mt19937 random(42);
  const std::vector<std::vector<float>> replicas{random_parameters(random, 257),
                                                 random_parameters(random, 257),
                                                 random_parameters(random, 257)};
  replica_mean gathered(3);
  EXPECT_FALSE(gathered.add(replicas[0]));
  EXPECT_FALSE(gathered.add(replicas[1]));
  EXPECT_TRUE(gathered.add(replicas[2]));
  EXPECT_TRUE(gathered.any());
  const auto mean = gathered.mean();
  ASSERT_EQ(mean->size(), 257u);
  for (std::size_t i = 0; i < mean->size(); ++i) {
    const double expected =
        (static_cast<double>(replicas[0][i]) + replicas[1][i] + replicas[2][i]) / 3.0;
    EXPECT_EQ((*mean)[i], static_cast<float>(expected)) << "parameter " << i;
  }
}

TEST(replica_mean, of_one_replica_is_that_replica_bit_for_bit) {
  std::mt19937 random(7);
  const auto replica = random_parameters(random, 100);
  replica_mean gathered(1);
  EXPECT_TRUE(gathered.add(replica));
  EXPECT_EQ(*gathered.mean(), replica);
}

TEST(replica_mean, replicas_that_do_not_answer_are_left_out) {
  replica_mean gathered(3);
  EXPECT_FALSE(gathered.fail("timeout"));
  EXPECT_FALSE(gathered.add({1.0f, 2.0f}));
  EXPECT_TRUE(gathered.add({3.0f, 6.0f}));
  EXPECT_EQ(*gathered.mean(), (std::vector<float>{2.0f, 4.0f}));
}

TEST(trained_model, is_the_server_s_the_identical_replicas_or_their_mean) {
  using herd::actors::trained_model;
  std::mt19937 random(11);
  const auto a = random_parameters(random, 64);
  const auto b = random_parameters(random, 64);
  // Identical replicas (gradient exchange): that model, bit for bit; a lost worker's is left out.
  EXPECT_EQ(trained_model({a, {}, a}, {}), a);
  // Replicas apart (model averaging): their element-wise mean.
  const auto mean = trained_model({a, b, {}}, {});
  ASSERT_EQ(mean.size(), a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(mean[i], static_cast<float>((static_cast<double>(a[i]) + b[i]) / 2.0)) << i;
  // A parameter server's parameters are the model, whatever the workers hold.
  EXPECT_EQ(trained_model({a, b}, b), b);
  EXPECT_TRUE(trained_model({{}, {}}, {}).empty());
}

TEST(replica_mean, with_no_answer_says_why_the_last_one_failed) {
  replica_mean gathered(2);
  EXPECT_FALSE(gathered.fail("worker 0: timeout"));
  EXPECT_TRUE(gathered.fail("worker 1: down"));
  EXPECT_FALSE(gathered.any());
  EXPECT_EQ(gathered.failure(), "worker 1: down");
}

} // namespace
