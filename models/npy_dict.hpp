// The header of a .npy file is a Python dict literal; this parses exactly what np.save writes.
#pragma once

#include "models/npy.hpp"

#include <string>

namespace herd::models {

/// Parses `text`, the dict literal of the .npy file `path` ({'descr': '<f4', 'fortran_order':
/// False, 'shape': (3, 4), } padded with spaces and a newline), into `header`'s dtype, order and
/// shape. Throws data_error naming `path` and the problem: another literal, a missing or repeated
/// key, an unknown dtype, Fortran order, an extent that overflows.
void parse_npy_dict(const std::string& path, const std::string& text, npy_header& header);

} // namespace herd::models
