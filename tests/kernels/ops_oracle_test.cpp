// Every kernel of each implementation against reference_ops() on seeded random inputs of odd sizes,
// so that vector tails, block edges, transposes and row strides all get exercised.
#include "herd/ops.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kernel_test_support.hpp"

namespace herd::kernels {
namespace {

using test_support::all_close;
using test_support::elementwise_tolerance;
using test_support::gemm_tolerance;
using test_support::implementation;
using test_support::kernel_buffer;
using test_support::random_floats;
using test_support::random_labels;

// Neither powers of two nor multiples of any vector width.
const std::vector<int> odd_sizes{1, 7, 33, 129};
// Around and across cpu_ops' 16384-float weighted_sum block, and past many AVX2 vectors.
const std::vector<std::size_t> odd_lengths{1, 7, 33, 16383, 16385, 40009};
const transpose both_transposes[] = {transpose::no, transpose::yes};

std::size_t product(int rows, int cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
}

// Every third element exactly zero: the boundary of relu's "> 0".
std::vector<float> random_floats_with_zeros(std::size_t n, std::uint32_t seed) {
  std::vector<float> values = random_floats(n, seed);
  for (std::size_t i = 0; i < n; i += 3)
    values[i] = 0.0f;
  return values;
}

class ops_matches_reference : public ::testing::TestWithParam<implementation> {
protected:
  const ops& tested() const { return *GetParam().kernels; }
  const test_support::kernel_memory& memory() const { return *GetParam().memory; }
  static const ops& oracle() { return reference_ops(); }
};

// ---- gemm ---------------------------------------------------------------------------------------

struct gemm_case {
  transpose trans_a;
  transpose trans_b;
  int m;
  int n;
  int k;
  float alpha;
  float beta;
  int row_padding; // floats after the last column of every stored row of A, B and C
};

std::string describe(const gemm_case& g) {
  std::ostringstream out;
  out << "op(A)" << (g.trans_a == transpose::yes ? "=A^T " : "=A ") << "op(B)"
      << (g.trans_b == transpose::yes ? "=B^T " : "=B ") << "m=" << g.m << " n=" << g.n
      << " k=" << g.k << " alpha=" << g.alpha << " beta=" << g.beta
      << " row_padding=" << g.row_padding;
  return out.str();
}

// op(M) is op_rows x op_cols; M itself is stored transposed when trans says so.
int stored_rows(transpose trans, int op_rows, int op_cols) {
  return trans == transpose::no ? op_rows : op_cols;
}
int stored_cols(transpose trans, int op_rows, int op_cols) {
  return trans == transpose::no ? op_cols : op_rows;
}

::testing::AssertionResult gemm_agrees(const implementation& tested, const gemm_case& g,
                                       std::uint32_t seed, bool c_starts_as_nan = false) {
  const int lda = stored_cols(g.trans_a, g.m, g.k) + g.row_padding;
  const int ldb = stored_cols(g.trans_b, g.k, g.n) + g.row_padding;
  const int ldc = g.n + g.row_padding;
  const auto a = random_floats(product(stored_rows(g.trans_a, g.m, g.k), lda), seed);
  const auto b = random_floats(product(stored_rows(g.trans_b, g.k, g.n), ldb), seed + 1);
  std::vector<float> expected_c =
      c_starts_as_nan
          ? std::vector<float>(product(g.m, ldc), std::numeric_limits<float>::quiet_NaN())
          : random_floats(product(g.m, ldc), seed + 2);

  kernel_buffer<float> a_buffer(*tested.memory, a);
  kernel_buffer<float> b_buffer(*tested.memory, b);
  kernel_buffer<float> c_buffer(*tested.memory, expected_c);
  tested.kernels->gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, a_buffer.get(), lda,
                       b_buffer.get(), ldb, g.beta, c_buffer.get(), ldc);
  reference_ops().gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, a.data(), lda, b.data(), ldb,
                       g.beta, expected_c.data(), ldc);
  // The whole C buffer is compared, padding included: the oracle never writes the padding.
  auto result = all_close(c_buffer.to_host(), expected_c, gemm_tolerance);
  if (!result)
    result << " for " << describe(g);
  return result;
}

TEST_P(ops_matches_reference, gemm_for_every_transpose_and_odd_shape) {
  std::uint32_t seed = 100;
  for (const transpose trans_a : both_transposes)
    for (const transpose trans_b : both_transposes)
      for (const int m : odd_sizes)
        for (const int n : odd_sizes)
          for (const int k : odd_sizes) {
            EXPECT_TRUE(
                gemm_agrees(GetParam(), {trans_a, trans_b, m, n, k, 0.75f, -0.5f, 0}, seed));
            seed += 3;
          }
}

