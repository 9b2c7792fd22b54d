// How many cores and how much memory a process may use: cgroup CPU quotas and memory limits read
// from fake cgroup trees (v2, v1, hybrid, nested, inside a container), and for real in cgroups this
// test makes where it may (root).
#include "kernels/machine.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/temp_directory.hpp"

namespace {

using herd::kernels::cgroup_core_quota;
using herd::kernels::cgroup_memory_limit;
using herd::testing::temp_directory;
namespace fs = std::filesystem;

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << '\n';
}

TEST(cgroup_core_quota, reads_cgroup_v2_cpu_max_rounding_up_to_whole_cores) {
  const temp_directory root;
  write(root.path() / "job.slice/cpu.max", "150000 100000");
  EXPECT_EQ(cgroup_core_quota("0::/job.slice\n", root.path()), 2);
  write(root.path() / "job.slice/cpu.max", "400000 100000");
  EXPECT_EQ(cgroup_core_quota("0::/job.slice\n", root.path()), 4);
  write(root.path() / "job.slice/cpu.max", "max 100000");
  EXPECT_EQ(cgroup_core_quota("0::/job.slice\n", root.path()), 0);
}

TEST(cgroup_core_quota, the_tightest_limit_of_a_cgroup_and_its_ancestors_holds) {
  const temp_directory root;
  write(root.path() / "a/cpu.max", "300000 100000");
  write(root.path() / "a/b/cpu.max", "max 100000");
  write(root.path() / "a/b/c/cpu.max", "500000 100000");
  EXPECT_EQ(cgroup_core_quota("0::/a/b/c\n", root.path()), 3);
  write(root.path() / "cpu.max", "100000 100000"); // at the root of the tree too
  EXPECT_EQ(cgroup_core_quota("0::/a/b/c\n", root.path()), 1);
}

TEST(cgroup_core_quota, reads_cgroup_v1_cfs_quota_under_the_cpu_controllers_mount) {
  const temp_directory root;
  const std::string self = "12:memory:/docker/x\n4:cpu,cpuacct:/docker/x\n0::/\n";
  EXPECT_EQ(cgroup_core_quota(self, root.path()), 0); // nothing mounted: no quota
  write(root.path() / "cpu,cpuacct/docker/x/cpu.cfs_quota_us", "-1");
  write(root.path() / "cpu,cpuacct/docker/x/cpu.cfs_period_us", "100000");
  EXPECT_EQ(cgroup_core_quota(self, root.path()), 0); // -1: none
  write(root.path() / "cpu,cpuacct/docker/x/cpu.cfs_quota_us", "250000");
  EXPECT_EQ(cgroup_core_quota(self, root.path()), 3);
  // A memory controller's files never count, whatever they hold.
  write(root.path() / "memory/docker/x/cpu.cfs_quota_us", "100000");
  write(root.path() / "memory/docker/x/cpu.cfs_period_us", "100000");
  EXPECT_EQ(cgroup_core_quota(self, root.path()), 3);
}

TEST(cgroup_core_quota, inside_a_container_its_own_cgroup_is_the_mounts_root) {
  // /proc/self/cgroup names the host's path, but the container sees its cgroup at the root.
  const temp_directory root;
  write(root.path() / "cpu.max", "200000 100000");
  EXPECT_EQ(cgroup_core_quota("0::/kubepods/pod1/c1\n", root.path()), 2);
  write(root.path() / "unified/cpu.max", "100000 100000"); // v2 beside v1 (hybrid)
  EXPECT_EQ(cgroup_core_quota("0::/\n", root.path()), 1);
}

TEST(cgroup_core_quota, unreadable_or_malformed_files_are_no_quota) {
  const temp_directory root;
  EXPECT_EQ(cgroup_core_quota("", root.path()), 0);
  EXPECT_EQ(cgroup_core_quota("garbage without colons\n", root.path()), 0);
  write(root.path() / "cpu.max", "lots 100000");
  EXPECT_EQ(cgroup_core_quota("0::/\n", root.path()), 0);
  write(root.path() / "cpu.max", "100000 0");
  EXPECT_EQ(cgroup_core_quota("0::/\n", root.path()), 0);
  write(root.path() / "cpu.max", "100000");
  EXPECT_EQ(cgroup_core_quota("0::/\n", root.path()), 0);
}

TEST(cgroup_memory_limit, reads_v2_memory_max_and_v1_limit_in_bytes_the_tightest_holding) {
  const temp_directory root;
  write(root.path() / "pod/c1/memory.max", "4294967296");
  EXPECT_EQ(cgroup_memory_limit("0::/pod/c1\n", root.path()), 4294967296u);
  write(root.path() / "pod/memory.max", "2147483648"); // the pod's is tighter
  EXPECT_EQ(cgroup_memory_limit("0::/pod/c1\n", root.path()), 2147483648u);
  write(root.path() / "pod/memory.max", "max");
  write(root.path() / "pod/c1/memory.max", "max");
  EXPECT_EQ(cgroup_memory_limit("0::/pod/c1\n", root.path()), 0u);
  // v1: "no limit" is the largest page-aligned 63-bit number; a cpu controller's files never count.
  const std::string self = "4:cpu,cpuacct:/docker/x\n9:memory:/docker/x\n";
  write(root.path() / "memory/docker/x/memory.limit_in_bytes", "9223372036854771712");
  write(root.path() / "cpu,cpuacct/docker/x/memory.limit_in_bytes", "1048576");
  EXPECT_EQ(cgroup_memory_limit(self, root.path()), 0u);
  write(root.path() / "memory/docker/x/memory.limit_in_bytes", "536870912");
  EXPECT_EQ(cgroup_memory_limit(self, root.path()), 536870912u);
  write(root.path() / "memory/docker/x/memory.limit_in_bytes", "lots");
  EXPECT_EQ(cgroup_memory_limit(self, root.path()), 0u);
}

