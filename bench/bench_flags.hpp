// The benchmark programs' flags: each is --key=value (or a bare --key).
#pragma once

#include <string>

namespace herd::bench {

struct flag {
  std::string key;   // "--repetitions"
  std::string value; // "5"; empty for a bare flag
};

inline flag split_flag(const std::string& arg) {
  const auto equals = arg.find('=');
  return {arg.substr(0, equals), equals == std::string::npos ? "" : arg.substr(equals + 1)};
}

} // namespace herd::bench
