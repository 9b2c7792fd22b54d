// What every implementation must do that the oracle cannot show: stability on huge logits, the
// aliasing ops.hpp allows, hand-computed values, the tie rule, and the precondition checks.
#include "herd/ops.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "kernel_test_support.hpp"

namespace herd::kernels {
namespace {

using test_support::implementation;
using test_support::kernel_buffer;

class ops_behaviour : public ::testing::TestWithParam<implementation> {
protected:
  const ops& tested() const { return *GetParam().kernels; }
  kernel_buffer<float> floats(const std::vector<float>& values) const {
    return kernel_buffer<float>(*GetParam().memory, values);
  }
  kernel_buffer<std::int32_t> labels(const std::vector<std::int32_t>& values) const {
    return kernel_buffer<std::int32_t>(*GetParam().memory, values);
  }
};

// ---- softmax cross-entropy ----------------------------------------------------------------------

TEST_P(ops_behaviour, softmax_stays_finite_for_huge_logits) {
  // Row 0: all logits near 1e4, so exp(logit) overflows unless the max is subtracted.
  // Row 1: the label's logit is 2e4 below the max, so p[label] underflows to 0 and -log(p) would
  // be inf unless the loss is taken from the log-sum-exp.
  auto logits = floats({1e4f, 1e4f - 1.0f, 1e4f - 2.0f, -1e4f, 1e4f, 0.0f});
  auto label_buffer = labels({0, 0});
  auto probs = floats(std::vector<float>(6, 7.0f));
  const float loss =
      tested().softmax_xent_forward(logits.get(), label_buffer.get(), 2, 3, probs.get());

  const double row0_loss = std::log(1.0 + std::exp(-1.0) + std::exp(-2.0)); // about 0.4076
  const double row1_loss = 2e4; // plus log(1 + e^-1e4), which is 0 in any precision
  ASSERT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, (row0_loss + row1_loss) / 2.0, 1e-2);

