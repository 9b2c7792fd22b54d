// Which settings each command uses (cli/command_keys.hpp), called directly: every key has a
// command, refusals name the commands that use a key, a file's ignored keys are named in one line,
// and each command's --help lists exactly its keys.
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/predict_command.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using herd::cli::check_settings;
using herd::cli::commands_using;
using herd::cli::ignored_file_keys;
using herd::cli::keys_of;
using testing::HasSubstr;

const std::vector<std::string> commands{"train",       "bench", "simulate",
                                        "coordinator", "node",  "evaluate"};

TEST(command_keys, every_key_is_used_by_some_command) {
  for (const auto& key : herd::config::key_names())
    EXPECT_FALSE(commands_using(key).empty()) << key << " is used by no command";
}

TEST(command_keys, each_command_uses_the_keys_that_shape_what_it_does) {
  const auto& train = keys_of("train");
  for (const char* key : {"train.algorithm", "train.workers", "data.path", "model.hidden",
                          "metrics.port", "preduce.group-size", "imbalance.kind", "checkpoint.dir"})
    EXPECT_TRUE(train.uses(key)) << key;
  for (const char* key : {"cluster.min-nodes", "cluster.token", "simulate.steps"})
    EXPECT_FALSE(train.uses(key)) << key;
  // The coordinator's workers are the nodes'; it commits the cluster's checkpoints.
  const auto& coordinator = keys_of("coordinator");
  EXPECT_FALSE(coordinator.uses("train.workers"));
  EXPECT_TRUE(coordinator.uses("checkpoint.dir"));
  EXPECT_TRUE(coordinator.uses("checkpoint.every-rounds"));
  EXPECT_FALSE(coordinator.uses("cluster.rejoin-s")); // a node's
  EXPECT_TRUE(coordinator.uses("cluster.min-nodes"));
  EXPECT_TRUE(coordinator.uses("train.lr"));
  // bench chooses algorithms and imbalance per run; the scenarios keep the file's seed.
  const auto& bench = keys_of("bench");
  EXPECT_FALSE(bench.uses("train.algorithm"));
  EXPECT_FALSE(bench.uses("imbalance.kind"));
  EXPECT_TRUE(bench.uses("imbalance.seed"));
  EXPECT_TRUE(bench.uses("wagma.group-size"));
  // simulate has no data, model or learning rate.
  const auto& simulate = keys_of("simulate");
  EXPECT_TRUE(simulate.uses("train.workers"));
  EXPECT_TRUE(simulate.uses("simulate.network"));
  EXPECT_FALSE(simulate.uses("train.lr"));
  EXPECT_FALSE(simulate.uses("data.path"));
  // A node takes only how to reach and trust the cluster.
  const auto& node = keys_of("node");
  EXPECT_TRUE(node.uses("cluster.token-file"));
  EXPECT_TRUE(node.uses("cluster.rejoin-s"));
  EXPECT_FALSE(node.uses("cluster.min-nodes"));
  EXPECT_FALSE(node.uses("train.lr"));
  EXPECT_THROW(keys_of("frobnicate"), std::invalid_argument);
}

TEST(command_keys, a_setting_the_command_does_not_use_is_refused_naming_those_that_do) {
  EXPECT_NO_THROW(check_settings("train", {"--train.lr=0.1", "model.hidden=[8]"}));
  // An unknown key is load()'s to name, with its suggestion.
  EXPECT_NO_THROW(check_settings("train", {"--train.lrr=0.1"}));
  try {
    check_settings("train", {"--train.lr=0.1", "--cluster.min-nodes=3"});
    FAIL() << "cluster.min-nodes was accepted";
  } catch (const std::invalid_argument& refused) {
    EXPECT_STREQ(refused.what(), "--cluster.min-nodes: herd train does not use this setting "
                                 "(herd coordinator does)");
  }
  try {
    check_settings("coordinator", {"--train.workers=8"});
    FAIL() << "train.workers was accepted";
  } catch (const std::invalid_argument& refused) {
    EXPECT_THAT(refused.what(), HasSubstr("(herd bench, herd simulate and herd train do); the "
                                          "workers are the sum of the nodes' --workers"));
  }
  EXPECT_THROW(check_settings("bench", {"--imbalance.kind=random"}), std::invalid_argument);
  EXPECT_THROW(check_settings("node", {"--train.lr=0.1"}), std::invalid_argument);
}

