// What the `herd` commands share: the last line of defence around a command, configuration
// errors in the commands' words, loading the configured dataset, and naming a model.
#pragma once

#include "herd/config.hpp"
#include "herd/data.hpp"
#include "herd/dataset.hpp"
#include "herd/model.hpp"
#include "herd/run_config.hpp"

#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herd::cli {

/// Walks a command's arguments. Options take their value as `--name value` or `--name=value`;
/// settings are `--section.key=value`.
class argument_reader {
public:
  explicit argument_reader(const std::vector<std::string>& args) : args_(args) {}

  bool done() const { return index_ >= args_.size(); }
  const std::string& current() const { return args_[index_]; }
  void next() { ++index_; }

  /// The current argument is option `name`, with or without `=value`.
  bool is(const std::string& name) const;
  /// The value of option `name` (from `=value` or the next argument, which is then consumed; a
  /// next argument that starts with "--" is an option, refused as a value).
  /// Throws std::invalid_argument "<name> needs a value<hint>" when there is none, and naming
  /// both values when `name` was given a value before (no option is given twice; the last one
  /// would silently win).
  std::string value(const std::string& name, const std::string& hint = "");
  /// The current argument is a setting, `--section.key=value`.
  bool is_setting() const;

private:
  const std::vector<std::string>& args_;
  std::size_t index_ = 0;
  std::map<std::string, std::string> given_; // option -> its value
};

/// What a command writes to standard output.
enum class standard_output {
  result,   // its result (a table, CSV, settings): a write that failed fails the command
  progress, // progress and a summary of a run that goes on without them (a closed pipe)
};

/// Runs `command`; an exception that escapes it becomes "herd <name>: error: ..." on stderr and
/// exit status 1, so that nothing ends in std::terminate. Where standard output carries the
/// result, a write to it that failed (a full disk) is said and makes the exit status 1.
int run_guarded(const std::string& name, const std::function<int()>& command,
                standard_output output = standard_output::result);

/// "; did you mean --config?" where `arg` is a near miss of one of `options` (a typo, or the
/// name another command gives the option: --out for --output); "" otherwise.
std::string near_option(const std::string& arg, const std::vector<std::string>& options);

/// The options a help text lists: every "--name" that begins one of its lines.
std::vector<std::string> options_of_help(const std::string& help);

/// `status`, or 1 where what went to standard output did not all reach it (said on stderr).
int with_output_written(const std::string& name, int status);

/// The settings `command` runs with: refuses a setting the command does not use
/// (std::invalid_argument naming the commands that do), loads `file` and the settings, then
/// `command_overrides` (what the command sets itself), and names on stderr, once, the keys of the
/// file that the command ignores. Throws config::invalid_config. `origins`, when given, receives
/// where each value came from (config::load's).
config::run_config load_for_command(const std::string& command, const std::string& file,
                                    const std::vector<std::string>& settings,
                                    const std::vector<std::string>& command_overrides = {},
                                    config::value_origins* origins = nullptr);

/// Prints every problem as "herd <name>: <message>" on stderr.
void print_config_errors(const std::string& name, const config::invalid_config& invalid);

/// The width help texts keep to.
constexpr std::size_t help_columns = 80;

/// A help text with every paragraph and entry re-wrapped to `columns`. The text's layout says
/// what belongs together: lines that start at column 0 are paragraphs (joined up to a blank
/// line); an indented line starts an entry ("  --name ARG  what it does"), whose description
/// begins after the first two spaces in a row and whose more deeply indented lines continue it;
/// a "usage:" line is continued under its first argument. A word longer than a line overflows it.
std::string fit_help(const std::string& text, std::size_t columns = help_columns);

/// Throws std::invalid_argument naming `option` when `items` names one item twice
/// ("--algorithms: sync is named twice"): a repeated entry would only run the same again.
void refuse_repeats(const std::string& option, const std::vector<std::string>& items);

/// Creates `dir` (--out) and checks that each of `files` can be written in it (check_writable,
/// report.hpp), so that a command whose runs take hours finds out first. Throws
/// std::invalid_argument naming --out, the directory or the file, and why.
void prepare_output_directory(const std::string& dir, const std::vector<std::string>& files);

/// The start of a command that runs a configured job and writes into a directory (bench,
/// simulate): `parse` reads the arguments (std::invalid_argument for bad ones) into `args`; then
/// `help()` is shown if asked for, or the job is loaded (where each setting came from into
/// args.origins), `check_inputs` reads what else the command needs (std::invalid_argument for
/// bad input; before the directory is made, so that bad input leaves none behind), and
/// args.out_dir is made, with args.outputs checked in it. Returns the exit status when the
/// command ends here (help: 0; bad input, said on stderr: 2).
template <class Arguments>
std::optional<int> start_job_command(
    const std::string& name, Arguments& args, config::run_config& job,
    const std::function<Arguments()>& parse, const std::function<std::string()>& help,
    const std::function<void(const Arguments&, const config::run_config&)>& check_inputs =
        nullptr) {
  try {
    args = parse();
    if (args.help) {
      std::cout << fit_help(help());
      return 0;
    }
    job = load_for_command(name, args.config_file, args.overrides, {}, &args.origins);
    if (check_inputs)
      check_inputs(args, job);
    prepare_output_directory(args.out_dir, args.outputs);
  } catch (const config::invalid_config& invalid) {
    print_config_errors(name, invalid);
    return 2;
  } catch (const std::exception& bad) {
    std::cerr << "herd " << name << ": " << bad.what() << '\n';
    return 2;
  }
  return std::nullopt;
}

/// The data.* key whose value is the path `file` (data.train-features and the other files of
/// data.dataset = npy), or "" where none is.
std::string data_key_of(const config::run_config& config, const std::string& file);

/// The configured dataset, or null after printing "herd <name>: <what is wrong>" (a missing or
/// corrupt file) on stderr; a file a data.* key names is said with the key, where its value came
/// from (`origins`, where given) and, for a relative path, the directory it was read from.
std::shared_ptr<const models::train_test_split>
load_data_or_report(const std::string& name, const config::run_config& config,
                    const config::value_origins* origins = nullptr);

/// Prints a dataset's notes as "herd <command>: <note>" on stderr, broken between words to fit a
/// terminal.
models::data_notes data_notes_of(const std::string& command);

/// The configured dataset (models::load_dataset), its notes printed by data_notes_of(command);
/// throws models::data_error naming the file and the problem.
std::shared_ptr<const models::train_test_split> load_data(const config::run_config& config,
                                                          const std::string& command);

/// "a,b,,c" -> {"a", "b", "c"}, "a, b" -> {"a", "b"}: an option's comma-separated list.
std::vector<std::string> split_list(const std::string& text);

/// {"a", "b"} -> "a, b".
std::string join(const std::vector<std::string>& items);

/// The model [model] asks for over the training set's samples, both sets' token sequences checked
/// when it takes tokens (actors::check_token_input), or null after printing every
/// problem (an unknown preset, a layer that does not fit) as "herd <name>: ..." on stderr.
std::shared_ptr<const models::model> make_model_or_report(const std::string& name,
                                                          const config::run_config& config,
                                                          const models::train_test_split& data);

/// "mlp 1x28x28: flatten, dense 256, relu, dense 128, relu, dense 10 (235146 parameters)".
std::string describe_model(const models::model& model);

} // namespace herd::cli
