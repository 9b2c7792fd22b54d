// train.lr-schedule in whole runs: under sync every round's step runs at train.lr times the
// schedule's factor at the epochs before the round (measured from the parameters each round
// leaves); the parameter server of a one-worker async run steps at the same rates as sync; and a
// model-averaging worker's own steps take the factor its rounds bring, so a schedule that falls
// to zero stops the model.
#include "actors/train_session.hpp"
#include "actors/worker_probe.hpp"
#include "models/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <mutex>

#include "support/session_config.hpp"

namespace {

using herd::actors::stop_cause;
using herd::config::run_config;

constexpr int batch = 8;
constexpr int steps_per_epoch = 30; // per worker

struct job {
  run_config config;
  std::shared_ptr<const herd::models::train_test_split> data;
};

job make_job(const std::string& algorithm, int workers) {
  job made;
  made.config = herd::testing::small_session_config(workers, batch);
  made.config.train.algorithm = algorithm;
  made.config.train.seed = 11;
  made.config.train.eval_every = 100000;
  made.data = std::make_shared<herd::models::train_test_split>(herd::models::make_synthetic_split(
      static_cast<std::size_t>(workers) * steps_per_epoch * batch, 200, 24, 5, 5));
  return made;
}

// Worker 0's parameters after every round it applied, and the result it applied.
class round_recorder final : public herd::actors::worker_probe {
public:
  struct applied {
    std::vector<float> result;
    std::vector<float> parameters;
  };

  void round_applied(int worker, std::uint64_t round, const float* result, const float* parameters,
                     std::size_t count) override {
    if (worker != 0)
      return;
    std::lock_guard<std::mutex> guard(mutex_);
    rounds_[round] = {{result, result + count}, {parameters, parameters + count}};
  }

  std::map<std::uint64_t, applied> rounds() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return rounds_;
  }

private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, applied> rounds_;
};

struct recorded_run {
  herd::actors::run_summary summary;
  std::map<std::uint64_t, round_recorder::applied> rounds;
  std::vector<std::vector<float>> final_parameters;
  std::vector<float> server_parameters;
};

recorded_run run_recorded(const job& j) {
  auto options = herd::testing::quick_session_options();
  auto probe = std::make_shared<round_recorder>();
  options.probe = probe;
  herd::actors::train_session session(j.config, j.data, options);
  recorded_run run;
  run.summary = session.run();
  run.rounds = probe->rounds();
  run.final_parameters = session.final_parameters();
  run.server_parameters = session.final_server_parameters();
  return run;
}

// The rate a plain SGD step (no momentum, no decay) ran at, after = before - rate * gradient:
// the least-squares fit over every parameter, NaN for a zero gradient.
double measured_rate(const std::vector<float>& before, const std::vector<float>& after,
                     const std::vector<float>& gradient) {
  double moved = 0.0, squares = 0.0;
  for (std::size_t i = 0; i < gradient.size(); ++i) {
    moved += (static_cast<double>(before[i]) - after[i]) * gradient[i];
    squares += static_cast<double>(gradient[i]) * gradient[i];
  }
  return squares > 0.0 ? moved / squares : std::nan("");
}

TEST(lr_schedule_runs, every_sync_round_steps_at_the_rate_of_the_epochs_before_it) {
  auto j = make_job("sync", 2);
  auto& train = j.config.train;
  train.epochs = 3;
  train.lr = 0.1;
  train.momentum = 0.0;
  train.weight_decay = 0.0;
  train.lr_schedule = "cosine";
  train.lr_min = 0.01;
  train.lr_warmup_epochs = 0.5;
  const auto run = run_recorded(j);
  ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << run.summary.error;
  ASSERT_EQ(run.rounds.size(), 3u * steps_per_epoch);
  const auto schedule = herd::models::lr_schedule::of(train);
  std::size_t measured = 0;
  for (auto round = std::next(run.rounds.begin()); round != run.rounds.end(); ++round) {
    const auto& before = std::prev(round)->second.parameters;
    const double rate = measured_rate(before, round->second.parameters, round->second.result);
    if (std::isnan(rate))
      continue;
    // Each sync round commits 2 workers x 8 samples: round r begins at r / 30 epochs.
    const double epochs = static_cast<double>(round->first) / steps_per_epoch;
    const double expected = static_cast<float>(train.lr) * schedule.factor(epochs);
    EXPECT_NEAR(rate, expected, 1e-3 * expected) << "round " << round->first;
    ++measured;
  }
  EXPECT_EQ(measured, run.rounds.size() - 1);
}

