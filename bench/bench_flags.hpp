// The benchmark programs' flags: each is --key=value (or a bare --key).
#pragma once

#include <cstdlib>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace herd::bench {

struct flag {
  std::string key;   // "--repetitions"
  std::string value; // "5"; empty for a bare flag
};

inline flag split_flag(const std::string& arg) {
  const auto equals = arg.find('=');
  return {arg.substr(0, equals), equals == std::string::npos ? "" : arg.substr(equals + 1)};
}

/// `value` as a whole number; anything else ends the program with status 2, naming `program` and
/// `key`.
inline int int_flag(const std::string& program, const std::string& key, const std::string& value) {
  std::size_t used = 0;
  int number = 0;
  try {
    number = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) {
    std::cerr << program << ": " << key << ": expected a whole number, got '" << value << "'\n";
    std::exit(2);
  }
  return number;
}

/// A comma-separated list's items (`--algorithms=sync,solo`), empty ones left out.
inline std::vector<std::string> list_flag(const std::string& value) {
  std::vector<std::string> items;
  std::stringstream list(value);
  for (std::string item; std::getline(list, item, ',');)
    if (!item.empty())
      items.push_back(item);
  return items;
}

/// A comma-separated list of whole numbers (`--workers=16,256`); anything else ends the program
/// with status 2, naming `program`, `key` and the item.
inline std::vector<int> int_list(const std::string& program, const std::string& key,
                                 const std::string& value) {
  std::vector<int> numbers;
  for (const auto& item : list_flag(value))
    numbers.push_back(int_flag(program, key, item));
  return numbers;
}

/// A list of "off" and "on" (`--tls=off,on`) as false and true; anything else ends the program
/// with status 2, naming `program`, `key` and the item.
inline std::vector<bool> off_on_list(const std::string& program, const std::string& key,
                                     const std::string& value) {
  std::vector<bool> switches;
  std::stringstream list(value);
  for (std::string item; std::getline(list, item, ',');) {
    if (item != "off" && item != "on") {
      std::cerr << program << ": " << key << ": '" << item << "' is neither off nor on\n";
      std::exit(2);
    }
    switches.push_back(item == "on");
  }
  return switches;
}

} // namespace herd::bench
