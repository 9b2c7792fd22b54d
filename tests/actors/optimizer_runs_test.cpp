// train.optimizer = adamw in whole runs: under sync every replica goes through the same states and
// the run learns; one async worker is sync bit for bit (the parameter server steps with AdamW
// too), and the runs differ from SGD's.
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"

#include <gtest/gtest.h>

#include "support/recording_probe.hpp"
#include "support/session_config.hpp"

namespace {

using herd::actors::stop_cause;
using herd::config::run_config;
using herd::testing::recording_probe;

struct job {
  run_config config;
  std::shared_ptr<const herd::models::train_test_split> data;
};

// `workers` workers of batch 8, 30 steps an epoch each, AdamW at 0.005.
job adamw_job(const std::string& algorithm, int workers) {
  job made;
  made.config = herd::testing::small_session_config(workers, 8);
  made.config.train.algorithm = algorithm;
  made.config.train.optimizer = "adamw";
  made.config.train.lr = 0.005;
  made.config.train.momentum = 0.9; // its default: AdamW takes train.adam-beta1 instead
  made.config.train.weight_decay = 0.01;
  made.config.train.epochs = 2;
  made.config.train.seed = 7;
  made.data = std::make_shared<herd::models::train_test_split>(herd::models::make_synthetic_split(
      static_cast<std::size_t>(workers) * 30 * 8, 200, 24, 5, 5));
  return made;
}

struct probed_run {
  herd::actors::run_summary summary;
  std::shared_ptr<recording_probe> probe;
  std::vector<std::vector<float>> final_parameters;
  std::vector<float> server_parameters;
};

probed_run run_probed(const job& j) {
  auto options = herd::testing::quick_session_options();
  const auto model = herd::actors::make_model(j.config, j.data->train);
  auto probe = std::make_shared<recording_probe>(j.config.train.workers, model->parameter_count());
  options.probe = probe;
  herd::actors::train_session session(j.config, j.data, options);
  probed_run run;
  run.summary = session.run();
  run.probe = probe;
  run.final_parameters = session.final_parameters();
  run.server_parameters = session.final_server_parameters();
  return run;
}

// Every optimizer key reaches the workers' optimizer settings (AdamW's defaults equal the
// optimizer's own, so values other than the defaults are what shows it).
TEST(optimizer_runs, the_optimizer_takes_every_key_from_the_settings) {
  run_config config;
  config.train.optimizer = "adamw";
  config.train.lr = 0.003;
  config.train.momentum = 0.8;
  config.train.weight_decay = 0.01;
  config.train.adam_beta1 = 0.5;
  config.train.adam_beta2 = 0.9;
  config.train.adam_eps = 1e-3;
  const auto optimizer = herd::actors::optimizer_of(config);
  EXPECT_EQ(optimizer.kind, herd::models::optimizer_kind_of("adamw"));
  EXPECT_FLOAT_EQ(optimizer.learning_rate, 0.003f);
  EXPECT_FLOAT_EQ(optimizer.momentum, 0.8f);
  EXPECT_FLOAT_EQ(optimizer.weight_decay, 0.01f);
  EXPECT_FLOAT_EQ(optimizer.beta1, 0.5f);
  EXPECT_FLOAT_EQ(optimizer.beta2, 0.9f);
  EXPECT_FLOAT_EQ(optimizer.eps, 1e-3f);
}

// async's server steps once per worker's gradient: train.lr / P unless async.lr sets its rate;
// the rest is the workers' optimizer.
TEST(optimizer_runs, the_parameter_servers_rate_is_async_lr_else_lr_over_the_workers) {
  run_config config;
  config.train.algorithm = "async";
  config.train.workers = 4;
  config.train.lr = 0.05;
  config.train.momentum = 0.8;
  EXPECT_FLOAT_EQ(herd::actors::server_optimizer_of(config).learning_rate, 0.0125f);
  EXPECT_FLOAT_EQ(herd::actors::server_optimizer_of(config).momentum, 0.8f);
  config.async.lr = 0.02;
  EXPECT_FLOAT_EQ(herd::actors::server_optimizer_of(config).learning_rate, 0.02f);
}

TEST(optimizer_runs, sync_replicas_under_adamw_go_through_the_same_states_and_learn) {
  const auto run = run_probed(adamw_job("sync", 3));
  ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << run.summary.error;
  const auto& fingerprints = run.probe->fingerprints();
  ASSERT_EQ(fingerprints[0].size(), 60u);
  EXPECT_EQ(fingerprints[1], fingerprints[0]);
  EXPECT_EQ(fingerprints[2], fingerprints[0]);
  EXPECT_EQ(run.final_parameters[1], run.final_parameters[0]);
  // Five well-separated clusters: a model that learned tells them apart.
  EXPECT_GT(run.summary.final_test_accuracy, 0.8);
}

// One worker: the server's AdamW steps with the same gradients from the same state as sync's
// worker does, so the two end with the same floats; SGD at the same rate ends elsewhere.
TEST(optimizer_runs, one_async_worker_under_adamw_is_sync_bit_for_bit) {
  const auto with_sync = run_probed(adamw_job("sync", 1));
  const auto with_async = run_probed(adamw_job("async", 1));
  auto sgd = adamw_job("sync", 1);
  sgd.config.train.optimizer = "sgd";
  const auto with_sgd = run_probed(sgd);
  for (const auto* run : {&with_sync, &with_async, &with_sgd})
    ASSERT_EQ(run->summary.stop_reason, stop_cause::epochs) << run->summary.error;
  ASSERT_FALSE(with_async.server_parameters.empty());
  EXPECT_EQ(with_async.server_parameters, with_sync.final_parameters[0]);
  EXPECT_NE(with_sgd.final_parameters[0], with_sync.final_parameters[0]);
}

} // namespace
