// The configuration loader: files and overrides fill the typed config, and every bad input is an
// error that names the key, the value and the source.
#include "herd/config.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sstream>

#include "support/contract_keys.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::config::invalid_config;
using herd::config::load;
using herd::config::value_origins;
using testing::HasSubstr;

class config_files : public testing::Test {
protected:
  std::string write(const std::string& name, const std::string& text) {
    auto path = dir_.file(name);
    std::ofstream(path) << text;
    return path;
  }

  // The message of the first error load() reports; fails the test if load() succeeds.
  static std::string first_error(const std::string& file, const std::vector<std::string>& args) {
    try {
      load(file, args);
    } catch (const invalid_config& error) {
      return error.errors().front().message;
    }
    ADD_FAILURE() << "expected load() to reject the configuration";
    return {};
  }

  herd::testing::temp_directory dir_;
};

TEST_F(config_files, defaults_are_valid) {
  const auto config = load("", {});
  EXPECT_EQ(config.train.algorithm, "sync");
  EXPECT_EQ(config.train.workers, 4);
  EXPECT_EQ(config.model.hidden, (std::vector<int>{256, 128}));
}

TEST_F(config_files, file_values_then_command_line_overrides) {
  const auto file = write("run.ini", "[train]\nworkers = 8\nlr = 0.2\n[model]\nhidden = [64]\n");
  const auto config = load(file, {"--train.workers=2", "--data.path=/tmp/fm"});
  EXPECT_EQ(config.train.workers, 2);
  EXPECT_DOUBLE_EQ(config.train.lr, 0.2);
  EXPECT_EQ(config.model.hidden, std::vector<int>{64});
  EXPECT_EQ(config.data.path, "/tmp/fm");
}

TEST_F(config_files, integer_literal_is_accepted_for_a_real_key) {
  // CAF's own option handling silently drops "lr = 1" from a file; Herd must not.
  const auto file = write("run.ini", "[train]\nlr = 1\n");
  EXPECT_DOUBLE_EQ(load(file, {}).train.lr, 1.0);
  EXPECT_DOUBLE_EQ(load("", {"--train.lr=2"}).train.lr, 2.0);
}

TEST_F(config_files, comma_separated_hidden_sizes_on_the_command_line) {
  EXPECT_EQ(load("", {"--model.hidden=300,100,50"}).model.hidden, (std::vector<int>{300, 100, 50}));
  EXPECT_EQ(load("", {"--model.hidden=[]"}).model.hidden, std::vector<int>{});
}

TEST_F(config_files, wrong_type_in_file_names_key_value_and_file) {
  const auto file = write("bad.ini", "[train]\nworkers = \"abc\"\n");
  const auto message = first_error(file, {});
  EXPECT_THAT(message, HasSubstr("train.workers"));
  EXPECT_THAT(message, HasSubstr("abc"));
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr("integer"));
}

TEST_F(config_files, unknown_key_is_rejected_with_a_suggestion) {
  const auto file = write("typo.ini", "[train]\nworker = 4\n");
  const auto message = first_error(file, {});
  EXPECT_THAT(message, HasSubstr("unknown key train.worker"));
  EXPECT_THAT(message, HasSubstr("did you mean train.workers?"));
  EXPECT_THAT(first_error("", {"--bogus.key=1"}), HasSubstr("unknown key bogus.key"));
}

// An unknown key or a value of the wrong type does not hide what validation finds in the other
// keys; a key refused for its type is not reported a second time by validation.
TEST_F(config_files, unreadable_keys_do_not_hide_the_other_problems) {
  std::vector<std::string> keys;
  try {
    herd::config::from_ini("[train]\nworkers = 0\nlr = -1\nbogus = 3\nepochs = \"ten\"\n",
                           "POST");
  } catch (const invalid_config& error) {
    for (const auto& found : error.errors()) {
      keys.push_back(found.key);
      // what() holds every message, for a caller that only logs it.
      EXPECT_THAT(error.what(), HasSubstr(found.message));
    }
  }
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"train.bogus", "train.epochs", "train.lr",
                                            "train.workers"}));
  // The file's 0 stays in place under the command line's refused "abc": only "abc" is reported.
  try {
    load(write("zero.ini", "[train]\nworkers = 0\n"), {"--train.workers=abc"});
    ADD_FAILURE() << "train.workers = abc was accepted";
  } catch (const invalid_config& error) {
    ASSERT_EQ(error.errors().size(), 1u) << error.what();
    EXPECT_THAT(error.errors()[0].message, HasSubstr("\"abc\" (command line)"));
  }
}

TEST_F(config_files, syntax_error_names_file_and_line) {
  const auto file = write("broken.ini", "[train]\nworkers = 4\nalgorithm = sync\n");
  const auto message = first_error(file, {});
  EXPECT_THAT(message, HasSubstr(file));
  EXPECT_THAT(message, HasSubstr("line 3"));
  EXPECT_THAT(message, HasSubstr("double quotes"));
}

TEST_F(config_files, missing_file_is_an_error) {
  const auto message = first_error(dir_.file("nope.ini"), {});
  EXPECT_THAT(message, HasSubstr("nope.ini"));
  EXPECT_THAT(message, HasSubstr("no such file"));
}

TEST_F(config_files, malformed_override_is_an_error) {
  EXPECT_THAT(first_error("", {"--train.workers"}), HasSubstr("expected --section.key=value"));
}

TEST_F(config_files, bad_values_name_key_value_and_what_is_allowed) {
  EXPECT_THAT(first_error("", {"--train.workers=0"}),
              HasSubstr("train.workers = 0 (command line): must be between 1 and 1024"));
  // Too many for a run: the key that simulates more is named.
  EXPECT_THAT(first_error("", {"--train.workers=4096"}),
              HasSubstr("train.workers = 4096 (command line): must be between 1 and 1024 (herd "
                        "simulate takes larger jobs, up to 65536 workers, in simulate.workers)"));
  EXPECT_THAT(first_error("", {"--train.lr=-0.5"}),
              HasSubstr("train.lr = -0.5 (command line): the learning rate must be positive"));
  EXPECT_THAT(first_error("", {"--train.algorithm=bogus"}),
              HasSubstr("train.algorithm = \"bogus\" (command line): unknown algorithm; "
                        "allowed: sync, solo, majority, quorum, preduce, wagma, async, local-sgd"));
  // A near miss of a name is suggested, as a mistyped key is; one far off is not.
  EXPECT_THAT(first_error("", {"--train.algorithm=sol"}),
              HasSubstr("local-sgd; did you mean solo?"));
  EXPECT_THAT(first_error("", {"--train.algorithm=SOLO"}), HasSubstr("; did you mean solo?"));
  EXPECT_THAT(first_error("", {"--train.lr-schedule=cosin"}), HasSubstr("; did you mean cosine?"));
  EXPECT_THAT(first_error("", {"--imbalance.kind=persistant"}),
              HasSubstr("; did you mean persistent?"));
  EXPECT_EQ(first_error("", {"--train.algorithm=bogus"}).find("did you mean"), std::string::npos);
  EXPECT_THAT(first_error("", {"--train.momentum=1"}), HasSubstr("train.momentum = 1"));
  EXPECT_THAT(first_error("", {"--model.hidden=[0]"}),
              HasSubstr("model.hidden = [0] (command line): hidden layer 1 has 0 units"));
  EXPECT_THAT(first_error("", {"--data.dataset=cifar"}), HasSubstr("allowed: fashion-mnist"));
}

TEST_F(config_files, a_schedules_keys_are_checked_and_refused_under_another_schedule) {
  const auto cosine = load(
      "", {"--train.lr-schedule=cosine", "--train.lr-min=0.001", "--train.lr-warmup-epochs=0.5"});
  EXPECT_EQ(cosine.train.lr_schedule, "cosine");
  EXPECT_EQ(cosine.train.lr_min, 0.001);
  EXPECT_EQ(cosine.train.lr_warmup_epochs, 0.5);
  const auto step =
      load("", {"--train.lr-schedule=step", "--train.lr-decay=0.5", "--train.lr-decay-epochs=1.5"});
  EXPECT_EQ(step.train.lr_decay, 0.5);
  EXPECT_EQ(step.train.lr_decay_epochs, 1.5);
  EXPECT_THAT(first_error("", {"--train.lr-schedule=linear"}),
              HasSubstr("train.lr-schedule = \"linear\" (command line): unknown schedule; "
                        "allowed: constant, cosine, step"));
  EXPECT_THAT(first_error("", {"--train.lr-min=0.01"}),
              HasSubstr("train.lr-min = 0.01 (command line): only train.lr-schedule = cosine "
                        "uses it"));
  EXPECT_THAT(first_error("", {"--train.lr-schedule=cosine", "--train.lr-min=0.5"}),
              HasSubstr("train.lr-min = 0.5 (command line): must lie in [0, train.lr]"));
  EXPECT_THAT(first_error("", {"--train.lr-schedule=step"}),
              HasSubstr("train.lr-decay-epochs = 0 (the default): train.lr-schedule = step needs a "
                        "period "
                        "of at least 0.001 epochs"));
  EXPECT_THAT(first_error("", {"--train.lr-decay-epochs=2"}),
              HasSubstr("only train.lr-schedule = step uses it"));
  EXPECT_THAT(first_error("", {"--train.lr-schedule=step", "--train.lr-decay-epochs=1",
                               "--train.lr-decay=1"}),
              HasSubstr("train.lr-decay = 1 (command line): must lie in (0, 1)"));
  EXPECT_THAT(first_error("", {"--train.lr-warmup-epochs=3"}),
              HasSubstr("train.lr-warmup-epochs = 3 (command line): must lie in [0, "
                        "train.epochs)"));
  EXPECT_EQ(
      load("", {"--train.lr-warmup-epochs=1", "--train.lr-warmup-start=0"}).train.lr_warmup_start,
      0.0);
  EXPECT_THAT(first_error("", {"--train.lr-warmup-start=0.5"}),
              HasSubstr("train.lr-warmup-start = 0.5 (command line): only a warmup uses it: set "
                        "train.lr-warmup-epochs too"));
  EXPECT_THAT(first_error("", {"--train.lr-warmup-epochs=1", "--train.lr-warmup-start=1.5"}),
              HasSubstr("train.lr-warmup-start = 1.5 (command line): must lie in [0, 1]"));
}

