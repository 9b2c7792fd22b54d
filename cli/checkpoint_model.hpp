// What `herd evaluate` and `herd predict` share: the model a checkpoint holds, rebuilt from the
// settings it was taken with, and the parameters to use: those that reached the run's target
// accuracy where the run stopped there, else (or with --last) the workers' last parameters.
#pragma once

#include "actors/checkpoint_state.hpp"
#include "cli/command_support.hpp"
#include "herd/dataset.hpp"
#include "herd/model.hpp"
#include "herd/run_config.hpp"
#include "herd/sequential.hpp"

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
  /// The run's test set, where the command asked for it (herd evaluate); else null.
  std::shared_ptr<const models::dataset> test;
  /// What was done to the training data's values: new samples (herd predict) get the same.
  models::normalisation input_normalisation;
  std::shared_ptr<const models::model> model;
  std::vector<float> parameters;
  /// Which parameters, in words: "the parameters that reached the target (test accuracy 0.8538
  /// at round 900)" or "the workers' last parameters (round 912)".
  std::string parameters_origin;
  /// The classes' names by label (models::class_names), where the dataset has them and they
  /// are as many as the model's classes; else empty.
  std::vector<std::string> class_names;
};

/// The options both commands take.
struct checkpoint_choice {
  std::string path;                  // --checkpoint: a file or a directory
  bool last = false;                 // --last: the workers' last parameters, even after a target
  std::vector<std::string> settings; // --data.key=value
  bool test_set = false;             // load the run's test set (herd evaluate)
};

/// Reads `choice.path`, its settings (with choice.settings on top) and the model, and checks them
/// against each other (the model's description and its tensors' sizes). The model is rebuilt
/// from what the checkpoint says of its inputs, so no training data are read; a checkpoint of
/// format version 5 does not say, and the run's dataset is loaded for it. With choice.test_set the
/// test set is loaded too (of a .npy dataset only its test files). Problems are said on stderr as
/// "herd <command>: ..."; nullopt then (exit status 2).
std::optional<checkpoint_model> load_checkpoint_model(const std::string& command,
                                                      const checkpoint_choice& choice);

/// Why samples of shape `given` are not samples of `wanted`, a model's input shape, value for
/// value ("4x4x3 but the checkpoint's model takes 3x4x4: as many values in another layout ...");
/// empty when they are: the same shape, also without its extents of 1 (28x28x1 is 1x28x28), or
/// either one flat (flat samples are read in the model's order).
std::string layout_problem(const models::shape& given, const models::shape& wanted);

/// Rows of token ids made as wide as the sequences `model` takes: a shorter row is padded with -1,
/// a longer one cut to its first tokens (`cut` counts the rows that lost a token).
models::tensor model_token_rows(const models::tensor& given, const models::sequential& model,
                                std::size_t& cut);

/// Why `values` are not what a model whose training values were bytes divided by 255 (Fashion-
/// MNIST, a .npy file of uint8) takes: "values up to 243, but the model takes ..." when they go far
/// above 1 (unscaled bytes, which it would answer wrongly without a word), or "values down to
/// -0.42 ..." below 0 (normalised already); empty otherwise.
std::string unscaled_problem(const models::tensor& values, const models::normalisation& norm);

/// Given `bytes` (uint8 values, which herd divides by 255) for a model whose training values were
/// not bytes: a note that these may be scaled unlike them; empty otherwise. Only a note: training
/// values of floats already in [0, 1] take bytes / 255 rightly.
std::string bytes_note(bool bytes, const std::string& source, const models::normalisation& norm);

/// "3 sample(s) of FILE longer than the model's 12 tokens: cut to their first 12, ...".
std::string cut_note(std::size_t cut, const std::string& source, std::size_t width);

/// The help lines of --checkpoint and --last.
std::string checkpoint_options_help();

/// The start of `herd <command>` (evaluate, predict): reads --checkpoint, --last, --help and the
/// settings from `args`, offering every other argument to `own_option` (true: it took the current
/// one); then `check_own` (std::invalid_argument for what is wrong with the command's own
/// options), the settings against the command's keys, and the model (with the test set when
/// `test_set`). Returns the model, or nullopt with `status` set: 0 after the help was shown, 2
/// after bad input was said on stderr.
std::optional<checkpoint_model>
start_checkpoint_command(const std::string& command, const std::vector<std::string>& args,
                         const std::function<std::string()>& help,
                         const std::function<bool(argument_reader&)>& own_option,
                         const std::function<void()>& check_own, bool test_set, int& status);

} // namespace herd::cli
