// What this process knows about the machine it runs on: its name, which processes share it, and
// how many of its cores and how much of its memory this process may use, container limits (cgroup
// quotas) included. Plain C++.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace herd::kernels {

/// This machine's host name ("localhost" if it has none).
std::string host_name();

/// Names this machine as long as it runs (its kernel's boot id): processes that report the same
/// share its cores. "" when the kernel does not say.
std::string machine_id();

/// The cores this process may use: those its CPU affinity allows and, where a cgroup CPU quota
/// (a container's CPU limit) allows less time than that, the quota's cores rounded up.
struct core_budget {
  int affinity = 1; // CPUs the scheduler may run this process on, at least 1
  int quota = 0;    // cores' worth of CPU time the cgroup quota allows, rounded up; 0: no quota
  /// min(affinity, quota) where a quota is set, else affinity.
  int usable() const { return quota > 0 && quota < affinity ? quota : affinity; }
  /// Whether the quota, not the affinity, is the limit.
  bool quota_limited() const { return quota > 0 && quota < affinity; }
};

/// This process's budget: the affinity from sched_getaffinity, the quota from its cgroups.
core_budget this_process_cores();

/// The tightest CPU quota in cores (rounded up) of the cgroups `proc_self_cgroup` (the text of
/// /proc/self/cgroup) names and their ancestors, read under `cgroup_root` (/sys/fs/cgroup):
/// cgroup v2's cpu.max and v1's cpu.cfs_quota_us over cpu.cfs_period_us. 0 when none is set or
/// none can be read.
int cgroup_core_quota(const std::string& proc_self_cgroup,
                      const std::filesystem::path& cgroup_root);

/// this_process_cores().usable(), at least 1.
int usable_cores();

/// The memory this process may use: the machine's, or less where a cgroup limits it (a
/// container's memory limit).
struct memory_budget {
  std::uint64_t physical = 0; // the machine's memory in bytes; 0: unknown
  std::uint64_t limit = 0;    // the tightest cgroup memory limit in bytes; 0: none
  /// min(physical, limit), of those known; 0 when neither is.
  std::uint64_t usable() const {
    if (limit > 0 && (physical == 0 || limit < physical))
      return limit;
    return physical;
  }
  /// Whether the cgroup limit, not the machine, is the bound.
  bool limited() const { return limit > 0 && (physical == 0 || limit < physical); }
};

/// This process's memory: the physical memory from sysconf, the limit from its cgroups.
memory_budget this_process_memory();

/// The tightest memory limit in bytes of the cgroups `proc_self_cgroup` names and their
/// ancestors, read under `cgroup_root`: cgroup v2's memory.max and v1's memory.limit_in_bytes
/// (whose "no limit" is a number near 2^63). 0 when none is set or none can be read.
std::uint64_t cgroup_memory_limit(const std::string& proc_self_cgroup,
                                  const std::filesystem::path& cgroup_root);

} // namespace herd::kernels
