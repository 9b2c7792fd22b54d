// Which settings each command uses. One configuration file may serve several commands (the same
// job trained, benchmarked, simulated and run across processes), so a key the command does not
// use is named once as ignored when it comes from a file, and refused when it is given on the
// command line, where it can only be a mistake. --help lists only the command's keys.
#pragma once

#include "herd/config.hpp"

#include <string>
#include <vector>

namespace herd::cli {

/// The keys `command` uses ("train", "bench", "simulate", "coordinator", "node", "evaluate") and
/// what some of
/// them mean there. Throws std::invalid_argument for another command.
const config::key_scope& keys_of(const std::string& command);

/// The commands that use `key`, as "herd coordinator and herd node"; empty: none.
std::string commands_using(const std::string& key);

/// Throws std::invalid_argument for the first setting ("--section.key=value") that `command`
/// does not use, naming the commands that do. Unknown keys pass: load() names them.
void check_settings(const std::string& command, const std::vector<std::string>& settings);

/// One line naming the keys that `file` set (per `origins`, from config::load) and `command`
/// does not use, each with the commands that do; empty when there are none.
std::string ignored_file_keys(const std::string& command, const std::string& file,
                              const config::value_origins& origins);

} // namespace herd::cli
