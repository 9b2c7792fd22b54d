// Whole runs of the papers' baselines (docs/algorithms.md). Local SGD: every global average leaves
// every replica with one model, the replicas part between averages, and averaging every step is
// synchronous SGD. The asynchronous parameter server: with one worker it is plain SGD bit for bit,
// every gradient a worker computed is applied by the server once or is still unsent at the stop,
// each worker steps from the server's parameters as they were when its gradient was applied, and
// a slow worker holds nobody back.
#include "actors/train_session.hpp"
#include "actors/worker_probe.hpp"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <numeric>
#include <set>

#include "support/recording_probe.hpp"
#include "support/session_config.hpp"

namespace {

using herd::actors::stop_cause;
using herd::actors::run_summary;
using herd::actors::train_session;
using herd::config::run_config;
using herd::testing::recording_probe;

constexpr int batch = 8;

struct job {
  run_config config;
  std::shared_ptr<const herd::models::train_test_split> data;
};

// `workers` workers whose single epoch is `steps` steps per worker.
job make_job(const std::string& algorithm, int workers, int steps) {
  job made;
  auto& config = made.config;
  config = herd::testing::small_session_config(workers, batch);
  config.train.algorithm = algorithm;
  config.train.seed = 11;
  config.train.eval_every = 100000;
  made.data = std::make_shared<herd::models::train_test_split>(herd::models::make_synthetic_split(
      static_cast<std::size_t>(workers) * static_cast<std::size_t>(steps * batch), 200, 24, 5,
      5));
  return made;
}

struct probed_run {
  run_summary summary;
  std::shared_ptr<recording_probe> probe;
  std::vector<std::vector<float>> final_parameters;
  std::vector<float> server_parameters;
};

probed_run run_probed(const job& j) {
  herd::actors::session_options options;
  options.progress_interval = std::chrono::milliseconds(20);
  const auto model = herd::actors::make_model(j.config, j.data->train);
  auto probe = std::make_shared<recording_probe>(j.config.train.workers, model->parameter_count());
  options.probe = probe;
  train_session session(j.config, j.data, options);
  probed_run result;
  result.summary = session.run();
  result.probe = probe;
  result.final_parameters = session.final_parameters();
  result.server_parameters = session.final_server_parameters();
  return result;
}

// Per round: the workers that applied it and their parameters' fingerprints afterwards.
std::map<std::uint64_t, std::vector<std::pair<int, std::uint64_t>>> rounds_of(const probed_run& run,
                                                                              int workers) {
  std::map<std::uint64_t, std::vector<std::pair<int, std::uint64_t>>> rounds;
  for (int w = 0; w < workers; ++w)
    for (const auto& [round, hash] : run.probe->fingerprints()[static_cast<std::size_t>(w)])
      rounds[round].push_back({w, hash});
  return rounds;
}

double relative_distance(const std::vector<float>& got, const std::vector<float>& expected) {
  double difference = 0.0, magnitude = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    difference += std::pow(static_cast<double>(got[i]) - expected[i], 2.0);
    magnitude += std::pow(static_cast<double>(expected[i]), 2.0);
  }
  return std::sqrt(difference) / std::sqrt(magnitude);
}

// -- local SGD --------------------------------------------------------------------------------

TEST(local_sgd_runs, every_global_average_makes_the_replicas_one_and_they_part_in_between) {
  for (const int period : {4, 3}) {
    auto j = make_job("local-sgd", 4, 20);
    j.config.local_sgd.period = period;
    j.config.imbalance.kind = "random";
    j.config.imbalance.k = 1;
    j.config.imbalance.delay_ms = 3.0;
    const auto run = run_probed(j);
    const std::string label = "period " + std::to_string(period);
    ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << label << ": " << run.summary.error;
    std::uint64_t globals = 0, alone = 0;
    for (const auto& [round, members] : rounds_of(run, 4)) {
      if (members.size() == 1) {
        ++alone;
        continue;
      }
      ASSERT_EQ(members.size(), 4u) << label << ", round " << round << ": everyone or one";
      ++globals;
      for (const auto& [worker, hash] : members)
        EXPECT_EQ(hash, members.front().second) << label << ", round " << round;
    }
    EXPECT_EQ(globals, 20u / static_cast<std::uint64_t>(period)) << label;
    EXPECT_EQ(globals, run.summary.full_sync_rounds) << label;
    EXPECT_EQ(alone, 4u * (20u - 20u / static_cast<std::uint64_t>(period))) << label;
    // After each worker's last round: with period 4 that is the average of step 20, and every
    // replica holds it; with period 3 it is step 20 taken alone after the average of step 18, and
    // the replicas (trained on different shards since) differ.
    const auto& last = run.probe->last_applied();
    for (std::size_t w = 1; w < 4; ++w) {
      if (period == 4)
        EXPECT_EQ(last[w], last[0]) << label << ", worker " << w;
      else
        EXPECT_NE(last[w], last[0]) << label << ", worker " << w;
    }
  }
}

