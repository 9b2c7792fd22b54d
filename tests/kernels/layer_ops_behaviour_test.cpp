// What the layer kernels must do that a comparison with the oracle cannot show: the folds are the
// adjoints of the unfolds, unfold + GEMM is a direct convolution, padding never reaches a result,
// the dropout mask keeps 1 - p and is the same backward, overlapping gradients add up, and the
// arguments ops.hpp rules out throw.
#include "herd/ops.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "layer_ops_fixture.hpp"

namespace herd::kernels {
namespace {

using test_support::all_close;
using test_support::checks_all_data;
using test_support::inner_product;
using test_support::layer_ops;
using test_support::random_floats;

std::size_t columns_size(const window2d& w, int images) {
  return static_cast<std::size_t>(images) * w.column_rows() * w.output_positions();
}

// ---- adjoints and convolution ---------------------------------------------------------------

TEST_P(layer_ops, col2im_is_the_adjoint_of_im2col) {
  std::uint32_t seed = 4000;
  for (const window2d& w :
       {window2d{3, 7, 5, 3, 3, 2, 2, 1, 1}, window2d{2, 6, 9, 2, 3, 1, 2, 0, 1},
        window2d{1, 3, 4, 2, 2, 3, 3, 2, 2}}) {
    const int images = 2;
    const auto x = random_floats(images * w.image_size(), seed++);
    const auto c = random_floats(columns_size(w, images), seed++);
    auto x_buffer = floats(x);
    auto c_buffer = floats(c);
    auto unfolded = garbage(c.size());
    auto folded = garbage(x.size());
    tested().im2col(x_buffer.get(), images, w, unfolded.get());
    tested().col2im(c_buffer.get(), images, w, folded.get());
    const double left = inner_product(unfolded.to_host(), c);
    const double right = inner_product(x, folded.to_host());
    EXPECT_NEAR(left, right, 1e-5 * (1.0 + std::fabs(left)));
  }
}

TEST_P(layer_ops, fold1d_is_the_adjoint_of_unfold1d) {
  const sequence_window w{3, 9, 5, 3, 1};
  const std::vector<std::int32_t> lengths{1, 4, 9};
  const auto x = random_floats(static_cast<std::size_t>(w.batch) * w.length * w.channels, 4100);
  const auto c = random_floats(w.output_rows() * w.window_size(), 4101);
  auto x_buffer = floats(x);
  auto c_buffer = floats(c);
  auto lengths_buffer = ints(lengths);
  auto unfolded = garbage(c.size());
  auto folded = garbage(x.size());
  tested().unfold1d(x_buffer.get(), lengths_buffer.get(), w, unfolded.get());
  tested().fold1d(c_buffer.get(), lengths_buffer.get(), w, folded.get());
  const double left = inner_product(unfolded.to_host(), c);
  const double right = inner_product(x, folded.to_host());
  EXPECT_NEAR(left, right, 1e-5 * (1.0 + std::fabs(left)));
}

TEST_P(layer_ops, im2col_then_gemm_is_a_direct_convolution) {
  const window2d w{3, 7, 5, 3, 3, 2, 2, 1, 1};
  const int filters = 4;
  const int images = 2;
  const int positions = static_cast<int>(w.output_positions());
  const int window_size = static_cast<int>(w.column_rows());
  const auto x = random_floats(images * w.image_size(), 4200);
  const auto weights = random_floats(static_cast<std::size_t>(filters) * window_size, 4201);
  // y[n][f][oh][ow] = sum over c, i, j of W[f][c][i][j] x[n][c][oh*s - p + i][ow*s - p + j].
  std::vector<float> expected(static_cast<std::size_t>(images) * filters * positions);
  for (int n = 0; n < images; ++n)
    for (int f = 0; f < filters; ++f)
      for (int oh = 0; oh < w.output_height(); ++oh)
        for (int ow = 0; ow < w.output_width(); ++ow) {
          double sum = 0.0;
          for (int c = 0; c < w.channels; ++c)
            for (int i = 0; i < w.kernel_h; ++i)
              for (int j = 0; j < w.kernel_w; ++j) {
                const int row = oh * w.stride_h - w.pad_h + i;
                const int col = ow * w.stride_w - w.pad_w + j;
                if (row < 0 || row >= w.height || col < 0 || col >= w.width)
                  continue;
                sum +=
                    static_cast<double>(
                        weights[((f * w.channels + c) * w.kernel_h + i) * w.kernel_w + j]) *
                    x[((static_cast<std::size_t>(n) * w.channels + c) * w.height + row) * w.width +
                      col];
              }
          expected[((static_cast<std::size_t>(n) * filters + f) * w.output_height() + oh) *
                       w.output_width() +
                   ow] = static_cast<float>(sum);
        }

  auto x_buffer = floats(x);
  auto weights_buffer = floats(weights);
  auto columns = garbage(columns_size(w, images));
  auto y = garbage(expected.size());
  tested().im2col(x_buffer.get(), images, w, columns.get());
  for (int n = 0; n < images; ++n) // y_n (filters x positions) = W cols_n: NCHW as it stands
    tested().gemm(transpose::no, transpose::no, filters, positions, window_size, 1.0f,
                  weights_buffer.get(), window_size,
                  columns.get() + static_cast<std::size_t>(n) * window_size * positions, positions,
                  0.0f, y.get() + static_cast<std::size_t>(n) * filters * positions, positions);
  EXPECT_TRUE(all_close(y.to_host(), expected, test_support::gemm_tolerance));
}

TEST_P(layer_ops, im2col_of_a_small_image_by_hand) {
  // One 2x3 plane, 2x2 kernel, stride 1, padding 1 on the width only: outputs 1x4.
  auto x = floats({1, 2, 3, //
                   4, 5, 6});
  auto columns = garbage(16);
  tested().im2col(x.get(), 1, window2d{1, 2, 3, 2, 2, 1, 1, 0, 1}, columns.get());
  EXPECT_EQ(columns.to_host(), (std::vector<float>{0, 1, 2, 3,    // offset (0, 0)
                                                   1, 2, 3, 0,    // offset (0, 1)
                                                   0, 4, 5, 6,    // offset (1, 0)
                                                   4, 5, 6, 0})); // offset (1, 1)
}

// ---- padding never reaches a result ----------------------------------------------------------

TEST_P(layer_ops, padding_steps_change_nothing_in_the_sequence_kernels) {
  const sequence_window w{3, 9, 5, 3, 1};
  const std::vector<std::int32_t> lengths{1, 4, 9};
  const int filters = 6;
  auto x = random_floats(static_cast<std::size_t>(w.batch) * w.length * w.channels, 4300);
  auto pooled_input = random_floats(w.output_rows() * filters, 4301);
  auto x_with_other_padding = x;
  auto pooled_with_other_padding = pooled_input;
  for (int b = 0; b < w.batch; ++b) {
    for (int s = lengths[b]; s < w.length; ++s)
      for (int c = 0; c < w.channels; ++c)
        x_with_other_padding[(static_cast<std::size_t>(b) * w.length + s) * w.channels + c] = 1e6f;
    // Conv outputs past a sample's valid positions (for example bias + relu there) are large.
    for (int t = w.valid_outputs(lengths[b]); t < w.output_length(); ++t)
      for (int f = 0; f < filters; ++f)
        pooled_with_other_padding[(static_cast<std::size_t>(b) * w.output_length() + t) * filters +
                                  f] = 1e6f;
  }
  auto lengths_buffer = ints(lengths);
  const auto unfold = [&](const std::vector<float>& input) {
    auto input_buffer = floats(input);
    auto columns = garbage(w.output_rows() * w.window_size());
    tested().unfold1d(input_buffer.get(), lengths_buffer.get(), w, columns.get());
    return columns.to_host();
  };
  const auto pool = [&](const std::vector<float>& input) {
    auto input_buffer = floats(input);
    auto y = garbage(static_cast<std::size_t>(w.batch) * filters);
    auto argmax = garbage_ints(static_cast<std::size_t>(w.batch) * filters);
    tested().sequence_max_pool_forward(input_buffer.get(), lengths_buffer.get(), w, filters,
                                       y.get(), argmax.get());
    return std::pair{y.to_host(), argmax.to_host()};
  };
  EXPECT_EQ(unfold(x), unfold(x_with_other_padding));
  EXPECT_EQ(pool(pooled_input), pool(pooled_with_other_padding));

  // And the gradient of the padding is zero.
  auto columns = floats(random_floats(w.output_rows() * w.window_size(), 4302));
  auto folded = garbage(x.size());
  tested().fold1d(columns.get(), lengths_buffer.get(), w, folded.get());
  const auto dx = folded.to_host();
  for (int b = 0; b < w.batch; ++b)
    for (int s = lengths[b]; s < w.length; ++s)
      for (int c = 0; c < w.channels; ++c)
        EXPECT_EQ(dx[(static_cast<std::size_t>(b) * w.length + s) * w.channels + c], 0.0f)
            << "sample " << b << " step " << s;
}

// ---- hand-computed gradients -----------------------------------------------------------------

TEST_P(layer_ops, max_pool2d_backward_adds_up_where_windows_overlap) {
  // One 3x3 plane, 2x2 windows with stride 1: the centre is the maximum of all four windows.
  auto x = floats({0, 1, 0, //
                   2, 9, 3, //
                   0, 4, 0});
  auto y = garbage(4);
  auto argmax = garbage_ints(4);
  const window2d w{1, 3, 3, 2, 2, 1, 1, 0, 0};
  tested().max_pool2d_forward(x.get(), 1, w, y.get(), argmax.get());
  EXPECT_EQ(y.to_host(), (std::vector<float>{9, 9, 9, 9}));
  EXPECT_EQ(argmax.to_host(), (std::vector<std::int32_t>{4, 4, 4, 4}));
  auto dy = floats({1, 2, 4, 8});
  auto dx = garbage(9);
  tested().max_pool2d_backward(dy.get(), argmax.get(), 1, w, dx.get());
  EXPECT_EQ(dx.to_host(), (std::vector<float>{0, 0, 0, 0, 15, 0, 0, 0, 0}));
}

TEST_P(layer_ops, embedding_backward_sums_the_rows_of_a_repeated_id) {
  auto dy = floats({1, 2, 10, 20, 100, 200}); // three tokens, dim 2
  auto ids = ints({2, 0, 2});
  auto grad = garbage(8); // vocab 4: rows 1 and 3 get no token and must be zero
  tested().embedding_backward(dy.get(), ids.get(), 3, 4, 2, grad.get());
  EXPECT_EQ(grad.to_host(), (std::vector<float>{10, 20, 0, 0, 101, 202, 0, 0}));
}

TEST_P(layer_ops, embedding_gives_padding_a_zero_row_and_no_gradient) {
  auto table = floats({1, 2, 3, 4, 5, 6}); // vocab 3, dim 2
  auto ids = ints({2, padding_id, 0, padding_id});
  auto y = garbage(8);
  tested().embedding_forward(table.get(), 3, 2, ids.get(), 4, y.get());
  EXPECT_EQ(y.to_host(), (std::vector<float>{5, 6, 0, 0, 1, 2, 0, 0}));
  auto dy = floats({1, 2, 10, 20, 100, 200, 1000, 2000});
  auto grad = garbage(6);
  tested().embedding_backward(dy.get(), ids.get(), 4, 3, 2, grad.get());
  EXPECT_EQ(grad.to_host(), (std::vector<float>{100, 200, 0, 0, 1, 2}));
}

// ---- token batches -----------------------------------------------------------------------------

TEST_P(layer_ops, sequence_tokens_counts_leading_ids_and_keeps_the_steps_asked_for) {
  auto x = floats({4, 0, 7, -1,  //
                   -1, -1, -1, -1, // padding only: length 0
                   1, 2, 3, 255,   //
                   9, -3, -1, -1});
  auto ids = garbage_ints(12);
  auto lengths = garbage_ints(4);
  tested().sequence_tokens(x.get(), 4, 4, 3, ids.get(), lengths.get());
  EXPECT_EQ(lengths.to_host(), (std::vector<std::int32_t>{3, 0, 4, 1}));
  EXPECT_EQ(ids.to_host(), (std::vector<std::int32_t>{4, 0, 7, -1, -1, -1, 1, 2, 3, 9, -1, -1}));
}

TEST_P(layer_ops, sequence_tokens_rejects_values_that_are_neither_ids_nor_padding) {
  auto ids = garbage_ints(8);
  auto lengths = garbage_ints(2);
  const auto refusal = [&](float value, int at) {
    std::vector<float> values{3, 1, 2, 0, 5, 6, -1, -1};
    values[static_cast<std::size_t>(at)] = value;
    auto x = floats(values);
    try {
      tested().sequence_tokens(x.get(), 2, 4, 4, ids.get(), lengths.get());
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal(2.5f, 5).find("sample 1 step 1 holds 2.5, neither a token id"),
            std::string::npos);
  EXPECT_NE(refusal(16777216.0f, 0).find("sample 0 step 0 holds"), std::string::npos);
  EXPECT_NE(refusal(std::numeric_limits<float>::quiet_NaN(), 2).find("sample 0 step 2 holds nan"),
            std::string::npos);
  EXPECT_NE(refusal(4.0f, 7).find("sample 1 has token 4 at step 3 after padding at step 2"),
            std::string::npos);
  EXPECT_EQ(refusal(16777215.0f, 0), "accepted");
  EXPECT_EQ(refusal(-0.25f, 6), "accepted"); // any negative value is padding
  auto x = floats({1, 2});
  EXPECT_THROW(tested().sequence_tokens(x.get(), 1, 2, 3, ids.get(), lengths.get()),
               std::invalid_argument); // more steps than columns
  EXPECT_THROW(tested().sequence_tokens(x.get(), 1, 2, 0, ids.get(), lengths.get()),
               std::invalid_argument);
}

// ---- dropout -----------------------------------------------------------------------------------

TEST_P(layer_ops, dropout_keeps_about_one_minus_p_scaled_and_reuses_the_mask_backward) {
  const std::size_t n = 100003;
  const float p = 0.3f;
  const std::vector<float> ones(n, 1.0f);
  auto x = floats(ones);
  auto y = garbage(n);
  auto dx = garbage(n);
  tested().dropout_forward(x.get(), y.get(), n, p, 42);
  tested().dropout_backward(x.get(), dx.get(), n, p, 42);
  const auto forward = y.to_host();
  EXPECT_EQ(dx.to_host(), forward); // the same mask and scale, from the seed alone
  std::size_t kept = 0;
  for (const float value : forward) {
    ASSERT_TRUE(value == 0.0f || value == 1.0f / (1.0f - p)) << value;
    kept += value != 0.0f ? 1 : 0;
  }
  // The kept count is binomial(n, 0.7): its standard deviation is about 145; allow 5 of them.
  EXPECT_NEAR(static_cast<double>(kept), 0.7 * n, 725.0);

  // Another seed draws another mask; p = 0 keeps everything unscaled; y may be x.
  auto other = garbage(n);
  tested().dropout_forward(x.get(), other.get(), n, p, 43);
  EXPECT_NE(other.to_host(), forward);
  tested().dropout_forward(x.get(), x.get(), n, 0.0f, 42);
  EXPECT_EQ(x.to_host(), ones);
}

// ---- arguments ops.hpp rules out
// -----------------------------------------------------------------

TEST_P(layer_ops, reject_empty_shapes_and_windows_that_do_not_fit) {
  auto buffer = floats(std::vector<float>(64, 1.0f));
  auto indices = garbage_ints(64);
  const window2d fits{1, 4, 4, 3, 3, 1, 1, 0, 0};
  window2d no_channels = fits;
  no_channels.channels = 0;
  window2d too_wide = fits;
  too_wide.kernel_w = 5;
  window2d zero_stride = fits;
  zero_stride.stride_h = 0;
  window2d padded = fits;
  padded.pad_h = 1;
  for (const window2d& w : {no_channels, too_wide, zero_stride}) {
    EXPECT_THROW(tested().im2col(buffer.get(), 1, w, buffer.get()), std::invalid_argument);
    EXPECT_THROW(tested().col2im(buffer.get(), 1, w, buffer.get()), std::invalid_argument);
  }
  EXPECT_THROW(tested().im2col(buffer.get(), 0, fits, buffer.get()), std::invalid_argument);
  EXPECT_THROW(tested().max_pool2d_forward(buffer.get(), 1, padded, buffer.get(), indices.get()),
               std::invalid_argument); // pooling takes no padding
  EXPECT_THROW(tested().max_pool2d_backward(buffer.get(), indices.get(), 1, too_wide, buffer.get()),
               std::invalid_argument);
  EXPECT_THROW(tested().embedding_forward(buffer.get(), 4, 0, indices.get(), 1, buffer.get()),
               std::invalid_argument);
  EXPECT_THROW(tested().embedding_backward(buffer.get(), indices.get(), 0, 4, 2, buffer.get()),
               std::invalid_argument);
  EXPECT_THROW(tested().dropout_forward(buffer.get(), buffer.get(), 0, 0.5f, 1),
               std::invalid_argument);
  auto lengths = ints({2, 2});
  const sequence_window longer_kernel_than_steps{2, 2, 1, 4, 0};
  EXPECT_THROW(
      tested().unfold1d(buffer.get(), lengths.get(), longer_kernel_than_steps, buffer.get()),
      std::invalid_argument);
  EXPECT_THROW(tested().sequence_max_pool_forward(buffer.get(), lengths.get(),
                                                  sequence_window{2, 2, 1, 1, 0}, 0, buffer.get(),
                                                  indices.get()),
               std::invalid_argument);
}

TEST_P(layer_ops, dropout_rejects_p_outside_zero_to_one) {
  auto buffer = floats({1.0f, 2.0f});
  for (const float p : {-0.1f, 1.0f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    EXPECT_THROW(tested().dropout_forward(buffer.get(), buffer.get(), 2, p, 1),
                 std::invalid_argument)
        << p;
    EXPECT_THROW(tested().dropout_backward(buffer.get(), buffer.get(), 2, p, 1),
                 std::invalid_argument)
        << p;
  }
}

TEST_P(layer_ops, embedding_forward_rejects_ids_outside_the_vocabulary) {
  auto table = floats(std::vector<float>(6, 1.0f)); // vocab 3, dim 2
  auto y = garbage(6);
  for (const std::int32_t bad : {-2, 3}) { // -1 is padding_id
    auto ids = ints({0, bad, 2});
    try {
      tested().embedding_forward(table.get(), 3, 2, ids.get(), 3, y.get());
      ADD_FAILURE() << "id " << bad << " accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("token 1 has id " + std::to_string(bad)),
                std::string::npos)
          << error.what();
    }
  }
  // Still usable afterwards.
  auto ids = ints({2, 1, 0});
  tested().embedding_forward(table.get(), 3, 2, ids.get(), 3, y.get());
  EXPECT_EQ(y.to_host(), std::vector<float>(6, 1.0f));
}

TEST_P(layer_ops, unfold1d_rejects_lengths_outside_their_range) {
  const sequence_window w{3, 5, 2, 3, 0}; // kernel 3, no padding: lengths must lie in [3, 5]
  auto x = floats(random_floats(30, 4400));
  auto columns = garbage(w.output_rows() * w.window_size());
  for (const std::int32_t bad : {0, 2, 6}) {
    auto lengths = ints({5, 3, bad});
    EXPECT_THROW(tested().unfold1d(x.get(), lengths.get(), w, columns.get()), std::invalid_argument)
        << bad;
  }
}

// The data checks the CUDA ops leave to the caller (kernels/cuda/cuda_ops.hpp).
TEST_P(layer_ops, host_kernels_check_every_id_length_and_argmax) {
  if (!checks_all_data(tested()))
    GTEST_SKIP() << tested().name() << " checks ids and lengths in the forward pass only";
  auto buffer = floats(std::vector<float>(64, 1.0f));
  auto negative_id = ints({0, -2});
  EXPECT_THROW(tested().embedding_backward(buffer.get(), negative_id.get(), 2, 4, 2, buffer.get()),
               std::invalid_argument);
  const sequence_window w{2, 4, 2, 1, 0};
  auto too_long = ints({4, 5});
  EXPECT_THROW(tested().fold1d(buffer.get(), too_long.get(), w, buffer.get()),
               std::invalid_argument);
  auto argmax = ints({0, 0, 0, 4});
  EXPECT_THROW(tested().sequence_max_pool_forward(buffer.get(), too_long.get(), w, 2, buffer.get(),
                                                  argmax.get()),
               std::invalid_argument);
  EXPECT_THROW(tested().sequence_max_pool_backward(buffer.get(), argmax.get(), w, 2, buffer.get()),
               std::invalid_argument); // argmax 4 is past the 4 positions
  auto pooled_argmax = ints({0, 16, 0, 0});
  EXPECT_THROW(tested().max_pool2d_backward(buffer.get(), pooled_argmax.get(), 1,
                                            window2d{1, 4, 4, 2, 2, 2, 2, 0, 0}, buffer.get()),
               std::invalid_argument); // 16 is past the 4x4 plane
}

} // namespace
} // namespace herd::kernels
