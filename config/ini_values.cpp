#include "config/ini_values.hpp"

#include "config/number_text.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace herd::config {

// -- rendering values ---------------------------------------------------------------------------

// Quoted and escaped as CAF's parser reads it back: to_ini() round-trips any path or name.
std::string render(const std::string& value) {
  std::string quoted = "\"";
  for (char c : value) {
    if (c == '\n' || c == '\r' || c == '\t')
      quoted += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
    else
      quoted += c == '"' || c == '\\' ? std::string{'\\', c} : std::string(1, c);
  }
  return quoted + '"';
}

std::string render(double value) {
  return shortest_text(value); // so that to_ini() round-trips
}

std::string render(const std::vector<int>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string render(bool value) {
  return value ? "true" : "false";
}

// -- conversions: each returns an empty string on success, else what was expected -------------

std::string convert(const caf::config_value& value, std::int64_t& out) {
  if (auto integer = caf::get_if<caf::config_value::integer>(&value)) {
    out = *integer;
    return {};
  }
  return "expected an integer";
}

std::string convert(const caf::config_value& value, bool& out) {
  if (auto boolean = caf::get_if<caf::config_value::boolean>(&value)) {
    out = *boolean;
    return {};
  }
  return "expected true or false";
}

std::string convert(const caf::config_value& value, int& out) {
  std::int64_t wide = 0;
  if (auto problem = convert(value, wide); !problem.empty())
    return problem;
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max())
    return "out of range for a 32-bit integer";
  out = static_cast<int>(wide);
  return {};
}

std::string convert(const caf::config_value& value, std::uint64_t& out) {
  std::int64_t wide = 0;
  if (auto problem = convert(value, wide); !problem.empty())
    return "expected an integer between 0 and 9223372036854775807";
  if (wide < 0)
    return "expected a non-negative integer";
  out = static_cast<std::uint64_t>(wide);
  return {};
}

std::string convert(const caf::config_value& value, double& out) {
  // An integer literal is a fine real number: "lr=1" must not be an error (or, as in CAF's own
  // option handling, silently ignored).
  if (auto real = caf::get_if<caf::config_value::real>(&value)) {
    out = *real;
  } else if (auto integer = caf::get_if<caf::config_value::integer>(&value)) {
    out = static_cast<double>(*integer);
  } else {
    return "expected a number";
  }
  if (!std::isfinite(out))
    return "expected a finite number";
  return {};
}

std::string convert(const caf::config_value& value, std::string& out) {
  if (auto text = caf::get_if<caf::config_value::string>(&value)) {
    out = *text;
    return {};
  }
  if (auto atom = caf::get_if<caf::config_value::atom>(&value)) {
    out = caf::to_string(*atom);
    return {};
  }
  return "expected a string (quote it in a file: key = \"value\")";
}

std::string convert(const caf::config_value& value, std::vector<int>& out) {
  const auto* list = caf::get_if<caf::config_value::list>(&value);
  if (list == nullptr) {
    // A single integer is a list of one.
    int single = 0;
    if (convert(value, single).empty()) {
      out = {single};
      return {};
    }
    return "expected a list of integers such as [256, 128] ([] for no hidden layer)";
  }
  std::vector<int> result;
  for (const auto& element : *list) {
    int number = 0;
    if (!convert(element, number).empty())
      return "expected a list of integers such as [256, 128]";
    result.push_back(number);
  }
  out = std::move(result);
  return {};
}

} // namespace herd::config
