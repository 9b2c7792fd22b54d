// `herd bench`: the comparison bench. Runs one job under each algorithm for each imbalance
// scenario, in this process, one run after another, and prints one table: seconds to the target
// accuracy, final test accuracy, samples/s, and the speedup over `sync` in the same scenario. It
// writes the table as CSV and JSON and plots test accuracy against wall time (gnuplot, PNG).
#pragma once

#include "cli/train_command.hpp"

#include <string>
#include <vector>

namespace herd::cli {

/// `args` are the arguments after "bench".
int bench_command(const std::vector<std::string>& args);

/// The text of `herd bench --help`.
std::string bench_help();

} // namespace herd::cli