// Averaging every step: the mean of P models, each stepped by its own optimizer from the same
// model, is sync's step on the mean gradient (momentum and weight decay are linear), up to
// rounding.
TEST(local_sgd_runs, a_period_of_one_is_synchronous_sgd) {
  auto sync = make_job("sync", 4, 30);
  auto local = make_job("local-sgd", 4, 30);
  local.config.local_sgd.period = 1;
  const auto with_sync = run_probed(sync);
  const auto with_local = run_probed(local);
  ASSERT_EQ(with_sync.summary.stop_reason, stop_cause::epochs) << with_sync.summary.error;
  ASSERT_EQ(with_local.summary.stop_reason, stop_cause::epochs) << with_local.summary.error;
  EXPECT_EQ(with_local.summary.rounds, with_sync.summary.rounds);
  EXPECT_EQ(with_local.summary.full_sync_rounds, with_local.summary.rounds);
  const auto& got = with_local.probe->last_applied()[0];
  ASSERT_EQ(got.size(), with_sync.final_parameters[0].size());
  EXPECT_LT(relative_distance(got, with_sync.final_parameters[0]), 1e-4);
  for (std::size_t w = 1; w < 4; ++w)
    EXPECT_EQ(with_local.probe->last_applied()[w], got);
}

// -- the asynchronous parameter server --------------------------------------------------------

// One worker: the server applies the worker's gradient with the same optimizer step that sync's
// worker applies to the one-member mean (a copy, weight exactly 1), from the same initial
// parameters, so the two runs go through the same floats.
TEST(async_runs, with_one_worker_it_is_plain_sgd_bit_for_bit) {
  const auto with_sync = run_probed(make_job("sync", 1, 40));
  const auto with_async = run_probed(make_job("async", 1, 40));
  ASSERT_EQ(with_sync.summary.stop_reason, stop_cause::epochs) << with_sync.summary.error;
  ASSERT_EQ(with_async.summary.stop_reason, stop_cause::epochs) << with_async.summary.error;
  EXPECT_EQ(with_async.summary.server_updates, 40u);
  EXPECT_EQ(with_async.summary.server_staleness_max, 0u) << "nobody else updates the server";
  ASSERT_FALSE(with_async.server_parameters.empty());
  EXPECT_EQ(with_async.server_parameters, with_sync.final_parameters[0]);
  EXPECT_EQ(with_async.final_parameters[0], with_async.server_parameters)
      << "the worker holds what the server handed it last";
}

TEST(async_runs, every_gradient_is_applied_once_and_each_worker_steps_from_the_servers_parameters) {
  auto j = make_job("async", 4, 30);
  j.config.imbalance.kind = "random";
  j.config.imbalance.k = 1;
  j.config.imbalance.delay_ms = 3.0;
  const auto run = run_probed(j);
  ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << run.summary.error;
  // Every round is one worker's gradient applied at the server, and the epoch is 4 x 30 of them.
  EXPECT_EQ(run.summary.server_updates, 120u);
  EXPECT_EQ(run.summary.rounds, run.summary.server_updates);
  EXPECT_EQ(run.summary.fresh_contributions, run.summary.server_updates);
  // A step past the epoch's end finds no round: its gradient is unsent, and no other is.
  std::uint64_t unsent = 0;
  for (const auto& gradient : run.probe->unsent())
    unsent += std::any_of(gradient.begin(), gradient.end(), [](double v) { return v != 0.0; });
  EXPECT_EQ(run.summary.server_updates + unsent, run.summary.steps);
  // Each result is the server's parameters right after that worker's gradient: a new version
  // each time, handed to that worker only. So the fingerprints are all different, and the last
  // version handed out is the server's final model.
  std::set<std::uint64_t> versions;
  for (const auto& [round, members] : rounds_of(run, 4)) {
    ASSERT_EQ(members.size(), 1u) << "round " << round;
    EXPECT_TRUE(versions.insert(members.front().second).second) << "round " << round;
  }
  EXPECT_EQ(versions.size(), 120u);
  std::size_t holding_the_last = 0;
  for (const auto& last : run.probe->last_applied())
    holding_the_last += last == run.server_parameters;
  EXPECT_EQ(holding_the_last, 1u);
  // Under imbalance gradients overtake each other: some were computed on older parameters.
  EXPECT_GT(run.summary.server_staleness_max, 0u);
  EXPECT_LE(run.summary.server_staleness_mean, static_cast<double>(run.summary.server_staleness_max));
}

// Worker 0 computes 50x slower. Under sync every worker takes as many steps as the slow one (a
// round waits for it); under async the others go on at their own pace.
TEST(async_runs, a_slow_worker_does_not_hold_the_others_back) {
  for (const std::string algorithm : {"sync", "async"}) {
    auto j = make_job(algorithm, 3, 40);
    j.config.imbalance.kind = "persistent";
    j.config.imbalance.workers = {0};
    j.config.imbalance.factor = 50.0;
    j.config.model.hidden = {128}; // a step long enough that 50x of it outweighs the messages
    const auto run = run_probed(j);
    ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs)
        << algorithm << ": " << run.summary.error;
    const auto slow = run.summary.per_worker[0].steps;
    for (std::size_t w = 1; w < 3; ++w) {
      const auto fast = run.summary.per_worker[w].steps;
      if (algorithm == "sync")
        EXPECT_LE(fast, slow + 1) << "worker " << w;
      else
        EXPECT_GT(fast, 2 * slow) << "worker " << w << " against the slow worker's " << slow;
    }
  }
}

} // namespace
