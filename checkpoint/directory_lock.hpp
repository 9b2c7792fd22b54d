// One run at a time writes checkpoints to a directory. A run keeps its newest checkpoint.keep
// files and deletes the older ones there, whichever run wrote them: two runs started into the
// same empty directory deleted each other's checkpoints, final ones included, without a word.
// The lock is flock(2) on DIR/.herd-lock, which names the process that holds it and is removed
// when it lets go; the system releases the lock when that process ends, however it ends (the file
// may then stay, and the next run takes it over). Works on NFS, where flock locks the file for
// every client. No CAF.
#pragma once

#include <string>

namespace herd::checkpoint {

class directory_lock {
public:
  /// Takes the lock on `directory` (made when missing). Throws std::runtime_error with
  /// holder_problem()'s sentence when another run holds it, or naming the lock file and the
  /// system's reason when it cannot be taken.
  explicit directory_lock(const std::string& directory);
  ~directory_lock() { release(); }
  directory_lock(const directory_lock&) = delete;
  directory_lock& operator=(const directory_lock&) = delete;

  /// Gives the lock up now (a run that has written its final checkpoint) and removes the file;
  /// idempotent.
  void release() noexcept;

  /// Takes the lock again where its file is no longer the one held (someone removed the
  /// directory, or the lock file, while the run wrote there): true when it did, false while the
  /// lock is still held. Throws as the constructor does when another run holds the directory's
  /// lock by now, or it cannot be taken.
  bool hold_again();

  /// Why a run may not write checkpoints to `directory` now: "checkpoint.dir = DIR: a running
  /// job of another process (pid N) writes its checkpoints there, ..." (or "in this process")
  /// while one holds its lock; empty when none does. Takes and gives back the lock to find out.
  static std::string holder_problem(const std::string& directory);

private:
  void take();
  bool holds() const;

  std::string directory_;
  std::string path_;
  int descriptor_ = -1;
};

} // namespace herd::checkpoint
