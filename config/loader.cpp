// CAF's parsing, conversion of its values through the key table (key_table.hpp) and assembly of a
// run_config; see config.hpp. Every text is checked by the front end (front_end.hpp) before CAF
// parses it.
//
// CAF's own option handling is not used for typing: measured on 0.17.6, a value of the wrong type
// in an INI file (workers="abc", or lr=1 for a real-valued option) is dropped without any error,
// and unknown keys are accepted silently. So the file is parsed with CAF's parser into raw
// settings and every key is converted and checked here, with messages a user can act on.
#include "config/front_end.hpp"
#include "config/key_table.hpp"
#include "herd/config.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/config_value.hpp>
#include <caf/pec.hpp>
#include <caf/settings.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <variant>

namespace herd::config {

namespace {

std::string unknown_key_message(const std::string& name, const std::string& origin) {
  std::string message = "unknown key " + abbreviate(name) + " (" + origin + ")";
  const key_spec* closest = nullptr;
  std::size_t best = 4; // suggest only near misses
  for (const auto& spec : keys()) {
    // The distance is at least the difference in length; skipping far longer names keeps a
    // megabyte-long name from costing minutes.
    if (name.size() >= spec.name.size() + best)
      continue;
    const std::size_t distance = edit_distance(name, spec.name);
    if (distance < best) {
      best = distance;
      closest = &spec;
    }
  }
  if (closest != nullptr)
    message += "; did you mean " + closest->name + "?";
  else
    message += "; docs/configuration.md lists every key";
  return message;
}

// Where a key was set, for listing problems in the order the user wrote them: the file's keys by
// line, then the command line's in order, then keys never set (a default a validation refused).
using position = std::pair<int, int>;
constexpr int in_the_file = 0;
constexpr int on_the_command_line = 1;
constexpr position never_set{2, 0};

// What load() accumulates: the configuration, where each value came from, where each key was set,
// and the problems.
struct load_state {
  run_config config;
  value_origins origins;
  std::map<std::string, position> positions;
  std::vector<config_error> errors;

