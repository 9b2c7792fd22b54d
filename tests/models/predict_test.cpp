// Predictions from a model and any parameters: the class probabilities whose argmax evaluation
// scores, for parameters the caller holds, and size checks that name both sizes.
#include "herd/predict.hpp"
#include "herd/sequential.hpp"
#include "models/optimizer.hpp"

#include <algorithm>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits>

namespace {

using herd::models::predict;
using testing::AllOf;
using testing::HasSubstr;

constexpr std::size_t features = 12;
constexpr int classes = 4;

std::unique_ptr<herd::models::sequential> small_model() {
  herd::models::model_choice choice;
  choice.layers = "dense 16, relu, dense 4";
  return herd::models::build_model(choice, {features}, classes);
}

// Parameters after `steps` full-batch SGD steps on `data` from the seed-3 initialisation.
std::vector<float> trained(const herd::models::model& model, const herd::models::dataset& data,
                           int steps) {
  const auto& ops = herd::kernels::cpu_ops();
  auto params = model.initial_parameters(3);
  herd::models::optimizer optimizer(model.parameter_count(), {0.1f, 0.9f, 0.0f});
  herd::models::tensor grads({model.parameter_count()});
  const auto work = model.make_workspace();
  for (int step = 0; step < steps; ++step) {
    model.loss_and_gradient(ops, params.data(), data.images, data.labels, grads.data(), *work);
    optimizer.step(ops, params.data(), grads.data());
  }
  return std::vector<float>(params.data(), params.data() + params.size());
}

// The argmax of predict()'s rows is the prediction evaluate() counts: on a fixed-seed test set,
// both count the same correct samples, for parameters partly trained (neither chance nor all).
TEST(predict, argmax_agrees_with_evaluation_on_fixed_seed_data) {
  const auto model = small_model();
  const auto split = herd::models::make_synthetic_split(400, 301, features, classes, 9);
  const auto parameters = trained(*model, split.train, 15);

  const auto probabilities =
      predict(*model, parameters, split.test.images.data(), split.test.size(), /*batch_size=*/64);
  ASSERT_EQ(probabilities.size(), split.test.size() * classes);
  std::size_t correct = 0;
  for (std::size_t row = 0; row < split.test.size(); ++row) {
    const float* p = probabilities.data() + row * classes;
    float sum = 0.0f;
    for (int c = 0; c < classes; ++c)
      sum += p[c];
    EXPECT_NEAR(sum, 1.0f, 1e-5f) << "row " << row;
    if (std::max_element(p, p + classes) - p == split.test.labels[row])
      ++correct;
  }
  const auto work = model->make_workspace();
  const auto evaluated =
      model->evaluate(herd::kernels::cpu_ops(), parameters.data(), split.test, 100, *work);
  EXPECT_EQ(correct, evaluated.correct);
  EXPECT_GT(evaluated.accuracy(), 0.5); // chance is 0.25: the parameters are the trained ones
  // Batching does not change the answer beyond rounding: one batch of all samples gives the same
  // numbers (BLAS may sum in another order for another batch size).
  const std::vector<float> samples(split.test.images.data(),
                                   split.test.images.data() + split.test.images.size());
  EXPECT_THAT(predict(*model, parameters, samples),
              testing::Pointwise(testing::FloatNear(1e-6f), probabilities));
}

TEST(predict, parameters_that_do_not_fit_the_model_are_named_with_both_sizes) {
  const auto model = small_model();
  const std::vector<float> sample(features, 0.5f);
  const std::vector<float> too_few(model->parameter_count() - 1, 0.0f);
  try {
    predict(*model, too_few, sample);
    FAIL() << "predict took " << too_few.size() << " parameters";
  } catch (const std::invalid_argument& bad) {
    EXPECT_THAT(bad.what(), AllOf(HasSubstr(std::to_string(too_few.size()) + " parameters"),
                                  HasSubstr("has " + std::to_string(model->parameter_count()))));
  }
  const auto parameters = model->initial_parameters(1);
  const std::vector<float> fitting(parameters.data(), parameters.data() + parameters.size());
  try {
    predict(*model, fitting, std::vector<float>(features + 5, 0.5f));
    FAIL() << "predict took 17 values for samples of 12";
  } catch (const std::invalid_argument& bad) {
    EXPECT_THAT(bad.what(), AllOf(HasSubstr("17 sample values"), HasSubstr("takes 12")));
  }
  // A NaN or infinite input got probabilities like any other; it is refused, named.
  for (const float bad_value :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> two(2 * features, 0.5f);
    two[features + 7] = bad_value;
    try {
      predict(*model, fitting, two);
      FAIL() << "predict took " << bad_value;
    } catch (const std::invalid_argument& bad) {
      EXPECT_THAT(bad.what(), HasSubstr("sample 1 holds a value that is not a finite number at "
                                        "position 7"));
    }
  }
}

} // namespace
