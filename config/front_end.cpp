// The loader's front end: a file read safely, and every text checked before CAF's parser sees
// it; see front_end.hpp.
#include "config/front_end.hpp"

#include "kernels/regular_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <sstream>

namespace herd::config {

namespace {

// A problem the front end found, and the line it is on.
struct text_problem {
  int line = 0;
  std::string what;
};

// Where a key is set in a file.
struct key_line {
  std::string name; // "train.workers"
  int line = 0;
  std::string bare_value; // its value as written when that is one bare word, else ""
};

struct scanned_text {
  std::vector<text_problem> problems;
  std::vector<key_line> keys; // every `key = value` of a section, in order
};

bool is_key_start(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool is_key_char(char c) {
  return is_key_start(c) || c == '-';
}

// A UTF-8 byte order mark is dropped and CRLF line ends become LF, as editors on Windows write
// them; CAF's parser reads neither.
std::string normalise_line_ends(const std::string& text) {
  const char bom[] = "\xEF\xBB\xBF";
  const std::size_t start = text.compare(0, 3, bom) == 0 ? 3 : 0;
  std::string out;
  out.reserve(text.size() - start);
  for (std::size_t i = start; i < text.size(); ++i)
    if (text[i] != '\r' || i + 1 >= text.size() || text[i + 1] != '\n')
      out += text[i];
  return out;
}

// Problems with single bytes: a NUL (CAF's parser stops there as if the file ended) and, in a
// file, a CR that does not end a line (CRLF is normalised before; a command-line value such as a
// path may hold one).
void scan_bytes(const std::string& text, bool value_only, scanned_text& scan) {
  int line = 1;
  for (char c : text) {
    if (c == '\n') {
      ++line;
    } else if (c == '\0') {
      scan.problems.push_back({line, "a NUL byte; a configuration file is text (is this a binary "
                                     "file?)"});
      return;
    } else if (c == '\r' && !value_only) {
      scan.problems.push_back({line, "a carriage return (CR) that does not end a line; save the "
                                     "file with LF or CRLF line ends"});
      return;
    }
  }
}

// Whether `token` (a whole value, or a list's element) is an integer CAF reads in another base
// where a user means decimal: a leading zero and digits ("010", octal), 0x... or 0b....
bool non_decimal(std::string token) {
  if (!token.empty() && (token[0] == '-' || token[0] == '+'))
    token.erase(0, 1);
  if (token.size() < 2 || token[0] != '0')
    return false;
  const auto all_of = [&token](std::size_t from, const char* allowed) {
    return token.size() > from && token.find_first_not_of(allowed, from) == std::string::npos;
  };
  return all_of(1, "0123456789") ||
         ((token[1] == 'x' || token[1] == 'X') && all_of(2, "0123456789abcdefABCDEF")) ||
         ((token[1] == 'b' || token[1] == 'B') && all_of(2, "01"));
}

// The token of a file's value that starts at text[i]: up to the next delimiter.
std::string token_at(const std::string& text, std::size_t i) {
  const auto end = text.find_first_of(" \t\n,]};", i);
  return text.substr(i, end == std::string::npos ? std::string::npos : end - i);
}

std::string non_decimal_problem(const std::string& token) {
  return token + ": a leading 0 would read this number as octal (0x, 0b: as hex, binary); write "
                 "it in decimal without one";
}

// Follows CAF's INI grammar far enough to bound the nesting its parser will recurse into and to
// see which keys each section sets: quoted strings ("..." with backslash escapes), atoms ('...'),
// URIs (<...>) and `;` comments are skipped; `[` at the start of a line outside a value is a
// section header. The count errs on the high side where the text is not valid CAF anyway, and
// CAF's parser stops at the first error, so it never recurses deeper than counted here.
// `value_only`: the text is one value (a command-line override), not a file.
//
// Each step returns false once it has found a problem: the scan stops at the first.
class text_scanner {
public:
  text_scanner(const std::string& text, bool value_only, std::size_t known_keys)
      : text_(text), value_only_(value_only), known_keys_(known_keys), in_value_(value_only),
        line_start_(!value_only) {}

  scanned_text scan() && {
    scan_bytes(text_, value_only_, scan_);
    if (!scan_.problems.empty())
      return std::move(scan_);
    for (std::size_t i = 0; i < text_.size(); ++i) {
      const char c = text_[i];
      const bool go_on = c == '\n' ? end_line() : skipped(c, i) || outside_quotes(c, i);
      if (!go_on)
        return std::move(scan_);
    }
    end_text();
    return std::move(scan_);
  }

private:
  enum class mode { normal, string, atom, uri, comment };

  bool fail(const std::string& what) {
    scan_.problems.push_back({line_, what});
    return false;
  }

  std::string unclosed_quote() const {
    return std::string("a quoted value (opened by ") + (current_ == mode::string ? "\"" : "'") +
           ")";
  }

  bool end_line() {
    // CAF's own errors for these name the next line, as an "unexpected newline".
    if (!value_only_ && (current_ == mode::string || current_ == mode::atom))
      return fail(unclosed_quote() + " does not close on this line");
    if (!value_only_ && in_value_ && depth_ == 0 && !value_seen_)
      return fail(last_key_ + " has no value after its '='");
    if (depth_ == 0)
      last_key_.clear();
    ++line_;
    if (current_ != mode::uri) // CAF reads a URI's '<' and the URI on separate lines
      current_ = mode::normal;
    if (depth_ == 0 && current_ == mode::normal) {
      in_value_ = value_only_;
      line_start_ = !value_only_;
    }
    return true;
  }

  // Inside a comment, a string, an atom or a URI: whether `c` (and an escaped character after it)
  // belonged there.
  bool skipped(char c, std::size_t& i) {
    switch (current_) {
    case mode::normal:
      return false;
    case mode::comment:
      break;
    case mode::string:
      if (c == '\\' && i + 1 < text_.size() && text_[i + 1] != '\n')
        ++i;
      else if (c == '"')
        current_ = mode::normal;
      break;
    case mode::atom:
      if (c == '\'')
        current_ = mode::normal;
      break;
    case mode::uri:
      if (c == '>')
        current_ = mode::normal;
      break;
    }
    return true;
  }

  bool outside_quotes(char c, std::size_t& i) {
    if (c == ' ' || c == '\t')
      return true;
    const bool at_line_start = line_start_;
    line_start_ = false;
    if (in_value_ && c != ';')
      value_seen_ = true;
    if (!decimal_number_at(i))
      return false;
    if (c == '#' && at_line_start && !value_only_)
      return fail("a line that starts with #: comments here start with ;");
    switch (c) {
    case ';':
      current_ = mode::comment;
      return true;
    case '"':
      current_ = mode::string;
      return true;
    case '\'':
      current_ = mode::atom;
      return true;
    case '<':
      current_ = mode::uri;
      return true;
    case '[':
      return depth_ == 0 && at_line_start ? section_header(i) : open(c);
    case '{':
      ++maps_open_;
      return open(c);
    case '}':
      maps_open_ = std::max(0, maps_open_ - 1);
      depth_ = std::max(0, depth_ - 1);
      return true;
    case ']':
      depth_ = std::max(0, depth_ - 1);
      return true;
    case '=':
      return equals_sign(at_line_start);
    default:
      return !at_line_start || in_value_ || depth_ != 0 || !is_key_start(c) || key(i);
    }
  }

  // A number of its own in a file's value (a command-line value is checked whole: check_value).
  // A sign belongs to it only where the sign starts a token ("-010", not the "-05" of 1e-05).
  bool decimal_number_at(std::size_t i) {
    const char c = text_[i];
    if (value_only_ || !(in_value_ || depth_ > 0) || c < '0' || c > '9')
      return true;
    const std::size_t start = i > 0 && (text_[i - 1] == '-' || text_[i - 1] == '+') ? i - 1 : i;
    if (start != 0 && std::string(" \t\n=,[{").find(text_[start - 1]) == std::string::npos)
      return true;
    const auto token = token_at(text_, i);
    if (!non_decimal(token))
      return true;
    // Named by its key, as the command line's "--train.seed=0042" is (within a map, the key
    // scanned last is the map's, not the number's: unnamed there).
    const std::string key = last_key_.empty() || maps_open_ > 0 ? std::string()
                            : section_.empty()                  ? last_key_ + " = "
                                               : section_ + "." + last_key_ + " = ";
    return fail(key + non_decimal_problem(token));
  }

  // A section header, "[train]" or "[a.b.c]": CAF recurses once per dot.
  bool section_header(std::size_t& i) {
    const auto end = text_.find_first_of("]\n", i + 1);
    const std::string header = text_.substr(i + 1, end == std::string::npos ? end : end - i - 1);
    const auto levels = 1 + static_cast<int>(std::count(header.begin(), header.end(), '.'));
    if (levels > max_config_nesting)
      return too_deep(levels);
    section_ = trim_blanks(header);
    if (section_ == "global") // CAF's name for the keys before the first header
      section_.clear();
    if (end == std::string::npos || text_[end] == '\n')
      return fail("the section header [" + header + " has no closing ]");
    i = end;
    return true;
  }

  // A list's '[' or a map's '{'.
  bool open(char c) {
    if (depth_ == 0)
      opened_on_ = line_;
    if (++depth_ > max_config_nesting)
      return too_deep(depth_);
    // `key { ... }` is a setting as much as `key = { ... }`.
    return c != '{' || count_setting();
  }

  bool equals_sign(bool at_line_start) {
    if (at_line_start && depth_ == 0 && !value_only_)
      return fail("an '=' with no key before it");
    if (depth_ == 0) {
      in_value_ = true;
      value_seen_ = false;
    }
    return count_setting();
  }

  // "key = value" or "key { ... }" at text_[i]: a setting of the current section.
  bool key(std::size_t& i) {
    std::size_t end = i + 1;
    while (end < text_.size() && is_key_char(text_[end]))
      ++end;
    std::size_t next = end;
    while (next < text_.size() && (text_[next] == ' ' || text_[next] == '\t'))
      ++next;
    last_key_ = text_.substr(i, end - i);
    if (next < text_.size() && (text_[next] == '=' || text_[next] == '{'))
      scan_.keys.push_back({section_.empty() ? last_key_ : section_ + "." + last_key_, line_,
                            text_[next] == '=' ? bare_word_after(next + 1) : std::string()});
    else if (next >= text_.size() || text_[next] == '\n')
      return fail(last_key_ + " has no value: write " + last_key_ + " = VALUE");
    i = next - 1;
    return true;
  }

  // The value after an '=' at text_[from] when it is one word up to the line's end or comment.
  std::string bare_word_after(std::size_t from) const {
    const auto line_end = std::min(text_.find_first_of("\n;", from), text_.size());
    const std::string value = trim_blanks(text_.substr(from, line_end - from));
    return value.find_first_of(" \t\"'<[{,") == std::string::npos ? value : std::string();
  }

  bool too_deep(int levels) {
    return fail("nested more than " + std::to_string(max_config_nesting) + " levels deep (" +
                std::to_string(levels) +
                " or more); no setting nests lists, maps or sections that deep");
  }

  // Every `=` and `{` outside strings and comments: at least as many as the parser's settings.
  bool count_setting() {
    if (++settings_ <= max_config_settings)
      return true;
    return fail("more than " + std::to_string(max_config_settings) +
                " settings (key = value); there are " + std::to_string(known_keys_) +
                " keys, and each may be set once");
  }

  // The text ends inside something (CAF's parser then drops what it was reading, and the section
  // around it, without a word).
  void end_text() {
    if (value_only_)
      return;
    if (current_ == mode::uri)
      fail("a <...> value that does not close: the file ends inside it (a > is missing)");
    else if (current_ == mode::string || current_ == mode::atom)
      fail(unclosed_quote() + " does not close: the file ends inside it");
    else if (depth_ > 0) {
      line_ = opened_on_;
      fail("a list or map that does not close: the file ends inside it (a ] or } is missing)");
    } else if (in_value_ && !value_seen_)
      fail(last_key_ + " has no value after its '='");
  }

  const std::string& text_;
  const bool value_only_;
  const std::size_t known_keys_;
  scanned_text scan_;
  mode current_ = mode::normal;
  int line_ = 1;
  int depth_ = 0;
  int maps_open_ = 0;      // of depth_, the '{'s
  int opened_on_ = 0;      // the line of the outermost open list or map
  int settings_ = 0;       // see count_setting()
  bool value_seen_ = true; // something after the last key's '='
  bool in_value_;          // after a key's '=', until the end of its line outside brackets
  bool line_start_;        // nothing but blanks yet on this line (files only)
  std::string last_key_;   // of the current line
  std::string section_;    // the last header's, "" before the first
};

scanned_text scan_text(const std::string& text, bool value_only, std::size_t known_keys) {
  return text_scanner(text, value_only, known_keys).scan();
}

std::string too_large(std::uint64_t bytes) {
  return std::to_string(bytes) + " bytes, more than the " + std::to_string(max_config_bytes) +
         " bytes (1 MiB) a configuration may have";
}

} // namespace

std::string trim_blanks(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos)
    return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Declared in config.hpp: validation's messages shorten values too.
std::string abbreviate(const std::string& text) {
  constexpr std::size_t longest_shown = 200;
  constexpr std::size_t shown_prefix = 80;
  if (text.size() <= longest_shown)
    return text;
  // A quoted value's length is the value's, not its quotes' too.
  const bool quoted = text.front() == '"' && text.back() == '"';
  return text.substr(0, shown_prefix) + "... (" +
         std::to_string(text.size() - (quoted ? 2 : 0)) + " bytes)";
}

// Without blocking on a FIFO or reading /dev/zero forever (kernels/regular_file.hpp), and at most
// the limit, whatever the file's size says.
std::variant<std::string, config_error> read_config_file(const std::string& path) {
  const auto fail = [&path](const std::string& problem) {
    return config_error{"", "cannot read config file " + path + ": " + problem};
  };
  if (path == "/dev/null") // a script's way of saying "no file": the defaults
    return std::string();
  try {
    kernels::regular_file file(path);
    if (file.size() > max_config_bytes)
      return fail("it is " + too_large(file.size()));
    return file.read_rest(max_config_bytes);
  } catch (const kernels::file_problem& problem) {
    switch (problem.reason()) {
    case kernels::file_problem::kind::not_regular:
      return fail(problem.what() + std::string("; name an INI file"));
    case kernels::file_problem::kind::too_large: // it grew while read
      return fail("it is more than the " + std::to_string(max_config_bytes) +
                  " bytes (1 MiB) a configuration may have");
    default:
      return fail(problem.what());
    }
  }
}

std::optional<std::string> checked_text::origin_of(const std::string& key) const {
  for (std::string prefix = key;;) {
    if (keys_set_twice.count(prefix) != 0)
      return std::nullopt;
    if (auto found = key_lines.find(prefix); found != key_lines.end())
      return where + ", line " + std::to_string(found->second);
    const auto dot = prefix.rfind('.');
    if (dot == std::string::npos)
      return where;
    prefix.erase(dot);
  }
}

checked_text check_text(const std::string& text, const std::string& origin,
                        std::size_t known_keys) {
  checked_text checked;
  checked.where = "in " + origin;
  if (text.size() > max_config_bytes) {
    checked.problems.push_back({"", origin + ": " + too_large(text.size())});
    return checked;
  }
  checked.text = normalise_line_ends(text);
  const scanned_text scan = scan_text(checked.text, false, known_keys);
  for (const auto& problem : scan.problems)
    checked.problems.push_back(
        {"", origin + ": line " + std::to_string(problem.line) + ": " + problem.what});
  if (!checked.problems.empty())
    return checked;
  // CAF's parser drops a value it is still reading at the end of the text ("x = tr", "x = 1e-")
  // and its section; with a line end after it, such a value is the syntax error it is.
  if (!checked.text.empty() && checked.text.back() != '\n')
    checked.text += '\n';
  // A key set twice is reported, naming both lines, and left out: which of its values the parser
  // kept is beside the point.
  for (const auto& [name, line, bare_value] : scan.keys) {
    if (!bare_value.empty())
      checked.bare_values[name] = bare_value;
    const auto [seen, fresh] = checked.key_lines.emplace(name, line);
    if (fresh)
      continue;
    checked.keys_set_twice.insert(name);
    checked.duplicates.push_back({name, abbreviate(name) + " is set twice (" + checked.where +
                                            ", lines " + std::to_string(seen->second) + " and " +
                                            std::to_string(line) + "): remove one of them"});
  }
  return checked;
}

std::string check_value(const std::string& value, std::size_t known_keys) {
  if (value.size() > max_config_bytes)
    return "the value is " + too_large(value.size());
  const scanned_text scan = scan_text(value, true, known_keys);
  if (!scan.problems.empty())
    return scan.problems.front().what;
  // A number, or a list of numbers ("010", "064,32", "[0x10]"), is checked for another base; any
  // other value ("007_data", "/runs/007", "run,01") is a string to CAF, whatever its digits.
  std::string list = value;
  if (list.size() >= 2 && list.front() == '[' && list.back() == ']')
    list = list.substr(1, list.size() - 2);
  std::vector<std::string> elements;
  std::istringstream in(list);
  for (std::string element; std::getline(in, element, ',');) {
    element = trim_blanks(element);
    const std::size_t digit = !element.empty() && (element[0] == '-' || element[0] == '+') ? 1 : 0;
    if (element.size() <= digit || std::isdigit(static_cast<unsigned char>(element[digit])) == 0 ||
        element.find_first_not_of("0123456789abcdefABCDEFxXoO.+-", digit) != std::string::npos)
      return {}; // not a number: the whole value is no list of numbers
    elements.push_back(element);
  }
  for (const auto& element : elements)
    if (non_decimal(element))
      return non_decimal_problem(element);
  return {};
}

} // namespace herd::config