  // A key inside a map value is where the key holding the map is; a problem with the text as a
  // whole (key "") comes first.
  position position_of(const std::string& key) const {
    if (key.empty())
      return {-1, 0};
    for (std::string prefix = key;;) {
      if (auto found = positions.find(prefix); found != positions.end())
        return found->second;
      const auto dot = prefix.rfind('.');
      if (dot == std::string::npos)
        return never_set;
      prefix.erase(dot);
    }
  }
};

// `written`: the value as the user wrote it, where known (the command line): a number is quoted
// as written, not as CAF read it ("1e1", not "10.0").
void assign_value(const std::string& name, const caf::config_value& value,
                  const std::string& origin, load_state& state, const std::string& written = {}) {
  const key_spec* spec = find_key(name);
  if (spec == nullptr) {
    state.errors.push_back({name, unknown_key_message(name, origin)});
    return;
  }
  // CAF's parser can read a real one ulp off (1e-300 as 9.999999999999999e-301); strtod is
  // correctly rounded, so a real written as one word is read again from its text.
  caf::config_value read = value;
  if (caf::holds_alternative<caf::config_value::real>(value) && !written.empty()) {
    char* end = nullptr;
    const double exact = std::strtod(written.c_str(), &end);
    if (end == written.c_str() + written.size())
      read = caf::config_value{exact};
  }
  if (auto problem = spec->assign(read, state.config); !problem.empty()) {
    // Digits CAF could not hold as an integer (it kept them as a string): the number is too large.
    const bool digits = !written.empty() &&
                        written.find_first_not_of("0123456789", written[0] == '-' ? 1 : 0) ==
                            std::string::npos;
    if (digits && spec->kind == value_kind::integer && !spec->unsigned_64 &&
        caf::holds_alternative<std::string>(value))
      problem = "too large for an integer";
    // A number is quoted as written; text stays quoted as the string it was read as.
    const bool number = !written.empty() &&
                        (digits || caf::holds_alternative<caf::config_value::real>(value));
    state.errors.push_back({name, abbreviate(name) + " = " +
                                      abbreviate(number ? written : render(value)) + " (" +
                                      origin + "): " + problem});
  } else {
    state.origins[name] = origin;
  }
}

// "in run.ini, line 7" for a key of a file; nothing for a key not to assign (one already
// reported).
using origin_of_key = std::function<std::optional<std::string>(const std::string& name)>;

// Walks CAF's parsed settings: sections are dictionaries, keys inside them are values.
void assign_settings(const caf::settings& settings, const std::string& prefix,
                     const origin_of_key& origin, load_state& state,
                     const std::map<std::string, std::string>& written = {}) {
  for (const auto& [key, value] : settings) {
    const std::string name = prefix.empty() ? std::string{key} : prefix + "." + std::string{key};
    if (auto section = caf::get_if<caf::config_value::dictionary>(&value)) {
      assign_settings(*section, name, origin, state, written);
    } else if (auto where = origin(name)) {
      const auto as_written = written.find(name);
      assign_value(name, value, *where, state,
                   as_written == written.end() ? std::string{} : as_written->second);
    }
  }
}

// What a `key = value` line CAF's parser stopped at most likely meant, for the mistakes that other
// INI dialects allow: a comment after #, a string without quotes, yes or no for a boolean, a list
// without brackets, a word for a number. Empty when the line sets no known key or none fits.
std::string line_hint(const checked_text& checked, int line) {
  std::string key;
  for (const auto& [name, at] : checked.key_lines)
    if (at == line)
      key = name;
  const key_spec* spec = key.empty() ? nullptr : find_key(key);
  std::istringstream lines(checked.text);
  std::string text;
  for (int i = 0; i < line && std::getline(lines, text); ++i) {
  }
  const auto equals = text.find('=');
  if (spec == nullptr || equals == std::string::npos)
    return {};
  // The value up to a comment: a ; or # outside double quotes.
  std::string value;
  char comment = 0;
  bool quoted = false;
  for (std::size_t i = equals + 1; i < text.size() && comment == 0; ++i) {
    const char c = text[i];
    if (c == '"')
      quoted = !quoted;
    if (!quoted && (c == ';' || c == '#'))
      comment = c;
    else
      value += c;
  }
  value = trim_blanks(value);
  const std::string name = key.substr(key.find('.') + 1);
  const std::string as_set = key + " = " + value + ": ";
  if (comment == '#')
    return key + ": comments start with ; (not #): " + name + " = " + value + " ; ...";
  if (value.empty() || value.front() == '"' || value.front() == '[' || value.front() == '{')
    return {};
  const bool word = std::isalpha(static_cast<unsigned char>(value.front())) != 0;
  if (spec->kind == value_kind::boolean)
    return as_set + "expected true or false";
  if (spec->kind == value_kind::string)
    return as_set + "strings are written in double quotes: " + name + " = \"" + value + "\"";
  if (spec->kind == value_kind::integer_list && value.find(',') != std::string::npos)
    return as_set + "lists are written in brackets: " + name + " = [" + value + "]";
  if (word && (spec->kind == value_kind::integer || spec->kind == value_kind::real))
    return as_set + "expected " + (spec->kind == value_kind::integer ? "an integer" : "a number");
  return {};
}

// `lines`: the text's lines. CAF names an unexpected line end as the first column of the next
// line; it is said here as the end of the line it ends (past the last line, that is the last).
// With a hint for the line it names (line_hint), the hint replaces the general reminder.
std::string describe_parser_error(const caf::error& error, const checked_text& checked) {
  const auto lines =
      static_cast<std::size_t>(std::count(checked.text.begin(), checked.text.end(), '\n'));
  // A parser error's code is a caf::pec, said in words; its context, a dictionary, holds the
  // position ("line" and "column").
  const bool parser = error.category() == caf::atom("parser");
  const auto code = static_cast<caf::pec>(error.code());
  std::string reason = parser ? caf::to_string(code) : caf::to_string(error);
  std::replace(reason.begin(), reason.end(), '_', ' ');
  auto position_field = [&error](const char* label) -> std::string {
    const auto& context = error.context();
    if (!context.match_elements<caf::config_value::dictionary>())
      return {};
    const auto& fields = context.get_as<caf::config_value::dictionary>(0);
    const auto found = fields.find(label);
    if (found == fields.end())
      return {};
    const auto* number = caf::get_if<caf::config_value::integer>(&found->second);
    return number != nullptr ? std::to_string(*number) : std::string{};
  };
  const std::string line = position_field("line");
  const std::string column = position_field("column");
  std::string where =
      line.empty() ? "" : "line " + line + (column.empty() ? "" : ", column " + column) + ": ";
  int named = line.empty() ? 0 : static_cast<int>(std::stoul(line));
  if (named > 1 && ((parser && code == caf::pec::unexpected_newline && column == "1") ||
                    (lines > 0 && static_cast<std::size_t>(named) > lines))) {
    --named;
    where = "line " + std::to_string(named) + ", at its end: ";
  }
  const std::string hint = line_hint(checked, named);
  return where + "syntax error (" + reason + "); " +
         (hint.empty() ? "files use INI syntax: [section] headers, key = value, strings in "
                         "double quotes"
                       : hint);
}

// The settings of one INI text (a file's, or the coordinator's): the front end's checks, CAF's
// parser, the duplicate keys, then every value. `origin` names the text in messages ("run.ini").
void read_settings(const std::string& text, const std::string& origin, load_state& state) {
  const checked_text checked = check_text(text, origin, keys().size());
  if (!checked.problems.empty()) {
    state.errors.insert(state.errors.end(), checked.problems.begin(), checked.problems.end());
    return;
  }
  std::istringstream in(checked.text);
  auto settings = caf::actor_system_config::parse_config(in);
  if (!settings) {
    state.errors.push_back({"", origin + ": " + describe_parser_error(settings.error(), checked)});
    return;
  }
  for (const auto& [key, line] : checked.key_lines)
    state.positions[key] = {in_the_file, line};
  state.errors.insert(state.errors.end(), checked.duplicates.begin(), checked.duplicates.end());
  assign_settings(
      *settings, "", [&checked](const std::string& key) { return checked.origin_of(key); }, state,
      checked.bare_values);
}

caf::config_value parse_override_value(const std::string& text) {
  // "--train.algorithm=" (or only blanks): a string, not CAF's empty list
  if (text.find_first_not_of(" \t") == std::string::npos)
    return caf::config_value{text};
  // CAF 0.17's number parser can be one ulp off (0.0123456789 reads as 0.012345678899999999);
  // strtod is correctly rounded, so plain real numbers on the command line go through it.
  if (text.find_first_of(".eE") != std::string::npos) {
    char* end = nullptr;
    const double number = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size())
      return caf::config_value{number};
  }
  if (auto parsed = caf::config_value::parse(text))
    return std::move(*parsed);
  // "--model.hidden=256,128" is friendlier than "[256,128]"; anything else that does not parse
  // as a CAF value is taken as a plain string (paths, names).
  if (auto as_list = caf::config_value::parse("[" + text + "]"))
    return std::move(*as_list);
  return caf::config_value{text};
}

// The "--section.key=value" settings, in order, over what is there.
void apply_overrides(const std::vector<std::string>& overrides, load_state& state) {
  int index = 0;
  for (const auto& raw : overrides) {
    std::string text = raw.rfind("--", 0) == 0 ? raw.substr(2) : raw;
    const auto equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
      state.errors.push_back(
          {"", "cannot read option '" + abbreviate(raw) + "': expected --section.key=value"});
      continue;
    }
    const std::string name = text.substr(0, equals);
    const std::string value = text.substr(equals + 1);
    state.positions[name] = {on_the_command_line, index++};
    if (auto problem = check_value(value, keys().size()); !problem.empty()) {
      state.errors.push_back(
          {name, abbreviate(name) + " = " + abbreviate(value) + " (command line): " + problem});
      continue;
    }
    assign_value(name, parse_override_value(value), "command line", state, value);
  }
}

} // namespace

