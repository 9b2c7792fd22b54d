// The loader's front end: reads a configuration file safely and checks every INI text and
// command-line value before CAF's parser sees it. Measured on CAF 0.17.6, that parser recurses
// once per `[` or `{` without a bound (25,000 of them crash it), silently stops at a NUL byte,
// reads a CR as a syntax error, keeps one of two values of a key without a word and takes time
// quadratic in a section's settings; so such a text is refused here, naming its line.
#pragma once

#include "herd/config.hpp"

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <sys/types.h>
#include <variant>
#include <vector>

namespace herd::config {

/// `text` without the spaces and tabs at its two ends (INI's blanks; a line's end is not one).
std::string trim_blanks(const std::string& text);

/// The text of the configuration file at `path`, or why it cannot be read. Anything but a regular
/// file (a FIFO, a directory, a device) is refused without being read, and no more than
/// max_config_bytes are read.
std::variant<std::string, config_error> read_config_file(const std::string& path);

/// One INI text after the front end's checks.
struct checked_text {
  /// The text without a UTF-8 byte order mark and with CRLF read as LF: what the parser is given.
  std::string text;
  /// What refuses the text as a whole (size, a NUL byte, a lone CR, nesting, too many settings),
  /// each naming its line; when not empty, the parser must not see the text.
  std::vector<config_error> problems;
  /// Every key set twice, naming both lines: refused once the text has parsed.
  std::vector<config_error> duplicates;
  /// "in run.ini": how messages about one key name the text.
  std::string where;
  /// The line of every key set once, and the keys set twice.
  std::map<std::string, int> key_lines;
  std::set<std::string> keys_set_twice;
  /// A key's value as written, where it is one bare word ("1e-300", "42", "true"; not a quoted
  /// string, list or map): CAF's parser reads some reals one ulp off, the loader reads them again.
  std::map<std::string, std::string> bare_values;

  /// Where the parsed value of `key` comes from, "in run.ini, line 7"; nothing for a key set twice
  /// (already among the duplicates). A key inside a map value is on the line of the key holding
  /// the map.
  std::optional<std::string> origin_of(const std::string& key) const;
};

/// Checks an INI text. `origin` names it in messages (a file's name, "the settings");
/// `known_keys`, the number of keys there are, is for the message that refuses too many settings.
checked_text check_text(const std::string& text, const std::string& origin, std::size_t known_keys);

/// Checks one command-line value the same way (CAF's value parser recurses like its file parser;
/// a CR is fine, a path may hold one). Empty when the parser may see the value, else what is
/// wrong with it.
std::string check_value(const std::string& value, std::size_t known_keys);

/// Insertions, deletions and substitutions from `a` to `b` (Levenshtein): how near a mistyped key
/// or command is to a real one, for "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);

} // namespace herd::config
