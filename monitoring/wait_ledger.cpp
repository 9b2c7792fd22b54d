// Real waiting against a barrier's, step number by step number; see wait_ledger.hpp.
//
// How open_ is kept: besides the records of open steps it holds "settled markers" (records with
// empty vectors), so that a late or repeated report for a settled step is recognised and ignored
// rather than reopening it. The first entry is always a marker whose key W says every step up to
// W is settled (step 0 at the start); markers above W are steps that settled ahead of an earlier
// one, and they fold into W once the steps below them settle. So the map holds only the steps
// in flight, not the run's history.
#include "monitoring/wait_ledger.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace herd::monitoring {

namespace {

// Templates because step_record is private to wait_ledger.

template <class Record>
bool is_settled_marker(const Record& record) {
  return record.compute.empty();
}

/// The reports `record` still waits for: the empty compute and wait slots of the workers that
/// count for `step`; none when no worker counts for it (then there is nothing to compare).
template <class Record, class Counts>
std::optional<std::size_t> reports_missing(const Record& record, std::uint64_t step,
                                           Counts counts) {
  bool anyone = false;
  std::size_t missing = 0;
  for (std::size_t worker = 0; worker < record.compute.size(); ++worker) {
    if (!counts(worker, step))
      continue;
    missing += static_cast<std::size_t>(!record.compute[worker]) +
               static_cast<std::size_t>(!record.waited[worker]);
    anyone = true;
  }
  if (!anyone)
    return std::nullopt;
  return missing;
}

/// The record a report for `step` goes into, opened if new; null when the report is to be
/// ignored (the worker does not count for that step, or the step is already settled).
template <class Records, class Counts>
auto* record_for_report(Records& open, std::size_t workers, int worker, std::uint64_t step,
                        Counts counts) {
  using record_type = typename Records::mapped_type;
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < workers,
             "report from worker " << worker << " to a ledger of " << workers << " workers");
  HERD_CHECK(step >= 1, "step numbers start at 1, got " << step);
  record_type* none = nullptr;
  if (!counts(static_cast<std::size_t>(worker), step) || step <= open.begin()->first)
    return none;
  auto [at, opened] = open.try_emplace(step);
  if (opened) {
    at->second.compute.resize(workers);
    at->second.waited.resize(workers);
  } else if (is_settled_marker(at->second)) {
    return none;
  }
  return &at->second;
}

std::size_t checked_worker_count(int workers) {
  HERD_CHECK_GE(workers, 1);
  return static_cast<std::size_t>(workers);
}

void check_seconds(double seconds, const char* what) {
  HERD_CHECK(std::isfinite(seconds) && seconds >= 0.0,
             what << " must be a finite number of seconds >= 0, got " << seconds);
}

} // namespace

wait_ledger::wait_ledger(int workers)
    : live_(checked_worker_count(workers), true), since_(live_.size(), 0),
      joining_(live_.size(), false) {
  settled_.waited.assign(live_.size(), 0.0);
  settled_.barrier.assign(live_.size(), 0.0);
  open_.emplace(0, step_record{}); // the watermark: "every step up to 0 is settled"
}

bool wait_ledger::counts(std::size_t worker, std::uint64_t step) const {
  return live_[worker] && step >= since_[worker];
}

void wait_ledger::step_finished(int worker, std::uint64_t step, double compute_seconds) {
  check_seconds(compute_seconds, "compute_seconds");
  if (worker >= 0 && static_cast<std::size_t>(worker) < joining_.size() &&
      joining_[static_cast<std::size_t>(worker)]) { // its first step since it came back
    joining_[static_cast<std::size_t>(worker)] = false;
    live_[static_cast<std::size_t>(worker)] = true;
    since_[static_cast<std::size_t>(worker)] = step;
    forget_missing_counts();
  }
  auto counted = [this](std::size_t who, std::uint64_t at) { return counts(who, at); };
  auto* record = record_for_report(open_, live_.size(), worker, step, counted);
  if (record == nullptr)
    return;
  record_report(step, *record, record->compute[static_cast<std::size_t>(worker)], compute_seconds);
}

void wait_ledger::waited_after(int worker, std::uint64_t step, double seconds) {
  check_seconds(seconds, "seconds waited");
  auto counted = [this](std::size_t who, std::uint64_t at) { return counts(who, at); };
  auto* record = record_for_report(open_, live_.size(), worker, step, counted);
  if (record == nullptr)
    return;
  record_report(step, *record, record->waited[static_cast<std::size_t>(worker)], seconds);
}

void wait_ledger::record_report(std::uint64_t step, step_record& record,
                                std::optional<double>& slot, double seconds) {
  if (slot) // a repeated report: the first one stands
    return;
  slot = seconds;
  if (record.missing) {
    --*record.missing; // the reporting worker counts for the step (record_for_report)
  } else {
    auto counted = [this](std::size_t who, std::uint64_t at) { return counts(who, at); };
    record.missing = reports_missing(record, step, counted);
  }
  if (record.missing == std::size_t{0})
    settle(step);
}

void wait_ledger::forget_missing_counts() {
  for (auto& entry : open_)
    entry.second.missing.reset();
}

void wait_ledger::worker_joined(int worker) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < live_.size(),
             "worker " << worker << " joined a ledger of " << live_.size() << " workers");
  if (!live_[static_cast<std::size_t>(worker)])
    joining_[static_cast<std::size_t>(worker)] = true;
}

void wait_ledger::worker_lost(int worker) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < live_.size(),
             "worker " << worker << " lost from a ledger of " << live_.size() << " workers");
  joining_[static_cast<std::size_t>(worker)] = false;
  if (!live_[static_cast<std::size_t>(worker)])
    return;
  live_[static_cast<std::size_t>(worker)] = false;
  // Settling edits open_, so collect first; ascending, so the watermark advances as it goes.
  auto counted = [this](std::size_t who, std::uint64_t at) { return counts(who, at); };
  std::vector<std::uint64_t> now_complete;
  for (auto& [step, record] : open_) {
    if (is_settled_marker(record))
      continue;
    record.missing = reports_missing(record, step, counted);
    if (record.missing == std::size_t{0})
      now_complete.push_back(step);
  }
  for (auto step : now_complete)
    settle(step);
  if (std::none_of(live_.begin(), live_.end(), [](bool live) { return live; })) {
    // Nobody is left to report, so no open step can ever settle.
    open_.erase(std::next(open_.begin()), open_.end());
  }
}

wait_ledger::comparison wait_ledger::compare() const {
  return settled_;
}

void wait_ledger::settle(std::uint64_t step) {
  auto at = open_.find(step);
  auto& record = at->second;
  double slowest = 0.0;
  for (std::size_t worker = 0; worker < live_.size(); ++worker)
    if (counts(worker, step))
      slowest = std::max(slowest, *record.compute[worker]);
  for (std::size_t worker = 0; worker < live_.size(); ++worker) {
    if (!counts(worker, step))
      continue;
    const double waited = *record.waited[worker];
    const double barrier = slowest - *record.compute[worker];
    settled_.waited[worker] += waited;
    settled_.barrier[worker] += barrier;
    settled_.waited_total += waited;
    settled_.barrier_total += barrier;
  }
  ++settled_.steps_compared;
  at->second = step_record{}; // now a settled marker
  // Fold markers that directly follow the watermark into it.
  for (auto next = std::next(open_.begin());
       next != open_.end() && next->first == open_.begin()->first + 1 &&
       is_settled_marker(next->second);
       next = std::next(open_.begin()))
    open_.erase(open_.begin());
}

} // namespace herd::monitoring
