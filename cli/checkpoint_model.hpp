// What `herd evaluate` and `herd predict` share: the model a checkpoint holds, rebuilt from the
// settings it was taken with, and the parameters to use: those that reached the run's target
// accuracy where the run stopped there, else (or with --last) the workers' last parameters.
#pragma once

#include "actors/checkpoint_state.hpp"
#include "cli/command_support.hpp"
#include "herd/dataset.hpp"
#include "herd/model.hpp"
#include "herd/run_config.hpp"

#include <functional>
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

/// The start of `herd <command>` (evaluate, predict): reads --checkpoint, --last, --help and the
/// settings from `args`, offering every other argument to `own_option` (true: it took the current
/// one); then `check_own` (std::invalid_argument for what is wrong with the command's own
/// options), the settings against the command's keys, and the model. Returns the model, or
/// nullopt with `status` set: 0 after the help was shown, 2 after bad input was said on stderr.
std::optional<checkpoint_model>
start_checkpoint_command(const std::string& command, const std::vector<std::string>& args,
                         const std::function<std::string()>& help,
                         const std::function<bool(argument_reader&)>& own_option,
                         const std::function<void()>& check_own, int& status);

} // namespace herd::cli
