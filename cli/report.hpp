// How `herd train` presents a run: the human summary on stdout and the JSON report (--report).
#pragma once

#include "actors/run_summary.hpp"
#include "config/run_config.hpp"

#include <ostream>
#include <string>

namespace herd::cli {

/// The run summary as a few aligned lines and a per-worker table.
void print_summary(std::ostream& out, const actors::run_summary& summary);

/// The JSON report (docs/report.md lists the fields).
std::string report_json(const actors::run_summary& summary, const config::run_config& config);

/// Writes `text` to `path` through a temporary file and a rename, so a reader never sees half a
/// report. Throws std::runtime_error naming the path when it cannot.
void write_file_atomically(const std::string& path, const std::string& text);

} // namespace herd::cli
