// The text of a real number that settings files and messages show: the shortest that reads back
// to the same double (0.1, not 0.10000000000000001; 60000.01, not 60000 as six digits would).
#pragma once

#include <string>

namespace herd::config {

std::string shortest_text(double value);

} // namespace herd::config
