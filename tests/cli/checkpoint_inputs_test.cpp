// How herd predict and herd evaluate judge new samples against a checkpoint's model, called
// directly: layouts that are the same values in the same order are taken, others refused with the
// fix; values scaled unlike the training data are refused (unscaled bytes, normalised values) or
// noted (bytes for a model trained on floats).
#include "cli/checkpoint_model.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string>

namespace {

using herd::cli::bytes_note;
using herd::cli::layout_problem;
using herd::cli::unscaled_problem;
using herd::models::normalisation;
using herd::models::tensor;
using testing::HasSubstr;

TEST(checkpoint_inputs, extents_of_one_anywhere_are_the_same_layout) {
  EXPECT_EQ(layout_problem({1, 28, 28}, {1, 28, 28}), "");
  EXPECT_EQ(layout_problem({28, 28}, {1, 28, 28}), "");
  EXPECT_EQ(layout_problem({28, 28, 1}, {1, 28, 28}), ""); // a grey image, channels last
  EXPECT_EQ(layout_problem({784}, {1, 28, 28}), "");       // flat: read in the model's order
  EXPECT_EQ(layout_problem({1, 1, 1}, {1}), "");
  // Colour channels last are another order of the same values: refused with the transpose.
  EXPECT_THAT(layout_problem({32, 32, 3}, {3, 32, 32}),
              HasSubstr("32x32x3 but the checkpoint's model takes 3x32x32: as many values in "
                        "another layout, which the model would read wrongly (channels last; "
                        "transpose them to channels first, in numpy x.transpose(0, 3, 1, 2))"));
  EXPECT_THAT(layout_problem({14, 56}, {1, 28, 28}), HasSubstr("as many values in another layout"));
  EXPECT_THAT(layout_problem({14, 56}, {1, 28, 28}), testing::Not(HasSubstr("transpose")));
  EXPECT_THAT(layout_problem({7}, {1, 28, 28}), HasSubstr("(784 values each)"));
}

TEST(checkpoint_inputs, values_scaled_unlike_the_training_data_are_refused) {
  const normalisation bytes_model{0.286f, 0.353f, true}; // Fashion-MNIST's
  tensor scaled({1, 3});
  scaled[0] = 0.0f;
  scaled[1] = 0.5f;
  scaled[2] = 1.0f;
  EXPECT_EQ(unscaled_problem(scaled, bytes_model), "");
  tensor raw = scaled;
  raw[2] = 255.0f;
  EXPECT_THAT(unscaled_problem(raw, bytes_model), HasSubstr("values up to 255, but the model "
                                                            "takes values scaled to [0, 1]"));
  tensor normalised = scaled;
  normalised[0] = -0.81f; // (0 - 0.286) / 0.353: normalised once already
  EXPECT_THAT(unscaled_problem(normalised, bytes_model),
              HasSubstr("values down to -0.81, but the model takes values scaled to [0, 1]"));
  // A model trained on floats as they were takes any values.
  EXPECT_EQ(unscaled_problem(raw, normalisation{}), "");
  EXPECT_EQ(unscaled_problem(normalised, normalisation{}), "");
}

TEST(checkpoint_inputs, bytes_for_a_model_trained_on_floats_get_a_note) {
  EXPECT_THAT(bytes_note(true, "x.npy", normalisation{}),
              HasSubstr("x.npy holds uint8 values, which herd divides by 255, but the "
                        "checkpoint's model was trained on values that were not bytes"));
  EXPECT_EQ(bytes_note(true, "x.npy", normalisation{0.0f, 1.0f, true}), "");
  EXPECT_EQ(bytes_note(false, "x.npy", normalisation{}), "");
}

} // namespace