TEST_P(ops_matches_reference, gemm_with_rows_stored_wider_than_the_matrix) {
  std::uint32_t seed = 1100;
  for (const transpose trans_a : both_transposes)
    for (const transpose trans_b : both_transposes)
      for (const auto& [m, n, k] :
           {std::tuple{7, 33, 129}, std::tuple{129, 1, 7}, std::tuple{33, 129, 33}}) {
        EXPECT_TRUE(gemm_agrees(GetParam(), {trans_a, trans_b, m, n, k, 1.5f, 0.25f, 5}, seed));
        seed += 3;
      }
}

TEST_P(ops_matches_reference, gemm_with_zero_beta_ignores_nan_in_c) {
  std::uint32_t seed = 1200;
  for (const transpose trans_a : both_transposes)
    for (const transpose trans_b : both_transposes) {
      EXPECT_TRUE(gemm_agrees(GetParam(), {trans_a, trans_b, 33, 7, 129, -1.25f, 0.0f, 0}, seed,
                              /*c_starts_as_nan=*/true));
      seed += 3;
    }
}

// ---- bias, relu ---------------------------------------------------------------------------------

TEST_P(ops_matches_reference, bias_add) {
  std::uint32_t seed = 200;
  for (const int rows : odd_sizes)
    for (const int cols : odd_sizes) {
      auto y = random_floats(product(rows, cols), seed++);
      const auto bias = random_floats(static_cast<std::size_t>(cols), seed++);
      kernel_buffer<float> y_buffer(memory(), y);
      kernel_buffer<float> bias_buffer(memory(), bias);
      tested().bias_add(y_buffer.get(), bias_buffer.get(), rows, cols);
      oracle().bias_add(y.data(), bias.data(), rows, cols);
      EXPECT_TRUE(all_close(y_buffer.to_host(), y, elementwise_tolerance)) << rows << " x " << cols;
    }
}

TEST_P(ops_matches_reference, bias_grad_overwrites_with_column_sums) {
  std::uint32_t seed = 300;
  for (const int rows : odd_sizes)
    for (const int cols : odd_sizes) {
      const auto dy = random_floats(product(rows, cols), seed++);
      // Stale values in bias_grad must not leak into the result.
      std::vector<float> sums(static_cast<std::size_t>(cols), 123.0f);
      kernel_buffer<float> dy_buffer(memory(), dy);
      kernel_buffer<float> sums_buffer(memory(), sums);
      tested().bias_grad(dy_buffer.get(), sums_buffer.get(), rows, cols);
      oracle().bias_grad(dy.data(), sums.data(), rows, cols);
      EXPECT_TRUE(all_close(sums_buffer.to_host(), sums, elementwise_tolerance))
          << rows << " x " << cols;
    }
}

TEST_P(ops_matches_reference, relu_forward) {
  std::uint32_t seed = 400;
  for (const std::size_t n : odd_lengths) {
    const auto x = random_floats_with_zeros(n, seed++);
    std::vector<float> y(n, 7.0f);
    kernel_buffer<float> x_buffer(memory(), x);
    kernel_buffer<float> y_buffer(memory(), y);
    tested().relu_forward(x_buffer.get(), y_buffer.get(), n);
    oracle().relu_forward(x.data(), y.data(), n);
    EXPECT_TRUE(all_close(y_buffer.to_host(), y, elementwise_tolerance)) << "n = " << n;
  }
}

TEST_P(ops_matches_reference, relu_backward) {
  std::uint32_t seed = 500;
  for (const std::size_t n : odd_lengths) {
    const auto y = random_floats_with_zeros(n, seed++);
    const auto dy = random_floats(n, seed++);
    std::vector<float> dx(n, 7.0f);
    kernel_buffer<float> y_buffer(memory(), y);
    kernel_buffer<float> dy_buffer(memory(), dy);
    kernel_buffer<float> dx_buffer(memory(), dx);
    tested().relu_backward(y_buffer.get(), dy_buffer.get(), dx_buffer.get(), n);
    oracle().relu_backward(y.data(), dy.data(), dx.data(), n);
    EXPECT_TRUE(all_close(dx_buffer.to_host(), dx, elementwise_tolerance)) << "n = " << n;
  }
}

