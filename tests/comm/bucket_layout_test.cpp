// Where gradient buckets are cut: on the points where backward makes a layer final, rounded to the
// kernels' blocks, each bucket at least the asked size; and which bucket a float falls in.
#include "comm/bucket_layout.hpp"

#include <algorithm>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <random>
#include <stdexcept>

namespace {

using herd::comm::bucket_layout;
using testing::ElementsAre;

// The CNN preset's layers with parameters begin at these floats (conv 32, conv 64, dense 128,
// dense 10; 421,642 in all).
const std::size_t cnn_count = 421642;
const std::vector<std::size_t> cnn_points = {420352, 18816, 320};

TEST(bucket_layout, cuts_where_a_layer_begins_rounded_up_to_the_kernels_blocks) {
  // 1 MiB and 0.25 MiB: the dense 128 layer and the one after it (95% of the gradient) in one
  // bucket, final once that layer is; fixed cuts at multiples of 1 MiB would have put 62% of it
  // with the convolutions.
  EXPECT_THAT(bucket_layout::for_backward(cnn_count, 262144, cnn_points).cuts(),
              ElementsAre(19456));
  EXPECT_THAT(bucket_layout::for_backward(cnn_count, 65536, cnn_points).cuts(), ElementsAre(19456));
  // Small buckets: every layer on its own, each cut the first block boundary within the layer.
  EXPECT_THAT(bucket_layout::for_backward(cnn_count, 512, cnn_points).cuts(),
              ElementsAre(1024, 19456, 420864));
  // A bucket reaches down until it holds at least the asked floats: with 1,024 the dense 10
  // layer's 778 floats from 420,864 on are too few, and join the dense 128 layer's bucket.
  EXPECT_THAT(bucket_layout::for_backward(cnn_count, 1024, cnn_points).cuts(),
              ElementsAre(1024, 19456));
}

TEST(bucket_layout, without_points_inside_the_buffer_it_is_one_bucket) {
  const auto none = bucket_layout::for_backward(5000, 1024, {});
  EXPECT_FALSE(none.empty());
  EXPECT_EQ(none.size(), 1u);
  EXPECT_EQ(none.count(), 5000u);
  // 0, a point rounding to the end and one past it cut nothing.
  EXPECT_TRUE(bucket_layout::for_backward(5000, 1024, {0, 4500, 9000}).cuts().empty());
  // Larger than the buffer: one bucket whatever the points.
  EXPECT_TRUE(bucket_layout::for_backward(5000, 8192, {1024, 2048}).cuts().empty());
}

TEST(bucket_layout, every_cut_is_a_rounded_point_and_every_bucket_but_the_first_is_large_enough) {
  std::mt19937_64 draw(26);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t count = 1 + draw() % 200000;
    const std::size_t floats = 1024 * (1 + draw() % 16);
    std::vector<std::size_t> points(draw() % 12);
    for (auto& point : points)
      point = draw() % count;
    const auto layout = bucket_layout::for_backward(count, floats, points);
    std::size_t end = count;
    for (auto cut = layout.cuts().rbegin(); cut != layout.cuts().rend(); ++cut) {
      EXPECT_EQ(*cut % bucket_layout::alignment, 0u);
      EXPECT_TRUE(std::any_of(points.begin(), points.end(),
                              [&](std::size_t point) {
                                return point <= *cut && *cut - point < bucket_layout::alignment;
                              }))
          << "cut " << *cut << " of trial " << trial;
      EXPECT_GE(end - *cut, floats) << "trial " << trial;
      // No rounded point lies between this bucket's least size and its cut: it took the highest.
      for (const std::size_t point : points) {
        const std::size_t rounded = (point + 1023) / 1024 * 1024;
        EXPECT_FALSE(rounded > *cut && rounded + floats <= end && rounded < count)
            << "trial " << trial << ": point " << point << " would cut closer to " << end;
      }
      end = *cut;
    }
  }
}

TEST(bucket_layout, names_the_bucket_a_float_falls_in) {
  const bucket_layout layout(5000, {1024, 2048, 3072, 4096});
  EXPECT_EQ(layout.size(), 5u);
  EXPECT_EQ(layout.begin_before(5000), 4096u);
  EXPECT_EQ(layout.begin_before(4097), 4096u);
  EXPECT_EQ(layout.begin_before(4096), 3072u);
  EXPECT_EQ(layout.begin_before(1024), 0u);
  EXPECT_EQ(layout.begin_before(1), 0u);
  const bucket_layout none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.begin_before(5000), 0u);
  EXPECT_EQ(layout, bucket_layout(5000, {1024, 2048, 3072, 4096}));
  EXPECT_FALSE(layout == bucket_layout(5000, {1024}));
}

TEST(bucket_layout, refuses_cuts_outside_the_buffer_or_out_of_order) {
  auto message = [](std::size_t count, std::vector<std::size_t> cuts) -> std::string {
    try {
      bucket_layout(count, std::move(cuts));
    } catch (const std::invalid_argument& refused) {
      return refused.what();
    }
    return "accepted";
  };
  EXPECT_EQ(message(100, {0}),
            "gradient bucket cut 0 at float 0: cuts ascend strictly within (0, 100)");
  EXPECT_EQ(message(100, {50, 100}),
            "gradient bucket cut 1 at float 100: cuts ascend strictly within (0, 100)");
  EXPECT_EQ(message(100, {50, 50}),
            "gradient bucket cut 1 at float 50: cuts ascend strictly within (0, 100)");
  EXPECT_EQ(message(0, {}), "gradient buckets of an empty buffer");
  EXPECT_THROW(bucket_layout::for_backward(100, 0, {}), std::invalid_argument);
}

} // namespace
