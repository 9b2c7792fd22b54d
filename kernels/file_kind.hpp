// What a path that is not a regular file is, in words, for the messages that refuse it
// ("it is a FIFO (named pipe), not a regular file"). Header-only: the readers of configuration
// files and of checkpoints both use it, and neither library depends on the other.
#pragma once

#include <string>
#include <sys/stat.h>

namespace herd::kernels {

inline std::string file_kind(mode_t mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe)";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "something else";
}

} // namespace herd::kernels
