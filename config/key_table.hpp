// The one table of configuration keys: each key's name, type and meaning, how a parsed value
// becomes its field of run_config, and how the field is written back. loader.cpp parses with it;
// key_table.cpp also makes --help's lines and the INI text from it. Internal to herd::config.
#pragma once

#include "herd/run_config.hpp"

#include <caf/config_value.hpp>

#include <functional>
#include <string>
#include <vector>

namespace herd::config {

/// What a key's value is: its checks branch on this, --help says it in words (to_string).
enum class value_kind { boolean, integer, real, string, integer_list };

/// "boolean", "integer", "real", "string", "integer list".
const char* to_string(value_kind kind);

struct key_spec {
  std::string name; // "train.lr"
  value_kind kind = value_kind::string;
  /// An integer held in 64 unsigned bits, whose conversion names the range it takes.
  bool unsigned_64 = false;
  std::string help;
  /// Converts a parsed value into the key's field; an empty string on success, else what was
  /// expected.
  std::function<std::string(const caf::config_value&, run_config&)> assign;
  /// The field as INI text that assign() reads back to the same value.
  std::function<std::string(const run_config&)> show;
};

/// Every key, sections together, in the order --help and to_ini() show them.
const std::vector<key_spec>& keys();

/// The key named `name`, or null.
const key_spec* find_key(const std::string& name);

/// A parsed value as messages show it (reals as written, not CAF's 1.500000).
std::string render(const caf::config_value& value);

} // namespace herd::config
