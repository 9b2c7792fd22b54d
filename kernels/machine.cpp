// The machine this process runs on; see machine.hpp.
#include "kernels/machine.hpp"

#include <algorithm>
#include <fstream>
#include <sched.h>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <vector>

namespace herd::kernels {

namespace {

namespace fs = std::filesystem;

/// The first whitespace-separated words of `file`; none if it cannot be read.
std::vector<std::string> words_of(const fs::path& file, std::size_t count) {
  std::ifstream in(file);
  std::vector<std::string> words;
  for (std::string word; words.size() < count && in >> word;)
    words.push_back(word);
  return words;
}

/// ceil(quota / period) for a positive quota and period, else 0 (no limit).
int cores_of(const std::string& quota, const std::string& period) {
  try {
    const long long q = std::stoll(quota);
    const long long p = std::stoll(period);
    if (q <= 0 || p <= 0)
      return 0;
    return static_cast<int>(std::min<long long>((q + p - 1) / p, 1 << 20));
  } catch (const std::exception&) { // "max", or not a number: no limit
    return 0;
  }
}

/// The quota of one cgroup directory: v2's "cpu.max" ("QUOTA PERIOD" or "max PERIOD"), else v1's
/// cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us. 0: none.
int quota_in(const fs::path& directory) {
  const auto v2 = words_of(directory / "cpu.max", 2);
  if (v2.size() == 2)
    return cores_of(v2[0], v2[1]);
  const auto quota = words_of(directory / "cpu.cfs_quota_us", 1);
  const auto period = words_of(directory / "cpu.cfs_period_us", 1);
  if (quota.size() == 1 && period.size() == 1)
    return cores_of(quota[0], period[0]);
  return 0;
}

/// The memory limit of one cgroup directory: v2's "memory.max" (bytes, or "max"), else v1's
/// memory.limit_in_bytes, whose "no limit" is the largest page-aligned 63-bit number. 0: none.
std::uint64_t memory_limit_in(const fs::path& directory) {
  constexpr std::uint64_t unlimited_v1 = std::uint64_t{1} << 62; // anything this large
  for (const char* file : {"memory.max", "memory.limit_in_bytes"}) {
    const auto value = words_of(directory / file, 1);
    if (value.size() != 1)
      continue;
    try {
      const auto bytes = std::stoull(value[0]);
      return bytes < unlimited_v1 ? bytes : 0;
    } catch (const std::exception&) { // "max": no limit
      return 0;
    }
  }
  return 0;
}

/// The smaller of two limits where 0 means none.
template <class Number>
Number tighter(Number a, Number b) {
  return a == 0 ? b : b == 0 ? a : std::min(a, b);
}

/// The tightest limit (`read` of a directory; 0: none) of `path` (relative to `mount`) and every
/// ancestor up to `mount` itself: a limit anywhere above a cgroup holds for it too. Inside a
/// container the path names the container's cgroup on the host while `mount` shows it at its
/// root, so the walk also reaches that root.
template <class Read>
auto tightest_in(const fs::path& mount, const std::string& path, const Read& read) {
  decltype(read(mount)) tightest = 0;
  fs::path relative = fs::path(path).relative_path();
  while (true) {
    tightest = tighter(tightest, read(mount / relative));
    if (relative.empty())
      break;
    relative = relative.parent_path();
  }
  return tightest;
}

bool names_controller(const std::string& controllers, const std::string& wanted) {
  std::istringstream list(controllers);
  for (std::string controller; std::getline(list, controller, ',');)
    if (controller == wanted)
      return true;
  return false;
}

/// The tightest limit `read` finds among the cgroups /proc/self/cgroup's text names: cgroup v2's
/// (mounted at the root, or under "unified" beside v1) and v1's `controller` (mounted under its
/// controllers' names, "cpu,cpuacct", often also linked as the controller's own).
template <class Read>
auto tightest_limit(const std::string& proc_self_cgroup, const fs::path& cgroup_root,
                    const std::string& controller, const Read& read) {
  decltype(read(cgroup_root)) tightest = 0;
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // "ID:CONTROLLERS:PATH"; cgroup v2's one line is "0::PATH".
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos)
      continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      tightest = tighter(tightest, tightest_in(cgroup_root, path, read));
      tightest = tighter(tightest, tightest_in(cgroup_root / "unified", path, read));
    } else if (names_controller(controllers, controller)) {
      tightest = tighter(tightest, tightest_in(cgroup_root / controllers, path, read));
      if (controllers != controller)
        tightest = tighter(tightest, tightest_in(cgroup_root / controller, path, read));
    }
  }
  return tightest;
}

std::string proc_self_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0')
    return "localhost";
  return name;
}

std::string machine_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

int cgroup_core_quota(const std::string& proc_self_cgroup, const fs::path& cgroup_root) {
  return tightest_limit(proc_self_cgroup, cgroup_root, "cpu", quota_in);
}

std::uint64_t cgroup_memory_limit(const std::string& proc_self_cgroup,
                                  const fs::path& cgroup_root) {
  return tightest_limit(proc_self_cgroup, cgroup_root, "memory", memory_limit_in);
}

core_budget this_process_cores() {
  core_budget budget;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  budget.affinity = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0
                        ? std::max(1, CPU_COUNT(&cpus))
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  budget.quota = cgroup_core_quota(proc_self_cgroup(), "/sys/fs/cgroup");
  return budget;
}

int usable_cores() {
  return std::max(1, this_process_cores().usable());
}

memory_budget this_process_memory() {
  memory_budget budget;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_bytes = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_bytes > 0)
    budget.physical = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_bytes);
  budget.limit = cgroup_memory_limit(proc_self_cgroup(), "/sys/fs/cgroup");
  return budget;
}

} // namespace herd::kernels