  const auto p = probs.to_host();
  for (const float value : p)
    EXPECT_TRUE(std::isfinite(value));
  EXPECT_NEAR(p[0] + p[1] + p[2], 1.0f, 1e-6f);
  EXPECT_NEAR(p[3] + p[4] + p[5], 1.0f, 1e-6f);
  const double row0_sum = 1.0 + std::exp(-1.0) + std::exp(-2.0);
  EXPECT_NEAR(p[0], 1.0 / row0_sum, 1e-6);
  EXPECT_NEAR(p[1], std::exp(-1.0) / row0_sum, 1e-6);
  EXPECT_NEAR(p[2], std::exp(-2.0) / row0_sum, 1e-6);
  EXPECT_EQ(p[3], 0.0f);
  EXPECT_NEAR(p[4], 1.0f, 1e-6f);
  EXPECT_EQ(p[5], 0.0f);
}

TEST_P(ops_behaviour, softmax_xent_backward_is_probs_minus_onehot_over_rows) {
  auto probs = floats({0.2f, 0.3f, 0.5f, 0.1f, 0.6f, 0.3f});
  auto label_buffer = labels({2, 0});
  auto dlogits = floats(std::vector<float>(6, 7.0f));
  tested().softmax_xent_backward(probs.get(), label_buffer.get(), 2, 3, dlogits.get());
  const std::vector<float> expected{0.1f, 0.15f, -0.25f, -0.45f, 0.3f, 0.15f};
  EXPECT_TRUE(test_support::all_close(dlogits.to_host(), expected, 1e-6f));
}

TEST_P(ops_behaviour, softmax_xent_backward_may_overwrite_probs) {
  auto probs = floats({0.2f, 0.3f, 0.5f, 0.1f, 0.6f, 0.3f});
  auto label_buffer = labels({2, 0});
  tested().softmax_xent_backward(probs.get(), label_buffer.get(), 2, 3, probs.get());
  const std::vector<float> expected{0.1f, 0.15f, -0.25f, -0.45f, 0.3f, 0.15f};
  EXPECT_TRUE(test_support::all_close(probs.to_host(), expected, 1e-6f));
}

TEST_P(ops_behaviour, count_correct_takes_first_maximum_on_ties) {
  auto scores = floats({1, 3, 3,    // tie between 1 and 2: the argmax is 1
                        1, 3, 3,    // same scores, label 2: not correct
                        2, 2, 2,    // all equal: the argmax is 0
                        0, 5, 1,    // clear maximum at 1
                        4, 4, -1}); // tie between 0 and 1, label 1: not correct
  auto label_buffer = labels({1, 2, 0, 1, 1});
  EXPECT_EQ(tested().count_correct(scores.get(), label_buffer.get(), 5, 3), 3u);
}

// ---- relu ---------------------------------------------------------------------------------------

TEST_P(ops_behaviour, relu_backward_zeroes_gradient_where_output_is_not_positive) {
  auto y = floats({2.0f, 0.0f, -1.0f, 0.5f, -0.0f, 1e-30f});
  auto dy = floats({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f});
  auto dx = floats(std::vector<float>(6, 7.0f));
  tested().relu_backward(y.get(), dy.get(), dx.get(), 6);
  EXPECT_EQ(dx.to_host(), (std::vector<float>{1.0f, 0.0f, 0.0f, 4.0f, 0.0f, 6.0f}));
}

TEST_P(ops_behaviour, relu_backward_may_overwrite_dy) {
  auto y = floats({2.0f, 0.0f, -1.0f, 0.5f});
  auto dy = floats({1.0f, 2.0f, 3.0f, 4.0f});
  tested().relu_backward(y.get(), dy.get(), dy.get(), 4);
  EXPECT_EQ(dy.to_host(), (std::vector<float>{1.0f, 0.0f, 0.0f, 4.0f}));
}

TEST_P(ops_behaviour, relu_forward_may_overwrite_its_input) {
  std::vector<float> values(1001);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 5) - 2.0f; // -2 -1 0 1 2 ...
  auto x = floats(values);
  tested().relu_forward(x.get(), x.get(), values.size());
  const auto result = x.to_host();
  for (std::size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(result[i], std::fmax(values[i], 0.0f)) << "at " << i;
}

// ---- sgd ----------------------------------------------------------------------------------------

TEST_P(ops_behaviour, fill_sets_its_floats_and_no_others) {
  auto y = floats(std::vector<float>(9, -2.0f));
  tested().fill(y.get() + 2, 5, 1.0f);
  tested().fill(y.get(), 0, 3.0f); // nothing to fill
  EXPECT_EQ(y.to_host(), (std::vector<float>{-2, -2, 1, 1, 1, 1, 1, -2, -2}));
}

TEST_P(ops_behaviour, sgd_step_with_momentum_follows_pytorch_over_two_steps) {
  const sgd_hyper hyper{0.1f, 0.9f, 0.01f};
  auto params = floats({1.0f, -2.0f});
  auto velocity = floats({0.0f, 0.0f});
  auto first_grads = floats({0.5f, 0.1f});
  auto second_grads = floats({-0.2f, 0.3f});

  // Step 1: g = (0.5 + 0.01 * 1, 0.1 + 0.01 * -2) = (0.51, 0.08); v = g; p -= 0.1 * v.
  tested().sgd_step(params.get(), first_grads.get(), velocity.get(), 2, hyper);
  EXPECT_TRUE(test_support::all_close(velocity.to_host(), {0.51f, 0.08f}, 1e-6f));
  EXPECT_TRUE(test_support::all_close(params.to_host(), {0.949f, -2.008f}, 1e-6f));

  // Step 2: g = (-0.2 + 0.01 * 0.949, 0.3 + 0.01 * -2.008) = (-0.19051, 0.27992);
  // v = 0.9 * v + g = (0.26849, 0.35192); p -= 0.1 * v.
  tested().sgd_step(params.get(), second_grads.get(), velocity.get(), 2, hyper);
  EXPECT_TRUE(test_support::all_close(velocity.to_host(), {0.26849f, 0.35192f}, 1e-6f));
  EXPECT_TRUE(test_support::all_close(params.to_host(), {0.922151f, -2.043192f}, 1e-6f));
}

// torch.optim.AdamW(lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01) over the same two
// gradients, computed by hand (in double) from its update rule.
TEST_P(ops_behaviour, adam_step_follows_pytorchs_adamw_over_two_steps) {
  const adam_hyper hyper{0.1f, 0.9f, 0.999f, 1e-8f, 0.01f};
  auto params = floats({1.0f, -2.0f});
  auto moments = floats({0.0f, 0.0f, 0.0f, 0.0f}); // m, then v
  auto first_grads = floats({0.5f, 0.1f});
  auto second_grads = floats({-0.2f, 0.3f});

  // Step 1: p *= 1 - 0.001; m = 0.1 g; v = 0.001 g^2; the corrected m / sqrt(v) is sign(g), so
  // p -= 0.1 * sign(g).
  tested().adam_step(params.get(), first_grads.get(), moments.get(), 2, hyper, 1);
  EXPECT_TRUE(
      test_support::all_close(moments.to_host(), {0.05f, 0.01f, 0.00025f, 0.00001f}, 1e-6f));
  EXPECT_TRUE(test_support::all_close(params.to_host(), {0.899f, -2.098f}, 1e-6f));

  // Step 2: m = (0.025, 0.039), v = (0.00028975, 0.00009999), corrections 1 / 0.19 and
  // 1 / sqrt(0.001999).
  tested().adam_step(params.get(), second_grads.get(), moments.get(), 2, hyper, 2);
  EXPECT_TRUE(test_support::all_close(moments.to_host(), {0.025f, 0.039f, 0.00028975f, 0.00009999f},
                                      1e-6f));
  EXPECT_TRUE(test_support::all_close(params.to_host(), {0.8635404f, -2.1876801f}, 1e-6f));
}

TEST_P(ops_behaviour, sgd_step_without_momentum_leaves_the_gradient_in_velocity) {
  const sgd_hyper hyper{0.5f, 0.0f, 0.1f};
  auto params = floats({2.0f, -4.0f});
  auto velocity = floats({9.0f, 9.0f}); // stale values from an earlier run: must not matter
  auto grads = floats({1.0f, 1.0f});
  tested().sgd_step(params.get(), grads.get(), velocity.get(), 2, hyper);
  // g = grad + 0.1 * p = (1.2, 0.6); p -= 0.5 * g.
  EXPECT_TRUE(test_support::all_close(velocity.to_host(), {1.2f, 0.6f}, 1e-6f));
  EXPECT_TRUE(test_support::all_close(params.to_host(), {1.4f, -4.3f}, 1e-6f));
}

// ---- weighted_sum -------------------------------------------------------------------------------

// Small integers and weights that are powers of two: every sum is exact in float, so results are
// compared for equality.
std::vector<float> integer_ramp(std::size_t n, std::size_t period, float offset) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = static_cast<float>(i % period) + offset;
  return values;
}

