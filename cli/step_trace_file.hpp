// herd simulate's --step-trace: the per-worker step-time histograms of a herd train --report
// (per_worker[].step_histogram), read as the step times the simulated workers replay.
#pragma once

#include "sim/step_trace.hpp"

#include <memory>
#include <string>

namespace herd::cli {

/// Reads `path`, a herd train --report. Throws std::invalid_argument "--step-trace PATH: why"
/// (not a regular file, not JSON, no per_worker list, a worker without a step_histogram, a bar
/// that is not {lower_seconds, upper_seconds, count}, or a trace sim::step_trace refuses).
std::shared_ptr<const sim::step_trace> load_step_trace(const std::string& path);

} // namespace herd::cli
