// `herd train`: one process, N worker actors. Parses its arguments, loads the configuration and
// the data, runs a train_session with a progress display, prints the summary and writes the
// JSON report. Exit codes: 0 done, 1 the run failed, 2 bad input, 130 interrupted (SIGINT, and
// likewise SIGTERM and SIGHUP: one status for every stop signal, before or during the run).
#pragma once

#include <string>
#include <vector>

namespace herd::cli {

inline constexpr int exit_ok = 0;
inline constexpr int exit_run_failed = 1;
inline constexpr int exit_bad_input = 2;
inline constexpr int exit_interrupted = 130;

/// `args` are the arguments after "train".
int train_command(const std::vector<std::string>& args);

/// The text of `herd train --help`.
std::string train_help();

} // namespace herd::cli
