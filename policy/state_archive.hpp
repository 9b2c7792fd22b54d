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
    cereal::BinaryInputArchive archive(in);
    archive(saved_name);
    if (saved_name != name)
      throw std::runtime_error("the policy state is " + saved_name + "'s, not " +
                               std::string(name) + "'s");
    archive(fields...);
  } catch (const cereal::Exception& failure) {
    throw std::runtime_error("the " + std::string(name) + " policy state cannot be read (" +
                             failure.what() + ")");
  }
}

} // namespace herd::policy::detail
