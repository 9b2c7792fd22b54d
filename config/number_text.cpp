// The text of a real number that settings files and messages show (number_text.hpp).
#include "config/number_text.hpp"

#include <cstdlib>
#include <sstream>

namespace herd::config {

std::string shortest_text(double value) {
  for (int precision = 6; precision <= 17; ++precision) {
    std::ostringstream out;
    out.precision(precision);
    out << value;
    if (std::strtod(out.str().c_str(), nullptr) == value) // stod throws for a subnormal
      return out.str();
  }
  return std::to_string(value);
}

} // namespace herd::config
