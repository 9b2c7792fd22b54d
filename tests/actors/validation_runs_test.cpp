// data.validation-fraction in whole runs: the workers train on what is left of the training set,
// every evaluation while training measures the held-out samples, and the test set is measured
// once, at the end, on the parameters the run keeps (those that reached the target where it
// stopped there).
#include "actors/checkpoint_state.hpp"
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"
#include "herd/job.hpp"
#include "herd/ops.hpp"
#include "herd/saved_model.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <mutex>

#include "support/session_config.hpp"
#include "support/slow_backward_ops.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::actors::stop_cause;
using herd::config::run_config;
using herd::models::train_test_split;

std::shared_ptr<const train_test_split> synthetic(std::size_t train_samples) {
  return std::make_shared<train_test_split>(
      herd::models::make_synthetic_split(train_samples, 300, 24, 5, 5));
}

// `data` with the validation set `config`'s data.validation-fraction holds out, as a split given
// with its own.
std::shared_ptr<const train_test_split>
with_validation_set(const std::shared_ptr<const train_test_split>& data, const run_config& config) {
  auto held = std::make_shared<train_test_split>(*data);
  herd::models::hold_out_validation(*held, config.data.validation_fraction, config.train.seed);
  return held;
}

// What `parameters` score on `samples`, measured as the evaluator measures (batches of 1000).
herd::models::evaluation scored(const run_config& config, const train_test_split& data,
                                const std::vector<float>& parameters,
                                const herd::models::dataset& samples) {
  const auto model = herd::actors::make_model(config, data.train);
  const auto work = model->make_workspace();
  return model->evaluate(herd::kernels::cpu_ops(), parameters.data(), samples, 1000, *work);
}

// The metrics as each evaluation left them.
class gauges_at_evaluations final : public herd::actors::run_observer {
public:
  explicit gauges_at_evaluations(const herd::monitoring::registry& metrics) : metrics_(metrics) {}
  void on_evaluation(const herd::actors::evaluation_point&) override {
    std::lock_guard<std::mutex> guard(mutex_);
    exposed_.push_back(herd::monitoring::expose(metrics_));
  }
  std::vector<std::string> exposed() const {
    std::lock_guard<std::mutex> guard(mutex_);
    return exposed_;
  }

private:
  const herd::monitoring::registry& metrics_;
  mutable std::mutex mutex_;
  std::vector<std::string> exposed_;
};

TEST(validation_runs, evaluations_measure_the_held_out_samples_and_the_test_set_is_measured_last) {
  auto config = herd::testing::small_session_config(2, 8);
  config.train.epochs = 2;
  config.train.eval_every = 5;
  config.data.validation_fraction = 0.25;
  const auto given = synthetic(2 * 30 * 8); // no validation set: the job holds it out
  auto expected = *given;
  herd::models::hold_out_validation(expected, 0.25, config.train.seed);
  ASSERT_EQ(expected.validation.size(), 120u);

  auto options = herd::testing::quick_session_options();
  options.metrics = std::make_shared<herd::monitoring::registry>();
  const herd::testing::slow_backward_ops slow_ops(std::chrono::milliseconds(1));
  options.ops = &slow_ops;
  gauges_at_evaluations seen(*options.metrics);
  options.observer = &seen;
  herd::actors::train_session session(config, given, options);
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  EXPECT_EQ(summary.validation_samples, 120u);
  // While training, the evaluations set the validation gauge, not the test one. The observer
  // hears of them through the job's actor, late: the last may come after the end (the test
  // gauge set, or every series gone), but not all of them, with steps slowed to 1 ms.
  const auto exposures = seen.exposed();
  const auto midway = std::count_if(exposures.begin(), exposures.end(), [](const auto& text) {
    return text.find("herd_validation_accuracy{") != std::string::npos &&
           text.find("herd_test_accuracy{") == std::string::npos;
  });
  EXPECT_GT(midway, 0) << exposures.size() << " evaluations heard";
  // An epoch is the 360 samples left, not the 480 given.
  EXPECT_EQ(session.samples_per_epoch(), herd::actors::epoch_samples(config, 360));
  EXPECT_EQ(summary.samples, 2 * session.samples_per_epoch());
  EXPECT_GT(summary.evaluations.size(), 2u);

  // Sync: every replica is the model.
  const auto& parameters = session.final_parameters().at(0);
  const auto validation = scored(config, expected, parameters, expected.validation);
  const auto test = scored(config, expected, parameters, expected.test);
  ASSERT_TRUE(summary.final_validation_loss && summary.final_test_loss);
  EXPECT_NE(validation.mean_loss, test.mean_loss); // two different sets
  EXPECT_DOUBLE_EQ(*summary.final_validation_loss, validation.mean_loss);
  EXPECT_DOUBLE_EQ(*summary.final_validation_accuracy, validation.accuracy());
  EXPECT_DOUBLE_EQ(summary.evaluations.back().test_loss, validation.mean_loss);
  EXPECT_DOUBLE_EQ(*summary.final_test_loss, test.mean_loss);
  EXPECT_DOUBLE_EQ(*summary.final_test_accuracy, test.accuracy());
}

