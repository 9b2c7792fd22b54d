// From the [model] settings to the model a run trains (actors::make_model): each key's effect,
// and the refusals a user sees, naming the key.
#include "actors/train_session.hpp"
#include "herd/config.hpp"
#include "herd/dataset.hpp"
#include "herd/sequential.hpp"
#include "models/fortunes.hpp"

#include <algorithm>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tuple>

namespace {

using herd::actors::stop_cause;
using herd::actors::make_model;
using herd::config::invalid_config;
using testing::HasSubstr;

// Fashion-MNIST's shape: 1x28x28 samples, 10 classes.
herd::models::dataset images() {
  auto data = herd::models::make_synthetic_dataset(20, 784, 10, 1);
  data.sample_shape = {1, 28, 28};
  return data;
}

herd::config::run_config with(const std::vector<std::string>& overrides) {
  return herd::config::load("", overrides);
}

// The problem make_model() reports, as key and message.
herd::config::config_error refusal(const herd::config::run_config& config,
                                   const herd::models::dataset& data) {
  try {
    make_model(config, data);
  } catch (const invalid_config& refused) {
    return refused.errors().front();
  }
  ADD_FAILURE() << "the model was built";
  return {};
}

TEST(model_config, the_default_is_the_mlp_preset_over_the_data_shape) {
  const auto model = make_model(with({}), images());
  EXPECT_EQ(model->name(), "mlp");
  EXPECT_EQ(model->describe(), "1x28x28: flatten, dense 256, relu, dense 128, relu, dense 10");
  EXPECT_EQ(model->parameter_count(), 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  // The classes come from the data too.
  auto three = herd::models::make_synthetic_dataset(20, 12, 3, 1);
  EXPECT_EQ(make_model(with({}), three)->describe(),
            "12: flatten, dense 256, relu, dense 128, relu, dense 3");
}

TEST(model_config, model_hidden_sizes_the_mlp_preset) {
  EXPECT_EQ(make_model(with({"--model.hidden=[32]"}), images())->describe(),
            "1x28x28: flatten, dense 32, relu, dense 10");
  EXPECT_EQ(make_model(with({"--model.hidden=[]"}), images())->describe(),
            "1x28x28: flatten, dense 10");
}

TEST(model_config, model_layers_defines_the_model) {
  const auto model =
      make_model(with({"--model.layers=flatten, dense 64, relu, dense 10"}), images());
  EXPECT_EQ(model->name(), "sequential");
  EXPECT_EQ(model->describe(), "1x28x28: flatten, dense 64, relu, dense 10");
  EXPECT_EQ(model->parameter_count(), 784u * 64 + 64 + 64 * 10 + 10);
}

// Texts are batched at their own lengths: a model that does not read token ids is refused before
// the run (it used to pass, and every worker failed at its first step on rows of another width).
TEST(model_config, texts_need_a_model_that_reads_token_ids) {
  const auto texts = herd::models::make_text_dataset({"short", "a longer text", "mid size"},
                                                     {0, 1, 0}, 2, 64, "texts/train");
  EXPECT_EQ(make_model(with({"--model.preset=textcnn"}), texts)->name(), "textcnn");
  for (const auto& [setting, key] : std::vector<std::pair<std::string, std::string>>{
           {"--model.preset=mlp", "model.preset"},
           {"--model.layers=dense 16, relu, dense 2", "model.layers"}}) {
    const auto refused = refusal(with({setting}), texts);
    EXPECT_EQ(refused.key, key) << refused.message;
    EXPECT_THAT(refused.message, HasSubstr("reads rows of 64 numbers, but the dataset "
                                           "\"texts/train\" holds texts of token ids"));
    EXPECT_THAT(refused.message, HasSubstr("model.preset = \"textcnn\""));
  }
}

// Token sequences given as dense rows (data.dataset = npy) are checked when the model is made:
// a bad value used to fail the worker whose batch held it, and the run went on without it.
TEST(model_config, token_rows_are_checked_before_the_run_naming_the_file_sample_and_place) {
  herd::models::dataset rows;
  rows.images = herd::models::tensor({3, 4});
  rows.labels = {0, 1, 0};
  rows.classes = 2;
  const std::vector<float> good = {5, 9, -1, -1, 1, -1, -3, -1, 0, 1, 2, 3};
  std::copy(good.begin(), good.end(), rows.images.data());
  auto config =
      with({"--model.layers=embedding 10 4, conv1d-max 2 3, relu, dense 2", "--data.dataset=npy",
            "--data.train-features=tokens.npy", "--data.train-labels=l.npy",
            "--data.test-features=t.npy", "--data.test-labels=tl.npy"});
  EXPECT_EQ(make_model(config, rows)->parameter_count(), 10u * 4 + 2 * 3 * 4 + 2 + 2 * 2 + 2);
  struct bad_value {
    std::size_t at;
    float value;
    std::string message;
  };
  for (const auto& [at, value, message] : std::vector<bad_value>{
           {1, 3.5f,
            "tokens.npy: sample 0, position 1: 3.5 is not a token id: token ids are "
            "whole numbers from 0 to 9 (the model's embedding knows 10)"},
           {9, 10.0f, "tokens.npy: sample 2, position 1: 10 is not a token id"},
           {1, 0.2f, "save token ids as int32 or int64"},
           {6, 4.0f, "tokens.npy: sample 1, position 2: a token after the padding"},
           {4, -1.0f, "tokens.npy: sample 1 has no tokens"}}) {
    auto bad = rows;
    bad.images.data()[at] = value;
    const auto refused = refusal(config, bad);
    EXPECT_EQ(refused.key, "data.train-features") << refused.message;
    EXPECT_THAT(refused.message, HasSubstr(message));
  }
  // The test set and a validation set are named by the files they came from; a validation set
  // held out of the training features (data.validation-fraction) is those features.
  auto bad = rows;
  bad.images.data()[1] = 3.5f;
  const auto model = make_model(config, rows);
  auto refused_as = [&](herd::actors::data_role role, const herd::config::run_config& settings) {
    try {
      herd::actors::check_token_input(*model, bad, role, settings, "model.layers");
    } catch (const invalid_config& refused) {
      return refused.errors().front();
    }
    ADD_FAILURE() << "a bad token was accepted";
    return herd::config::config_error{};
  };
  auto own_validation = config;
  own_validation.data.validation_features = "v.npy";
  for (const auto& [role, settings, key, file] : std::vector<
           std::tuple<herd::actors::data_role, herd::config::run_config, std::string, std::string>>{
           {herd::actors::data_role::test, config, "data.test-features", "t.npy"},
           {herd::actors::data_role::validation, own_validation, "data.validation-features",
            "v.npy"},
           {herd::actors::data_role::validation, config, "data.train-features",
            "the validation set held out of tokens.npy"}}) {
    const auto refused = refused_as(role, settings);
    EXPECT_EQ(refused.key, key);
    EXPECT_THAT(refused.message, HasSubstr(key + ": " + file + ": sample 0, position 1"));
  }
  // Texts are bytes: a vocabulary that does not cover them is the model's to fix.
  const auto texts = herd::models::make_text_dataset({"ab", "zz"}, {0, 1}, 2, 8, "texts/train");
  const auto small =
      refusal(with({"--model.layers=embedding 100 4, conv1d-max 2 3, dense 2"}), texts);
  EXPECT_EQ(small.key, "model.layers");
  EXPECT_THAT(small.message, HasSubstr("texts/train: sample 1, position 0: byte 122 is beyond "
                                       "the model's embedding, which knows token ids 0 to 99"));
}

TEST(model_config, a_layer_that_does_not_fit_is_refused_naming_it_its_place_and_both_shapes) {
  const auto problem = refusal(with({"--model.layers=dense 64, relu, dense 10"}), images());
  EXPECT_EQ(problem.key, "model.layers");
  EXPECT_THAT(problem.message, HasSubstr("layer 1 of 3 (dense 64) is given 1x28x28"));
  EXPECT_THAT(problem.message, HasSubstr("put flatten before it"));
  const auto wrong_end = refusal(with({"--model.layers=flatten, dense 7"}), images());
  EXPECT_EQ(wrong_end.key, "model.layers");
  EXPECT_THAT(wrong_end.message, HasSubstr("gives 7 but the loss needs 10 scores"));
  const auto malformed = refusal(with({"--model.layers=flatten, dense, dense 10"}), images());
  EXPECT_THAT(malformed.message, HasSubstr("layer 2 of 3 (dense)"));
}

TEST(model_config, an_unknown_preset_is_refused_before_the_data_naming_the_presets) {
  try {
    with({"--model.preset=resnet"});
    ADD_FAILURE() << "model.preset = resnet was accepted";
  } catch (const invalid_config& refused) {
    EXPECT_EQ(refused.errors().front().key, "model.preset");
    EXPECT_THAT(refused.errors().front().message,
                HasSubstr("unknown preset; the presets are: mlp"));
  }
}

// Sequences of 64 token ids, 4 classes: what the textcnn preset takes.
herd::models::dataset token_sequences() {
  auto data = herd::models::make_synthetic_dataset(20, 64, 4, 1);
  for (std::size_t i = 0; i < data.images.size(); ++i)
    data.images[i] = static_cast<float>(i % 256);
  return data;
}

// The configuration's list of presets is the models' (config does not link the models).
TEST(model_config, every_preset_the_configuration_accepts_builds) {
  EXPECT_EQ(herd::config::known_model_presets(), herd::models::preset_names());
  for (const auto& preset : herd::config::known_model_presets()) {
    const auto data = preset == "textcnn" ? token_sequences() : images();
    EXPECT_EQ(make_model(with({"--model.preset=" + preset}), data)->name(), preset);
  }
  // textcnn takes token sequences only, and says so.
  const auto problem = refusal(with({"--model.preset=textcnn"}), images());
  EXPECT_EQ(problem.key, "model.preset");
  EXPECT_THAT(problem.message, HasSubstr("needs token sequences"));
}

} // namespace

namespace {

// Every algorithm trains a convolutional model: the worker, the aggregator and the data plane
// know only the model interface. A small CNN on synthetic 1x28x28 clusters, 4 workers, two
// epochs of 50 rounds: each run ends by its epochs and beats chance (10%) by far. (The clusters
// have no spatial structure, so no pooling here: a max pool throws most of their signal away. At
// a learning rate of 0.02 this model diverges on them.)
TEST(model_config, every_algorithm_trains_a_convolutional_model) {
  auto split = herd::models::make_synthetic_split(1600, 200, 784, 10, 5);
  split.train.sample_shape = split.test.sample_shape = {1, 28, 28};
  const auto data = std::make_shared<const herd::models::train_test_split>(std::move(split));
  for (const auto& algorithm : herd::config::known_algorithms()) {
    auto config = with({"--model.layers=conv 4 3x3 pad 1, relu, flatten, dense 10",
                        "--train.workers=4", "--train.batch-size=8", "--train.lr=0.005",
                        "--train.epochs=2", "--data.dataset=synthetic"});
    config.train.algorithm = algorithm;
    herd::actors::train_session session(config, data);
    const auto summary = session.run();
    EXPECT_EQ(summary.stop_reason, stop_cause::epochs) << algorithm << ": " << summary.error;
    ASSERT_TRUE(summary.final_test_accuracy.has_value()) << algorithm;
    EXPECT_GT(*summary.final_test_accuracy, 0.5) << algorithm;
  }
}

} // namespace
