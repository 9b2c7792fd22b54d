// `herd coordinator` and `herd node`: one run across processes and hosts (docs/deploy.md).
// The coordinator hosts the group coordinator, evaluation, metrics and the data plane's
// rendezvous; each node hosts workers and joins it. Exit codes as herd train's.
#pragma once

#include <string>
#include <vector>

namespace herd::cli {

/// `args` are the arguments after "coordinator".
int coordinator_command(const std::vector<std::string>& args);
std::string coordinator_help();

/// `args` are the arguments after "node".
int node_command(const std::vector<std::string>& args);
std::string node_help();

} // namespace herd::cli
