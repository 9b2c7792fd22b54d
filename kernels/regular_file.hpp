// Reading a file a user named without being stalled or flooded by it: only a regular file is
// opened (opening a FIFO for reading waits for a writer, a device such as /dev/zero never ends,
// a tape would move), it is opened without blocking, and what is read has a limit whatever its
// size says (files in /proc say 0). Header-only: the configuration, checkpoints, datasets and
// the command line read such files, and not all of them link the kernels' library.
#pragma once

#include "kernels/file_kind.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace herd::kernels {

/// Why a file could not be opened or read, in words without its path ("no such file", "it is a
/// FIFO (named pipe), not a regular file", "Permission denied"): the caller names the path, or
/// the key that named it, and may add a hint by `reason`.
class file_problem : public std::runtime_error {
public:
  enum class kind { missing, not_regular, too_large, system };
  file_problem(kind reason, const std::string& what) : std::runtime_error(what), reason_(reason) {}
  kind reason() const { return reason_; }

private:
  kind reason_;
};

/// A regular file open for reading, closed when this goes.
class regular_file {
public:
  /// Opens `path`; throws file_problem where it does not exist, is not a regular file (naming
  /// what it is, without opening it) or cannot be opened.
  explicit regular_file(const std::string& path) {
    struct stat status {};
    if (::stat(path.c_str(), &status) != 0)
      throw system_problem(errno);
    refuse_unless_regular(status.st_mode);
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0)
      throw system_problem(errno);
    if (::fstat(fd_, &status) != 0) {
      const int error = errno;
      ::close(fd_);
      throw system_problem(error);
    }
    if (!S_ISREG(status.st_mode)) { // replaced between the two looks
      ::close(fd_);
      refuse_unless_regular(status.st_mode);
    }
    size_ = static_cast<std::uint64_t>(status.st_size);
    mode_ = status.st_mode;
  }
  ~regular_file() { ::close(fd_); }
  regular_file(const regular_file&) = delete;
  regular_file& operator=(const regular_file&) = delete;

  /// Its size and mode (the permission bits among them) when it was opened.
  std::uint64_t size() const { return size_; }
  mode_t mode() const { return mode_; }
  /// For pread() and the like; it stays this object's.
  int descriptor() const { return fd_; }

  /// Reads `count` bytes into `destination`, fewer only where the file ends first; returns how
  /// many. Throws file_problem on a read error.
  std::size_t read(void* destination, std::size_t count) {
    auto* bytes = static_cast<char*>(destination);
    std::size_t total = 0;
    while (total < count) {
      const ssize_t got = ::read(fd_, bytes + total, std::min<std::size_t>(count - total, 1 << 20));
      const int error = errno;
      if (got < 0 && error == EINTR)
        continue;
      if (got < 0)
        throw file_problem(file_problem::kind::system,
                           std::string("read error (") + std::strerror(error) + ")");
      if (got == 0)
        break;
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

  /// The rest of the file, at most `limit` bytes: a file that holds more (it grew, or its size
  /// said less) throws file_problem (too_large).
  std::string read_rest(std::uint64_t limit) {
    std::string bytes;
    bytes.reserve(static_cast<std::size_t>(std::min(size_, limit)));
    append_rest(bytes, limit);
    return bytes;
  }

  /// As read_rest, appended to `bytes` (reserve the room first: it is not moved as it grows).
  void append_rest(std::string& bytes, std::uint64_t limit) {
    const std::size_t start = bytes.size();
    char buffer[1 << 16];
    for (;;) {
      const std::size_t got = read(buffer, sizeof buffer);
      bytes.append(buffer, got);
      if (bytes.size() - start > limit)
        throw file_problem(file_problem::kind::too_large,
                           "it holds more than " + std::to_string(limit) + " bytes");
      if (got < sizeof buffer)
        return;
    }
  }

private:
  static file_problem system_problem(int error) {
    if (error == ENOENT)
      return {file_problem::kind::missing, "no such file"};
    return {file_problem::kind::system, std::strerror(error)};
  }
  static void refuse_unless_regular(mode_t mode) {
    if (!S_ISREG(mode))
      throw file_problem(file_problem::kind::not_regular,
                         "it is " + file_kind(mode) + ", not a regular file");
  }

  int fd_ = -1;
  std::uint64_t size_ = 0;
  mode_t mode_ = 0;
};

/// The whole regular file `path`, refused (file_problem, too_large) where it holds more than
/// `limit` bytes: by its size before anything is read, by what was read where the size said less.
inline std::string read_regular_file(const std::string& path, std::uint64_t limit) {
  regular_file file(path);
  if (file.size() > limit)
    throw file_problem(file_problem::kind::too_large, "it holds " + std::to_string(file.size()) +
                                                          " bytes, more than " +
                                                          std::to_string(limit));
  return file.read_rest(limit);
}

} // namespace herd::kernels
