// Straggler scores over a recent window; see straggler_stats.hpp.
#include "monitoring/straggler_stats.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>

namespace herd::monitoring {

namespace {

// A worker's typical time is over its last 1024 steps at most (in the window), whose middle half
// is still 512 steps: where half of a worker's steps are delayed, the share of delayed ones among
// 1024 varies by 1.6% (one standard deviation), which moves its typical time by about 5% (steps
// of 0.9 and 6.4 ms). The scores of 256 workers with full windows then take about 5 ms to
// compute at every progress tick (four a second, in the coordinator); 4096 steps each, which a
// worker with 1 ms steps has after 4 s, took 60 ms.
constexpr std::size_t max_samples_per_worker = 1024;

// A step still running counts once it has taken this many times the worker's typical step, and
// at least this long: a hang, not a step the host was slow to schedule (which the middle half
// of the finished steps leaves out too).
constexpr double hang_factor = 4.0;
constexpr double hang_seconds = 1.0;

// The mean of the middle half of `values` (the interquartile mean), each value weighted by how
// much of its rank [i, i + 1) lies in [n/4, 3n/4]: a quarter of outlying steps at either end
// leaves it alone, as a median would; unlike a median, it does not jump from one mode to the
// other where half of a worker's steps are delayed (random imbalance with k = P / 2).
double interquartile_mean(std::vector<double>& values) {
  const std::size_t count = values.size();
  const double n = static_cast<double>(count);
  const double from = n / 4.0;
  const double to = 3.0 * n / 4.0;
  // Only the ranks in [first, last] have a weight, and only the two ends can have less than 1:
  // those two are put in place, and the ones between, in any order, are summed with weight 1.
  const auto first = static_cast<std::size_t>(from);
  const auto last = std::min(count - 1, static_cast<std::size_t>(std::ceil(to)) - 1);
  const auto at = [&values](std::size_t rank) { return values.begin() + static_cast<long>(rank); };
  std::nth_element(values.begin(), at(first), values.end());
  if (last > first)
    std::nth_element(at(first + 1), at(last), values.end());
  auto weight = [from, to](std::size_t rank) {
    const double r = static_cast<double>(rank);
    return std::max(0.0, std::min(r + 1.0, to) - std::max(r, from));
  };
  double sum = weight(first) * values[first];
  if (last > first) {
    sum += weight(last) * values[last];
    for (std::size_t rank = first + 1; rank < last; ++rank)
      sum += values[rank];
  }
  return sum / (to - from);
}

} // namespace

straggler_stats::straggler_stats(int workers, double window_seconds)
    : window_seconds_(window_seconds) {
  HERD_CHECK_GE(workers, 1);
  HERD_CHECK(window_seconds > 0.0, "window of " << window_seconds << " s");
  workers_.resize(static_cast<std::size_t>(workers));
}

void straggler_stats::step_finished(int worker, double now_seconds, double step_seconds,
                                    bool late) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < workers_.size(),
             "worker " << worker << " of " << workers_.size());
  auto& state = workers_[static_cast<std::size_t>(worker)];
  if (!state.live)
    return;
  state.recent.push_back({now_seconds, step_seconds});
  ++state.steps;
  state.last_end = now_seconds;
  state.last_late = late;
  if (state.recent.size() > max_samples_per_worker)
    state.recent.pop_front();
  forget_before(state, now_seconds);
}

void straggler_stats::result_applied(int worker, double now_seconds) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < workers_.size(),
             "worker " << worker << " of " << workers_.size());
  workers_[static_cast<std::size_t>(worker)].last_result = now_seconds;
}

std::optional<double> straggler_stats::worker_state::computing_since() const {
  if (!last_end)
    return std::nullopt;
  if (last_late)
    return last_end;
  if (last_result && *last_result >= *last_end)
    return last_result;
  return std::nullopt;
}

void straggler_stats::worker_lost(int worker) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < workers_.size(),
             "worker " << worker << " of " << workers_.size());
  auto& state = workers_[static_cast<std::size_t>(worker)];
  state.live = false;
  state.recent.clear();
  state.last_typical.reset();
}

void straggler_stats::worker_joined(int worker) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < workers_.size(),
             "worker " << worker << " of " << workers_.size());
  // It starts level with the most advanced live worker: behind them it would count as computing.
  std::uint64_t most = 0;
  for (const auto& other : workers_)
    if (other.live)
      most = std::max(most, other.steps);
  auto& state = workers_[static_cast<std::size_t>(worker)];
  state.live = true;
  state.steps = most;
  state.last_end.reset();
  state.last_result.reset();
}

void straggler_stats::forget_before(worker_state& state, double now_seconds) const {
  while (!state.recent.empty() && state.recent.front().at < now_seconds - window_seconds_)
    state.recent.pop_front();
}

std::optional<double> straggler_stats::recent_typical(int worker, double now_seconds) const {
  const auto& state = workers_.at(static_cast<std::size_t>(worker));
  auto& times = scratch_; // one buffer for every worker and every tick
  times.clear();
  for (const auto& step : state.recent)
    if (step.at >= now_seconds - window_seconds_)
      times.push_back(step.seconds);
  if (times.empty())
    return std::nullopt;
  return interquartile_mean(times);
}

// The median of `sorted` without its element at `skip`: the rank r of the others is sorted[r]
// below `skip` and sorted[r + 1] from it on, so no copy is made.
double median_without(const std::vector<double>& sorted, std::size_t skip) {
  const std::size_t n = sorted.size() - 1;
  auto at = [&](std::size_t rank) { return sorted[rank < skip ? rank : rank + 1]; };
  return n % 2 == 1 ? at(n / 2) : 0.5 * (at(n / 2 - 1) + at(n / 2));
}

straggler_stats::snapshot straggler_stats::compute(double now_seconds) {
  snapshot result;
  result.score.assign(workers_.size(), std::nullopt);
  std::uint64_t most_steps = 0;
  for (const auto& state : workers_)
    if (state.live)
      most_steps = std::max(most_steps, state.steps);
  // By worker: its typical time, or its current step's time so far where that is longer.
  std::vector<std::optional<double>> current(workers_.size());
  std::vector<double> typical; // of every live worker that has one
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    auto& state = workers_[i];
    if (!state.live)
      continue;
    forget_before(state, now_seconds);
    if (auto recent = recent_typical(static_cast<int>(i), now_seconds))
      state.last_typical = recent;
    if (!state.last_typical)
      continue;
    current[i] = state.last_typical;
    if (const auto began = state.computing_since(); began && state.steps < most_steps) {
      const double running = now_seconds - *began;
      if (running > hang_factor * *current[i] && running > hang_seconds)
        current[i] = running;
    }
    typical.push_back(*current[i]);
  }
  if (typical.empty())
    return result;
  std::sort(typical.begin(), typical.end());
  // Each worker against the others: against a median that included it, a worker could never
  // score 2 with one other worker (it is half of their mean), nor as one of a slow half.
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (!current[i])
      continue;
    const double mine = *current[i];
    const auto place = static_cast<std::size_t>(
        std::lower_bound(typical.begin(), typical.end(), mine) - typical.begin());
    const double others = typical.size() == 1 ? mine : median_without(typical, place);
    if (others <= 0.0)
      continue;
    result.score[i] = mine / others;
    result.imbalance_ratio = std::max(result.imbalance_ratio.value_or(0.0), *result.score[i]);
  }
  return result;
}

} // namespace herd::monitoring