TEST_F(config_files, a_validation_fraction_is_a_share_up_to_a_half) {
  EXPECT_EQ(load("", {"--data.validation-fraction=0.1"}).data.validation_fraction, 0.1);
  EXPECT_EQ(
      load(write("val.ini", "[data]\nvalidation-fraction = 0.5\n"), {}).data.validation_fraction,
      0.5);
  EXPECT_THAT(first_error("", {"--data.validation-fraction=0.6"}),
              HasSubstr("data.validation-fraction = 0.6 (command line): must be between 0 (no "
                        "validation set) and 0.5"));
  EXPECT_THAT(first_error("", {"--data.validation-fraction=-0.1"}),
              HasSubstr("data.validation-fraction = -0.1 (command line): must be between 0"));
}

TEST_F(config_files, patience_counts_evaluations_up_to_a_million) {
  EXPECT_EQ(load("", {"--train.patience=5"}).train.patience, 5u);
  EXPECT_THAT(first_error("", {"--train.patience=1000001"}),
              HasSubstr("train.patience = 1000001 (command line): must be at most 1000000"));
  EXPECT_THAT(first_error("", {"--train.patience=-1"}), HasSubstr("train.patience = -1"));
}

TEST_F(config_files, validation_files_come_in_pairs_with_npy_and_without_a_fraction) {
  const std::vector<std::string> npy{"--data.dataset=npy", "--data.train-features=a.npy",
                                     "--data.train-labels=b.npy", "--data.test-features=c.npy",
                                     "--data.test-labels=d.npy"};
  auto with = [&npy](std::vector<std::string> more) {
    more.insert(more.begin(), npy.begin(), npy.end());
    return more;
  };
  const auto both =
      load("", with({"--data.validation-features=v.npy", "--data.validation-labels=w.npy"}));
  EXPECT_EQ(both.data.validation_features, "v.npy");
  EXPECT_EQ(both.data.validation_labels, "w.npy");
  EXPECT_THAT(
      first_error("", with({"--data.validation-features=v.npy"})),
      HasSubstr("data.validation-labels = \"\" (the default): must name the .npy file of the "
                "validation labels too (both files, or neither)"));
  EXPECT_THAT(
      first_error("", with({"--data.validation-labels=w.npy"})),
      HasSubstr("data.validation-features = \"\" (the default): must name the .npy file of the "
                "validation features too"));
  EXPECT_THAT(
      first_error("", with({"--data.validation-features=v.npy", "--data.validation-labels=w.npy",
                            "--data.validation-fraction=0.1"})),
      HasSubstr("data.validation-features = \"v.npy\" (command line): set together with "
                "data.validation-fraction; set one of the two"));
  EXPECT_THAT(
      first_error("", {"--data.validation-features=v.npy", "--data.validation-labels=w.npy"}),
      HasSubstr("data.validation-features = \"v.npy\" (command line): used only with "
                "data.dataset = npy, not \"fashion-mnist\""));
}

TEST_F(config_files, an_optimizers_keys_are_checked_and_refused_under_the_other) {
  const auto adamw = load("", {"--train.optimizer=adamw", "--train.adam-beta2=0.98",
                               "--train.adam-eps=1e-6", "--train.lr=0.001"});
  EXPECT_EQ(adamw.train.optimizer, "adamw");
  EXPECT_EQ(adamw.train.adam_beta2, 0.98);
  EXPECT_EQ(adamw.train.adam_eps, 1e-6);
  EXPECT_THAT(first_error("", {"--train.optimizer=adam"}),
              HasSubstr("train.optimizer = \"adam\" (command line): unknown optimizer; allowed: "
                        "sgd, adamw"));
  EXPECT_THAT(first_error("", {"--train.optimizer=adamw", "--train.momentum=0.95"}),
              HasSubstr("train.momentum = 0.95 (command line): only train.optimizer = sgd uses "
                        "it (adamw's is train.adam-beta1)"));
  EXPECT_THAT(first_error("", {"--train.adam-beta1=0.8"}),
              HasSubstr("train.adam-beta1 = 0.8 (command line): only train.optimizer = adamw "
                        "uses it"));
  EXPECT_THAT(first_error("", {"--train.optimizer=adamw", "--train.adam-beta2=1"}),
              HasSubstr("train.adam-beta2 = 1 (command line): must lie in [0, 1) as a float"));
  EXPECT_THAT(first_error("", {"--train.optimizer=adamw", "--train.adam-beta2=0.99999999"}),
              HasSubstr("(command line): must lie in [0, 1) as a float (below 0.99999994)"));
  EXPECT_THAT(first_error("", {"--train.optimizer=adamw", "--train.adam-eps=0"}),
              HasSubstr("train.adam-eps = 0 (command line): must lie in [1e-30, 1]"));
}

TEST_F(config_files, bucketing_by_length_is_a_boolean_for_texts_only) {
  EXPECT_FALSE(herd::config::load("", {}).data.bucket_by_length);
  const auto file = write("text.ini", "[data]\ndataset = \"fortunes\"\nbucket-by-length = true\n");
  EXPECT_TRUE(herd::config::load(file, {}).data.bucket_by_length);
  EXPECT_THAT(first_error("", {"--data.bucket-by-length=true"}),
              HasSubstr("data.bucket-by-length = true (command line): needs samples of different "
                        "lengths: data.dataset = \"fortunes\" (data.dataset is "
                        "\"fashion-mnist\")"));
  EXPECT_THAT(first_error(file, {"--data.bucket-by-length=yes"}),
              HasSubstr("expected true or false"));
}

TEST_F(config_files, a_bad_value_names_the_file_it_came_from) {
  const auto file = write("run.ini", "[train]\nworkers = 0\n");
  EXPECT_THAT(first_error(file, {}), HasSubstr("train.workers = 0 (in " + file + ", line 2)"));
  // An override wins, and so does its origin.
  EXPECT_THAT(first_error(file, {"--train.workers=-3"}),
              HasSubstr("train.workers = -3 (command line)"));
}

TEST_F(config_files, every_problem_is_reported_not_only_the_first) {
  try {
    load("", {"--train.workers=0", "--train.lr=-1", "--train.epochs=0"});
    FAIL() << "expected invalid_config";
  } catch (const invalid_config& error) {
    EXPECT_EQ(error.errors().size(), 3u);
  }
}

TEST_F(config_files, problems_are_listed_in_the_order_they_were_written) {
  // Line 2 is refused by validation, line 3 for its type, line 4 as unknown: neither the order
  // of the checks nor that of the keys' names.
  const auto file = write("run.ini", "[train]\nworkers = 0\nlr = \"fast\"\nbogus = 1\n");
  try {
    load(file, {"--data.max-texts=-1", "--train.epochs=0"});
    FAIL() << "expected invalid_config";
  } catch (const invalid_config& error) {
    std::vector<std::string> keys;
    for (const auto& problem : error.errors())
      keys.push_back(problem.key);
    EXPECT_THAT(keys, testing::ElementsAre("train.workers", "train.lr", "train.bogus",
                                           "data.max-texts", "train.epochs"))
        << error.what();
  }
}

// A model chosen on the command line replaces the one a file chose (config/cnn.ini's preset),
// and the file's keys of the model it replaces go back to their defaults; one source that sets
// both is still refused.
TEST_F(config_files, a_model_chosen_on_the_command_line_replaces_the_files) {
  const auto preset_file = write("cnn.ini", "[model]\npreset = \"cnn\"\nhidden = [64]\n");
  value_origins origins;
  auto config = load(preset_file, {"--model.layers=flatten, dense 10"}, &origins);
  EXPECT_EQ(config.model.layers, "flatten, dense 10");
  EXPECT_EQ(config.model.preset, "mlp");
  EXPECT_EQ(config.model.hidden, (std::vector<int>{256, 128}));
  EXPECT_EQ(origins.count("model.preset"), 0u);
  EXPECT_EQ(origins.count("model.hidden"), 0u);
  // An empty --model.layers= (a script's unset variable) chooses nothing: the file's model stays.
  config = load(write("cnn-only.ini", "[model]\npreset = \"cnn\"\n"), {"--model.layers="});
  EXPECT_EQ(config.model.preset, "cnn");

  const auto layers_file = write("own.ini", "[model]\nlayers = \"flatten, dense 10\"\n");
  config = load(layers_file, {"--model.preset=cnn"});
  EXPECT_EQ(config.model.preset, "cnn");
  EXPECT_TRUE(config.model.layers.empty());
  // The file's hidden sizes stay when the command line picks the preset they size.
  const auto mlp_file =
      write("mlp.ini", "[model]\nlayers = \"flatten, dense 10\"\nhidden = [64]\n");
  config = load(mlp_file, {"--model.preset=mlp"});
  EXPECT_EQ(config.model.hidden, std::vector<int>{64});

  EXPECT_THAT(first_error(preset_file, {"--model.layers=flatten, dense 10", "--model.preset=cnn"}),
              HasSubstr("model.layers is set too"));
  const auto both = write("both.ini", "[model]\npreset = \"cnn\"\nlayers = \"flatten, dense 10\"\n");
  EXPECT_THAT(first_error(both, {}), HasSubstr("model.layers is set too"));
}