// ---- softmax cross-entropy, accuracy ------------------------------------------------------------

const std::vector<int> class_counts{1, 10, 33};

TEST_P(ops_matches_reference, softmax_xent_forward_probs_and_mean_loss) {
  std::uint32_t seed = 600;
  for (const int rows : odd_sizes)
    for (const int classes : class_counts) {
      const auto logits = random_floats(product(rows, classes), seed++, -8.0f, 8.0f);
      const auto labels = random_labels(rows, classes, seed++);
      std::vector<float> probs(product(rows, classes), 7.0f);
      kernel_buffer<float> logits_buffer(memory(), logits);
      kernel_buffer<std::int32_t> labels_buffer(memory(), labels);
      kernel_buffer<float> probs_buffer(memory(), probs);
      const float loss = tested().softmax_xent_forward(logits_buffer.get(), labels_buffer.get(),
                                                       rows, classes, probs_buffer.get());
      const float expected_loss =
          oracle().softmax_xent_forward(logits.data(), labels.data(), rows, classes, probs.data());
      EXPECT_NEAR(loss, expected_loss, elementwise_tolerance * (1.0f + std::fabs(expected_loss)))
          << rows << " x " << classes;
      EXPECT_TRUE(all_close(probs_buffer.to_host(), probs, elementwise_tolerance))
          << rows << " x " << classes;
    }
}

TEST_P(ops_matches_reference, softmax_xent_backward) {
  std::uint32_t seed = 700;
  for (const int rows : odd_sizes)
    for (const int classes : class_counts) {
      const auto logits = random_floats(product(rows, classes), seed++, -8.0f, 8.0f);
      const auto labels = random_labels(rows, classes, seed++);
      std::vector<float> probs(product(rows, classes));
      oracle().softmax_xent_forward(logits.data(), labels.data(), rows, classes, probs.data());
      std::vector<float> dlogits(product(rows, classes), 7.0f);
      kernel_buffer<float> probs_buffer(memory(), probs);
      kernel_buffer<std::int32_t> labels_buffer(memory(), labels);
      kernel_buffer<float> dlogits_buffer(memory(), dlogits);
      tested().softmax_xent_backward(probs_buffer.get(), labels_buffer.get(), rows, classes,
                                     dlogits_buffer.get());
      oracle().softmax_xent_backward(probs.data(), labels.data(), rows, classes, dlogits.data());
      EXPECT_TRUE(all_close(dlogits_buffer.to_host(), dlogits, elementwise_tolerance))
          << rows << " x " << classes;
    }
}

TEST_P(ops_matches_reference, count_correct_with_many_ties) {
  std::uint32_t seed = 800;
  for (const int rows : odd_sizes)
    for (const int classes : class_counts) {
      // Scores in {0, 1, 2}: most rows have tied maxima, so the tie rule decides many counts.
      auto scores = random_floats(product(rows, classes), seed++, 0.0f, 3.0f);
      for (float& score : scores)
        score = std::floor(score);
      const auto labels = random_labels(rows, classes, seed++);
      kernel_buffer<float> scores_buffer(memory(), scores);
      kernel_buffer<std::int32_t> labels_buffer(memory(), labels);
      EXPECT_EQ(tested().count_correct(scores_buffer.get(), labels_buffer.get(), rows, classes),
                oracle().count_correct(scores.data(), labels.data(), rows, classes))
          << rows << " x " << classes;
    }
}

// ---- optimiser, reduction -----------------------------------------------------------------------

TEST_P(ops_matches_reference, sgd_step_with_momentum_and_weight_decay) {
  const sgd_hyper hyper{0.05f, 0.9f, 1e-3f};
  std::uint32_t seed = 900;
  for (const std::size_t n : odd_lengths) {
    auto params = random_floats(n, seed++);
    const auto grads = random_floats(n, seed++);
    auto velocity = random_floats(n, seed++);
    kernel_buffer<float> params_buffer(memory(), params);
    kernel_buffer<float> grads_buffer(memory(), grads);
    kernel_buffer<float> velocity_buffer(memory(), velocity);
    tested().sgd_step(params_buffer.get(), grads_buffer.get(), velocity_buffer.get(), n, hyper);
    oracle().sgd_step(params.data(), grads.data(), velocity.data(), n, hyper);
    EXPECT_TRUE(all_close(params_buffer.to_host(), params, elementwise_tolerance)) << "n = " << n;
    EXPECT_TRUE(all_close(velocity_buffer.to_host(), velocity, elementwise_tolerance))
        << "n = " << n;
  }
}