TEST(validation_runs, a_run_without_one_measures_the_test_set_and_reports_no_validation) {
  auto config = herd::testing::small_session_config(2, 8);
  const auto data = synthetic(2 * 30 * 8);
  herd::actors::train_session session(config, data, herd::testing::quick_session_options());
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  EXPECT_EQ(summary.validation_samples, 0u);
  EXPECT_FALSE(summary.final_validation_accuracy.has_value());
  const auto test = scored(config, *data, session.final_parameters().at(0), data->test);
  EXPECT_DOUBLE_EQ(*summary.final_test_loss, test.mean_loss);
  EXPECT_DOUBLE_EQ(summary.evaluations.back().test_loss, test.mean_loss);
}

// The target is reached on the validation set; the parameters that reached it are kept (in the
// final checkpoint) and are what the test set measures.
TEST(validation_runs, a_target_stop_keeps_the_parameters_chosen_on_validation_and_tests_those) {
  herd::testing::temp_directory dir;
  auto config = herd::testing::small_session_config(4, 8);
  config.train.algorithm = "solo";
  config.train.epochs = 50;
  config.train.target_accuracy = 0.6;
  config.train.eval_every = 5;
  config.data.validation_fraction = 0.2;
  config.checkpoint.dir = dir.file("ckpt");
  config.checkpoint.every_seconds = 0;
  const auto data = with_validation_set(synthetic(4 * 8 * 40), config); // given with its own

  herd::actors::train_session session(config, data, herd::testing::quick_session_options());
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::target_accuracy) << summary.error;
  EXPECT_EQ(summary.validation_samples, data->validation.size());
  ASSERT_TRUE(summary.final_validation_accuracy && summary.final_test_accuracy);
  EXPECT_GE(*summary.final_validation_accuracy, 0.6);

  const auto state = herd::actors::load_checkpoint(config, *data, config.checkpoint.dir).state;
  const auto& kept = state->coordinator.evaluations;
  ASSERT_TRUE(kept.target_point() && kept.target_parameters());
  const auto validation = scored(config, *data, *kept.target_parameters(), data->validation);
  const auto test = scored(config, *data, *kept.target_parameters(), data->test);
  EXPECT_DOUBLE_EQ(kept.target_point()->test_loss, validation.mean_loss);
  EXPECT_DOUBLE_EQ(*summary.final_validation_accuracy, validation.accuracy());
  EXPECT_DOUBLE_EQ(*summary.final_test_loss, test.mean_loss);
  EXPECT_DOUBLE_EQ(*summary.final_test_accuracy, test.accuracy());
  // herd evaluate, predict and export serve them, saying on which set they reached the target.
  const auto saved = herd::checkpoint::read_model(config.checkpoint.dir,
                                                  *herd::actors::make_model(config, data->train));
  EXPECT_EQ(saved.parameters, *kept.target_parameters());
  EXPECT_NE(saved.parameters_origin.find("reached the target (validation accuracy "),
            std::string::npos)
      << saved.parameters_origin;
}

