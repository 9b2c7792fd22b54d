// How many cores and how much memory a process may use: cgroup CPU quotas and memory limits read
// from fake cgroup trees (v2, v1, hybrid, nested, inside a container), and for real in cgroups this
// test makes where it may (root).
#include "kernels/machine.hpp"

#include <array>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <optional>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

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

// Where a cgroup setting is written: `file` in a fresh cgroup under `mount`.
struct cgroup_setting {
  std::string mount; // "/sys/fs/cgroup" (v2) or a v1 controller's mount
  std::string file;  // "cpu.max", "memory.limit_in_bytes", ...
  std::string value;
};

// Makes a fresh cgroup with the first of `settings` this process may write (root, outside a
// locked-down container), moves a child process into it, and returns the two numbers `measure`
// gives there; nullopt where no such cgroup can be made. The cgroup is removed afterwards.
std::optional<std::array<std::uint64_t, 2>>
measured_in_cgroup(const std::vector<cgroup_setting>& settings,
                   const std::function<std::array<std::uint64_t, 2>()>& measure) {
  fs::path group;
  const cgroup_setting* chosen = nullptr;
  for (const auto& setting : settings) {
    const fs::path mount(setting.mount);
    const fs::path candidate = mount / ("herd-test-" + std::to_string(::getpid()));
    const bool v2 = setting.mount == "/sys/fs/cgroup";
    std::error_code error;
    if (!fs::exists(mount / (v2 ? "cgroup.controllers" : setting.file)) ||
        !fs::create_directory(candidate, error))
      continue;
    if (!fs::exists(candidate / setting.file)) { // v2 without the controller delegated here
      fs::remove(candidate, error);
      continue;
    }
    group = candidate;
    chosen = &setting;
    break;
  }
  if (chosen == nullptr)
    return std::nullopt;
  std::ofstream(group / chosen->file) << chosen->value << '\n';
  std::array<std::uint64_t, 2> values{};
  int answer[2];
  if (::pipe(answer) != 0)
    throw std::runtime_error("pipe failed");
  const pid_t child = ::fork();
  if (child == 0) {
    std::ofstream(group / "cgroup.procs") << ::getpid() << '\n';
    values = measure();
    const auto written = ::write(answer[1], values.data(), sizeof values);
    ::_exit(written == sizeof values ? 0 : 1);
  }
  ::close(answer[1]);
  const auto got = ::read(answer[0], values.data(), sizeof values);
  ::close(answer[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::error_code ignored;
  fs::remove(group, ignored);
  if (got != static_cast<ssize_t>(sizeof values))
    throw std::runtime_error("the child in the cgroup did not answer");
  return values;
}

// For real: a child process moved into a cgroup with a quota of one core reads it.
TEST(this_process_cores, a_process_in_a_cgroup_with_a_one_core_quota_reads_it) {
  const auto values = measured_in_cgroup(
      {{"/sys/fs/cgroup", "cpu.max", "100000 100000"},
       {"/sys/fs/cgroup/cpu", "cpu.cfs_quota_us", "100000"},
       {"/sys/fs/cgroup/cpu,cpuacct", "cpu.cfs_quota_us", "100000"}},
      [] {
        const auto budget = herd::kernels::this_process_cores();
        return std::array<std::uint64_t, 2>{static_cast<std::uint64_t>(budget.quota),
                                            static_cast<std::uint64_t>(budget.usable())};
      });
  if (!values)
    GTEST_SKIP() << "no cgroup with a cpu controller can be made here (needs root)";
  EXPECT_EQ((*values)[0], 1u);
  EXPECT_EQ((*values)[1], 1u);
}

// For real: a child process moved into a cgroup with a 1 GiB memory limit reads it.
TEST(this_process_memory, a_process_in_a_cgroup_with_a_memory_limit_reads_it) {
  constexpr std::uint64_t gib = std::uint64_t{1} << 30;
  const auto values =
      measured_in_cgroup({{"/sys/fs/cgroup", "memory.max", std::to_string(gib)},
                          {"/sys/fs/cgroup/memory", "memory.limit_in_bytes", std::to_string(gib)}},
                         [] {
                           const auto budget = herd::kernels::this_process_memory();
                           return std::array<std::uint64_t, 2>{budget.limit, budget.usable()};
                         });
  if (!values)
    GTEST_SKIP() << "no cgroup with a memory controller can be made here (needs root)";
  EXPECT_EQ((*values)[0], gib);
  EXPECT_EQ((*values)[1], std::min(gib, herd::kernels::this_process_memory().physical));
}

} // namespace
