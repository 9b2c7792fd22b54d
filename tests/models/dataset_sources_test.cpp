// The user's own data: datasets from caller-owned vectors and from a per-sample function hold
// exactly the values given, in order, and every malformed source is refused with a message that
// names the dataset and what is wrong.
#include "herd/dataset_sources.hpp"
#include "support/error_message.hpp"

#include <cmath>
#include <cstring>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits>
#include <stdexcept>

namespace herd::models {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// Values with every bit pattern a float copy could get wrong: negative zero, a denormal, the
// largest finite value, and fractions that are not exact in decimal.
std::vector<float> odd_values(std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = static_cast<float>(i) / 7.0f - 3.0f;
  if (n > 2) {
    values[0] = -0.0f;
    values[1] = std::numeric_limits<float>::denorm_min();
    values[2] = std::numeric_limits<float>::max();
  }
  return values;
}

bool same_bits(const float* a, const float* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

template <typename Call> std::string error_of(Call call) {
  return herd::testing::message_of<std::invalid_argument>(call);
}

TEST(dataset_from_memory, holds_the_values_bit_for_bit_with_an_odd_count_and_shape) {
  const std::size_t count = 13;
  const std::vector<std::size_t> shape{3, 5, 7}; // 105 floats a sample
  const auto features = odd_values(count * 105);
  std::vector<std::int32_t> labels(count);
  for (std::size_t i = 0; i < count; ++i)
    labels[i] = static_cast<std::int32_t>((i * 5) % 3);
  const auto data = dataset_from_memory(features, labels, shape, 3, "odd");
  EXPECT_EQ(data.size(), count);
  EXPECT_EQ(data.features(), 105u);
  EXPECT_EQ(data.input_shape(), shape);
  EXPECT_EQ(data.classes, 3);
  EXPECT_EQ(data.name, "odd");
  EXPECT_EQ(data.labels, labels);
  EXPECT_TRUE(data.input_normalisation.identity());
  ASSERT_EQ(data.images.size(), features.size());
  EXPECT_TRUE(same_bits(data.images.data(), features.data(), features.size()));
  EXPECT_TRUE(std::signbit(data.images[0])) << "-0.0f must stay negative zero";
}

TEST(dataset_from_memory, a_flat_shape_is_the_features_and_one_sample_is_enough) {
  const auto data = dataset_from_memory({1.5f, -2.5f}, {0}, {2}, 1);
  EXPECT_EQ(data.size(), 1u);
  EXPECT_EQ(data.input_shape(), (std::vector<std::size_t>{2}));
  EXPECT_EQ(data.name, "in-memory");
}

TEST(dataset_from_memory, refuses_sizes_that_do_not_agree) {
  EXPECT_THAT(error_of([] { dataset_from_memory(std::vector<float>(29), {0, 1, 0}, {10}, 2, "d"); }),
              AllOf(HasSubstr("d: 29 feature values for 3 labels"), HasSubstr("3 x 10 = 30")));
  EXPECT_THAT(error_of([] { dataset_from_memory(std::vector<float>(31), {0, 1, 0}, {10}, 2, "d"); }),
              HasSubstr("expected 3 x 10 = 30"));
  // A multiple of the sample size, but of another count: not silently more or fewer samples.
  EXPECT_THAT(error_of([] { dataset_from_memory(std::vector<float>(40), {0, 1, 0}, {10}, 2, "d"); }),
              HasSubstr("40 feature values for 3 labels"));
  EXPECT_THAT(error_of([] { dataset_from_memory({}, {}, {10}, 2, "d"); }),
              HasSubstr("d: no samples"));
}

TEST(dataset_from_memory, refuses_empty_and_zero_shapes_and_no_classes) {
  EXPECT_THAT(error_of([] { dataset_from_memory({1.0f}, {0}, {}, 2, "d"); }),
              HasSubstr("d: the sample shape is empty"));
  EXPECT_THAT(error_of([] { dataset_from_memory({1.0f}, {0}, {1, 0, 3}, 2, "d"); }),
              HasSubstr("dimension 2 of the sample shape 1x0x3 is 0"));
  EXPECT_THAT(error_of([] { dataset_from_memory({1.0f}, {0}, {1}, 0, "d"); }),
              HasSubstr("d: classes = 0"));
}

TEST(dataset_from_memory, refuses_a_label_outside_the_classes_naming_the_sample) {
  EXPECT_THAT(error_of([] { dataset_from_memory(std::vector<float>(8), {0, 1, 4, 2}, {2}, 4, "d"); }),
              AllOf(HasSubstr("d: sample 2 has label 4"), HasSubstr("outside [0, 4)")));
  EXPECT_THAT(error_of([] { dataset_from_memory(std::vector<float>(4), {0, -1}, {2}, 4, "d"); }),
              HasSubstr("sample 1 has label -1"));
}

TEST(dataset_from_memory, refuses_nan_and_infinity_naming_the_sample_and_position) {
  auto features = odd_values(12);
  features[7] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(error_of([&] { dataset_from_memory(features, {0, 0, 0, 0}, {3}, 1, "d"); }),
              HasSubstr("d: sample 2, value 1 is NaN"));
  features[7] = 0.0f;
  features[11] = -std::numeric_limits<float>::infinity();
  EXPECT_THAT(error_of([&] { dataset_from_memory(features, {0, 0, 0, 0}, {3}, 1, "d"); }),
              HasSubstr("d: sample 3, value 2 is infinite"));
}

TEST(dataset_from_source, writes_each_sample_in_place_in_order_and_bit_for_bit) {
  const std::size_t count = 1001; // not a multiple of anything a chunked copy might use
  const std::vector<std::size_t> shape{1, 3, 3};
  const auto expected = odd_values(count * 9);
  std::vector<std::size_t> asked;
  const auto data = dataset_from_source(
      count, shape, 7,
      [&](std::size_t index, float* features) {
        asked.push_back(index);
        std::memcpy(features, expected.data() + index * 9, 9 * sizeof(float));
        return static_cast<std::int32_t>(index % 7);
      },
      "generated");
  ASSERT_EQ(asked.size(), count);
  for (std::size_t i = 0; i < count; ++i)
    ASSERT_EQ(asked[i], i);
  EXPECT_EQ(data.input_shape(), shape);
  EXPECT_EQ(data.name, "generated");
  EXPECT_TRUE(same_bits(data.images.data(), expected.data(), expected.size()));
  for (std::size_t i = 0; i < count; ++i)
    ASSERT_EQ(data.labels[i], static_cast<std::int32_t>(i % 7));
}

TEST(dataset_from_source, refuses_a_bad_label_or_value_naming_the_first_sample_at_fault) {
  auto bad_label = [](std::size_t index, float* features) {
    features[0] = 1.0f;
    return index == 5 ? std::int32_t{3} : std::int32_t{0};
  };
  EXPECT_THAT(error_of([&] { dataset_from_source(10, {1}, 3, bad_label, "s"); }),
              HasSubstr("s: sample 5 has label 3, outside [0, 3)"));
  // A value the function forgot to write keeps the zero it was allocated with, so only values
  // it wrote wrongly are refused.
  auto infinite = [](std::size_t index, float* features) {
    features[1] = index == 4 ? std::numeric_limits<float>::infinity() : 0.5f;
    return std::int32_t{0};
  };
  EXPECT_THAT(error_of([&] { dataset_from_source(10, {2}, 1, infinite, "s"); }),
              HasSubstr("s: sample 4, value 1 is infinite"));
}

TEST(dataset_from_source, refuses_no_samples_no_function_and_more_than_the_memory_limit) {
  auto fill = [](std::size_t, float*) { return std::int32_t{0}; };
  EXPECT_THAT(error_of([&] { dataset_from_source(0, {2}, 1, fill, "s"); }),
              HasSubstr("s: no samples"));
  EXPECT_THAT(error_of([&] { dataset_from_source(3, {2}, 1, nullptr, "s"); }),
              HasSubstr("s: no function"));
  EXPECT_THAT(error_of([&] { dataset_from_source(3, {}, 1, fill, "s"); }),
              HasSubstr("sample shape is empty"));
  // 1000 samples of 12 bytes each (two floats and a label) against a limit of 11,999 bytes.
  std::size_t calls = 0;
  auto counted = [&](std::size_t, float*) { return ++calls, std::int32_t{0}; };
  EXPECT_THAT(error_of([&] { dataset_from_source(1000, {2}, 1, counted, "s", 11999); }),
              AllOf(HasSubstr("s: 1000 samples of shape 2 would take 1000 x 12 bytes"),
                    HasSubstr("limit of 11999 bytes")));
  EXPECT_EQ(calls, 0u) << "the limit is checked before any sample is asked for";
  EXPECT_NO_THROW(dataset_from_source(1000, {2}, 1, counted, "s", 12000));
}

TEST(dataset_from_source, lets_the_functions_own_exception_through) {
  auto failing = [](std::size_t index, float*) -> std::int32_t {
    if (index == 2)
      throw std::runtime_error("the sensor went away");
    return 0;
  };
  EXPECT_THROW(
      {
        try {
          dataset_from_source(5, {1}, 1, failing);
        } catch (const std::runtime_error& error) {
          EXPECT_STREQ(error.what(), "the sensor went away");
          throw;
        }
      },
      std::runtime_error);
}

// check_dataset: a dataset made by hand (its struct is public) is held to what
// dataset_from_memory makes; a well-formed one passes untouched.
dataset well_formed() {
  return dataset_from_memory(odd_values(12), {0, 1, 2, 1}, {3}, 3, "d");
}

TEST(check_dataset, passes_a_well_formed_dataset_and_an_empty_one) {
  EXPECT_NO_THROW(check_dataset(well_formed()));
  auto image = dataset_from_memory(std::vector<float>(8), {0, 1}, {1, 2, 2}, 2, "image");
  EXPECT_NO_THROW(check_dataset(image));
  EXPECT_NO_THROW(check_dataset(dataset{}));
}

TEST(check_dataset, refuses_labels_and_rows_of_different_counts) {
  auto more_labels = well_formed();
  more_labels.labels.push_back(0); // gather_rows read past the features' end for this sample
  EXPECT_THAT(error_of([&] { check_dataset(more_labels); }),
              HasSubstr("d: 4 rows of features for 5 labels; expected one row per label"));
  auto fewer_labels = well_formed();
  fewer_labels.labels.pop_back();
  EXPECT_THAT(error_of([&] { check_dataset(fewer_labels); }),
              HasSubstr("4 rows of features for 3"));
  auto no_features = well_formed();
  no_features.images = tensor();
  EXPECT_THAT(error_of([&] { check_dataset(no_features); }),
              HasSubstr("d: the features are a tensor of rank 0"));
}

TEST(check_dataset, refuses_a_sample_shape_other_than_the_rows_width) {
  auto data = well_formed();
  data.sample_shape = {1, 2, 2};
  EXPECT_THAT(error_of([&] { check_dataset(data); }),
              HasSubstr("d: the sample shape 1x2x2 holds 4 floats, but the rows have 3"));
}

TEST(check_dataset, refuses_no_classes_a_label_outside_them_and_a_value_that_is_not_finite) {
  auto classless = well_formed();
  classless.classes = 0;
  EXPECT_THAT(error_of([&] { check_dataset(classless); }), HasSubstr("d: classes = 0"));
  auto outside = well_formed();
  outside.labels[3] = 3;
  EXPECT_THAT(error_of([&] { check_dataset(outside); }),
              AllOf(HasSubstr("d: sample 3 has label 3"), HasSubstr("outside [0, 3)")));
  auto nan = well_formed();
  nan.images.data()[7] = std::numeric_limits<float>::quiet_NaN(); // sample 2, value 1
  EXPECT_THAT(error_of([&] { check_dataset(nan); }), HasSubstr("d: sample 2, value 1 is NaN"));
}

TEST(check_dataset, refuses_text_offsets_that_do_not_cover_the_tokens_in_order) {
  dataset texts;
  texts.name = "t";
  texts.classes = 2;
  texts.labels = {0, 1, 1};
  texts.tokens = {'a', 'b', 'c', 'd', 'e'};
  texts.offsets = {0, 2, 3, 5};
  texts.max_length = 8;
  EXPECT_NO_THROW(check_dataset(texts));
  auto short_offsets = texts;
  short_offsets.offsets.pop_back();
  EXPECT_THAT(error_of([&] { check_dataset(short_offsets); }),
              HasSubstr("t: 3 text offsets for 3 labels"));
  auto past_end = texts;
  past_end.offsets.back() = 6;
  EXPECT_THAT(error_of([&] { check_dataset(past_end); }),
              HasSubstr("t: text 2 ends at token 6, outside [3, 5]"));
  auto backwards = texts;
  backwards.offsets[2] = 1;
  EXPECT_THAT(error_of([&] { check_dataset(backwards); }),
              HasSubstr("t: text 1 ends at token 1, outside [2, 5]"));
  auto no_length = texts;
  no_length.max_length = 0;
  EXPECT_THAT(error_of([&] { check_dataset(no_length); }), HasSubstr("t: max_length = 0"));
}

} // namespace
} // namespace herd::models