TEST_F(config_files, batch_larger_than_a_shard_is_rejected) {
  auto config = load("", {"--train.batch-size=20000"});
  const auto errors = herd::config::validate_against_data(config, 60000);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors.front().key, "train.batch-size");
  EXPECT_THAT(errors.front().message, HasSubstr("shard of 15000 samples"));
  config.train.batch_size = 15000;
  EXPECT_TRUE(herd::config::validate_against_data(config, 60000).empty());
  // With load()'s origins the message says where the batch size was set.
  herd::config::value_origins origins;
  const auto file = write("big.ini", "[train]\nbatch-size = 20000\n");
  const auto from_file = load(file, {}, &origins);
  const auto located = herd::config::validate_against_data(from_file, 60000, origins);
  ASSERT_EQ(located.size(), 1u);
  EXPECT_THAT(located.front().message,
              HasSubstr("train.batch-size = 20000 (in " + file + ", line 2): larger than"));
  // More workers than samples is the worker count's doing, not the batch size's.
  const auto crowded = herd::config::validate_against_data(load("", {"--train.workers=16"}), 10);
  ASSERT_EQ(crowded.size(), 1u);
  EXPECT_EQ(crowded.front().key, "train.workers");
  EXPECT_THAT(crowded.front().message,
              HasSubstr("train.workers = 16: more workers than the 10 training "
                        "samples"));
}

TEST_F(config_files, to_ini_round_trips) {
  const auto original = load("", {"--train.lr=0.0125", "--train.seed=42", "--model.hidden=[7,5]",
                                  "--data.path=/some/where", "--train.max-seconds=1e-3"});
  const auto file = write("dump.ini", herd::config::to_ini(original));
  const auto again = load(file, {});
  EXPECT_EQ(herd::config::to_ini(again), herd::config::to_ini(original));
  EXPECT_EQ(again.train.seed, 42u);
  // CAF's file parser may be one ulp off on decimals that binary cannot hold exactly.
  const auto precise = load("", {"--train.lr=0.0123456789"});
  EXPECT_EQ(precise.train.lr, 0.0123456789);
  const auto reread = load(write("precise.ini", herd::config::to_ini(precise)), {});
  EXPECT_NEAR(reread.train.lr, 0.0123456789, 1e-15);
}

TEST_F(config_files, to_ini_round_trips_paths_with_quotes_and_backslashes) {
  const auto original = load("", {R"(--data.path=/tmp/a"b\c d)"});
  const auto again = load(write("odd.ini", herd::config::to_ini(original)), {});
  EXPECT_EQ(again.data.path, R"(/tmp/a"b\c d)");
}

TEST_F(config_files, empty_and_fractional_values_are_shown_as_written) {
  EXPECT_THAT(first_error("", {"--train.algorithm="}),
              HasSubstr("train.algorithm = \"\" (command line): unknown algorithm"));
  EXPECT_THAT(first_error("", {"--train.workers=1.5"}),
              HasSubstr("train.workers = 1.5 (command line): expected an integer"));
  // A whole real is quoted with its point, or the message would read "= 4: expected an integer".
  EXPECT_THAT(first_error("", {"--train.workers=4.0"}),
              HasSubstr("train.workers = 4.0 (command line): expected an integer"));
  EXPECT_THAT(first_error("", {"--train.workers=1e1"}),
              HasSubstr("train.workers = 1e1 (command line): expected an integer"));
  // Digits past what an integer holds are a number too large, not a string.
  EXPECT_THAT(first_error("", {"--train.workers=99999999999999999999"}),
              HasSubstr("train.workers = 99999999999999999999 (command line): too large for an "
                        "integer"));
  // A 64-bit unsigned key says the range it takes.
  EXPECT_THAT(first_error("", {"--train.seed=18446744073709551615"}),
              HasSubstr("train.seed = 18446744073709551615 (command line): expected an integer "
                        "between 0 and 9223372036854775807"));
  EXPECT_THAT(first_error("", {"--model.hidden="}), HasSubstr("[] for no hidden layer"));
  // A bad hidden layer size names its place in the list.
  EXPECT_THAT(first_error("", {"--model.hidden=[256,0]"}),
              HasSubstr("model.hidden = [256, 0] (command line): hidden layer 2 has 0 units; "
                        "every hidden layer size must be between 1 and 65536"));
  // Only blanks: a string of them, not an empty list ("model.layers = []: expected a string").
  EXPECT_THAT(first_error("", {"--train.algorithm= "}),
              HasSubstr("train.algorithm = \" \" (command line): unknown algorithm"));
  EXPECT_THAT(first_error("", {"--train.workers= "}),
              HasSubstr("train.workers = \" \" (command line): expected an integer"));
}

// Any name validate() accepts comes back from to_ini() through from_ini(): line breaks, tabs,
// quotes and backslashes included.
TEST_F(config_files, to_ini_round_trips_control_characters_in_strings) {
  herd::config::run_config config;
  config.metrics.job = "a\nb\r\tc \"d\" \\e";
  config.checkpoint.dir = "/tmp/with\nbreak";
  ASSERT_TRUE(herd::config::validate(config).empty());
  const auto back = herd::config::from_ini(herd::config::to_ini(config), "round trip");
  EXPECT_EQ(back.metrics.job, config.metrics.job);
  EXPECT_EQ(back.checkpoint.dir, config.checkpoint.dir);
}

// -- [model]
// ----------------------------------------------------------------------------------------

TEST_F(config_files, model_keys_have_defaults_parse_and_round_trip) {
  const auto defaults = load("", {});
  EXPECT_EQ(defaults.model.preset, "mlp");
  EXPECT_EQ(defaults.model.layers, "");
  const auto file = write("model.ini", "[model]\nlayers = \"flatten, dense 64, relu, dense 10\"\n");
  const auto config = load(file, {});
  EXPECT_EQ(config.model.layers, "flatten, dense 64, relu, dense 10");
  EXPECT_EQ(load("", {"--model.layers=flatten, dense 10"}).model.layers, "flatten, dense 10");
  EXPECT_EQ(load("", {"--model.preset=mlp"}).model.preset, "mlp");
  const auto back = herd::config::from_ini(herd::config::to_ini(config), "to_ini");
  EXPECT_EQ(back.model.layers, config.model.layers);
  EXPECT_EQ(back.model.preset, "mlp");
}

TEST_F(config_files, model_keys_that_do_not_go_together_are_refused_naming_the_key) {
  EXPECT_THAT(first_error("", {"--model.preset=resnet"}),
              HasSubstr("model.preset = \"resnet\" (command line): unknown preset; the presets "
                        "are: mlp"));
  EXPECT_THAT(first_error("", {"--model.layers=flatten, dense 10", "--model.hidden=[64]"}),
              HasSubstr("model.hidden = [64] (command line): sizes the mlp preset only; with "
                        "model.layers, write the dense layers there"));
  // A layer list is a line or two, not a megabyte.
  EXPECT_THAT(first_error("", {"--model.layers=" + std::string(70000, 'x')}),
              HasSubstr("is longer than 65536 bytes"));
  // The layers are read when the model is built against the data: any text loads here.
  EXPECT_NO_THROW(load("", {"--model.layers=nonsense 3"}));
}

TEST_F(config_files, shipped_configs_load) {
  for (const auto& entry : std::filesystem::directory_iterator(HERD_CONFIG_DIR)) {
    if (entry.path().extension() != ".ini")
      continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load(entry.path().string(), {}));
  }
  EXPECT_EQ(load(std::string(HERD_CONFIG_DIR) + "/quickstart.ini", {}).train.workers, 4);
}

TEST_F(config_files, help_lists_every_contract_key) {
  const auto help = herd::config::describe_keys();
  for (const char* key : herd::testing::contract_keys())
    EXPECT_THAT(help, HasSubstr(std::string("--") + key)) << key;
}

// -- partial collectives and imbalance ------------------------------------------------------------

TEST_F(config_files, partial_and_imbalance_sections_have_their_defaults) {
  const auto config = load("", {});
  for (const auto* partial : {&config.solo, &config.majority,
                              static_cast<const herd::config::partial_section*>(&config.quorum)}) {
    EXPECT_EQ(partial->sync_every, 32);
    EXPECT_EQ(partial->late_gradients, "discard");
    EXPECT_EQ(partial->missing_members, "renormalise");
  }
  EXPECT_DOUBLE_EQ(config.quorum.fraction, 0.5);
  EXPECT_EQ(config.imbalance.kind, "none");
  EXPECT_EQ(config.imbalance.seed, 1u);
  EXPECT_EQ(config.imbalance.k, 1);
  EXPECT_DOUBLE_EQ(config.imbalance.delay_ms, 10.0);
  EXPECT_EQ(config.imbalance.workers, std::vector<int>{0});
  EXPECT_DOUBLE_EQ(config.imbalance.factor, 2.0);
  EXPECT_DOUBLE_EQ(config.imbalance.sigma, 0.5);
}