TEST(command_keys, a_files_ignored_keys_are_named_in_one_line_in_help_order) {
  const herd::config::value_origins origins{{"simulate.steps", "in job.ini, line 9"},
                                            {"cluster.min-nodes", "in job.ini, line 7"},
                                            {"train.lr", "in job.ini, line 2"},
                                            {"cluster.token", "command line"}};
  EXPECT_EQ(ignored_file_keys("train", "job.ini", origins),
            "job.ini sets what herd train does not use, ignored here: simulate.steps "
            "(herd simulate), cluster.min-nodes (herd coordinator)");
  // Keys of the same commands are named together, the commands once.
  EXPECT_EQ(ignored_file_keys("simulate", "job.ini",
                              {{"train.lr", "in job.ini"},
                               {"train.momentum", "in job.ini"},
                               {"cluster.min-nodes", "in job.ini"}}),
            "job.ini sets what herd simulate does not use, ignored here: train.lr, "
            "train.momentum (herd bench, herd coordinator and herd train), cluster.min-nodes "
            "(herd coordinator)");
  EXPECT_EQ(ignored_file_keys("coordinator", "job.ini",
                              {{"train.lr", "in job.ini"}, {"cluster.min-nodes", "in job.ini"}}),
            "");
}

TEST(command_keys, help_lists_exactly_the_keys_the_command_uses) {
  for (const auto& command : commands) {
    const auto& keys = keys_of(command);
    const auto help = herd::config::describe_keys(keys);
    for (const auto& key : herd::config::key_names())
      EXPECT_EQ(help.find("  --" + key + " ") != std::string::npos, keys.uses(key))
          << command << ": " << key;
  }
  // A meaning particular to a command replaces the general one; "herd simulate:" drops its name
  // in simulate's own help.
  EXPECT_THAT(herd::config::describe_keys(keys_of("bench")),
              HasSubstr("runs do not stop at the target"));
  const auto simulate = herd::config::describe_keys(keys_of("simulate"));
  EXPECT_THAT(simulate, HasSubstr(" a local step's time"));
  EXPECT_THAT(simulate, testing::Not(HasSubstr("herd simulate:")));
  EXPECT_THAT(herd::config::describe_keys(), HasSubstr("herd simulate: a local step's time"));
}

// A mistyped option, or the name another command gives it (--out and --output), is answered
// with the option meant; what is near nothing gets no guess.
TEST(options, a_near_miss_of_an_option_is_answered_with_the_option_meant) {
  using herd::cli::near_option;
  const auto predict = herd::cli::options_of_help(herd::cli::predict_help());
  EXPECT_THAT(predict, testing::IsSupersetOf({"--checkpoint", "--last", "--input", "--output",
                                              "--help", "--version"}));
  EXPECT_EQ(near_option("--out", predict), "; did you mean --output?");
  EXPECT_EQ(near_option("--imput=x.npy", predict), "; did you mean --input?");
  EXPECT_EQ(near_option("--output", {"--out", "--report"}), "; did you mean --out?");
  EXPECT_EQ(near_option("--confg", {"--config", "--report", "--print-config"}),
            "; did you mean --config?");
  EXPECT_EQ(near_option("--verbose", predict), "");
  EXPECT_EQ(near_option("--input", predict), "") << "not a miss";
  EXPECT_EQ(near_option("input", predict), "") << "not an option";
}

} // namespace
