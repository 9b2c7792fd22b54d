// directory_lock: flock(2) on DIR/.herd-lock (directory_lock.hpp).
#include "checkpoint/directory_lock.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace herd::checkpoint {

namespace {

std::string lock_path(const std::string& directory) {
  return directory + "/.herd-lock";
}

// Opens (making) the lock file; -1 with errno set when it cannot.
int open_lock(const std::string& directory) {
  return ::open(lock_path(directory).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
}

// Locks `descriptor` without waiting: 0, EWOULDBLOCK while another holds it, or another errno.
int try_lock(int descriptor) {
  while (::flock(descriptor, LOCK_EX | LOCK_NB) != 0)
    if (errno != EINTR)
      return errno;
  return 0;
}

// The process the lock file names ("pid 1234"), or empty.
std::string named_process(int descriptor) {
  char text[64] = {};
  const auto read = ::pread(descriptor, text, sizeof text - 1, 0);
  if (read <= 0)
    return {};
  std::string content(text, static_cast<std::size_t>(read));
  const auto end = content.find('\n');
  return content.substr(0, end);
}

std::string held_by(const std::string& directory, int descriptor) {
  const auto holder = named_process(descriptor);
  const std::string who =
      holder == "pid " + std::to_string(::getpid())
          ? "a running job in this process"
          : "a running job of another process" + (holder.empty() ? "" : " (" + holder + ")");
  return "checkpoint.dir = " + directory + ": " + who +
         " writes its checkpoints there, and each would delete the other's as it keeps its "
         "newest checkpoint.keep; give each run its own checkpoint.dir";
}

std::string cannot_lock(const std::string& directory, int error) {
  return "checkpoint.dir = " + directory + ": cannot lock " + lock_path(directory) + " (" +
         std::strerror(error) + ")";
}

} // namespace

directory_lock::directory_lock(const std::string& directory)
    : directory_(directory), path_(lock_path(directory)) {
  take();
}

void directory_lock::take() {
  std::error_code ignored; // open() below says what is wrong with the directory
  std::filesystem::create_directories(directory_, ignored);
  for (;;) {
    descriptor_ = open_lock(directory_);
    if (descriptor_ < 0)
      throw std::runtime_error(cannot_lock(directory_, errno));
    if (const int error = try_lock(descriptor_); error != 0) {
      const auto problem =
          error == EWOULDBLOCK ? held_by(directory_, descriptor_) : cannot_lock(directory_, error);
      ::close(descriptor_);
      descriptor_ = -1;
      throw std::runtime_error(problem);
    }
    // The holder may have let go (removing the file) between our open and our lock: then this
    // lock is on a file no one else opens, and the directory's is another.
    if (holds())
      break;
    ::close(descriptor_);
  }
  // Names this process for a run refused while it holds the lock (best effort: the lock itself
  // is what excludes).
  const std::string holder = "pid " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(descriptor_, 0) == 0)
    (void)!::pwrite(descriptor_, holder.data(), holder.size(), 0);
}

// Whether the file locked is the one the directory names.
bool directory_lock::holds() const {
  struct stat locked {};
  struct stat named {};
  return descriptor_ >= 0 && ::fstat(descriptor_, &locked) == 0 &&
         ::stat(path_.c_str(), &named) == 0 && locked.st_dev == named.st_dev &&
         locked.st_ino == named.st_ino;
}

bool directory_lock::hold_again() {
  struct stat named {};
  if (holds() || (::stat(path_.c_str(), &named) != 0 && errno != ENOENT))
    return false;       // held, or not known to be lost (a path that cannot be read now)
  if (descriptor_ >= 0) // not unlinked: the path may name another run's lock file by now
    ::close(descriptor_);
  descriptor_ = -1;
  take();
  return true;
}

void directory_lock::release() noexcept {
  if (descriptor_ < 0)
    return;
  if (holds()) // not where the directory was removed and another run locks a file of its own there
    ::unlink(path_.c_str()); // still held: whoever opened it before retries on a new file
  ::close(descriptor_);    // closing the last descriptor of the open file releases the flock
  descriptor_ = -1;
}

std::string directory_lock::holder_problem(const std::string& directory) {
  try {
    const directory_lock probe(directory);
    return {};
  } catch (const std::runtime_error& held) {
    return held.what();
  }
}

} // namespace herd::checkpoint