TEST_F(config_files, every_algorithm_and_imbalance_kind_is_accepted) {
  for (const char* algorithm : {"sync", "solo", "majority", "quorum", "preduce"})
    EXPECT_EQ(load("", {std::string("--train.algorithm=") + algorithm}).train.algorithm, algorithm);
  for (const char* kind : {"none", "random", "persistent", "lognormal"})
    EXPECT_EQ(load("", {std::string("--imbalance.kind=") + kind}).imbalance.kind, kind);
  // The defaults fit even a single worker, whatever the kind.
  for (const char* kind : {"random", "persistent"})
    EXPECT_NO_THROW(load("", {"--train.workers=1", std::string("--imbalance.kind=") + kind}));
}

TEST_F(config_files, every_new_key_parses_from_a_file) {
  const auto file =
      write("partial.ini", "[train]\nalgorithm = \"quorum\"\nworkers = 8\n"
                           "[solo]\nsync-every = 7\nlate-gradients = \"discard\"\n"
                           "[majority]\nsync-every = 0\nlate-gradients = \"discard\"\n"
                           "[quorum]\nfraction = 0.75\nsync-every = 64\n"
                           "late-gradients = \"discard\"\n"
                           "[imbalance]\nkind = \"persistent\"\nseed = 99\nk = 3\n"
                           "delay-ms = 25.5\nworkers = [1, 6]\nfactor = 4\n"
                           "sigma = 1.25\n");
  const auto config = load(file, {});
  EXPECT_EQ(config.train.algorithm, "quorum");
  EXPECT_EQ(config.solo.sync_every, 7);
  EXPECT_EQ(config.solo.late_gradients, "discard");
  EXPECT_EQ(config.majority.sync_every, 0);
  EXPECT_EQ(config.majority.late_gradients, "discard");
  EXPECT_DOUBLE_EQ(config.quorum.fraction, 0.75);
  EXPECT_EQ(config.quorum.sync_every, 64);
  EXPECT_EQ(config.quorum.late_gradients, "discard");
  EXPECT_EQ(config.imbalance.kind, "persistent");
  EXPECT_EQ(config.imbalance.seed, 99u);
  EXPECT_EQ(config.imbalance.k, 3);
  EXPECT_DOUBLE_EQ(config.imbalance.delay_ms, 25.5);
  EXPECT_EQ(config.imbalance.workers, (std::vector<int>{1, 6}));
  EXPECT_DOUBLE_EQ(config.imbalance.factor, 4.0);
  EXPECT_DOUBLE_EQ(config.imbalance.sigma, 1.25);
}

