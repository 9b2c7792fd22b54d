// Straggler scores over a recent window; see straggler_stats.hpp.
#include "monitoring/straggler_stats.hpp"

#include "kernels/check.hpp"

#include <algorithm>

namespace herd::monitoring {

namespace {

// Bounds memory for a very fast worker in a long window.
constexpr std::size_t max_samples_per_worker = 4096;

double median_of(std::vector<double> values) {
  const std::size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle),
                   values.end());
  if (values.size() % 2 == 1)
    return values[middle];
  const double upper = values[middle];
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle));
  return 0.5 * (lower + upper);
}

} // namespace

straggler_stats::straggler_stats(int workers, double window_seconds)
    : window_seconds_(window_seconds) {
  HERD_CHECK_GE(workers, 1);
  HERD_CHECK(window_seconds > 0.0, "window of " << window_seconds << " s");
  workers_.resize(static_cast<std::size_t>(workers));
}

void straggler_stats::step_finished(int worker, double now_seconds, double step_seconds) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < workers_.size(),
             "worker " << worker << " of " << workers_.size());
  auto& state = workers_[static_cast<std::size_t>(worker)];
  if (!state.live)
    return;
  state.recent.push_back({now_seconds, step_seconds});
  if (state.recent.size() > max_samples_per_worker)
    state.recent.pop_front();
  forget_before(state, now_seconds);
}

void straggler_stats::worker_lost(int worker) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < workers_.size(),
             "worker " << worker << " of " << workers_.size());
  auto& state = workers_[static_cast<std::size_t>(worker)];
  state.live = false;
  state.recent.clear();
  state.last_median.reset();
}

void straggler_stats::worker_joined(int worker) {
  HERD_CHECK(worker >= 0 && static_cast<std::size_t>(worker) < workers_.size(),
             "worker " << worker << " of " << workers_.size());
  workers_[static_cast<std::size_t>(worker)].live = true;
}

void straggler_stats::forget_before(worker_state& state, double now_seconds) const {
  while (!state.recent.empty() && state.recent.front().at < now_seconds - window_seconds_)
    state.recent.pop_front();
}

std::optional<double> straggler_stats::recent_median(int worker, double now_seconds) const {
  const auto& state = workers_.at(static_cast<std::size_t>(worker));
  std::vector<double> times;
  for (const auto& step : state.recent)
    if (step.at >= now_seconds - window_seconds_)
      times.push_back(step.seconds);
  if (times.empty())
    return std::nullopt;
  return median_of(std::move(times));
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
  std::vector<double> medians;
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    auto& state = workers_[i];
    if (!state.live)
      continue;
    forget_before(state, now_seconds);
    if (auto median = recent_median(static_cast<int>(i), now_seconds))
      state.last_median = median;
    if (state.last_median)
      medians.push_back(*state.last_median);
  }
  if (medians.empty())
    return result;
  std::sort(medians.begin(), medians.end());
  // Each worker against the others: against a median that included it, a worker could never
  // score 2 with one other worker (it is half of their mean), nor as one of a slow half.
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    if (!workers_[i].live || !workers_[i].last_median)
      continue;
    const double mine = *workers_[i].last_median;
    const auto place = static_cast<std::size_t>(
        std::lower_bound(medians.begin(), medians.end(), mine) - medians.begin());
    const double others = medians.size() == 1 ? mine : median_without(medians, place);
    if (others <= 0.0)
      continue;
    result.score[i] = mine / others;
    result.imbalance_ratio = std::max(result.imbalance_ratio.value_or(0.0), *result.score[i]);
  }
  return result;
}

} // namespace herd::monitoring