TEST(memory_budget, usable_is_the_smaller_of_the_machine_and_the_limit) {
  herd::kernels::memory_budget budget{16u << 20, 0};
  EXPECT_EQ(budget.usable(), 16u << 20);
  EXPECT_FALSE(budget.limited());
  budget.limit = 4u << 20;
  EXPECT_EQ(budget.usable(), 4u << 20);
  EXPECT_TRUE(budget.limited());
  budget.limit = 32u << 20; // a limit above the machine's memory binds nothing
  EXPECT_EQ(budget.usable(), 16u << 20);
  EXPECT_FALSE(budget.limited());
  budget.physical = 0; // the machine's unknown: the limit is all there is
  EXPECT_EQ(budget.usable(), 32u << 20);
  EXPECT_TRUE(budget.limited());
}

TEST(core_budget, usable_is_the_smaller_of_affinity_and_quota) {
  herd::kernels::core_budget budget{8, 0};
  EXPECT_EQ(budget.usable(), 8);
  EXPECT_FALSE(budget.quota_limited());
  budget.quota = 3;
  EXPECT_EQ(budget.usable(), 3);
  EXPECT_TRUE(budget.quota_limited());
  budget.quota = 16;
  EXPECT_EQ(budget.usable(), 8);
  EXPECT_FALSE(budget.quota_limited());
}

// For real: a child process moved into a cgroup with a quota of one core reads it. Needs a cgroup
// file system this process may write (root outside a locked-down container).
TEST(this_process_cores, a_process_in_a_cgroup_with_a_one_core_quota_reads_it) {
  fs::path group;
  std::string quota_file;
  std::string quota_text;
  for (const auto& [mount, file, text] :
       {std::tuple<std::string, std::string, std::string>{"/sys/fs/cgroup", "cpu.max",
                                                          "100000 100000"},
        {"/sys/fs/cgroup/cpu", "cpu.cfs_quota_us", "100000"},
        {"/sys/fs/cgroup/cpu,cpuacct", "cpu.cfs_quota_us", "100000"}}) {
    const fs::path candidate = fs::path(mount) / ("herd-test-" + std::to_string(::getpid()));
    std::error_code error;
    if (!fs::exists(fs::path(mount) / (file == "cpu.max" ? "cgroup.controllers" : file)) ||
        !fs::create_directory(candidate, error))
      continue;
    if (!fs::exists(candidate / file)) { // v2 without the cpu controller delegated here
      fs::remove(candidate, error);
      continue;
    }
    group = candidate;
    quota_file = file;
    quota_text = text;
    break;
  }
  if (group.empty())
    GTEST_SKIP() << "no cgroup with a cpu controller can be made here (needs root)";
  std::ofstream(group / quota_file) << quota_text << '\n';
  int answer[2];
  ASSERT_EQ(::pipe(answer), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    std::ofstream(group / "cgroup.procs") << ::getpid() << '\n';
    const auto budget = herd::kernels::this_process_cores();
    const int values[2] = {budget.quota, budget.usable()};
    const auto written = ::write(answer[1], values, sizeof values);
    ::_exit(written == sizeof values ? 0 : 1);
  }
  ::close(answer[1]);
  int values[2] = {-1, -1};
  const auto got = ::read(answer[0], values, sizeof values);
  ::close(answer[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::error_code ignored;
  fs::remove(group, ignored);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof values));
  EXPECT_EQ(values[0], 1);
  EXPECT_EQ(values[1], 1);
}

// For real: a child process moved into a cgroup with a 1 GiB memory limit reads it.
TEST(this_process_memory, a_process_in_a_cgroup_with_a_memory_limit_reads_it) {
  constexpr std::uint64_t gib = std::uint64_t{1} << 30;
  fs::path group;
  std::string limit_file;
  for (const auto& [mount, file] :
       {std::pair<std::string, std::string>{"/sys/fs/cgroup", "memory.max"},
        {"/sys/fs/cgroup/memory", "memory.limit_in_bytes"}}) {
    const fs::path candidate = fs::path(mount) / ("herd-test-" + std::to_string(::getpid()));
    std::error_code error;
    if (!fs::exists(fs::path(mount) / (file == "memory.max" ? "cgroup.controllers" : file)) ||
        !fs::create_directory(candidate, error))
      continue;
    if (!fs::exists(candidate / file)) { // v2 without the memory controller delegated here
      fs::remove(candidate, error);
      continue;
    }
    group = candidate;
    limit_file = file;
    break;
  }
  if (group.empty())
    GTEST_SKIP() << "no cgroup with a memory controller can be made here (needs root)";
  std::ofstream(group / limit_file) << gib << '\n';
  int answer[2];
  ASSERT_EQ(::pipe(answer), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    std::ofstream(group / "cgroup.procs") << ::getpid() << '\n';
    const auto budget = herd::kernels::this_process_memory();
    const std::uint64_t values[2] = {budget.limit, budget.usable()};
    const auto written = ::write(answer[1], values, sizeof values);
    ::_exit(written == sizeof values ? 0 : 1);
  }
  ::close(answer[1]);
  std::uint64_t values[2] = {0, 0};
  const auto got = ::read(answer[0], values, sizeof values);
  ::close(answer[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::error_code ignored;
  fs::remove(group, ignored);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof values));
  EXPECT_EQ(values[0], gib);
  EXPECT_EQ(values[1], std::min(gib, herd::kernels::this_process_memory().physical));
}

} // namespace
