// Opening a dataset file a configuration named (IDX, npy): only a regular file, without blocking
// (kernels/regular_file.hpp), and what is wrong with it a data_error naming the file.
#pragma once

#include "herd/idx.hpp"
#include "kernels/regular_file.hpp"

#include <string>

namespace herd::models {

/// Opens `path`; throws data_error naming it: "no such file", "cannot open (why)", or what it is
/// instead of a regular file followed by `hint` (what the file should be).
inline kernels::regular_file open_data_file(const std::string& path, const std::string& hint) {
  try {
    return kernels::regular_file(path);
  } catch (const kernels::file_problem& problem) {
    switch (problem.reason()) {
    case kernels::file_problem::kind::not_regular:
      throw data_error(path, problem.what() + hint);
    case kernels::file_problem::kind::system:
      throw data_error(path, std::string("cannot open (") + problem.what() + ")");
    default:
      throw data_error(path, problem.what());
    }
  }
}

} // namespace herd::models
