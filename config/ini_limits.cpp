// What an INI text can hold; see ini_limits.hpp.
#include "config/ini_limits.hpp"

#include "config/key_table.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

namespace herd::config {

std::vector<config_error> values_beyond_ini(const run_config& config) {
  std::vector<config_error> errors;
  for (const auto& spec : keys()) {
    const std::string shown = spec.show(config);
    std::string problem;
    if (spec.kind == value_kind::real && !std::isfinite(std::strtod(shown.c_str(), nullptr)))
      problem = "expected a finite number";
    else if (spec.kind == value_kind::integer && shown.find('-') == std::string::npos &&
             std::strtoull(shown.c_str(), nullptr, 10) >
                 static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max()))
      problem = "expected an integer between 0 and 9223372036854775807";
    if (!problem.empty())
      errors.push_back({spec.name, spec.name + " = " + shown + ": " + problem});
  }
  return errors;
}

} // namespace herd::config