TEST_F(config_files, every_new_key_parses_from_the_command_line) {
  const auto config =
      load("", {"--train.workers=8", "--solo.sync-every=5", "--solo.late-gradients=discard",
                "--majority.sync-every=1000000", "--majority.late-gradients=discard",
                "--quorum.fraction=1", "--quorum.sync-every=0", "--quorum.late-gradients=discard",
                "--imbalance.kind=random", "--imbalance.seed=12345", "--imbalance.k=8",
                "--imbalance.delay-ms=60000", "--imbalance.workers=2,3", "--imbalance.factor=100",
                "--imbalance.sigma=3"});
  EXPECT_EQ(config.solo.sync_every, 5);
  EXPECT_EQ(config.solo.late_gradients, "discard");
  EXPECT_EQ(config.majority.sync_every, 1000000);
  EXPECT_EQ(config.majority.late_gradients, "discard");
  EXPECT_DOUBLE_EQ(config.quorum.fraction, 1.0);
  EXPECT_EQ(config.quorum.sync_every, 0);
  EXPECT_EQ(config.quorum.late_gradients, "discard");
  EXPECT_EQ(config.imbalance.kind, "random");
  EXPECT_EQ(config.imbalance.seed, 12345u);
  EXPECT_EQ(config.imbalance.k, 8);
  EXPECT_DOUBLE_EQ(config.imbalance.delay_ms, 60000.0);
  EXPECT_EQ(config.imbalance.workers, (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(config.imbalance.factor, 100.0);
  EXPECT_DOUBLE_EQ(config.imbalance.sigma, 3.0);
  EXPECT_EQ(load("", {"--imbalance.workers=[0,1]"}).imbalance.workers, (std::vector<int>{0, 1}));
  EXPECT_EQ(load("", {"--imbalance.workers=[]"}).imbalance.workers, std::vector<int>{});
  EXPECT_EQ(load("", {"--imbalance.sigma=0"}).imbalance.sigma, 0.0);
}

TEST_F(config_files, missing_members_parses_per_section_and_unknown_modes_name_the_allowed_ones) {
  const auto file = write("missing.ini", "[solo]\nmissing-members = \"zero\"\n"
                                         "[quorum]\nmissing-members = \"renormalise\"\n");
  const auto config = load(file, {"--majority.missing-members=zero"});
  EXPECT_EQ(config.solo.missing_members, "zero");
  EXPECT_EQ(config.majority.missing_members, "zero");
  EXPECT_EQ(config.quorum.missing_members, "renormalise");
  const auto again = load(write("dump.ini", herd::config::to_ini(config)), {});
  EXPECT_EQ(again.solo.missing_members, "zero");
  EXPECT_EQ(again.majority.missing_members, "zero");
  for (const char* section : {"solo", "majority", "quorum"})
    EXPECT_THAT(first_error("", {std::string("--") + section + ".missing-members=drop"}),
                HasSubstr(std::string(section) +
                          ".missing-members = \"drop\" (command line): unknown mode; allowed: "
                          "renormalise, zero"));
}

TEST_F(config_files, to_ini_round_trips_the_new_sections) {
  const auto original = load(
      "", {"--train.workers=6", "--solo.sync-every=3", "--majority.late-gradients=scale",
           "--quorum.fraction=0.3", "--quorum.sync-every=11", "--imbalance.kind=persistent",
           "--imbalance.seed=7", "--imbalance.k=2", "--imbalance.delay-ms=12.5",
           "--imbalance.workers=[4,0,5]", "--imbalance.factor=3.5", "--imbalance.sigma=0.125"});
  const auto ini = herd::config::to_ini(original);
  for (const char* header : {"[solo]", "[majority]", "[quorum]", "[imbalance]"})
    EXPECT_THAT(ini, HasSubstr(header)) << ini;
  const auto again = load(write("dump.ini", ini), {});
  EXPECT_EQ(herd::config::to_ini(again), ini);
  EXPECT_EQ(again.solo.sync_every, 3);
  EXPECT_EQ(again.majority.late_gradients, "scale");
  EXPECT_DOUBLE_EQ(again.quorum.fraction, 0.3);
  EXPECT_EQ(again.quorum.sync_every, 11);
  EXPECT_EQ(again.quorum.late_gradients, "discard");
  EXPECT_EQ(again.imbalance.kind, "persistent");
  EXPECT_EQ(again.imbalance.seed, 7u);
  EXPECT_EQ(again.imbalance.k, 2);
  EXPECT_DOUBLE_EQ(again.imbalance.delay_ms, 12.5);
  EXPECT_EQ(again.imbalance.workers, (std::vector<int>{4, 0, 5}));
  EXPECT_DOUBLE_EQ(again.imbalance.factor, 3.5);
  EXPECT_DOUBLE_EQ(again.imbalance.sigma, 0.125);
  // The defaults round-trip as well (an empty worker list included).
  const auto defaults = load("", {"--imbalance.workers=[]"});
  const auto reread = load(write("defaults.ini", herd::config::to_ini(defaults)), {});
  EXPECT_EQ(herd::config::to_ini(reread), herd::config::to_ini(defaults));
}

TEST_F(config_files, bad_partial_values_name_key_value_and_what_is_allowed) {
  EXPECT_THAT(first_error("", {"--train.algorithm=bogus"}),
              HasSubstr("allowed: sync, solo, majority, quorum, preduce, wagma, async, local-sgd"));
  EXPECT_THAT(first_error("", {"--solo.sync-every=-1"}),
              HasSubstr("solo.sync-every = -1 (command line): must be between 0 (never) and "
                        "1000000 rounds"));
  EXPECT_THAT(first_error("", {"--majority.sync-every=1000001"}),
              HasSubstr("majority.sync-every = 1000001 (command line)"));
  EXPECT_THAT(first_error("", {"--quorum.sync-every=-5"}), HasSubstr("quorum.sync-every = -5"));
  EXPECT_THAT(first_error("", {"--solo.late-gradients=drop"}),
              HasSubstr("solo.late-gradients = \"drop\" (command line): unknown mode; "
                        "allowed: accumulate, discard"));
  EXPECT_THAT(first_error("", {"--majority.late-gradients=keep"}),
              HasSubstr("majority.late-gradients = \"keep\""));
  EXPECT_THAT(first_error("", {"--quorum.late-gradients=x"}),
              HasSubstr("quorum.late-gradients = \"x\""));
  EXPECT_THAT(first_error("", {"--quorum.fraction=0"}),
              HasSubstr("quorum.fraction = 0 (command line): must lie in (0, 1]"));
  EXPECT_THAT(first_error("", {"--quorum.fraction=1.5"}), HasSubstr("quorum.fraction = 1.5"));
  EXPECT_THAT(first_error("", {"--quorum.fraction=-0.25"}), HasSubstr("quorum.fraction = -0.25"));
  const auto file = write("late.ini", "[quorum]\nlate-gradients = \"later\"\n");
  EXPECT_THAT(first_error(file, {}),
              HasSubstr("quorum.late-gradients = \"later\" (in " + file + ", line 2)"));
}

// herd simulate sweeps [simulate] workers with one [imbalance] (k and the slow workers capped
// at each size): load() checks against the largest size, a run against its own workers.
TEST_F(config_files, a_sweeps_imbalance_is_checked_against_its_largest_job_and_a_run_against_its_own) {
  const auto sweep = load("", {"--imbalance.kind=random", "--imbalance.k=6",
                               "--simulate.workers=[8,16]", "--train.workers=4"});
  EXPECT_EQ(sweep.imbalance.k, 6);
  const auto refused = herd::config::validate_run(sweep);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused.front().key, "imbalance.k");
  EXPECT_THAT(refused.front().message, HasSubstr("must be between 1 and train.workers (4)"));
  EXPECT_THAT(first_error("", {"--imbalance.kind=random", "--imbalance.k=20",
                               "--simulate.workers=[8,16]"}),
              HasSubstr("imbalance.k = 20 (command line): must be between 1 and the largest of "
                        "train.workers and simulate.workers (16)"));
  // A file shared with herd train: its own workers may be more than the sweep's sizes.
  const auto trains_more = load("", {"--imbalance.kind=random", "--imbalance.k=6",
                                     "--simulate.workers=[2,4]", "--train.workers=8"});
  EXPECT_TRUE(herd::config::validate_run(trains_more).empty());
  EXPECT_NO_THROW(load("", {"--imbalance.kind=persistent", "--imbalance.workers=[5]",
                            "--simulate.workers=[4,8]"}));
  EXPECT_THAT(first_error("", {"--imbalance.kind=persistent", "--imbalance.workers=[8]",
                               "--simulate.workers=[4,8]"}),
              HasSubstr("indices must lie in [0, the largest of train.workers and "
                        "simulate.workers) = [0, 8)"));
  EXPECT_TRUE(herd::config::validate_run(load("", {"--imbalance.kind=random", "--imbalance.k=3"}))
                  .empty());
  // A sweep with sizes out of range is named once, not once per size.
  try {
    load("", {"--simulate.workers=[0,70000,4]"});
    ADD_FAILURE() << "a sweep of 0 and 70000 workers was accepted";
  } catch (const invalid_config& sweep_refused) {
    ASSERT_EQ(sweep_refused.errors().size(), 1u);
    EXPECT_THAT(sweep_refused.errors().front().message,
                HasSubstr("simulate.workers = [0, 70000, 4] (command line): every job size must be "
                          "between 1 and 65536 workers"));
  }
}

TEST_F(config_files, bad_imbalance_values_name_key_value_and_what_is_allowed) {
  EXPECT_THAT(first_error("", {"--imbalance.kind=bursty"}),
              HasSubstr("imbalance.kind = \"bursty\" (command line): unknown imbalance kind; "
                        "allowed: none, random, persistent, lognormal"));
  EXPECT_THAT(first_error("", {"--imbalance.kind=persistent", "--imbalance.workers=[0,7]",
                               "--train.workers=4"}),
              HasSubstr("imbalance.workers = [0, 7] (command line): worker index 7 is out of "
                        "range; indices must lie in [0, train.workers) = [0, 4)"));
  EXPECT_THAT(first_error("", {"--imbalance.kind=random", "--imbalance.k=5", "--train.workers=4"}),
              HasSubstr("imbalance.k = 5 (command line): must be between 1 and train.workers (4)"));
  EXPECT_THAT(first_error("", {"--imbalance.k=0"}),
              HasSubstr("imbalance.k = 0 (command line): must be at least 1"));
  EXPECT_THAT(first_error("", {"--imbalance.delay-ms=-1"}),
              HasSubstr("imbalance.delay-ms = -1 (command line): must lie in [0, 60000]"));
  EXPECT_THAT(first_error("", {"--imbalance.delay-ms=60000.5"}),
              HasSubstr("imbalance.delay-ms = 60000.5"));
  // Shown as given, never rounded onto the bound it is past.
  EXPECT_THAT(first_error("", {"--imbalance.delay-ms=60000.01"}),
              HasSubstr("imbalance.delay-ms = 60000.01 (command line)"));
  EXPECT_THAT(first_error("", {"--data.validation-fraction=0.5000001"}),
              HasSubstr("data.validation-fraction = 0.5000001 (command line)"));
  EXPECT_THAT(first_error("", {"--imbalance.workers=[2,1,2]"}),
              HasSubstr("imbalance.workers = [2, 1, 2] (command line): worker 2 is listed twice"));
  EXPECT_THAT(first_error("", {"--imbalance.workers=[-1]"}),
              HasSubstr("imbalance.workers = [-1] (command line): worker index -1 is negative"));
  EXPECT_THAT(first_error("", {"--imbalance.kind=persistent", "--imbalance.workers=[]"}),
              HasSubstr("imbalance.workers = [] (command line): imbalance.kind = persistent "
                        "needs at least one slow worker"));
  EXPECT_THAT(first_error("", {"--imbalance.factor=0.5"}),
              HasSubstr("imbalance.factor = 0.5 (command line): must lie in [1, 100]"));
  EXPECT_THAT(first_error("", {"--imbalance.factor=101"}), HasSubstr("imbalance.factor = 101"));
  EXPECT_THAT(first_error("", {"--imbalance.sigma=-0.1"}),
              HasSubstr("imbalance.sigma = -0.1 (command line): must lie in [0, 3]"));
  EXPECT_THAT(first_error("", {"--imbalance.sigma=3.5"}), HasSubstr("imbalance.sigma = 3.5"));
  EXPECT_THAT(first_error("", {"--imbalance.workers=abc"}),
              HasSubstr("imbalance.workers = \"abc\" (command line): expected a list of worker "
                        "indices such as [0, 1]"));
  EXPECT_THAT(first_error("", {"--imbalance.seed=-1"}),
              HasSubstr("imbalance.seed = -1 (command line): expected a non-negative integer"));
}

// -- partial reduce ------------------------------------------------------------------------------

TEST_F(config_files, preduce_section_has_its_defaults) {
  const auto config = load("", {});
  EXPECT_EQ(config.preduce.group_size, 2);
  EXPECT_DOUBLE_EQ(config.preduce.wait_window_ms, 20.0);
  EXPECT_DOUBLE_EQ(config.preduce.staleness_decay, 0.1);
  EXPECT_EQ(config.preduce.connect_every, -1) << "automatic";
  EXPECT_DOUBLE_EQ(config.preduce.connect_wait_ms, 200.0);
  EXPECT_EQ(config.preduce.sync_every, 0);
  // The defaults are valid with preduce chosen, for any number of workers, one included.
  for (const char* workers : {"1", "2", "3", "1024"})
    EXPECT_EQ(load("", {"--train.algorithm=preduce", std::string("--train.workers=") + workers})
                  .train.algorithm,
              "preduce")
        << workers;
}

TEST_F(config_files, preduce_keys_parse_from_a_file_and_the_command_line_and_round_trip) {
  const auto file = write("preduce.ini", "[train]\nalgorithm = \"preduce\"\nworkers = 8\n"
                                         "[preduce]\ngroup-size = 4\nwait-window-ms = 7.5\n"
                                         "staleness-decay = 1\nconnect-every = 0\n"
                                         "connect-wait-ms = 0\nsync-every = 12\n");
  const auto config = load(file, {"--preduce.group-size=3", "--preduce.staleness-decay=0.25"});
  EXPECT_EQ(config.train.algorithm, "preduce");
  EXPECT_EQ(config.preduce.group_size, 3); // the command line wins
  EXPECT_DOUBLE_EQ(config.preduce.wait_window_ms, 7.5);
  EXPECT_DOUBLE_EQ(config.preduce.staleness_decay, 0.25);
  EXPECT_EQ(config.preduce.connect_every, 0);
  EXPECT_DOUBLE_EQ(config.preduce.connect_wait_ms, 0.0);
  EXPECT_EQ(config.preduce.sync_every, 12);
  // The bounds themselves are allowed.
  const auto bounds =
      load("", {"--preduce.group-size=4096", "--preduce.wait-window-ms=600000",
                "--preduce.staleness-decay=100", "--preduce.connect-every=1000000",
                "--preduce.connect-wait-ms=600000", "--preduce.sync-every=1000000"});
  EXPECT_EQ(bounds.preduce.group_size, 4096);
  EXPECT_EQ(bounds.preduce.sync_every, 1000000);

  const auto ini = herd::config::to_ini(config);
  EXPECT_THAT(ini, HasSubstr("[preduce]")) << ini;
  const auto again = load(write("dump.ini", ini), {});
  EXPECT_EQ(herd::config::to_ini(again), ini);
  EXPECT_EQ(again.preduce.group_size, 3);
  EXPECT_DOUBLE_EQ(again.preduce.wait_window_ms, 7.5);
  EXPECT_DOUBLE_EQ(again.preduce.staleness_decay, 0.25);
  EXPECT_EQ(again.preduce.connect_every, 0);
  EXPECT_DOUBLE_EQ(again.preduce.connect_wait_ms, 0.0);
  EXPECT_EQ(again.preduce.sync_every, 12);
}

TEST_F(config_files, wagma_keys_have_defaults_and_bad_values_name_key_value_and_what_is_allowed) {
  const auto defaults = load("", {"--train.algorithm=wagma"});
  EXPECT_EQ(defaults.wagma.group_size, 0);
  EXPECT_EQ(defaults.wagma.sync_every, 10);
  EXPECT_EQ(defaults.wagma.blend, "reference");
  const auto set = load("", {"--train.algorithm=wagma", "--train.workers=16",
                             "--wagma.group-size=8", "--wagma.sync-every=0",
                             "--wagma.blend=reference"});
  EXPECT_EQ(set.wagma.group_size, 8);
  EXPECT_EQ(set.wagma.sync_every, 0);
  EXPECT_EQ(set.wagma.blend, "reference");
  EXPECT_THAT(first_error("", {"--wagma.blend=mean"}),
              HasSubstr("wagma.blend = \"mean\" (command line): unknown blend; allowed: herd, "
                        "reference"));
  EXPECT_THAT(first_error("", {"--wagma.group-size=3"}),
              HasSubstr("wagma.group-size = 3 (command line): must be a power of two up to 4096, "
                        "or 0 for sqrt(workers) rounded down"));
  EXPECT_THAT(first_error("", {"--train.workers=5", "--wagma.group-size=16"}),
              HasSubstr("wagma.group-size = 16 (command line): exceeds train.workers = 5 rounded "
                        "up to a power of two (8)"));
  EXPECT_THAT(first_error("", {"--wagma.sync-every=-1"}),
              HasSubstr("wagma.sync-every = -1 (command line): must be between 0 (never) and "
                        "1000000 steps"));
}

TEST_F(config_files, the_baselines_keys_have_defaults_and_bad_values_name_key_and_value) {
  const auto defaults = load("", {"--train.algorithm=local-sgd"});
  EXPECT_EQ(defaults.train.algorithm, "local-sgd");
  EXPECT_EQ(defaults.local_sgd.period, 10) << "wagma.sync-every's default";
  const auto ini = write("baselines.ini", "[train]\nalgorithm = \"local-sgd\"\n\n[local-sgd]\n"
                                          "period = 4\n");
  EXPECT_EQ(load(ini, {}).local_sgd.period, 4) << "a section named with a hyphen, in a file";
  EXPECT_EQ(load("", {"--train.algorithm=async"}).train.algorithm, "async");
  EXPECT_EQ(load("", {"--train.algorithm=async"}).async.lr, 0.0) << "train.lr / train.workers";
  EXPECT_EQ(load("", {"--async.lr=0.01"}).async.lr, 0.01);
  EXPECT_THAT(first_error("", {"--async.lr=-1"}),
              HasSubstr("async.lr = -1 (command line): must lie between 0 (train.lr / "
                        "train.workers) and 100"));
  EXPECT_THAT(first_error("", {"--local-sgd.period=0"}),
              HasSubstr("local-sgd.period = 0 (command line): must be between 1 (every step) and "
                        "1000000 steps"));
  EXPECT_THAT(first_error("", {"--train.algorithm=async", "--checkpoint.dir=/tmp/herd-ckpt"}),
              HasSubstr("train.algorithm = async takes no checkpoints"));
}

TEST_F(config_files, bad_preduce_values_name_key_value_and_what_is_allowed) {
  EXPECT_THAT(first_error("", {"--preduce.group-size=1"}),
              HasSubstr("preduce.group-size = 1 (command line): must be between 2 and 4096 "
                        "workers"));
  EXPECT_THAT(first_error("", {"--preduce.group-size=4097"}),
              HasSubstr("preduce.group-size = 4097 (command line)"));
  EXPECT_THAT(first_error("", {"--preduce.wait-window-ms=-1"}),
              HasSubstr("preduce.wait-window-ms = -1 (command line): must lie between 0 and "
                        "600000 ms"));
  EXPECT_THAT(first_error("", {"--preduce.staleness-decay=-0.5"}),
              HasSubstr("preduce.staleness-decay = -0.5 (command line): must lie between 0 "
                        "(uniform weights) and 100"));
  EXPECT_THAT(first_error("", {"--preduce.staleness-decay=101"}),
              HasSubstr("preduce.staleness-decay = 101 (command line)"));
  EXPECT_THAT(first_error("", {"--preduce.connect-every=-2"}),
              HasSubstr("preduce.connect-every = -2 (command line): must be between 1 and "
                        "1000000 groups, -1 (automatic) or 0 (guard off)"));
  // The .npy keys with another dataset would be ignored, and the run train on that one.
  EXPECT_THAT(first_error("", {"--data.train-features=x.npy"}),
              HasSubstr("data.train-features = \"x.npy\" (command line): used only with "
                        "data.dataset = npy, not \"fashion-mnist\""));
  // An explicit period that cannot connect train.workers: the bound is in the message.
  EXPECT_THAT(first_error("", {"--train.workers=32", "--preduce.connect-every=16"}),
              HasSubstr("preduce.connect-every = 16 (command line): cannot be met: connecting "
                        "train.workers = 32 workers in groups of preduce.group-size = 2 takes at "
                        "least 31 groups (ceil((P - 1) / (g - 1))); set at least 31, -1 "
                        "(automatic) or 0 (guard off)"));
  EXPECT_THAT(first_error("", {"--train.workers=256", "--preduce.group-size=4",
                               "--preduce.connect-every=84"}),
              HasSubstr("takes at least 85 groups"));
  // herd simulate's sweep never runs train.workers: wagma's group must fit its largest P (a
  // smaller one caps it, as preduce's), preduce's period connect its largest.
  EXPECT_EQ(load("", {"--simulate.workers=[64,128]", "--wagma.group-size=16"}).wagma.group_size,
            16);
  EXPECT_EQ(load("", {"--simulate.workers=[8,64]", "--wagma.group-size=16", "--train.workers=64"})
                .wagma.group_size,
            16);
  EXPECT_THAT(
      first_error("", {"--simulate.workers=[8,16]", "--wagma.group-size=64", "--train.workers=64"}),
      HasSubstr("wagma.group-size = 64 (command line): exceeds simulate.workers' P = 16 "
                "rounded up to a power of two (16)"));
  EXPECT_THAT(first_error("", {"--simulate.workers=[4,64]", "--preduce.connect-every=20"}),
              HasSubstr("cannot be met: connecting simulate.workers' P = 64 workers"));
  EXPECT_EQ(
      load("", {"--simulate.workers=[4,16]", "--preduce.connect-every=20", "--train.workers=64"})
          .preduce.connect_every,
      20);
  for (const char* every : {"31", "0", "-1"})
    EXPECT_EQ(load("", {"--train.workers=32", std::string("--preduce.connect-every=") + every})
                  .preduce.connect_every,
              std::stoi(every));
  EXPECT_EQ(load("", {"--train.workers=256", "--preduce.group-size=4",
                      "--preduce.connect-every=85"})
                .preduce.connect_every,
            85);
  EXPECT_THAT(first_error("", {"--preduce.connect-wait-ms=-2"}),
              HasSubstr("preduce.connect-wait-ms = -2 (command line): must lie between 0 and "
                        "600000 ms"));
  EXPECT_THAT(first_error("", {"--preduce.sync-every=-1"}),
              HasSubstr("preduce.sync-every = -1 (command line): must be between 0 (never) and "
                        "1000000 groups"));
  EXPECT_THAT(first_error("", {"--preduce.group-size=2.5"}),
              HasSubstr("preduce.group-size = 2.5 (command line): expected an integer"));
  const auto file = write("bad.ini", "[preduce]\nwait-window-ms = -3\n");
  EXPECT_THAT(first_error(file, {}),
              HasSubstr("preduce.wait-window-ms = -3 (in " + file + ", line 2)"));
  EXPECT_THAT(first_error("", {"--preduce.group_size=4"}),
              HasSubstr("did you mean preduce.group-size?"));
  // Every bad preduce value is reported, each with its key.
  try {
    load("",
         {"--preduce.group-size=1", "--preduce.wait-window-ms=-1", "--preduce.staleness-decay=-1",
          "--preduce.connect-every=-3", "--preduce.connect-wait-ms=-1", "--preduce.sync-every=-1"});
    FAIL() << "expected invalid_config";
  } catch (const invalid_config& error) {
    std::vector<std::string> keys;
    for (const auto& problem : error.errors())
      keys.push_back(problem.key);
    EXPECT_THAT(keys,
                testing::UnorderedElementsAre("preduce.group-size", "preduce.wait-window-ms",
                                              "preduce.staleness-decay", "preduce.connect-every",
                                              "preduce.connect-wait-ms", "preduce.sync-every"));
  }
}

TEST_F(config_files, imbalance_errors_carry_the_key) {
  try {
    load("", {"--train.workers=4", "--imbalance.kind=persistent", "--imbalance.workers=[0,7,7]",
              "--quorum.fraction=0"});
    FAIL() << "expected invalid_config";
  } catch (const invalid_config& error) {
    std::vector<std::string> messages;
    for (const auto& problem : error.errors())
      messages.push_back(problem.key + ": " + problem.message);
    // The repeated 7 is one duplicate and one index out of range, not two of each.
    EXPECT_THAT(messages,
                testing::UnorderedElementsAre(
                    HasSubstr("quorum.fraction: quorum.fraction = 0"),
                    HasSubstr("imbalance.workers: imbalance.workers = [0, 7, 7] (command line): "
                              "worker 7 is listed twice"),
                    HasSubstr("imbalance.workers: imbalance.workers = [0, 7, 7] (command line): "
                              "worker index 7 is out of range")));
  }
}

TEST_F(config_files, cross_checks_against_workers_apply_only_to_the_kind_that_uses_them) {
  // k and the worker list only matter for random and persistent respectively.
  EXPECT_NO_THROW(load("", {"--train.workers=2", "--imbalance.k=5"}));
  EXPECT_NO_THROW(
      load("", {"--train.workers=2", "--imbalance.kind=persistent", "--imbalance.k=5"}));
  EXPECT_NO_THROW(load("", {"--train.workers=2", "--imbalance.workers=[0,7]"}));
  EXPECT_NO_THROW(
      load("", {"--train.workers=2", "--imbalance.kind=random", "--imbalance.workers=[0,7]"}));
  EXPECT_NO_THROW(load("", {"--train.workers=2", "--imbalance.kind=lognormal", "--imbalance.k=9",
                            "--imbalance.workers=[9]"}));
  EXPECT_NO_THROW(load("", {"--train.workers=4", "--imbalance.kind=random", "--imbalance.k=4"}));
  EXPECT_NO_THROW(
      load("", {"--train.workers=4", "--imbalance.kind=persistent", "--imbalance.workers=[3,0]"}));
  // A bad train.workers is reported once, not echoed by every key compared against it.
  try {
    load("", {"--train.workers=0", "--imbalance.kind=random"});
    FAIL() << "expected invalid_config";
  } catch (const invalid_config& error) {
    ASSERT_EQ(error.errors().size(), 1u);
    EXPECT_EQ(error.errors().front().key, "train.workers");
  }
}

TEST_F(config_files, misspelt_new_keys_get_a_suggestion) {
  EXPECT_THAT(first_error("", {"--imbalance.delay=3"}),
              HasSubstr("unknown key imbalance.delay (command line); did you mean "
                        "imbalance.delay-ms?"));
  EXPECT_THAT(first_error("", {"--quorum.fracton=0.5"}),
              HasSubstr("did you mean quorum.fraction?"));
  EXPECT_THAT(first_error("", {"--solo.sync_every=4"}), HasSubstr("did you mean solo.sync-every?"));
  const auto file = write("typo.ini", "[majority]\nlate-gradient = \"discard\"\n");
  EXPECT_THAT(first_error(file, {}), HasSubstr("did you mean majority.late-gradients?"));
}

} // namespace

