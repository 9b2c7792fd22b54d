// The policies' checkpoint state as bytes (a cereal binary archive), for their save_state() and
// load_state(). Included by the policies' .cpp files only: cereal stays out of policy.hpp.
#pragma once

#include <cereal/archives/binary.hpp>
#include <cereal/types/deque.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "checkpoint/bounded_archive.hpp"

namespace herd::policy::detail {

/// `name` first, so that one policy's state is never loaded into another.
template <class... Fields>
std::string save_fields(std::string_view name, const Fields&... fields) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(out);
    archive(std::string(name), fields...);
  }
  return out.str();
}

/// Throws std::runtime_error when `state` is another policy's or cannot be read.
template <class... Fields>
void load_fields(const std::string& state, std::string_view name, Fields&... fields) {
  std::istringstream in(state, std::ios::binary);
  std::string saved_name;
  try {
    checkpoint::bounded_input_archive archive(in, state.size());
    archive(saved_name);
    if (saved_name != name)
      throw std::runtime_error("the policy state is " + saved_name + "'s, not " +
                               std::string(name) + "'s");
    archive(fields...);
  } catch (const cereal::Exception& failure) {
    throw std::runtime_error("the " + std::string(name) + " policy state cannot be read (" +
                             failure.what() + ")");
  } catch (const std::length_error& failure) { // a count no container of its type holds
    throw std::runtime_error("the " + std::string(name) + " policy state cannot be read (" +
                             failure.what() + ")");
  }
}

/// Why a loaded state cannot be the policy's: a state from a damaged or crafted checkpoint, whose
/// worker indices would reach outside the policy's own tables.
inline std::runtime_error damaged(std::string_view policy, const std::string& why) {
  return std::runtime_error("the " + std::string(policy) + " policy state is damaged: " + why);
}

/// Throws damaged() unless every index in `workers` lies in [0, slots) and, when `ascending`, each
/// is above the one before (no repeats).
inline void check_workers(std::string_view policy, std::string_view field,
                          const std::vector<int>& workers, std::size_t slots,
                          bool ascending = true) {
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const int worker = workers[i];
    if (worker < 0 || static_cast<std::size_t>(worker) >= slots)
      throw damaged(policy, std::string(field) + " hold worker " + std::to_string(worker) +
                                ", outside the " + std::to_string(slots) + " it keeps track of");
    if (ascending && i > 0 && workers[i - 1] >= worker)
      throw damaged(policy, std::string(field) + " are not in ascending order (worker " +
                                std::to_string(worker) + " after " +
                                std::to_string(workers[i - 1]) + ")");
  }
}

/// Throws damaged() unless a table kept per worker has `size` entries, `slots`.
inline void check_table(std::string_view policy, std::string_view field, std::size_t size,
                        std::size_t slots) {
  if (size != slots)
    throw damaged(policy, std::string(field) + " have " + std::to_string(size) + " entries for " +
                              std::to_string(slots) + " workers");
}

} // namespace herd::policy::detail
