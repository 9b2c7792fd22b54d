// What `herd evaluate` and `herd predict` share: the model a checkpoint holds, rebuilt from the
// settings it was taken with, and the parameters to use: those that reached the run's target
// accuracy where the run stopped there, else (or with --last) the workers' last parameters.
#pragma once

#include "actors/checkpoint_state.hpp"
#include "config/run_config.hpp"
#include "models/dataset.hpp"
#include "models/model.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herd::cli {

struct checkpoint_model {
  std::string file; // the checkpoint file (a directory's newest)
  actors::run_checkpoint state;
  config::run_config config; // the checkpoint's settings, with the command line's on top
  std::shared_ptr<const models::train_test_split> data;
  std::shared_ptr<const models::model> model;
  std::vector<float> parameters;
  /// Which parameters, in words: "the parameters that reached the target (test accuracy 0.8538
  /// at round 900)" or "the workers' last parameters (round 912)".
  std::string parameters_origin;
};

/// The options both commands take.
struct checkpoint_choice {
  std::string path;                  // --checkpoint: a file or a directory
  bool last = false;                 // --last: the workers' last parameters, even after a target
  std::vector<std::string> settings; // --data.key=value
};

/// Reads `choice.path`, its settings (with choice.settings on top), the dataset and the model, and
/// checks them as a resume would. Problems are said on stderr as "herd <command>: ..."; nullopt
/// then (exit status 2).
std::optional<checkpoint_model> load_checkpoint_model(const std::string& command,
                                                      const checkpoint_choice& choice);

/// The help lines of --checkpoint and --last.
std::string checkpoint_options_help();

} // namespace herd::cli
