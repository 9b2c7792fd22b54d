// Constant-memory duration statistics; see duration_stats.hpp.
#include "monitoring/duration_stats.hpp"

#include <algorithm>
#include <cmath>

namespace herd::monitoring {

std::size_t duration_stats::bucket_of(double seconds) {
  if (seconds <= smallest_seconds)
    return 0;
  const double index = std::log(seconds / smallest_seconds) / std::log(bucket_ratio);
  return std::min(bucket_count - 1, static_cast<std::size_t>(index));
}

double duration_stats::bucket_middle(std::size_t bucket) {
  // Geometric middle of [ratio^b, ratio^(b+1)) * smallest.
  return smallest_seconds * std::pow(bucket_ratio, static_cast<double>(bucket) + 0.5);
}

void duration_stats::add(double seconds) {
  seconds = std::max(seconds, 0.0);
  if (count_ == 0) {
    min_ = seconds;
    max_ = seconds;
  } else {
    min_ = std::min(min_, seconds);
    max_ = std::max(max_, seconds);
  }
  ++count_;
  total_ += seconds;
  ++buckets_[bucket_of(seconds)];
}

double duration_stats::quantile(double q) const {
  if (count_ == 0)
    return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  // The smallest value with at least ceil(q * count) samples at or below it.
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (std::size_t bucket = 0; bucket < bucket_count; ++bucket) {
    seen += buckets_[bucket];
    if (seen >= rank) // the overflow bucket has no middle: its samples are above ~10^4 s
      return bucket + 1 == bucket_count ? max_ : std::clamp(bucket_middle(bucket), min_, max_);
  }
  return max_;
}

double duration_stats::stddev() const {
  if (count_ < 2)
    return 0.0;
  const double mean_seconds = mean();
  double squares = 0.0;
  for (std::size_t bucket = 0; bucket < bucket_count; ++bucket) {
    if (buckets_[bucket] == 0)
      continue;
    const double value =
        bucket + 1 == bucket_count ? max_ : std::clamp(bucket_middle(bucket), min_, max_);
    squares += static_cast<double>(buckets_[bucket]) * (value - mean_seconds) * (value - mean_seconds);
  }
  return std::sqrt(squares / static_cast<double>(count_));
}

double duration_stats::coefficient_of_variation() const {
  const double mean_seconds = mean();
  return mean_seconds > 0.0 ? stddev() / mean_seconds : 0.0;
}

std::vector<duration_stats::bar> duration_stats::histogram(std::size_t merge) const {
  merge = std::max<std::size_t>(merge, 1);
  std::vector<bar> bars;
  if (count_ == 0)
    return bars;
  const std::size_t first = bucket_of(min_) / merge;
  const std::size_t last = bucket_of(max_) / merge;
  for (std::size_t index = first; index <= last; ++index) {
    bar next;
    next.lower_seconds = smallest_seconds * std::pow(bucket_ratio, static_cast<double>(index * merge));
    next.upper_seconds =
        smallest_seconds * std::pow(bucket_ratio, static_cast<double>((index + 1) * merge));
    for (std::size_t bucket = index * merge; bucket < std::min(bucket_count, (index + 1) * merge);
         ++bucket)
      next.count += buckets_[bucket];
    bars.push_back(next);
  }
  return bars;
}

void duration_stats::merge(const duration_stats& other) {
  if (other.count_ == 0)
    return;
  if (count_ == 0) {
    *this = other;
    return;
  }
  for (std::size_t bucket = 0; bucket < bucket_count; ++bucket)
    buckets_[bucket] += other.buckets_[bucket];
  count_ += other.count_;
  total_ += other.total_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

} // namespace herd::monitoring
