// A welcomed node's run: the settings, dataset, model and checkpoint part it loads, and every
// refusal, met without an actor system or a coordinator.
#include "cluster/node_inputs.hpp"

#include "actors/messages.hpp"
#include "herd/config.hpp"
#include "herd/data.hpp"
#include "support/session_config.hpp"
#include "support/temp_directory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <stdexcept>

namespace {

using herd::cluster::load_node_inputs;
using herd::cluster::node_options;
using herd::config::run_config;
using testing::HasSubstr;

struct node_case {
  run_config config = herd::testing::small_session_config(2, 16);
  std::shared_ptr<const herd::models::train_test_split> data = herd::models::load_dataset(config);
  herd::actors::node_welcome welcome;
  node_options options;
  std::optional<run_config> given; // what load_data was asked to load

  node_case() {
    options.workers = 1;
    options.load_data = [this](const run_config& asked) {
      given = asked;
      return data;
    };
    welcome.workers = {1};
    welcome.training_samples = data->train.size();
  }

  // The welcome carries `config` as the coordinator writes it.
  herd::cluster::node_inputs load(const std::string& parts_dir = "") {
    welcome.settings = herd::config::to_ini(config);
    return load_node_inputs(welcome, options, parts_dir);
  }

  std::string refusal(const std::string& parts_dir = "") {
    try {
      load(parts_dir);
    } catch (const std::runtime_error& refused) {
      return refused.what();
    }
    return "(loaded)";
  }
};

TEST(node_inputs, the_coordinators_settings_model_and_data_arrive) {
  node_case node;
  node.config.train.lr = 0.0125;
  node.config.model.hidden = {24};
  // The node's load_data stands in for the files: only the settings it is given count.
  node.config.data.dataset = "npy";
  node.config.data.train_features = "train_x.npy";
  node.config.data.train_labels = "train_y.npy";
  node.config.data.test_features = "test_x.npy";
  node.config.data.test_labels = "test_y.npy";
  node.config.data.validation_features = "/only/on/the/coordinator/x.npy";
  node.config.data.validation_labels = "/only/on/the/coordinator/y.npy";
  const auto inputs = node.load();
  EXPECT_EQ(inputs.config.train.lr, 0.0125);
  EXPECT_EQ(inputs.data, node.data);
  ASSERT_TRUE(inputs.model);
  EXPECT_EQ(inputs.model->parameter_count(),
            herd::actors::make_model(node.config, node.data->train)->parameter_count());
  EXPECT_TRUE(inputs.resumed.empty());
  EXPECT_EQ(inputs.resumed_from, "");
  // A node reads no validation files: only the coordinator evaluates.
  ASSERT_TRUE(node.given.has_value());
  EXPECT_EQ(node.given->data.validation_features, "");
  EXPECT_EQ(node.given->data.validation_labels, "");
  EXPECT_EQ(node.given->train.lr, 0.0125);
  EXPECT_EQ(node.given->data.train_features, "train_x.npy");
}

TEST(node_inputs, settings_that_do_not_load_here_are_refused_as_the_coordinators) {
  node_case node;
  node.welcome.settings = "[train]\nworkers = \"many\"\n";
  try {
    load_node_inputs(node.welcome, node.options, "");
    FAIL() << "settings with a text for a count were taken";
  } catch (const std::runtime_error& refused) {
    EXPECT_THAT(refused.what(), HasSubstr("the coordinator's settings do not load here: "));
    EXPECT_THAT(refused.what(), HasSubstr("train.workers"));
  }
  EXPECT_FALSE(node.given.has_value()) << "the dataset was loaded for settings that failed";
}

TEST(node_inputs, a_dataset_that_fails_to_load_or_differs_is_refused) {
  node_case node;
  node.welcome.training_samples = node.data->train.size() + 1;
  EXPECT_EQ(node.refusal(), "this node's training set (" + node.config.data.path + ") has " +
                                std::to_string(node.data->train.size()) +
                                " samples, the coordinator's " +
                                std::to_string(node.data->train.size() + 1) +
                                "; every node needs the same dataset");
  node.options.load_data = [](const run_config&)
      -> std::shared_ptr<const herd::models::train_test_split> {
    throw std::runtime_error("train_x.npy: no such file");
  };
  EXPECT_EQ(node.refusal(),
            "cannot load the run's dataset on this node: train_x.npy: no such file");
}

TEST(node_inputs, a_model_that_does_not_fit_the_data_here_is_refused) {
  node_case node;
  node.config.model.preset = "textcnn"; // reads token ids; the synthetic set holds numbers
  node.config.model.hidden = run_config{}.model.hidden;
  const auto refused = node.refusal();
  EXPECT_THAT(refused, HasSubstr("the coordinator's model does not fit here: "));
  EXPECT_THAT(refused, HasSubstr("model.preset"));
}

TEST(node_inputs, parts_go_to_the_nodes_directory_else_to_the_runs) {
  herd::testing::temp_directory runs, earlier, own;
  node_case node;
  EXPECT_EQ(node.load().parts_dir, "") << "a run without checkpoints has no parts directory";
  EXPECT_EQ(node.load(earlier.path()).parts_dir, earlier.path().string())
      << "one without checkpoints keeps what an earlier run named";
  node.config.checkpoint.dir = runs.path().string();
  EXPECT_EQ(node.load().parts_dir, runs.path().string());
  EXPECT_EQ(node.load(earlier.path()).parts_dir, runs.path().string())
      << "a run's own checkpoint.dir, not an earlier run's";
  node.options.checkpoint_dir = own.path().string();
  EXPECT_EQ(node.load(own.path()).parts_dir, own.path().string())
      << "herd node --checkpoint-dir wins";
}

TEST(node_inputs, a_checkpoint_directory_it_cannot_write_is_refused_before_the_run) {
  herd::testing::temp_directory scratch;
  const auto file = scratch.path().string() + "/a-file";
  std::ofstream(file) << "not a directory";
  node_case node;
  node.config.checkpoint.dir = file + "/parts";
  EXPECT_THAT(node.refusal(), HasSubstr("cannot write checkpoint parts to " + file + "/parts ("));
  EXPECT_THAT(node.refusal(), HasSubstr("): set herd node --checkpoint-dir to a directory it can "
                                        "write"));
}

TEST(node_inputs, a_part_of_other_workers_or_one_that_does_not_read_is_refused) {
  herd::testing::temp_directory parts;
  node_case node;
  node.config.checkpoint.dir = parts.path().string();
  node.welcome.resume.file = "run-00001.node0.part";
  node.welcome.resume.workers = {0, 1};
  EXPECT_EQ(node.refusal(), "cannot resume from the checkpoint part: the part holds 0, 1, the "
                            "welcome gives this node 1");
  node.welcome.resume.workers = {1};
  EXPECT_THAT(node.refusal(), HasSubstr("cannot resume from the checkpoint part: "));
  EXPECT_THAT(node.refusal(), HasSubstr("run-00001.node0.part"));
}

} // namespace
