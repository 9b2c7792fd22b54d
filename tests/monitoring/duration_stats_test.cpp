// duration_stats: exact count/total/min/max/mean, quantiles within the histogram's 2%.
#include "monitoring/duration_stats.hpp"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <random>
#include <vector>

namespace {

using herd::monitoring::duration_stats;

TEST(duration_stats, empty_summary_is_all_zero) {
  const duration_stats stats;
  EXPECT_EQ(stats.count(), 0u);
  EXPECT_EQ(stats.mean(), 0.0);
  EXPECT_EQ(stats.median(), 0.0);
  EXPECT_EQ(stats.max(), 0.0);
}

TEST(duration_stats, exact_moments_and_quantiles_within_two_percent) {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> step_time(std::log(0.01), 0.5);
  duration_stats stats;
  std::vector<double> values;
  for (int i = 0; i < 20000; ++i) {
    values.push_back(step_time(rng));
    stats.add(values.back());
  }
  std::sort(values.begin(), values.end());
  double total = 0.0;
  for (double value : values)
    total += value;
  EXPECT_EQ(stats.count(), values.size());
  EXPECT_NEAR(stats.total(), total, 1e-9 * total);
  EXPECT_EQ(stats.min(), values.front());
  EXPECT_EQ(stats.max(), values.back());
  for (double q : {0.1, 0.5, 0.9, 0.99}) {
    const double exact = values[static_cast<std::size_t>(std::ceil(q * values.size())) - 1];
    EXPECT_NEAR(stats.quantile(q), exact, 0.02 * exact) << "q=" << q;
  }
}

TEST(duration_stats, spread_within_two_percent_of_the_exact_one) {
  std::mt19937_64 rng(5);
  // Step times of a variable-length workload: most short, a long tail.
  std::lognormal_distribution<double> step_time(std::log(0.02), 0.8);
  duration_stats stats;
  std::vector<double> values;
  for (int i = 0; i < 20000; ++i) {
    values.push_back(step_time(rng));
    stats.add(values.back());
  }
  double mean = 0.0;
  for (double value : values)
    mean += value;
  mean /= static_cast<double>(values.size());
  double squares = 0.0;
  for (double value : values)
    squares += (value - mean) * (value - mean);
  const double exact = std::sqrt(squares / static_cast<double>(values.size()));
  EXPECT_NEAR(stats.stddev(), exact, 0.02 * exact);
  EXPECT_NEAR(stats.coefficient_of_variation(), exact / mean, 0.02 * exact / mean);
}

TEST(duration_stats, durations_all_alike_have_no_spread) {
  duration_stats stats;
  EXPECT_EQ(stats.coefficient_of_variation(), 0.0) << "empty";
  for (int i = 0; i < 50; ++i)
    stats.add(0.004);
  EXPECT_NEAR(stats.stddev(), 0.0, 1e-12);
  EXPECT_NEAR(stats.coefficient_of_variation(), 0.0, 1e-12);
}

TEST(duration_stats, histogram_bars_hold_every_sample_from_the_smallest_to_the_largest) {
  duration_stats stats;
  // 30 samples near 1 ms, 10 near 10 ms, none between: the bars between are there and empty.
  for (int i = 0; i < 30; ++i)
    stats.add(0.001 * (1.0 + 0.0005 * i));
  for (int i = 0; i < 10; ++i)
    stats.add(0.010 * (1.0 + 0.001 * i));
  const auto bars = stats.histogram(10);
  ASSERT_GE(bars.size(), 3u);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    total += bars[i].count;
    EXPECT_NEAR(bars[i].upper_seconds / bars[i].lower_seconds, std::pow(1.02, 10), 1e-9);
    if (i > 0) {
      EXPECT_DOUBLE_EQ(bars[i].lower_seconds, bars[i - 1].upper_seconds);
    }
  }
  EXPECT_EQ(total, 40u);
  EXPECT_LE(bars.front().lower_seconds, 0.001);
  EXPECT_GT(bars.front().upper_seconds, 0.001);
  EXPECT_EQ(bars.front().count, 30u);
  EXPECT_LE(bars.back().lower_seconds, 0.01001);
  EXPECT_EQ(bars.back().count, 10u);
  EXPECT_EQ(bars[bars.size() / 2].count, 0u);
  EXPECT_TRUE(duration_stats().histogram().empty());
}

TEST(duration_stats, single_value_quantiles_are_that_value) {
  duration_stats stats;
  stats.add(0.25);
  EXPECT_EQ(stats.median(), 0.25);
  EXPECT_EQ(stats.quantile(0.9), 0.25);
}

TEST(duration_stats, merge_equals_adding_everything_to_one) {
  duration_stats a;
  duration_stats b;
  duration_stats both;
  for (int i = 1; i <= 100; ++i) {
    (i % 2 ? a : b).add(i * 0.001);
    both.add(i * 0.001);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), both.count());
  EXPECT_DOUBLE_EQ(a.total(), both.total());
  EXPECT_EQ(a.median(), both.median());
  EXPECT_EQ(a.min(), both.min());
  EXPECT_EQ(a.max(), both.max());
}

TEST(duration_stats, extreme_values_land_in_the_edge_buckets) {
  duration_stats stats;
  stats.add(-1.0);
  stats.add(1e-9);
  stats.add(1e6);
  EXPECT_EQ(stats.min(), 0.0);
  EXPECT_EQ(stats.max(), 1e6);
  EXPECT_EQ(stats.quantile(1.0), 1e6);
}

} // namespace
