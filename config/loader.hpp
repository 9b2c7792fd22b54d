// Reads a run_config from an INI file and `--section.key=value` overrides through CAF's config
// parser, converts every value to its typed field and validates the result. Every problem becomes
// a config_error that names the key, the value, where it came from and what is allowed.
#pragma once

#include "config/run_config.hpp"

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace herd::config {

struct config_error {
  std::string key;     // "train.workers", or "" for a problem with the file as a whole
  std::string message; // the whole sentence, e.g. "train.workers = 0 (command line): must be ..."
};

/// Thrown by load(): all problems found, not only the first.
class invalid_config : public std::runtime_error {
public:
  explicit invalid_config(std::vector<config_error> errors);
  const std::vector<config_error>& errors() const { return errors_; }

private:
  std::vector<config_error> errors_;
};

/// Defaults, then the file (when `file` is not empty), then the overrides in order. Each override
/// is "--section.key=value" (or "section.key=value"). Throws invalid_config.
run_config load(const std::string& file, const std::vector<std::string>& overrides);

/// The same from INI text (the settings a coordinator hands its nodes); `origin` names where the
/// text came from in messages. Throws invalid_config.
run_config load_text(const std::string& ini, const std::string& origin);

/// Where each key's value came from ("command line", "in run.ini"), for messages.
using value_origins = std::map<std::string, std::string>;

/// Semantic checks of a filled-in configuration (ranges, known names). Empty when it is valid.
std::vector<config_error> validate(const run_config& config, const value_origins& origins = {});

/// Checks that need the training set's size: every worker's shard must hold at least one batch.
std::vector<config_error> validate_against_data(const run_config& config,
                                                std::size_t training_samples);

/// One line per key: name, type, default and meaning; for `--help`.
std::string describe_keys();

/// The configuration as an INI file that load() reads back to the same values.
std::string to_ini(const run_config& config);

} // namespace herd::config
