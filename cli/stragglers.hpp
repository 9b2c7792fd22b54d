// The workers a run's summary and report name as stragglers: those slower all along, by their
// mean step against the other live workers'. No CAF.
#pragma once

#include "herd/run_summary.hpp"

#include <string>
#include <vector>

namespace herd::cli {

/// A worker is a straggler at this many times the median of the others' mean steps.
inline constexpr double straggler_ratio = 1.5;

struct straggler_found {
  const actors::worker_summary* worker = nullptr;
  double others_median = 0.0; // seconds: the median of the other live workers' mean steps
  double ratio() const { return worker->step_seconds.mean / others_median; }
};

/// The workers slower all along, slowest first: each live worker whose mean step is at least
/// straggler_ratio times the median of the other live workers' means. Several when several are
/// slow, never a majority; none with fewer than two live workers. The mean, not the median:
/// delays that strike workers at random leave every mean alike, but where they strike half the
/// steps each worker's median falls on the delayed or the undelayed steps by chance.
std::vector<straggler_found> stragglers_of(const actors::run_summary& s);

/// The summary's straggler lines: "worker 3 (node vm-b): mean step 3.50x the others' (3.50 ms
/// against 1.00 ms); 89% of its steps were late" for the first four, and one line naming the
/// rest by number.
std::vector<std::string> straggler_lines(const actors::run_summary& s);

} // namespace herd::cli
