// Shows a run's progress: on a terminal one live status line, redrawn in place and never wider
// than the terminal; otherwise (logs, CI) a plain line per evaluation and at most one progress
// line every few seconds, stamped in time order, and notices stamped with the run's time once it
// has one (a coordinator's notices before its run started have none).
#pragma once

#include "actors/run_observer.hpp"
#include "herd/run_summary.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

namespace herd::config {
struct run_config;
} // namespace herd::config

namespace herd::cli {

struct progress_options {
  bool interactive = false; // redraw one line with carriage returns (a terminal) or print log lines
  double epochs = 1.0;      // the run's train.epochs
  double max_seconds = 0.0; // train.max-seconds; 0: none
  /// The terminal's width in columns now (asked at every redraw, so a resize is followed).
  std::function<int()> columns;
  double log_interval_seconds = 10.0;
  /// The learning rate at so many epochs (train.lr-schedule), shown beside each evaluation; null
  /// when it is constant.
  std::function<double(double)> learning_rate;
  /// The evaluations measure a validation set (data.validation-fraction): "val acc" on the live
  /// line and "validation accuracy" in the log, not "test".
  bool validation = false;
  /// Now, for the stamps of notices between progress events (a test gives its own).
  std::function<std::chrono::steady_clock::time_point()> clock = std::chrono::steady_clock::now;
};

/// `line` as standard output should show it: on a terminal, broken between words to fit its
/// width, the further lines indented by two; elsewhere (a log, a pipe) as it is.
std::string for_standard_output(const std::string& line);
/// The same for whatever `descriptor` writes to (STDERR_FILENO for notes).
std::string for_terminal(const std::string& line, int descriptor);

/// The width of the terminal standard output writes to, else $COLUMNS, else 80.
int standard_output_columns();
/// The width a table on standard output keeps to: the terminal's; off a terminal $COLUMNS where
/// it is set, else no limit (a log or a pipe keeps a table's rows whole, as it keeps lines).
std::size_t standard_output_table_width();

/// "[   12.3s] ": what starts a log line `seconds` into the run (or the process).
std::string log_stamp(double seconds);

/// Options for `config`'s run printing to standard output: interactive when it is a terminal,
/// whose width comes from the terminal, else $COLUMNS, else 80.
progress_options progress_options_for(const config::run_config& config);

class progress_printer final : public actors::run_observer {
public:
  progress_printer(std::ostream& out, progress_options options);

  void on_progress(const actors::progress& now) override;
  void on_evaluation(const actors::evaluation_point& point) override;
  void on_notice(std::string_view text) override;

  /// Ends the live line so that what follows starts on a fresh line.
  void finish();

  /// A stop was asked for (a stop signal): the live line says "stopping" where its ETA was,
  /// which no longer holds.
  void stopping();

  /// The live line for `now` in at most `columns - 1` characters (the last column stays free, so
  /// the cursor never wraps): the least important parts go first, then the line is cut.
  std::string status(const actors::progress& now, int columns) const;

  /// Seconds left by the stopping rule in force (epochs, or train.max-seconds when sooner); none
  /// before there is a rate to go by. A target accuracy may end the run sooner.
  std::optional<double> eta_seconds(const actors::progress& now) const;

private:
  void clear_line();
  // A log line's stamp: never earlier than one already printed (an evaluation finishes after
  // later progress was shown; its own time is in its text).
  double stamp(double seconds);

  std::ostream& out_;
  progress_options options_;
  double last_log_seconds_ = -1e9;
  double last_stamp_ = 0.0;
  // The run's time at the latest progress event, and when it came: a notice's stamp goes on
  // from there. None before the first.
  std::optional<std::pair<double, std::chrono::steady_clock::time_point>> run_time_;
  bool line_open_ = false;
  bool stopping_ = false;
  // The output's reader went away (herd train | head): said once, on standard error.
  bool closed_noted_ = false;
  void note_if_closed();
  // The last evaluation printed: a run stopped right after one evaluates the same parameters
  // again as its final evaluation, which would print the same line twice.
  std::optional<actors::evaluation_point> last_evaluation_;
  std::mutex mutex_;
};

} // namespace herd::cli
