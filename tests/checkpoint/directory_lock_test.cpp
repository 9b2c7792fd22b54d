// One run at a time writes checkpoints to a directory: a second one, in this process or another,
// is refused while the first holds the directory, and may go once it has let go (or died).
#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "checkpoint/directory_lock.hpp"
#include "checkpoint/format.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::checkpoint::directory_lock;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(directory_lock, a_second_holder_in_this_process_is_refused_until_the_first_lets_go) {
  herd::testing::temp_directory dir;
  const auto path = dir.file("ckpt"); // made by the lock
  EXPECT_EQ(directory_lock::holder_problem(path), "");
  directory_lock first(path);
  const auto problem = directory_lock::holder_problem(path);
  EXPECT_TRUE(contains(problem, "checkpoint.dir = " + path + ": a running job in this process"))
      << problem;
  try {
    directory_lock second(path);
    ADD_FAILURE() << "two holders of one directory";
  } catch (const std::runtime_error& refused) {
    EXPECT_EQ(refused.what(), problem);
  }
  // The same directory by another name is the same directory.
  EXPECT_NE(directory_lock::holder_problem(path + "/../ckpt"), "");
  // run_directory_problem, which herd train and spawn_job ask before a run, says so too.
  EXPECT_EQ(herd::checkpoint::run_directory_problem(path, "", "--resume"), problem);
  first.release();
  EXPECT_FALSE(std::filesystem::exists(path + "/.herd-lock")) << "a run leaves only checkpoints";
  EXPECT_EQ(directory_lock::holder_problem(path), "");
  EXPECT_FALSE(std::filesystem::exists(path + "/.herd-lock")) << "nor does a question";
  EXPECT_NO_THROW(directory_lock again(path));
}

// Someone removes the directory while a run writes there: the run makes it and locks it again
// before its next write, so that a run started into it meanwhile is refused; where such a run
// took it first, the lock is not taken from it, and the refusal names it.
TEST(directory_lock, a_removed_directory_is_locked_again_unless_another_run_took_it) {
  herd::testing::temp_directory dir;
  const auto path = dir.file("ckpt");
  directory_lock run(path);
  EXPECT_FALSE(run.hold_again()) << "still held: nothing to do";
  std::filesystem::remove_all(path);
  EXPECT_EQ(directory_lock::holder_problem(path), "") << "nobody holds a removed directory";
  std::filesystem::remove_all(path); // the question made it
  EXPECT_TRUE(run.hold_again());
  EXPECT_TRUE(std::filesystem::exists(path + "/.herd-lock"));
  EXPECT_TRUE(contains(directory_lock::holder_problem(path), "a running job in this process"));
  EXPECT_FALSE(run.hold_again());
  // Removed again, and another run takes it before this one writes.
  std::filesystem::remove_all(path);
  directory_lock other(path);
  try {
    run.hold_again();
    ADD_FAILURE() << "the lock was taken from the run that holds it";
  } catch (const std::runtime_error& refused) {
    EXPECT_TRUE(contains(refused.what(), "checkpoint.dir = " + path + ": a running job"))
        << refused.what();
  }
  run.release(); // holds nothing: must not remove the other run's lock file
  EXPECT_TRUE(std::filesystem::exists(path + "/.herd-lock"));
  EXPECT_NE(directory_lock::holder_problem(path), "");
}

// A run whose directory was removed, and taken by another run, ends without a write in between:
// letting go of its lock must not remove the other run's lock file.
TEST(directory_lock, letting_go_after_the_directory_was_taken_leaves_the_new_holders_lock) {
  herd::testing::temp_directory dir;
  const auto path = dir.file("ckpt");
  directory_lock first(path);
  std::filesystem::remove_all(path);
  directory_lock second(path);
  first.release();
  EXPECT_TRUE(std::filesystem::exists(path + "/.herd-lock"));
  EXPECT_TRUE(contains(directory_lock::holder_problem(path), "a running job in this process"));
}

TEST(directory_lock, another_process_holding_it_is_named_and_its_end_frees_the_directory) {
  herd::testing::temp_directory dir;
  const auto path = dir.file("ckpt");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      directory_lock held(path);
      const char byte = 1;
      (void)!::write(ready[1], &byte, 1);
      ::pause(); // holds it until killed
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the child did not take the lock";
  ::close(ready[0]);
  const auto problem = directory_lock::holder_problem(path);
  EXPECT_TRUE(contains(problem, "a running job of another process (pid " + std::to_string(child) +
                                    ") writes its checkpoints there"))
      << problem;
  EXPECT_TRUE(contains(problem, "give each run its own checkpoint.dir")) << problem;
  // Killed, it holds nothing: the system lets go of its lock.
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(directory_lock::holder_problem(path), "");
}

TEST(directory_lock, a_directory_that_cannot_hold_the_lock_file_is_named_with_the_reason) {
  herd::testing::temp_directory dir;
  const auto file = dir.file("plain");
  { std::ofstream(file) << "not a directory"; }
  try {
    directory_lock lock(file);
    ADD_FAILURE() << "locked a plain file's 'directory'";
  } catch (const std::runtime_error& failed) {
    EXPECT_TRUE(contains(failed.what(), "checkpoint.dir = " + file + ": cannot lock " + file +
                                            "/.herd-lock (Not a directory)"))
        << failed.what();
  }
}

} // namespace
