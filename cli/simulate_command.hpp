// `herd simulate`: the configured job on a virtual clock (herd::sim), for each algorithm and job
// size, printed as a table and written as results.json and a plot of throughput against P.
#pragma once

#include <string>
#include <vector>

namespace herd::cli {

std::string simulate_help();

/// Exit status: 0 done, 2 bad input (or a setting that does not fit one of the jobs).
int simulate_command(const std::vector<std::string>& args);

} // namespace herd::cli