namespace {

TEST_F(config_files, cluster_keys_have_defaults_parse_round_trip_and_name_bad_values) {
  const auto defaults = load("", {});
  EXPECT_EQ(defaults.cluster.min_nodes, 1);
  EXPECT_EQ(defaults.cluster.heartbeat_ms, 500);
  EXPECT_EQ(defaults.cluster.node_timeout_ms, 4000);
  EXPECT_EQ(defaults.cluster.data_timeout_ms, 30000);
  EXPECT_EQ(defaults.cluster.join_timeout_s, 600);
  EXPECT_FALSE(defaults.cluster.tls());
  const auto ca = write("ca.pem", "not checked here, only readable");
  const auto set = load(write("cluster.ini", "[cluster]\nmin-nodes = 3\nheartbeat-ms = 200\n"
                                             "node-timeout-ms = 1000\ntoken = \"s3cret\"\n"),
                        {"--cluster.tls-ca=" + ca, "--cluster.tls-cert=" + ca,
                         "--cluster.tls-key=" + ca, "--cluster.data-timeout-ms=500"});
  EXPECT_EQ(set.cluster.min_nodes, 3);
  EXPECT_EQ(set.cluster.heartbeat_ms, 200);
  EXPECT_EQ(set.cluster.node_timeout_ms, 1000);
  EXPECT_EQ(set.cluster.data_timeout_ms, 500);
  EXPECT_EQ(set.cluster.token, "s3cret");
  EXPECT_TRUE(set.cluster.tls());
  const auto again = load(write("again.ini", herd::config::to_ini(set)), {});
  EXPECT_EQ(again.cluster.token, "s3cret");
  EXPECT_EQ(again.cluster.tls_key, ca);
  EXPECT_EQ(again.cluster.node_timeout_ms, 1000);

  EXPECT_THAT(first_error("", {"--cluster.min-nodes=0"}),
              HasSubstr("cluster.min-nodes = 0 (command line): must be between 1 and 1024 nodes"));
  EXPECT_THAT(first_error("", {"--cluster.heartbeat-ms=1000", "--cluster.node-timeout-ms=1500"}),
              HasSubstr("cluster.node-timeout-ms = 1500 (command line): must be at least twice "
                        "cluster.heartbeat-ms (1000)"));
  // The key a user did not set is named as the default, not as if they had given it.
  EXPECT_THAT(first_error("", {"--cluster.heartbeat-ms=3000"}),
              HasSubstr("cluster.node-timeout-ms = 4000 (the default): must be at least twice "
                        "cluster.heartbeat-ms (3000)"));
  EXPECT_THAT(first_error("", {"--cluster.tls-ca=" + ca}),
              HasSubstr("cluster.tls-cert = \"\" (the default): control-plane TLS needs "
                        "cluster.tls-ca, cluster.tls-cert and cluster.tls-key"));
  EXPECT_THAT(first_error("", {"--cluster.tls-ca=" + dir_.file("missing.pem"),
                               "--cluster.tls-cert=" + ca, "--cluster.tls-key=" + ca}),
              HasSubstr("cluster.tls-ca = \"" + dir_.file("missing.pem") +
                        "\" (command line): cannot read this file"));
  EXPECT_THAT(first_error("", {"--cluster.token=" + std::string(1025, 'x')}),
              HasSubstr("cluster.token = 1025 bytes (command line): must be at most 1024 bytes"));
}

TEST_F(config_files, error_feedback_needs_a_16_bit_wire) {
  EXPECT_FALSE(load("", {}).comm.error_feedback);
  EXPECT_TRUE(load("", {"--comm.compression=bf16", "--comm.error-feedback=true"})
                  .comm.error_feedback);
  EXPECT_THAT(first_error("", {"--comm.error-feedback=true"}),
              HasSubstr("comm.error-feedback = true (command line): feeds back what "
                        "comm.compression's rounding "
                        "loses; set comm.compression = fp16 or bf16 (it is none)"));
}

TEST_F(config_files, seal_threads_are_automatic_or_between_1_and_64) {
  EXPECT_EQ(0, load("", {}).comm.seal_threads);
  EXPECT_EQ(64, load("", {"--comm.seal-threads=64"}).comm.seal_threads);
  EXPECT_THAT(first_error("", {"--comm.seal-threads=65"}),
              HasSubstr("comm.seal-threads = 65 (command line): must be between 0 (automatic) "
                        "and 64 threads"));
  EXPECT_THAT(first_error("", {"--comm.seal-threads=-1"}), HasSubstr("comm.seal-threads = -1"));
}

TEST_F(config_files, connections_are_between_1_and_16) {
  EXPECT_EQ(1, load("", {}).comm.connections);
  EXPECT_EQ(16, load("", {"--comm.connections=16"}).comm.connections);
  EXPECT_THAT(first_error("", {"--comm.connections=0"}),
              HasSubstr("comm.connections = 0 (command line): must be between 1 and 16 "
                        "connections between each pair of nodes"));
  EXPECT_THAT(first_error("", {"--comm.connections=17"}), HasSubstr("comm.connections = 17"));
}

TEST_F(config_files, gradient_buckets_are_off_or_between_4_kib_and_1024_mib) {
  EXPECT_EQ(0.0, load("", {}).comm.bucket_mb);
  EXPECT_EQ(25.0, load("", {"--comm.bucket-mb=25"}).comm.bucket_mb);
  EXPECT_EQ(0.004, load("", {"--comm.bucket-mb=0.004"}).comm.bucket_mb);
  EXPECT_THAT(first_error("", {"--comm.bucket-mb=0.001"}),
              HasSubstr("comm.bucket-mb = 0.001 (command line): must be 0 (no buckets) or "
                        "between 0.004 (4 KiB) and 1024 MiB"));
  EXPECT_THAT(first_error("", {"--comm.bucket-mb=-1"}), HasSubstr("comm.bucket-mb = -1"));
  EXPECT_THAT(first_error("", {"--comm.bucket-mb=2048"}), HasSubstr("comm.bucket-mb = 2048"));
}

// The data plane is sealed whenever TLS is on (auto), on demand with TLS, never without it.
TEST_F(config_files, data_encryption_follows_tls_and_is_never_on_without_it) {
  const auto ca = write("ca.pem", "not checked here, only readable");
  const std::vector<std::string> tls{"--cluster.tls-ca=" + ca, "--cluster.tls-cert=" + ca,
                                     "--cluster.tls-key=" + ca};
  auto with_tls = [&](std::vector<std::string> more) {
    more.insert(more.end(), tls.begin(), tls.end());
    return more;
  };
  EXPECT_EQ(load("", {}).cluster.data_encryption, "auto");
  EXPECT_FALSE(load("", {}).cluster.seals_data());
  EXPECT_FALSE(load("", {"--cluster.data-encryption=off"}).cluster.seals_data());
  EXPECT_TRUE(load("", tls).cluster.seals_data());
  EXPECT_TRUE(load("", with_tls({"--cluster.data-encryption=on"})).cluster.seals_data());
  EXPECT_FALSE(load("", with_tls({"--cluster.data-encryption=off"})).cluster.seals_data());
  EXPECT_THAT(first_error("", {"--cluster.data-encryption=on"}),
              HasSubstr("cluster.data-encryption = \"on\" (command line): needs control-plane "
                        "TLS (cluster.tls-ca, cluster.tls-cert, cluster.tls-key)"));
  EXPECT_THAT(first_error("", with_tls({"--cluster.data-encryption=yes"})),
              HasSubstr("cluster.data-encryption = \"yes\" (command line): allowed: auto, on, "
                        "off"));
}

} // namespace

