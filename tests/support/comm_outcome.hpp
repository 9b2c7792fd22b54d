// How GoogleTest prints a data-plane result's kind: in words ("timeout"), not as bytes.
#pragma once

#include "comm/errors.hpp"

#include <ostream>

namespace herd::comm {

inline void PrintTo(outcome kind, std::ostream* out) {
  *out << to_string(kind);
}

} // namespace herd::comm