// One worker: the server applies each gradient as sync's worker applies the one-member mean, and
// both take the factor of the same epochs from their rounds, so the runs go through the same
// floats; without the schedule they end elsewhere.
TEST(lr_schedule_runs, one_async_worker_steps_at_syncs_scheduled_rates_bit_for_bit) {
  auto with_sync = make_job("sync", 1);
  with_sync.config.train.epochs = 2;
  with_sync.config.train.lr_schedule = "step";
  with_sync.config.train.lr_decay = 0.5;
  with_sync.config.train.lr_decay_epochs = 0.25;
  with_sync.config.train.lr_warmup_epochs = 0.3;
  auto with_async = with_sync;
  with_async.config.train.algorithm = "async";
  auto constant = with_sync;
  constant.config.train.lr_schedule = "constant";
  constant.config.train.lr_decay = 0.1;
  constant.config.train.lr_decay_epochs = 0.0;
  constant.config.train.lr_warmup_epochs = 0.0;
  const auto sync_run = run_recorded(with_sync);
  const auto async_run = run_recorded(with_async);
  const auto constant_run = run_recorded(constant);
  for (const auto* run : {&sync_run, &async_run, &constant_run})
    ASSERT_EQ(run->summary.stop_reason, stop_cause::epochs) << run->summary.error;
  ASSERT_FALSE(async_run.server_parameters.empty());
  EXPECT_EQ(async_run.server_parameters, sync_run.final_parameters[0]);
  EXPECT_NE(constant_run.final_parameters[0], sync_run.final_parameters[0]);
}

// Local SGD, whose rounds average models: a step schedule that multiplies the rate by 1e-3 every
// 0.05 epochs has brought it to 0 in float by the middle of the run. From then on the workers'
// own steps (at the factor of their last round) leave the model where it is, while at a constant
// rate it goes on moving.
TEST(lr_schedule_runs, a_model_averaging_workers_own_steps_take_the_factor_of_its_rounds) {
  auto scheduled = make_job("local-sgd", 2);
  scheduled.config.train.epochs = 2;
  scheduled.config.local_sgd.period = 2;
  auto constant = scheduled;
  scheduled.config.train.lr_schedule = "step";
  scheduled.config.train.lr_decay = 1e-3;
  scheduled.config.train.lr_decay_epochs = 0.05;
  // How far worker 0's model moved from its first round past the middle of the run to its last.
  const auto movement = [](const recorded_run& run) {
    const auto middle = run.rounds.lower_bound(run.rounds.rbegin()->first / 2);
    const auto& from = middle->second.parameters;
    const auto& to = run.rounds.rbegin()->second.parameters;
    double moved = 0.0;
    for (std::size_t i = 0; i < from.size(); ++i)
      moved = std::max(moved, std::fabs(static_cast<double>(to[i]) - from[i]));
    return moved;
  };
  const auto scheduled_run = run_recorded(scheduled);
  const auto constant_run = run_recorded(constant);
  for (const auto* run : {&scheduled_run, &constant_run}) {
    ASSERT_EQ(run->summary.stop_reason, stop_cause::epochs) << run->summary.error;
    ASSERT_GT(run->rounds.size(), 10u);
  }
  EXPECT_GT(movement(constant_run), 1e-3);
  EXPECT_LE(movement(scheduled_run), 1e-9);
}

} // namespace
