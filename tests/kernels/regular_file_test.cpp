// Reading a file a user named: only a regular file, without blocking on a FIFO or reading a
// device forever, never more than the limit whatever its size says.
#include "kernels/regular_file.hpp"

#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string>
#include <sys/stat.h>

#include "support/temp_directory.hpp"

namespace {

using herd::kernels::file_problem;
using herd::kernels::read_regular_file;
using herd::kernels::regular_file;
using ::testing::HasSubstr;

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// What opening or reading `path` threw: its kind and words.
std::pair<file_problem::kind, std::string> problem_of(const std::string& path,
                                                      std::uint64_t limit = 1 << 20) {
  try {
    read_regular_file(path, limit);
  } catch (const file_problem& problem) {
    return {problem.reason(), problem.what()};
  }
  ADD_FAILURE() << path << " was read";
  return {file_problem::kind::system, ""};
}

TEST(regular_file, a_regular_file_is_read_whole_with_its_size_and_mode) {
  herd::testing::temp_directory dir;
  const auto path = dir.file("a.txt");
  write(path, "hello\nworld\n");
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  regular_file file(path);
  EXPECT_EQ(file.size(), 12u);
  EXPECT_EQ(file.mode() & 0777, 0640u);
  char first[5];
  EXPECT_EQ(file.read(first, sizeof first), 5u);
  EXPECT_EQ(std::string(first, 5), "hello");
  EXPECT_EQ(file.read_rest(100), "\nworld\n");
  EXPECT_EQ(read_regular_file(path, 12), "hello\nworld\n");
}

TEST(regular_file, what_is_not_a_regular_file_is_refused_unopened_naming_what_it_is) {
  herd::testing::temp_directory dir;
  const auto fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading would wait for a writer: this returning at all is half the test.
  EXPECT_EQ(problem_of(fifo), std::make_pair(file_problem::kind::not_regular,
                                             std::string("it is a FIFO (named pipe), not a "
                                                         "regular file")));
  EXPECT_EQ(problem_of("/dev/zero").second, "it is a character device, not a regular file");
  EXPECT_EQ(problem_of(dir.path().string()).second, "it is a directory, not a regular file");
  EXPECT_EQ(problem_of(dir.file("absent")),
            std::make_pair(file_problem::kind::missing, std::string("no such file")));
}

TEST(regular_file, more_than_the_limit_is_refused_by_size_or_by_what_was_read) {
  herd::testing::temp_directory dir;
  const auto path = dir.file("big");
  write(path, std::string(1000, 'x'));
  EXPECT_EQ(problem_of(path, 999),
            std::make_pair(file_problem::kind::too_large,
                           std::string("it holds 1000 bytes, more than 999")));
  EXPECT_EQ(read_regular_file(path, 1000).size(), 1000u);
  // A file whose size says 0 (as those in /proc do) is still read only up to the limit.
  regular_file status("/proc/self/status");
  EXPECT_EQ(status.size(), 0u);
  try {
    status.read_rest(10);
    ADD_FAILURE() << "more than 10 bytes of /proc/self/status were read";
  } catch (const file_problem& problem) {
    EXPECT_EQ(problem.reason(), file_problem::kind::too_large);
    EXPECT_THAT(problem.what(), HasSubstr("more than 10 bytes"));
  }
  EXPECT_THAT(read_regular_file("/proc/self/status", 1 << 20), HasSubstr("Name:"));
}

} // namespace