TEST_P(ops_matches_reference, adam_step_over_three_steps) {
  const adam_hyper hyper{0.01f, 0.9f, 0.999f, 1e-8f, 1e-2f};
  std::uint32_t seed = 950;
  for (const std::size_t n : odd_lengths) {
    auto params = random_floats(n, seed++);
    auto moments = random_floats(2 * n, seed++);
    for (std::size_t i = n; i < 2 * n; ++i) // second moments are never negative
      moments[i] = std::fabs(moments[i]);
    kernel_buffer<float> params_buffer(memory(), params);
    kernel_buffer<float> moments_buffer(memory(), moments);
    for (std::uint64_t step = 1; step <= 3; ++step) {
      const auto grads = random_floats(n, seed++);
      kernel_buffer<float> grads_buffer(memory(), grads);
      tested().adam_step(params_buffer.get(), grads_buffer.get(), moments_buffer.get(), n, hyper,
                         step);
      oracle().adam_step(params.data(), grads.data(), moments.data(), n, hyper, step);
    }
    EXPECT_TRUE(all_close(params_buffer.to_host(), params, elementwise_tolerance)) << "n = " << n;
    EXPECT_TRUE(all_close(moments_buffer.to_host(), moments, elementwise_tolerance)) << "n = " << n;
  }
}

// Runs weighted_sum on k random inputs of n floats, into a separate out or into inputs[0].
::testing::AssertionResult weighted_sum_agrees(const implementation& tested, int k, std::size_t n,
                                               bool into_first_input, std::uint32_t seed) {
  std::vector<std::vector<float>> inputs;
  std::vector<std::unique_ptr<kernel_buffer<float>>> input_buffers;
  std::vector<const float*> input_pointers;
  std::vector<const float*> tested_pointers;
  for (int i = 0; i < k; ++i) {
    inputs.push_back(random_floats(n, seed + static_cast<std::uint32_t>(i)));
    input_buffers.push_back(std::make_unique<kernel_buffer<float>>(*tested.memory, inputs.back()));
  }
  for (int i = 0; i < k; ++i) {
    input_pointers.push_back(inputs[static_cast<std::size_t>(i)].data());
    tested_pointers.push_back(input_buffers[static_cast<std::size_t>(i)]->get());
  }
  const auto weights = random_floats(static_cast<std::size_t>(k), seed + 1000, -2.0f, 2.0f);
  kernel_buffer<float> weights_buffer(*tested.memory, weights);

  std::vector<float> expected(n, 7.0f);
  kernel_buffer<float> out_buffer(*tested.memory, expected);
  float* tested_out = into_first_input ? input_buffers[0]->get() : out_buffer.get();
  float* expected_out = into_first_input ? inputs[0].data() : expected.data();
  tested.kernels->weighted_sum(tested_out, tested_pointers.data(), weights_buffer.get(), k, n);
  reference_ops().weighted_sum(expected_out, input_pointers.data(), weights.data(), k, n);

  auto result = into_first_input
                    ? all_close(input_buffers[0]->to_host(), inputs[0], elementwise_tolerance)
                    : all_close(out_buffer.to_host(), expected, elementwise_tolerance);
  if (!result)
    result << " for k=" << k << " n=" << n << (into_first_input ? " into inputs[0]" : "");
  return result;
}

TEST_P(ops_matches_reference, weighted_sum_into_separate_out) {
  std::uint32_t seed = 2000;
  // cpu_ops adds up to 4 inputs in one pass; more take several passes over each block of out.
  for (const int k : {1, 2, 3, 4, 5, 8, 9, 17})
    for (const std::size_t n : odd_lengths) {
      EXPECT_TRUE(weighted_sum_agrees(GetParam(), k, n, /*into_first_input=*/false, seed));
      seed += 2000;
    }
}

TEST_P(ops_matches_reference, weighted_sum_into_first_input) {
  std::uint32_t seed = 50000;
  for (const int k : {1, 2, 4, 11})
    for (const std::size_t n : odd_lengths) {
      EXPECT_TRUE(weighted_sum_agrees(GetParam(), k, n, /*into_first_input=*/true, seed));
      seed += 2000;
    }
}

INSTANTIATE_TEST_SUITE_P(all, ops_matches_reference,
                         ::testing::ValuesIn(test_support::implementations_under_test()),
                         test_support::implementation_name);

} // namespace
} // namespace herd::kernels
