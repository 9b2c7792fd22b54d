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
  const double typical = median_of(medians);
  if (typical <= 0.0)
    return result;
  for (std::size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i].live && workers_[i].last_median)
      result.score[i] = *workers_[i].last_median / typical;
  result.imbalance_ratio = *std::max_element(medians.begin(), medians.end()) / typical;
  return result;
}

} // namespace herd::monitoring