TEST_P(ops_behaviour, weighted_sum_may_write_into_its_first_input) {
  const std::size_t n = 5003; // odd, so vector loops end in a scalar tail
  const auto first = integer_ramp(n, 7, 0.0f);
  const auto second = integer_ramp(n, 3, -1.0f);
  const auto third = integer_ramp(n, 11, 2.0f);
  auto first_buffer = floats(first);
  auto second_buffer = floats(second);
  auto third_buffer = floats(third);
  auto weights = floats({0.5f, 2.0f, -0.25f});
  const float* inputs[] = {first_buffer.get(), second_buffer.get(), third_buffer.get()};

  tested().weighted_sum(first_buffer.get(), inputs, weights.get(), 3, n);

  const auto result = first_buffer.to_host();
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(result[i], 0.5f * first[i] + 2.0f * second[i] - 0.25f * third[i]) << "at " << i;
}

TEST_P(ops_behaviour, weighted_sum_of_one_input_scales_it) {
  const std::size_t n = 4099;
  const auto input = integer_ramp(n, 13, -6.0f);
  auto input_buffer = floats(input);
  auto weights = floats({0.25f});
  auto out = floats(std::vector<float>(n, 7.0f));
  const float* inputs[] = {input_buffer.get()};

  tested().weighted_sum(out.get(), inputs, weights.get(), 1, n);

  const auto result = out.to_host();
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(result[i], 0.25f * input[i]) << "at " << i;
}

TEST_P(ops_behaviour, weighted_sum_of_five_inputs_adds_every_scaled_input) {
  const std::size_t n = 4099;
  std::vector<std::vector<float>> values;
  for (std::size_t i = 0; i < 5; ++i)
    values.push_back(integer_ramp(n, 3 + 2 * i, static_cast<float>(i) - 2.0f));
  auto b0 = floats(values[0]);
  auto b1 = floats(values[1]);
  auto b2 = floats(values[2]);
  auto b3 = floats(values[3]);
  auto b4 = floats(values[4]);
  const float weight_values[] = {1.0f, -0.5f, 2.0f, 0.125f, -4.0f};
  auto weights = floats(std::vector<float>(std::begin(weight_values), std::end(weight_values)));
  auto out = floats(std::vector<float>(n, 7.0f));
  const float* inputs[] = {b0.get(), b1.get(), b2.get(), b3.get(), b4.get()};

  tested().weighted_sum(out.get(), inputs, weights.get(), 5, n);

  const auto result = out.to_host();
  for (std::size_t j = 0; j < n; ++j) {
    float expected = 0.0f;
    for (std::size_t i = 0; i < 5; ++i)
      expected += weight_values[i] * values[i][j];
    ASSERT_EQ(result[j], expected) << "at " << j;
  }
}

// ---- preconditions ------------------------------------------------------------------------------

