// The process's own resources under the names every Prometheus client library exports
// (process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds, ...), read from
// /proc at each scrape: an operator sees which Herd process burns the CPU or grows without
// running node_exporter's process collector beside it. Linux only; plain functions.
#pragma once

#include "herd/metrics.hpp"

#include <vector>

namespace herd::monitoring {

/// The families, read now, without labels (the scrape adds `job` and `instance`). A source that
/// cannot be read (a /proc mounted without this process's entries) leaves its families out.
std::vector<metric_family> process_families();

} // namespace herd::monitoring
