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