TEST_P(ops_behaviour, weighted_sum_rejects_zero_inputs) {
  auto input = floats({1.0f, 2.0f});
  auto weights = floats({1.0f});
  auto out = floats({0.0f, 0.0f});
  const float* inputs[] = {input.get()};
  EXPECT_THROW(tested().weighted_sum(out.get(), inputs, weights.get(), 0, 2),
               std::invalid_argument);
}

TEST_P(ops_behaviour, weighted_sum_rejects_out_that_is_a_later_input) {
  auto first = floats({1.0f, 2.0f});
  auto second = floats({3.0f, 4.0f});
  auto weights = floats({1.0f, 1.0f});
  const float* inputs[] = {first.get(), second.get()};
  EXPECT_THROW(tested().weighted_sum(second.get(), inputs, weights.get(), 2, 2),
               std::invalid_argument);
}

TEST_P(ops_behaviour, gemm_rejects_rows_stored_narrower_than_the_matrix) {
  auto a = floats(std::vector<float>(12, 1.0f));
  auto b = floats(std::vector<float>(12, 1.0f));
  auto c = floats(std::vector<float>(9, 0.0f));
  // A is 3 x 4 untransposed, so lda must be at least 4.
  EXPECT_THROW(tested().gemm(transpose::no, transpose::no, 3, 3, 4, 1.0f, a.get(), 3, b.get(), 3,
                             0.0f, c.get(), 3),
               std::invalid_argument);
  // Transposed, A is stored 4 x 3, so lda = 3 is right; but ldb = 2 < n = 3 is not.
  EXPECT_THROW(tested().gemm(transpose::yes, transpose::no, 3, 3, 4, 1.0f, a.get(), 3, b.get(), 2,
                             0.0f, c.get(), 3),
               std::invalid_argument);
}

// A failed check names its source file within the project ("kernels/cpu/cpu_ops.cpp:135: check
// failed: ..."), not the directory the library was built in.
TEST_P(ops_behaviour, a_failed_check_names_its_source_file_within_the_project) {
  auto logits = floats({0.0f, 1.0f, 2.0f, 3.0f});
  auto probs = floats(std::vector<float>(4, 0.0f));
  auto too_large = labels({0, 2});
  try {
    tested().softmax_xent_forward(logits.get(), too_large.get(), 2, 2, probs.get());
    ADD_FAILURE() << "a label outside the classes was accepted";
  } catch (const std::invalid_argument& refused) {
    const std::string message = refused.what();
    EXPECT_EQ(message.rfind("kernels/", 0), 0u) << message;
    EXPECT_NE(message.find(": check failed: "), std::string::npos) << message;
  }
}

TEST_P(ops_behaviour, softmax_rejects_labels_outside_the_classes) {
  auto logits = floats({0.0f, 1.0f, 2.0f, 3.0f});
  auto probs = floats(std::vector<float>(4, 0.0f));
  auto too_large = labels({0, 2});
  auto negative = labels({-1, 0});
  EXPECT_THROW(tested().softmax_xent_forward(logits.get(), too_large.get(), 2, 2, probs.get()),
               std::invalid_argument);
  EXPECT_THROW(tested().softmax_xent_backward(probs.get(), negative.get(), 2, 2, probs.get()),
               std::invalid_argument);
  EXPECT_THROW(tested().count_correct(logits.get(), too_large.get(), 2, 2), std::invalid_argument);
}

TEST_P(ops_behaviour, kernels_reject_empty_shapes) {
  auto buffer = floats({1.0f, 2.0f});
  auto label_buffer = labels({0});
  EXPECT_THROW(tested().relu_forward(buffer.get(), buffer.get(), 0), std::invalid_argument);
  EXPECT_THROW(tested().bias_add(buffer.get(), buffer.get(), 0, 2), std::invalid_argument);
  EXPECT_THROW(tested().softmax_xent_forward(buffer.get(), label_buffer.get(), 1, 0, buffer.get()),
               std::invalid_argument);
  EXPECT_THROW(tested().gemm(transpose::no, transpose::no, 1, 1, 0, 1.0f, buffer.get(), 1,
                             buffer.get(), 1, 0.0f, buffer.get(), 1),
               std::invalid_argument);
}

// name() becomes part of test names and log lines, so it must be a plain lowercase word.
TEST_P(ops_behaviour, name_is_one_lowercase_word) {
  const std::string_view name = tested().name();
  EXPECT_FALSE(name.empty());
  for (const char letter : name)
    EXPECT_TRUE(letter >= 'a' && letter <= 'z') << "name() is \"" << name << '"';
}

INSTANTIATE_TEST_SUITE_P(all, ops_behaviour,
                         ::testing::ValuesIn(test_support::implementations_under_test()),
                         test_support::implementation_name);

} // namespace
} // namespace herd::kernels