// A run whose validation accuracy soon stops rising (the synthetic clusters are told apart as well
// as they can be while training goes on moving the parameters), with train.patience = 3.
run_config plateauing_run() {
  auto config = herd::testing::small_session_config(2, 8);
  config.train.epochs = 200;
  config.train.eval_every = 3;
  config.train.patience = 3;
  config.data.validation_fraction = 0.25;
  return config;
}

// train.patience: a run whose accuracy no longer rises stops, and keeps (in its summary, its final
// checkpoint and what is served from it) the best evaluation's parameters, not the workers' last.
TEST(validation_runs, patience_stops_a_run_that_no_longer_improves_and_keeps_the_best) {
  herd::testing::temp_directory dir;
  auto config = plateauing_run();
  config.checkpoint.dir = dir.file("ckpt");
  config.checkpoint.every_seconds = 0;
  const auto data = with_validation_set(synthetic(2 * 30 * 8), config); // given with its own

  herd::actors::train_session session(config, data, herd::testing::quick_session_options());
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::plateau) << summary.error;
  EXPECT_LT(summary.epochs, 50.0);
  ASSERT_GE(summary.evaluations.size(), 4u);

  const auto state = herd::actors::load_checkpoint(config, *data, config.checkpoint.dir).state;
  const auto& evaluations = state->coordinator.evaluations;
  ASSERT_TRUE(evaluations.best_point() && evaluations.best_parameters());
  const auto& best = *evaluations.best_parameters();
  EXPECT_NE(best, session.final_parameters().at(0)) << "the run stopped where its best was";
  EXPECT_DOUBLE_EQ(*summary.final_validation_accuracy, evaluations.best_point()->test_accuracy);
  EXPECT_DOUBLE_EQ(*summary.final_validation_loss, evaluations.best_point()->test_loss);
  const auto test = scored(config, *data, best, data->test);
  EXPECT_DOUBLE_EQ(*summary.final_test_loss, test.mean_loss);
  const auto saved = herd::checkpoint::read_model(config.checkpoint.dir,
                                                  *herd::actors::make_model(config, data->train));
  EXPECT_EQ(saved.parameters, best);
  EXPECT_NE(saved.parameters_origin.find("of the best evaluation (validation accuracy "),
            std::string::npos)
      << saved.parameters_origin;
}

// A service gets the parameters the run keeps from the job itself: after a patience stop, the best
// evaluation's (those the test set measured), while final_parameters() stay the workers' last.
TEST(validation_runs, a_job_hands_out_the_parameters_it_keeps) {
  auto config = plateauing_run();
  const auto data = with_validation_set(synthetic(2 * 30 * 8), config);
  herd::job_options options;
  options.progress_interval = std::chrono::milliseconds(20);
  const auto job = herd::job::start(config, data, options);
  const auto summary = job->wait();
  ASSERT_EQ(summary.stop_reason, stop_cause::plateau) << summary.error;
  const auto kept = job->kept_parameters();
  ASSERT_EQ(kept.size(), job->model()->parameter_count());
  EXPECT_NE(kept, job->final_parameters());
  EXPECT_DOUBLE_EQ(scored(config, *data, kept, data->test).mean_loss, *summary.final_test_loss);
  EXPECT_DOUBLE_EQ(scored(config, *data, kept, data->validation).mean_loss,
                   *summary.final_validation_loss);

  // Where the run keeps the workers' last, the two are the same.
  config.train.patience = 0;
  config.train.epochs = 2;
  const auto plain = herd::job::start(config, data, options);
  ASSERT_EQ(plain->wait().stop_reason, stop_cause::epochs);
  EXPECT_FALSE(plain->final_parameters().empty());
  EXPECT_EQ(plain->kept_parameters(), plain->final_parameters());
}

} // namespace
