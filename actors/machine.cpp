// The machine this process runs on; see machine.hpp.
#include "actors/machine.hpp"

#include <algorithm>
#include <fstream>
#include <sched.h>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <vector>

namespace herd::actors {

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

/// The tightest quota of `path` (relative to `mount`) and every ancestor up to `mount` itself:
/// a limit anywhere above a cgroup holds for it too. Inside a container the path names the
/// container's cgroup on the host while `mount` shows it at its root, so the walk also reaches
/// that root.
int tightest_quota(const fs::path& mount, const std::string& path) {
  int tightest = 0;
  fs::path relative = fs::path(path).relative_path();
  while (true) {
    const int quota = quota_in(mount / relative);
    if (quota > 0)
      tightest = tightest > 0 ? std::min(tightest, quota) : quota;
    if (relative.empty())
      break;
    relative = relative.parent_path();
  }
  return tightest;
}

bool names_cpu_controller(const std::string& controllers) {
  std::istringstream list(controllers);
  for (std::string controller; std::getline(list, controller, ',');)
    if (controller == "cpu")
      return true;
  return false;
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
  int tightest = 0;
  const auto take = [&tightest](int quota) {
    if (quota > 0)
      tightest = tightest > 0 ? std::min(tightest, quota) : quota;
  };
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
      take(tightest_quota(cgroup_root, path));             // v2 mounted at the root
      take(tightest_quota(cgroup_root / "unified", path)); // v2 beside v1 (hybrid)
    } else if (names_cpu_controller(controllers)) {
      // v1: mounted under the controllers' names ("cpu,cpuacct"), often also linked as "cpu".
      take(tightest_quota(cgroup_root / controllers, path));
      if (controllers != "cpu")
        take(tightest_quota(cgroup_root / "cpu", path));
    }
  }
  return tightest;
}

core_budget this_process_cores() {
  core_budget budget;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  budget.affinity = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0
                        ? std::max(1, CPU_COUNT(&cpus))
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  budget.quota = cgroup_core_quota(text.str(), "/sys/fs/cgroup");
  return budget;
}

int usable_cores() {
  return std::max(1, this_process_cores().usable());
}

} // namespace herd::actors
