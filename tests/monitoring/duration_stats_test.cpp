// duration_stats: exact count/total/min/max/mean, quantiles within the histogram's 2%.
#include "monitoring/duration_stats.hpp"

#include <algorithm>
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
