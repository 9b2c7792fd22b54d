// Reads a run_config from an INI file and `--section.key=value` overrides through CAF's config
// parser, converts every value to its typed field and validates the result. Every problem becomes
// a config_error that names the key, the value, where it came from and what is allowed.
#pragma once

#include "herd/run_config.hpp"

#include <cstddef>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace herd::config {

struct config_error {
  std::string key;     // "train.workers", or "" for a problem with the file as a whole
  std::string message; // the whole sentence, e.g. "train.workers = 0 (command line): must be ..."
};

/// Bounds of what load() and from_ini() read, enforced before CAF's parser sees the text: a
/// configuration is a few kilobytes and sets each key once, and no setting nests lists or maps more
/// than a level or two. CAF 0.17's parser recurses once per level (25,000 overflow the stack) and
/// takes time quadratic in the settings of a section (20,000 take 9 s).
inline constexpr std::size_t max_config_bytes = std::size_t{1} << 20;
inline constexpr int max_config_nesting = 32;
inline constexpr int max_config_settings = 1024;

/// Thrown by load(): all problems found, not only the first, in the order the keys were written
/// (a file's by line, then the command line's, then keys left at a default); what() has each
/// one's message, one per line.
class invalid_config : public std::runtime_error {
public:
  explicit invalid_config(std::vector<config_error> errors);
  const std::vector<config_error>& errors() const { return errors_; }

private:
  std::vector<config_error> errors_;
};

/// Where each key's value came from ("command line", "in run.ini, line 7"), for messages.
using value_origins = std::map<std::string, std::string>;

/// Defaults, then the file (when `file` is not empty), then the overrides in order. Each override
/// is "--section.key=value" (or "section.key=value"). Throws invalid_config. When `origins` is
/// not null it receives where each key that was set came from.
///
/// Before CAF's parser sees a file: it must be a regular file (a FIFO, a directory
/// or a device is refused without being read) of at most max_config_bytes; a UTF-8 byte order mark
/// is dropped and CRLF line ends read as LF; a NUL byte, a carriage return that does not end a
/// line, nesting deeper than max_config_nesting and more than max_config_settings `key = value`
/// pairs are refused with their line. After parsing, a key set twice (within a section, or in two
/// sections of the same name) is refused naming both lines.
run_config load(const std::string& file, const std::vector<std::string>& overrides,
                value_origins* origins = nullptr);

/// The same from INI text (a service's request body, the settings a coordinator hands its nodes,
/// or a checkpoint's), then the overrides; `origin` names where the text came from in messages
/// ("in job.ini, line 3"). Throws invalid_config. to_ini() is its inverse: for every valid
/// configuration, from_ini(to_ini(config), ...) gives it back key for key.
run_config from_ini(const std::string& ini, const std::string& origin,
                    const std::vector<std::string>& overrides = {});

/// Semantic checks of a filled-in configuration (ranges, known names). Empty when it is valid.
/// A run_config built in code gets the messages its INI form would get from load() or from_ini(),
/// less the "(in FILE, line N)" that `origins` adds: "train.workers = 0: must be between 1 and
/// 1024". With `origins` not empty, a key it does not name is "(the default)".
[[nodiscard]] std::vector<config_error> validate(const run_config& config,
                                                 const value_origins& origins = {});

/// validate() for a run that trains: its checks against the worker count use train.workers even
/// where [simulate] sets the job sizes herd simulate sweeps (against whose largest validate()
/// checks imbalance.k and imbalance.workers). job::start runs this one.
[[nodiscard]] std::vector<config_error> validate_run(const run_config& config,
                                                     const value_origins& origins = {});

/// Checks that need the training set's size: every worker's shard must hold at least one batch.
/// `origins` (from load()) adds where each value came from to the messages.
[[nodiscard]] std::vector<config_error> validate_against_data(const run_config& config,
                                                              std::size_t training_samples,
                                                              const value_origins& origins = {});

/// `text` as messages show it: whole when it is short, else its first 80 bytes, "..." and its
/// length, so that a 10 MB value does not become a 10 MB message.
std::string abbreviate(const std::string& text);

/// Every key's name ("train.lr"), in the order --help and to_ini() show them.
std::vector<std::string> key_names();

/// A command's view of the keys: the ones it uses, and what a key means there where that differs
/// from its general meaning. Empty `uses`: every key.
struct key_scope {
  std::function<bool(const std::string& key)> uses;
  std::map<std::string, std::string> meanings;
  /// Non-empty: what describe_keys() says in place of each key's default, for a command whose
  /// values come from elsewhere ("the checkpoint's").
  std::string default_note;
};

/// One line per key the scope uses: name, meaning, type and default; for `--help`.
std::string describe_keys(const key_scope& scope = {});

/// The configuration as an INI file that load() reads back to the same values: every key, or
/// those `scope` uses.
std::string to_ini(const run_config& config, const key_scope& scope = {});

} // namespace herd::config
