// The pieces of validate() that its files share (internal to herd::config): the checker that
// collects one sentence per problem, and the per-section checks that live outside validate.cpp.
#pragma once

#include "config/number_text.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace herd::config::validation {

/// Collects the problems of a configuration: each one names the key, the value, where the value
/// came from (`origins`) and what is allowed.
class checker {
public:
  explicit checker(const value_origins& origins) : origins_(origins) {}

  template <class T>
  void require(bool ok, const std::string& key, const T& value, const std::string& allowed) {
    if (ok)
      return;
    std::ostringstream shown;
    if constexpr (std::is_floating_point_v<T>)
      shown << shortest_text(value); // 60000.01 past a bound of 60000 is not shown as 60000
    else
      shown << value;
    std::ostringstream message;
    message << key << " = " << abbreviate(shown.str());
    // Where it came from; in settings that came from somewhere, a value nothing set is the
    // default (a check between two keys may fail on the one the user did not touch).
    if (auto origin = origins_.find(key); origin != origins_.end())
      message << " (" << origin->second << ")";
    else if (!origins_.empty())
      message << " (the default)";
    message << ": " << allowed;
    errors_.push_back({key, message.str()});
  }

  /// `value` of `key` must be one of `names`: else "KEY = "VALUE" (origin): unknown WHAT;
  /// allowed: a, b, c" (no "unknown WHAT" for an empty `what`), and for a near miss (a letter or
  /// two off, or only its case) "; did you mean b?".
  void require_one_of(const std::vector<std::string>& names, const std::string& key,
                      const std::string& value, const std::string& what);

  std::vector<config_error> take() { return std::move(errors_); }

private:
  const value_origins& origins_;
  std::vector<config_error> errors_;
};

/// "a, b, c".
inline std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + names[i];
  return out;
}

inline bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// train.optimizer and the keys of each optimizer (validate_train.cpp).
void check_optimizer(checker& check, const train_section& train);
/// train.lr-schedule and the keys of each schedule (validate_train.cpp).
void check_lr_schedule(checker& check, const train_section& train);

} // namespace herd::config::validation