namespace {

TEST_F(config_files, settings_handed_over_as_ini_text_load_like_a_file_and_name_their_origin) {
  auto sent = load("", {"--train.algorithm=preduce", "--train.workers=6", "--cluster.token=x"});
  const auto received =
      herd::config::from_ini(herd::config::to_ini(sent), "the coordinator's settings");
  EXPECT_EQ(received.train.algorithm, "preduce");
  EXPECT_EQ(received.train.workers, 6);
  EXPECT_EQ(received.cluster.token, "x");
  try {
    herd::config::from_ini("[train]\nlr = \"fast\"\n", "the coordinator's settings");
    FAIL() << "from_ini accepted a string for train.lr";
  } catch (const invalid_config& invalid) {
    EXPECT_THAT(invalid.errors().front().message,
                HasSubstr("train.lr = \"fast\" (in the coordinator's settings, line 2)"));
  }
}

} // namespace

TEST_F(config_files, simulate_section_is_read_and_checked) {
  const auto config = load("", {"--simulate.workers=[2,4096]", "--simulate.network=\"25gbe\"",
                                "--simulate.step-ms=320", "--simulate.aggregators=4"});
  EXPECT_EQ(config.simulate.workers, (std::vector<int>{2, 4096}));
  EXPECT_EQ(config.simulate.network, "25gbe");
  EXPECT_DOUBLE_EQ(config.simulate.step_ms, 320.0);
  EXPECT_EQ(config.simulate.aggregators, 4);
  EXPECT_THAT(first_error("", {"--simulate.network=\"infiniband\""}),
              HasSubstr("simulate.network = \"infiniband\" (command line): unknown network; "
                        "allowed: one-machine, 25gbe, nvlink"));
  EXPECT_THAT(first_error("", {"--simulate.workers=[2,0]"}),
              HasSubstr("simulate.workers = [2, 0] (command line): every job size must be "
                        "between 1 and 65536 workers"));
  EXPECT_THAT(first_error("", {"--simulate.step-ms=0"}), HasSubstr("simulate.step-ms = 0"));
  EXPECT_THAT(first_error("", {"--simulate.steps=0"}), HasSubstr("simulate.steps = 0"));
}

