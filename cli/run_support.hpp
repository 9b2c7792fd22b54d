// What `herd train` and `herd coordinator` share around a run: the report path checked before
// the run, the metrics endpoint opened before it, and the wait for its end (a stop signal, the
// summary, the JSON report, the exit status).
#pragma once

#include "actors/checkpoint_state.hpp"
#include "cli/progress_printer.hpp"
#include "herd/checkpoint_error.hpp"
#include "herd/dataset.hpp"
#include "herd/metrics.hpp"
#include "herd/model.hpp"
#include "herd/run_config.hpp"
#include "herd/run_summary.hpp"
#include "monitoring/metrics_endpoint.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace herd::cli {

struct run_arguments {
  std::string config_file;
  std::string report_file;
  std::vector<std::string> overrides;         // --section.key=value, as the user gave them
  std::vector<std::string> command_overrides; // settings the command adds, applied after those
  std::map<std::string, std::string> options; // the command's own options, by name
  bool help = false;
  bool print_config = false; // --print-config: show the effective settings, then exit
};

/// Reads --config FILE (-c), --report FILE, --help (-h), --print-config, settings, and each of
/// `own_options` (options that take a value, such as "--listen"). Throws std::invalid_argument
/// naming the argument.
run_arguments parse_run_arguments(const std::vector<std::string>& args, const std::string& command,
                                  const std::vector<std::string>& own_options = {});

/// A run's inputs, read and checked before anything starts.
struct prepared_run {
  config::run_config config;
  std::shared_ptr<const models::train_test_split> data;
  std::shared_ptr<const models::model> model; // what [model] builds over the data
  double load_seconds = 0.0;
  std::shared_ptr<monitoring::registry> metrics; // null when metrics.port is 0
  std::unique_ptr<monitoring::metrics_endpoint> endpoint;
  /// herd_run_finished{job}: 0 while the run goes on, 1 once it has ended without failing (the
  /// process is about to exit as asked); null when metrics.port is 0.
  monitoring::gauge* run_finished = nullptr;
  /// "checkpoint.dir = ...: the run saves there too" when `herd train --resume` without
  /// checkpoint.dir set saves where it resumes from; said once the checkpoint is accepted (not
  /// before a refusal).
  std::string resume_note;
};

/// prepare_run()'s answer: the run's inputs or, without them, the exit status to end with (the
/// reason is printed already).
struct run_preparation {
  std::optional<prepared_run> run;
  int exit_status = 0; // without a run: 2 bad input, 130 a stop signal (stop_signals.hpp) came
};

/// What a command checks of its settings beyond the keys' own rules (the coordinator: its listen
/// address against the cluster token); throws std::invalid_argument naming what is wrong. It may
/// complete the settings it is given (a token read from its file).
using settings_check = std::function<void(config::run_config&)>;

/// Loads the settings (refusing a setting on the command line that `command` does not use, and
/// naming once those of the file it ignores; command_keys.hpp), checks the report path and runs
/// `check` (--print-config too: it refuses what a run would), then, unless --print-config, checks
/// checkpoint.dir against --resume, loads the dataset, builds the model (a layer that does not fit
/// the data's shape is bad input) and opens the metrics endpoint. So every mistake in the settings
/// themselves is found before the dataset loads. On bad input prints "herd <command>: ..." and
/// gives exit status 2; when a stop signal arrives meanwhile, says so and gives 130 (checked
/// between those steps).
run_preparation prepare_run(const std::string& command, const run_arguments& parsed,
                            const settings_check& check = {});

/// Throws std::invalid_argument naming the path when a report could not be written there (no
/// such directory, none that takes new files, an existing target that is not a regular file), or
/// when it would replace what the run reads: the file `config_file` (the --config file; empty:
/// none), one of `config`'s data files (null: none named), a checkpoint, or any data file (a
/// NumPy array, an IDX dataset, gzip-compressed data).
void check_report_path(const std::string& path, const std::string& config_file,
                       const config::run_config* config = nullptr);

/// Serves `registry` on metrics.bind:metrics.port; null when metrics.port is 0. Throws
/// std::invalid_argument naming the key and the address when the port cannot be opened.
std::unique_ptr<monitoring::metrics_endpoint>
open_metrics_endpoint(const config::run_config& config,
                      const std::shared_ptr<monitoring::registry>& registry);

/// With checkpoint.dir set: makes the directory, and says why checkpoints cannot be written there
/// ("checkpoint.dir = DIR: cannot write checkpoints there (...)"), or why not by this run: it
/// holds checkpoints of another run, which this one would prune (a run that resumes from a
/// checkpoint in it may; `resume_path`: the --resume argument, empty for a new run). Empty when
/// they can.
std::string checkpoint_dir_problem(const config::run_config& config,
                                   const std::string& resume_path);

/// Prints "herd <command>: resuming from FILE (round R, epoch E)", one line for each setting
/// that changed since the checkpoint's run (its settings, as config::to_ini wrote them), and a
/// line when `config` leaves it nothing to train (train.epochs reached, or train.max-seconds).
void announce_resume(const std::string& command, const std::string& file,
                     const actors::run_checkpoint& state, const config::run_config& config);

/// A checkpoint that reads, and its round.
struct intact_checkpoint {
  std::string file;
  std::uint64_t rounds = 0;
};

/// Where `path` is a directory and `unusable`'s file, its newest checkpoint, is damaged: the newest
/// checkpoint before it that reads. Nothing for a file, or for a checkpoint refused for another
/// reason (one that reads: an older one would be refused alike).
std::optional<intact_checkpoint> intact_before(const std::string& path,
                                               const checkpoint::checkpoint_error& unusable);

/// Says why --resume `resume_path` is refused (`unusable`); where it named a directory whose
/// newest checkpoint is damaged, also the newest intact one before it, to resume from instead.
void say_resume_refused(const std::string& command, const std::string& resume_path,
                        const checkpoint::checkpoint_error& unusable);

struct run_handle {
  std::function<std::optional<actors::run_summary>(std::chrono::milliseconds)> wait_for;
  std::function<void()> request_stop;
  /// Whether the run has started; empty: it starts at once. A stop before it started says
  /// nothing of rounds in flight (there are none) and leaves the explanation to the run.
  std::function<bool()> started;
};

/// Waits for the run; the first stop signal (SIGINT, SIGTERM or SIGHUP, also one that came
/// before this call) asks it to stop, a second one ends the process. Then prints the summary,
/// writes the report (when `report_file` is set) and returns the exit status: 0 done, 1 failed,
/// 130 interrupted, whichever the signal. A run that never started (a cluster that never formed)
/// prints only why, with no report.
int await_run(const std::string& command, const run_handle& run, progress_printer& printer,
              const config::run_config& config, const std::string& report_file);

/// After await_run() gave `status`: with a metrics endpoint, sets herd_run_finished to 1 unless
/// the run failed (status 0 or 130), says so, and serves the final metrics for
/// metrics.linger-seconds, so that Prometheus scrapes the run's end before the process goes (a
/// stop signal ends the wait). Returns `status`.
int serve_final_metrics(const std::string& command, const prepared_run& run, int status);

} // namespace herd::cli