namespace {

// Every problem's sentence, one per line: a service that logs what() sees them all.
std::string every_message(const std::vector<config_error>& errors) {
  std::string text;
  for (const auto& error : errors)
    text += (text.empty() ? "" : "\n") + error.message;
  return text.empty() ? std::string{"invalid configuration"} : text;
}

} // namespace

invalid_config::invalid_config(std::vector<config_error> errors)
    : std::runtime_error(every_message(errors)), errors_(std::move(errors)) {}

namespace {

// A model chosen on the command line replaces the file's: `--model.layers` over a file's
// model.preset (config/cnn.ini's), `--model.preset` over a file's model.layers. The file's keys
// of the model it no longer trains go back to their defaults, so that the run, its report and its
// checkpoints name one model. Within one source, setting both is still refused by validation.
void let_the_command_line_choose_the_model(load_state& state) {
  auto set_in_the_file = [&state](const std::string& key) {
    const auto found = state.positions.find(key);
    return found != state.positions.end() && found->second.first == in_the_file;
  };
  auto set_on_the_command_line = [&state](const std::string& key) {
    const auto found = state.positions.find(key);
    return found != state.positions.end() && found->second.first == on_the_command_line;
  };
  auto reset = [&state](const std::string& key, auto& value, auto fallback) {
    value = std::move(fallback);
    state.origins.erase(key);
    state.positions.erase(key);
  };
  auto& model = state.config.model;
  const model_section defaults;
  // An empty --model.layers= chooses nothing (a script's unset variable): the file's model stays.
  if (set_on_the_command_line("model.layers") && !model.layers.empty()) {
    if (set_in_the_file("model.preset"))
      reset("model.preset", model.preset, defaults.preset);
    if (set_in_the_file("model.hidden"))
      reset("model.hidden", model.hidden, defaults.hidden);
  } else if (set_on_the_command_line("model.preset")) {
    if (set_in_the_file("model.layers"))
      reset("model.layers", model.layers, defaults.layers);
    if (set_in_the_file("model.hidden") && model.preset != "mlp")
      reset("model.hidden", model.hidden, defaults.hidden);
  }
}

// Validates what was read; throws every problem found. A key that could not be read (unknown, or
// a value of the wrong type) does not hide the other keys' problems; a text that could not be
// read at all (key "") leaves nothing worth validating. A key already refused is not reported
// again by validation, which saw its default in place of the value given.
run_config finish(load_state state, value_origins* origins = nullptr) {
  let_the_command_line_choose_the_model(state);
  if (origins != nullptr)
    *origins = state.origins;
  const bool whole_text_failed = std::any_of(state.errors.begin(), state.errors.end(),
                                             [](const config_error& e) { return e.key.empty(); });
  if (!whole_text_failed) {
    const std::size_t read_errors = state.errors.size();
    for (auto& found : validate(state.config, state.origins)) {
      const auto end = state.errors.begin() + static_cast<std::ptrdiff_t>(read_errors);
      const bool refused = std::any_of(state.errors.begin(), end,
                                       [&](const config_error& e) { return e.key == found.key; });
      if (!refused)
        state.errors.push_back(std::move(found));
    }
  }
  if (!state.errors.empty()) {
    std::stable_sort(state.errors.begin(), state.errors.end(),
                     [&state](const config_error& a, const config_error& b) {
                       return state.position_of(a.key) < state.position_of(b.key);
                     });
    throw invalid_config(std::move(state.errors));
  }
  return state.config;
}

} // namespace

run_config load(const std::string& file, const std::vector<std::string>& overrides,
                value_origins* origins) {
  load_state state;
  if (!file.empty()) {
    auto text = read_config_file(file);
    if (auto* error = std::get_if<config_error>(&text))
      state.errors.push_back(std::move(*error));
    else
      read_settings(std::get<std::string>(text), file, state);
  }
  apply_overrides(overrides, state);
  return finish(std::move(state), origins);
}

run_config from_ini(const std::string& ini, const std::string& origin,
                    const std::vector<std::string>& overrides) {
  load_state state;
  read_settings(ini, origin, state);
  apply_overrides(overrides, state);
  return finish(std::move(state));
}

} // namespace herd::config