// -- configuration in code
// -------------------------------------------------------------------------------

namespace {

// `message` without the " (in ORIGIN, line N)" that a text's value carries.
std::string without_origin(std::string message, const std::string& origin) {
  const auto start = message.find(" (in " + origin + ", line ");
  if (start != std::string::npos)
    message.erase(start, message.find(')', start) + 1 - start);
  return message;
}

} // namespace

// A service builds its run_config in code; validate() must say what the INI form would have
// been told, key for key and word for word, only without the line the text gives.
TEST(config_in_code, is_validated_with_the_messages_of_its_ini_form) {
  herd::config::run_config built;
  built.train.algorithm = "warp";
  built.train.workers = 0;
  built.train.lr = -0.5;
  built.model.preset = "resnet";
  const auto in_code = herd::config::validate(built);

  std::vector<herd::config::config_error> in_text;
  try {
    herd::config::from_ini("[train]\nalgorithm = \"warp\"\nworkers = 0\nlr = -0.5\n"
                           "[model]\npreset = \"resnet\"\n",
                           "job.ini");
    ADD_FAILURE() << "from_ini accepted four bad values";
  } catch (const invalid_config& invalid) {
    in_text = invalid.errors();
  }
  ASSERT_EQ(in_code.size(), 4u);
  ASSERT_EQ(in_text.size(), in_code.size());
  for (std::size_t i = 0; i < in_code.size(); ++i) {
    EXPECT_EQ(in_code[i].key, in_text[i].key);
    EXPECT_THAT(in_text[i].message, HasSubstr("(in job.ini, line "));
    EXPECT_EQ(in_code[i].message, without_origin(in_text[i].message, "job.ini"));
  }
  EXPECT_EQ(in_code[0].message, "train.algorithm = \"warp\": unknown algorithm; allowed: sync, "
                                "solo, majority, quorum, preduce, wagma, async, local-sgd");
  EXPECT_EQ(in_code[1].message, "train.workers = 0: must be between 1 and 1024");
  EXPECT_EQ(in_code[2].message, "train.lr = -0.5: the learning rate must be positive");
  EXPECT_THAT(in_code[3].message, HasSubstr("model.preset = \"resnet\": unknown preset"));
}

// A configuration made in code can hold what no INI text can: a seed above 2^63 - 1 or an
// infinite rate ran, and the settings its checkpoints saved did not load again. validate() refuses
// them as the loader does, so every configuration it accepts survives to_ini() and from_ini().
TEST(config_in_code, values_no_ini_text_can_hold_are_refused_naming_the_key) {
  herd::config::run_config built;
  built.train.seed = std::numeric_limits<std::uint64_t>::max();
  built.data.max_bytes = (std::uint64_t{1} << 63) + 5;
  built.train.lr = std::numeric_limits<double>::infinity();
  built.train.max_seconds = std::numeric_limits<double>::infinity();
  built.train.weight_decay = std::numeric_limits<double>::quiet_NaN();
  std::map<std::string, std::string> refused;
  for (const auto& error : herd::config::validate(built))
    refused[error.key] = error.message;
  EXPECT_EQ(refused["train.seed"], "train.seed = 18446744073709551615: expected an integer "
                                   "between 0 and 9223372036854775807");
  EXPECT_THAT(refused["data.max-bytes"], HasSubstr("expected an integer between 0 and"));
  EXPECT_EQ(refused["train.lr"], "train.lr = inf: expected a finite number");
  EXPECT_EQ(refused["train.max-seconds"], "train.max-seconds = inf: expected a finite number");
  EXPECT_THAT(refused["train.weight-decay"], HasSubstr("expected a finite number"));
  // Reals come back to the bit, in a file as on the command line: CAF's parser read 1e-300 as
  // 9.999999999999999e-301 and 0.0123456789 one ulp off.
  for (const double real : {1e-300, 0.0123456789, 5e-324, 1.7976931348623157e308}) {
    herd::config::run_config tiny;
    tiny.train.max_seconds = real;
    ASSERT_TRUE(herd::config::validate(tiny).empty()) << real;
    EXPECT_EQ(herd::config::from_ini(herd::config::to_ini(tiny), "written").train.max_seconds,
              real);
  }
  EXPECT_EQ(herd::config::from_ini("[train]\nlr = 0.0123456789 ; a comment\n", "f").train.lr,
            0.0123456789);
  // The largest values an INI text holds are accepted and come back.
  built = {};
  built.train.seed = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  built.train.max_seconds = 1e300;
  ASSERT_TRUE(herd::config::validate(built).empty());
  const auto back = herd::config::from_ini(herd::config::to_ini(built), "written");
  EXPECT_EQ(back.train.seed, built.train.seed);
  EXPECT_EQ(back.train.max_seconds, built.train.max_seconds);
}

// to_ini and from_ini are each other's inverse on every configuration Herd ships: the text
// to_ini writes (every key, key_names()) reads back to the same value of every key.
TEST(config_in_code, shipped_configs_survive_to_ini_and_from_ini) {
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(HERD_CONFIG_DIR)) {
    if (entry.path().extension() != ".ini")
      continue;
    const std::string file = entry.path().string();
    SCOPED_TRACE(file);
    std::ostringstream text;
    text << std::ifstream(file).rdbuf();
    const auto read = herd::config::from_ini(text.str(), file);
    const auto written = herd::config::to_ini(read);
    const auto again = herd::config::from_ini(written, "to_ini(" + file + ")");
    EXPECT_EQ(herd::config::to_ini(again), written);
    // A few fields directly, so that a key to_ini left out could not pass unseen.
    EXPECT_EQ(again.train.algorithm, read.train.algorithm);
    EXPECT_EQ(again.train.workers, read.train.workers);
    EXPECT_EQ(again.train.lr, read.train.lr);
    EXPECT_EQ(again.data.dataset, read.data.dataset);
    EXPECT_EQ(again.model.layers, read.model.layers);
    EXPECT_EQ(again.imbalance.kind, read.imbalance.kind);
    for (const auto& key : herd::config::key_names())
      EXPECT_NE(written.find(key.substr(key.find('.') + 1) + " = "), std::string::npos) << key;
    ++files;
  }
  EXPECT_GE(files, 7u); // config/*.ini and config/simulate/*.ini
}
