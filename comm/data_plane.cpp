// What every data plane shares: the check of a reduction's part (operation_options).
#include "comm/data_plane.hpp"

namespace herd::comm {

std::string part_error(std::size_t count, const operation_options& options) {
  if (options.whole_count == 0 && options.part_offset != 0)
    return "part_offset " + std::to_string(options.part_offset) +
           " without whole_count: a part needs the size of its whole buffer";
  const std::size_t whole = options.whole_count == 0 ? count : options.whole_count;
  if (options.part_offset > whole || count > whole - options.part_offset)
    return "a part of " + std::to_string(count) + " floats at " +
           std::to_string(options.part_offset) + " does not fit in a buffer of " +
           std::to_string(whole);
  if (!options.buckets.empty() && options.buckets.count() != whole)
    return "gradient buckets of a buffer of " + std::to_string(options.buckets.count()) +
           " floats for a reduction of a buffer of " + std::to_string(whole);
  return "";
}

} // namespace herd::comm
