// A configuration value's INI text and back: how the key table writes each field so that it
// reads back to the same value, and how a value CAF parsed becomes a field. Internal to
// herd::config (key_table.cpp).
#pragma once

#include <caf/config_value.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace herd::config {

// -- rendering values: INI text that reads back to the same value ------------------------------

/// Quoted and escaped as CAF's parser reads it back: any path or name round-trips.
std::string render(const std::string& value);
/// The shortest text that reads back to the same double.
std::string render(double value);
std::string render(const std::vector<int>& values);
std::string render(bool value);
/// int, std::uint64_t: the other types have their own.
template <class Integer>
std::string render(Integer value) {
  return std::to_string(value);
}

// -- conversions: each returns an empty string on success, else what was expected -------------

std::string convert(const caf::config_value& value, std::int64_t& out);
std::string convert(const caf::config_value& value, bool& out);
std::string convert(const caf::config_value& value, int& out);
std::string convert(const caf::config_value& value, std::uint64_t& out);
/// An integer literal is a fine real number; infinities and NaN are not.
std::string convert(const caf::config_value& value, double& out);
std::string convert(const caf::config_value& value, std::string& out);
/// A single integer is a list of one.
std::string convert(const caf::config_value& value, std::vector<int>& out);

} // namespace herd::config
