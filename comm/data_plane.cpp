// What every data plane shares: the check of a reduction's part (operation_options).
#include "comm/data_plane.hpp"

namespace herd::comm {

std::string part_error(std::size_t count, const operation_options& options) {
  if (options.whole_count == 0)
    return options.part_offset == 0
               ? ""
               : "part_offset " + std::to_string(options.part_offset) +
                     " without whole_count: a part needs the size of its whole buffer";
  if (options.part_offset > options.whole_count ||
      count > options.whole_count - options.part_offset)
    return "a part of " + std::to_string(count) + " floats at " +
           std::to_string(options.part_offset) + " does not fit in a buffer of " +
           std::to_string(options.whole_count);
  return "";
}

} // namespace herd::comm
