// Summary statistics of a stream of durations (step times, wait times) in constant memory:
// count, total, min, max, mean, and quantiles read off a log-spaced histogram (buckets 2% wide,
// so a quantile is within 2% of the true one), the spread read off the same histogram, whatever
// the length of the run.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace herd::monitoring {

class duration_stats {
public:
  /// Records one duration in seconds; negative values count as 0.
  void add(double seconds);

  std::uint64_t count() const { return count_; }
  double total() const { return total_; }
  double mean() const { return count_ == 0 ? 0.0 : total_ / static_cast<double>(count_); }
  double min() const { return count_ == 0 ? 0.0 : min_; }
  double max() const { return count_ == 0 ? 0.0 : max_; }
  /// The q-quantile (q in [0, 1]), within 2%, clamped to [min(), max()]; 0 when empty.
  double quantile(double q) const;
  double median() const { return quantile(0.5); }
  /// The standard deviation, each sample taken at its bucket's middle (clamped to [min(), max()])
  /// against the exact mean: within about 2% of the true one; 0 when empty.
  double stddev() const;
  /// The coefficient of variation, stddev() / mean(): how much the durations vary against their
  /// size (0 when they are all alike; 0 when empty or when the mean is 0).
  double coefficient_of_variation() const;

  /// One bar of histogram(): samples in [lower_seconds, upper_seconds).
  struct bar {
    double lower_seconds = 0.0;
    double upper_seconds = 0.0;
    std::uint64_t count = 0;
  };
  /// The samples in bars `merge` buckets wide (each 1.02^merge times its lower edge), from the
  /// bar of the smallest sample to that of the largest, empty bars between included; nothing
  /// when empty. merge = 10: bars about 22% wide.
  std::vector<bar> histogram(std::size_t merge = 10) const;

  /// Adds another summary's samples to this one.
  void merge(const duration_stats& other);

  /// Every field, for checkpoints (a cereal archive; the caller includes cereal's types).
  template <class Archive>
  void serialize(Archive& archive) {
    archive(buckets_, count_, total_, min_, max_);
  }

private:
  // Buckets cover 1 us .. ~10^4 s at ratio 1.02 (1160 buckets); bucket 0 also holds anything
  // shorter, the last anything longer.
  static constexpr double smallest_seconds = 1e-6;
  static constexpr double bucket_ratio = 1.02;
  static constexpr std::size_t bucket_count = 1160;
  static std::size_t bucket_of(double seconds);
  static double bucket_middle(std::size_t bucket);

  std::array<std::uint64_t, bucket_count> buckets_{};
  std::uint64_t count_ = 0;
  double total_ = 0.0;
  double min_ = 0.0;
  double max_ = 0.0;
};

} // namespace herd::monitoring
