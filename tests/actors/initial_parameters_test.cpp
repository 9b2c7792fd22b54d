// session_options::initial_parameters: a run that starts from another run's final parameters
// starts at that run's accuracy, under a gradient algorithm (every worker replica), under async
// (the parameter server too) and under the model-exchanging preduce and wagma (the model a worker
// offers before its first step); parameters that do not fit the model are refused before anything
// runs, naming both sizes.
#include "actors/train_session.hpp"
#include "herd/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/session_config.hpp"

namespace {

using herd::actors::stop_cause;
using herd::actors::train_session;
using testing::AllOf;
using testing::HasSubstr;

constexpr int features = 24;
constexpr int classes = 5;

std::shared_ptr<const herd::models::train_test_split> synthetic() {
  return std::make_shared<herd::models::train_test_split>(
      herd::models::make_synthetic_split(2048, 500, features, classes, 7));
}

// A run of `algorithm` trained for three epochs: its final parameters and accuracy.
struct trained_run {
  std::vector<float> parameters;
  double accuracy = 0.0;
};

trained_run train_from_scratch(const std::shared_ptr<const herd::models::train_test_split>& data) {
  auto config = herd::testing::small_session_config(2, 16);
  config.train.epochs = 3;
  train_session session(config, data, herd::testing::quick_session_options());
  const auto summary = session.run();
  EXPECT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  return {session.final_parameters().at(0), summary.final_test_accuracy.value_or(0.0)};
}

// The first evaluation (after one round) of a one-epoch run of `algorithm` from `initial`
// (empty: the model's own initialisation, from another seed than the trained run's).
double first_accuracy(const std::shared_ptr<const herd::models::train_test_split>& data,
                      const std::string& algorithm, std::vector<float> initial) {
  auto config = herd::testing::small_session_config(2, 16);
  config.train.algorithm = algorithm;
  config.train.seed = 99;
  config.train.eval_every = 1;
  auto options = herd::testing::quick_session_options();
  options.initial_parameters = std::move(initial);
  train_session session(config, data, options);
  const auto summary = session.run();
  EXPECT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  EXPECT_FALSE(summary.evaluations.empty());
  return summary.evaluations.empty() ? 0.0 : summary.evaluations.front().test_accuracy;
}

class initial_parameters : public testing::TestWithParam<std::string> {};

TEST_P(initial_parameters, a_run_from_a_trained_runs_parameters_starts_at_its_accuracy) {
  const auto data = synthetic();
  const auto trained = train_from_scratch(data);
  ASSERT_GT(trained.accuracy, 0.8) << "the trained run did not learn; nothing to start from";
  const double chance = 1.0 / classes;

  const double from_scratch = first_accuracy(data, GetParam(), {});
  const double from_trained = first_accuracy(data, GetParam(), trained.parameters);
  EXPECT_LT(from_scratch, chance + 0.3) << "one round from the model's own initialisation";
  EXPECT_GT(from_trained, trained.accuracy - 0.05)
      << "one round from the trained parameters, which scored " << trained.accuracy;
}

INSTANTIATE_TEST_SUITE_P(algorithms, initial_parameters,
                         testing::Values("sync", "async", "preduce", "wagma"),
                         [](const testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

TEST(initial_parameters_check, parameters_that_do_not_fit_the_model_are_refused_naming_both_sizes) {
  const auto data = synthetic();
  const auto config = herd::testing::small_session_config(2, 16);
  const auto model = herd::actors::make_model(config, data->train);
  auto options = herd::testing::quick_session_options();
  options.initial_parameters.assign(model->parameter_count() + 3, 0.0f);
  try {
    train_session session(config, data, options);
    FAIL() << "a session took " << options.initial_parameters.size() << " initial parameters";
  } catch (const herd::config::invalid_config& invalid) {
    ASSERT_EQ(invalid.errors().size(), 1u);
    EXPECT_EQ(invalid.errors()[0].key, "session_options.initial_parameters");
    EXPECT_THAT(invalid.errors()[0].message,
                AllOf(HasSubstr(std::to_string(model->parameter_count() + 3) + " parameters"),
                      HasSubstr("has " + std::to_string(model->parameter_count()))));
  }
}

} // namespace
