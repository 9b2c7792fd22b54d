// The configuration loader: files and overrides fill the typed config, and every bad input is an
// error that names the key, the value and the source.
#include "config/loader.hpp"

#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/temp_directory.hpp"

namespace {

using herd::config::invalid_config;
using herd::config::load;
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
  EXPECT_THAT(message, HasSubstr("No such file"));
}

TEST_F(config_files, malformed_override_is_an_error) {
  EXPECT_THAT(first_error("", {"--train.workers"}), HasSubstr("expected --section.key=value"));
}

TEST_F(config_files, bad_values_name_key_value_and_what_is_allowed) {
  EXPECT_THAT(first_error("", {"--train.workers=0"}),
              HasSubstr("train.workers = 0 (command line): must be between 1 and 1024"));
  EXPECT_THAT(first_error("", {"--train.lr=-0.5"}),
              HasSubstr("train.lr = -0.5 (command line): the learning rate must be positive"));
  EXPECT_THAT(first_error("", {"--train.algorithm=bogus"}),
              HasSubstr("train.algorithm = \"bogus\" (command line): unknown algorithm; "
                        "allowed: sync"));
  EXPECT_THAT(first_error("", {"--train.momentum=1"}), HasSubstr("train.momentum = 1"));
  EXPECT_THAT(first_error("", {"--model.hidden=[0]"}), HasSubstr("model.hidden = 0"));
  EXPECT_THAT(first_error("", {"--data.dataset=cifar"}), HasSubstr("allowed: fashion-mnist"));
}

TEST_F(config_files, a_bad_value_names_the_file_it_came_from) {
  const auto file = write("run.ini", "[train]\nworkers = 0\n");
  EXPECT_THAT(first_error(file, {}), HasSubstr("train.workers = 0 (in " + file + ")"));
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

TEST_F(config_files, batch_larger_than_a_shard_is_rejected) {
  auto config = load("", {"--train.batch-size=20000"});
  const auto errors = herd::config::validate_against_data(config, 60000);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors.front().key, "train.batch-size");
  EXPECT_THAT(errors.front().message, HasSubstr("shard of 15000 samples"));
  config.train.batch_size = 15000;
  EXPECT_TRUE(herd::config::validate_against_data(config, 60000).empty());
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
  EXPECT_THAT(first_error("", {"--model.hidden="}), HasSubstr("[] for no hidden layer"));
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
  for (const char* key :
       {"train.algorithm", "train.workers", "train.batch-size", "train.lr", "train.momentum",
        "train.weight-decay", "train.epochs", "train.target-accuracy", "train.max-seconds",
        "train.seed", "data.path", "model.hidden", "metrics.port"})
    EXPECT_THAT(help, HasSubstr(std::string("--") + key)) << key;
}

} // namespace
