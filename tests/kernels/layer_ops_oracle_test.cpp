// Every layer kernel of the implementation under test against reference_ops() on seeded random
// inputs of odd shapes: strides that skip pixels, padding wider than half the kernel, windows that
// do not tile the image, sequences of lengths 1, 4 and 9 in a batch padded to 9. Output buffers
// start as NaN, so an element a kernel forgets to write fails the comparison.
#include "herd/ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernel_test_support.hpp"
#include "layer_ops_fixture.hpp"

namespace herd::kernels {
namespace {

using test_support::all_close;
using test_support::elementwise_tolerance;
using test_support::layer_ops;
using test_support::random_floats;
using test_support::random_labels;

std::string describe(const window2d& w) {
  return std::to_string(w.channels) + "x" + std::to_string(w.height) + "x" +
         std::to_string(w.width) + " kernel " + std::to_string(w.kernel_h) + "x" +
         std::to_string(w.kernel_w) + " stride " + std::to_string(w.stride_h) + "x" +
         std::to_string(w.stride_w) + " pad " + std::to_string(w.pad_h) + "x" +
         std::to_string(w.pad_w);
}

std::string describe(const sequence_window& w) {
  return "batch " + std::to_string(w.batch) + " length " + std::to_string(w.length) + " channels " +
         std::to_string(w.channels) + " kernel " + std::to_string(w.kernel) + " padding " +
         std::to_string(w.padding);
}

// channels, height, width, kernel h/w, stride h/w, pad h/w.
const std::vector<window2d> convolution_windows{
    {3, 7, 5, 3, 3, 2, 2, 1, 1},   // the brief's shape: strided, padded, not tiling
    {1, 28, 28, 3, 3, 1, 1, 1, 1}, // the CNN's first layer
    {2, 6, 9, 2, 3, 1, 2, 0, 1},   // rectangular kernel, different strides per axis
    {3, 5, 5, 5, 5, 1, 1, 2, 2},   // kernel as large as the image
    {2, 4, 3, 1, 1, 1, 1, 0, 0},   // 1x1 kernel: columns are the image
    {1, 3, 4, 2, 2, 3, 3, 2, 2},   // padding as wide as the kernel: some windows all padding
};

const std::vector<window2d> pooling_windows{
    {3, 7, 5, 2, 2, 2, 2, 0, 0}, // drops the last row and column
    {2, 6, 6, 3, 3, 2, 2, 0, 0}, // overlapping windows
    {1, 5, 7, 3, 2, 1, 2, 0, 0}, // rectangular
    {3, 4, 4, 4, 4, 1, 1, 0, 0}, // one window over the whole plane
};

constexpr int batch_of_images = 3;

std::size_t columns_size(const window2d& w, int images) {
  return static_cast<std::size_t>(images) * w.column_rows() * w.output_positions();
}

std::size_t pooled_size(const window2d& w, int images) {
  return static_cast<std::size_t>(images) * static_cast<std::size_t>(w.channels) *
         w.output_positions();
}

// Values in {0, 1, 2}: most pooling windows hold tied maxima, where the first one must win.
std::vector<float> values_with_ties(std::size_t n, std::uint32_t seed) {
  auto values = random_floats(n, seed, 0.0f, 3.0f);
  for (float& value : values)
    value = std::floor(value);
  return values;
}

TEST_P(layer_ops, im2col_matches_reference) {
  std::uint32_t seed = 3000;
  for (const window2d& w : convolution_windows)
    for (const int images : {1, batch_of_images}) {
      SCOPED_TRACE(describe(w) + " images " + std::to_string(images));
      const auto x = random_floats(static_cast<std::size_t>(images) * w.image_size(), seed++);
      std::vector<float> expected(columns_size(w, images));
      oracle().im2col(x.data(), images, w, expected.data());
      auto x_buffer = floats(x);
      auto columns = garbage(expected.size());
      tested().im2col(x_buffer.get(), images, w, columns.get());
      EXPECT_EQ(columns.to_host(), expected); // a copy with zeros: exact
    }
}

TEST_P(layer_ops, col2im_matches_reference) {
  std::uint32_t seed = 3100;
  for (const window2d& w : convolution_windows)
    for (const int images : {1, batch_of_images}) {
      SCOPED_TRACE(describe(w) + " images " + std::to_string(images));
      const auto columns = random_floats(columns_size(w, images), seed++);
      std::vector<float> expected(static_cast<std::size_t>(images) * w.image_size());
      oracle().col2im(columns.data(), images, w, expected.data());
      auto columns_buffer = floats(columns);
      auto x = garbage(expected.size());
      tested().col2im(columns_buffer.get(), images, w, x.get());
      EXPECT_TRUE(all_close(x.to_host(), expected, elementwise_tolerance));
    }
}

TEST_P(layer_ops, max_pool2d_forward_matches_reference_with_ties) {
  std::uint32_t seed = 3200;
  for (const window2d& w : pooling_windows) {
    SCOPED_TRACE(describe(w));
    const auto x = values_with_ties(batch_of_images * w.image_size(), seed++);
    std::vector<float> expected_y(pooled_size(w, batch_of_images));
    std::vector<std::int32_t> expected_argmax(expected_y.size());
    oracle().max_pool2d_forward(x.data(), batch_of_images, w, expected_y.data(),
                                expected_argmax.data());
    auto x_buffer = floats(x);
    auto y = garbage(expected_y.size());
    auto argmax = garbage_ints(expected_y.size());
    tested().max_pool2d_forward(x_buffer.get(), batch_of_images, w, y.get(), argmax.get());
    EXPECT_EQ(y.to_host(), expected_y);
    EXPECT_EQ(argmax.to_host(), expected_argmax);
  }
}

TEST_P(layer_ops, max_pool2d_backward_matches_reference) {
  std::uint32_t seed = 3300;
  for (const window2d& w : pooling_windows) {
    SCOPED_TRACE(describe(w));
    const auto x = values_with_ties(batch_of_images * w.image_size(), seed++);
    const auto dy = random_floats(pooled_size(w, batch_of_images), seed++);
    std::vector<float> y(dy.size());
    std::vector<std::int32_t> argmax(dy.size());
    oracle().max_pool2d_forward(x.data(), batch_of_images, w, y.data(), argmax.data());
    std::vector<float> expected(x.size());
    oracle().max_pool2d_backward(dy.data(), argmax.data(), batch_of_images, w, expected.data());
    auto dy_buffer = floats(dy);
    auto argmax_buffer = ints(argmax);
    auto dx = garbage(x.size());
    tested().max_pool2d_backward(dy_buffer.get(), argmax_buffer.get(), batch_of_images, w,
                                 dx.get());
    EXPECT_TRUE(all_close(dx.to_host(), expected, elementwise_tolerance));
  }
}

TEST_P(layer_ops, dropout_masks_are_bit_identical_to_reference) {
  std::uint32_t seed = 3400;
  for (const std::size_t n :
       {std::size_t{1}, std::size_t{7}, std::size_t{4099}, std::size_t{40009}})
    for (const float p : {0.0f, 0.1f, 0.5f, 0.9f}) {
      SCOPED_TRACE("n " + std::to_string(n) + " p " + std::to_string(p));
      const std::uint64_t mask_seed = 0x5eed0000ULL + seed;
      const auto x = random_floats(n, seed++);
      const auto dy = random_floats(n, seed++);
      std::vector<float> expected_y(n);
      std::vector<float> expected_dx(n);
      oracle().dropout_forward(x.data(), expected_y.data(), n, p, mask_seed);
      oracle().dropout_backward(dy.data(), expected_dx.data(), n, p, mask_seed);
      auto x_buffer = floats(x);
      auto dy_buffer = floats(dy);
      auto y = garbage(n);
      auto dx = garbage(n);
      tested().dropout_forward(x_buffer.get(), y.get(), n, p, mask_seed);
      tested().dropout_backward(dy_buffer.get(), dx.get(), n, p, mask_seed);
      EXPECT_EQ(y.to_host(), expected_y);
      EXPECT_EQ(dx.to_host(), expected_dx);
    }
}

// Rows of random ids, each ending in its own amount of padding (any negative value: -1, -0.5, -1e9,
// -inf), from none to the whole row.
TEST_P(layer_ops, sequence_tokens_matches_reference) {
  std::uint32_t seed = 3400;
  // (rows, cols, vocab)
  for (const auto& [rows, cols, vocab] :
       {std::tuple{3, 9, 11}, std::tuple{5, 1, 3}, std::tuple{4, 33, 256}}) {
    SCOPED_TRACE("rows " + std::to_string(rows) + " cols " + std::to_string(cols));
    const auto ids = random_labels(rows * cols, vocab, seed++);
    const auto lengths = random_labels(rows, cols + 1, seed++);
    const float paddings[] = {-1.0f, -0.5f, -1e9f, -std::numeric_limits<float>::infinity()};
    std::vector<float> x(ids.begin(), ids.end());
    int longest = 0;
    for (int r = 0; r < rows; ++r) {
      longest = std::max(longest, lengths[static_cast<std::size_t>(r)]);
      for (int c = lengths[static_cast<std::size_t>(r)]; c < cols; ++c)
        x[static_cast<std::size_t>(r * cols + c)] = paddings[(r + c) % 4];
    }
    auto x_buffer = floats(x);
    for (const int steps : {cols, std::max(longest, 1)}) {
      std::vector<std::int32_t> expected_ids(static_cast<std::size_t>(rows * steps));
      std::vector<std::int32_t> expected_lengths(static_cast<std::size_t>(rows));
      oracle().sequence_tokens(x.data(), rows, cols, steps, expected_ids.data(),
                               expected_lengths.data());
      auto tested_ids = garbage_ints(expected_ids.size());
      auto tested_lengths = garbage_ints(expected_lengths.size());
      tested().sequence_tokens(x_buffer.get(), rows, cols, steps, tested_ids.get(),
                               tested_lengths.get());
      EXPECT_EQ(tested_ids.to_host(), expected_ids) << "steps " << steps;
      EXPECT_EQ(tested_lengths.to_host(), expected_lengths) << "steps " << steps;
      EXPECT_EQ(expected_lengths, lengths); // and the oracle reads the lengths that were written
    }
  }
}

TEST_P(layer_ops, embedding_matches_reference) {
  std::uint32_t seed = 3500;
  // (vocab, dim, batch, length): ids repeat within and across samples.
  for (const auto& [vocab, dim, batch, length] :
       {std::tuple{11, 7, 3, 9}, std::tuple{1, 5, 2, 3}, std::tuple{300, 33, 4, 17}}) {
    SCOPED_TRACE("vocab " + std::to_string(vocab) + " dim " + std::to_string(dim));
    const int tokens = batch * length;
    const auto table = random_floats(static_cast<std::size_t>(vocab) * dim, seed++);
    auto ids = random_labels(tokens, vocab, seed++);
    for (std::size_t t = 0; t < ids.size(); t += 3) // padding: a zero row and no gradient
      ids[t] = padding_id;
    const auto dy = random_floats(static_cast<std::size_t>(tokens) * dim, seed++);
    std::vector<float> expected_y(dy.size());
    std::vector<float> expected_grad(table.size());
    oracle().embedding_forward(table.data(), vocab, dim, ids.data(), tokens, expected_y.data());
    oracle().embedding_backward(dy.data(), ids.data(), tokens, vocab, dim, expected_grad.data());
    auto table_buffer = floats(table);
    auto ids_buffer = ints(ids);
    auto dy_buffer = floats(dy);
    auto y = garbage(dy.size());
    auto grad = garbage(table.size());
    tested().embedding_forward(table_buffer.get(), vocab, dim, ids_buffer.get(), tokens, y.get());
    tested().embedding_backward(dy_buffer.get(), ids_buffer.get(), tokens, vocab, dim, grad.get());
    EXPECT_EQ(y.to_host(), expected_y);
    EXPECT_TRUE(all_close(grad.to_host(), expected_grad, elementwise_tolerance));
  }
}

// batch, padded length, channels, kernel, padding; each with lengths that reach the shortest
// allowed, the padded length, and something in between.
struct sequence_case {
  sequence_window window;
  std::vector<std::int32_t> lengths;
};

const std::vector<sequence_case> sequence_cases{
    {{3, 9, 5, 3, 1}, {1, 4, 9}},    // "same" padding: a length-1 sample still has an output
    {{3, 9, 5, 2, 0}, {2, 4, 9}},    // no padding: a sample needs at least kernel steps
    {{4, 6, 3, 4, 2}, {1, 6, 2, 5}}, // padding wider than half the kernel
    {{2, 7, 4, 1, 0}, {7, 3}},       // kernel 1: a plain masked copy
};

std::vector<float> random_sequences(const sequence_window& w, std::uint32_t seed) {
  return random_floats(static_cast<std::size_t>(w.batch) * w.length * w.channels, seed);
}

TEST_P(layer_ops, unfold1d_and_fold1d_match_reference) {
  std::uint32_t seed = 3600;
  for (const auto& [w, lengths] : sequence_cases) {
    SCOPED_TRACE(describe(w));
    const auto x = random_sequences(w, seed++);
    const auto columns = random_floats(w.output_rows() * w.window_size(), seed++);
    std::vector<float> expected_columns(columns.size());
    std::vector<float> expected_x(x.size());
    oracle().unfold1d(x.data(), lengths.data(), w, expected_columns.data());
    oracle().fold1d(columns.data(), lengths.data(), w, expected_x.data());
    auto x_buffer = floats(x);
    auto lengths_buffer = ints(lengths);
    auto columns_buffer = floats(columns);
    auto unfolded = garbage(columns.size());
    auto folded = garbage(x.size());
    tested().unfold1d(x_buffer.get(), lengths_buffer.get(), w, unfolded.get());
    tested().fold1d(columns_buffer.get(), lengths_buffer.get(), w, folded.get());
    EXPECT_EQ(unfolded.to_host(), expected_columns);
    EXPECT_TRUE(all_close(folded.to_host(), expected_x, elementwise_tolerance));
  }
}

TEST_P(layer_ops, sequence_max_pool_matches_reference_with_ties) {
  std::uint32_t seed = 3700;
  const int filters = 7;
  for (const auto& [w, lengths] : sequence_cases) {
    SCOPED_TRACE(describe(w));
    const auto x = values_with_ties(w.output_rows() * filters, seed++);
    const auto dy = random_floats(static_cast<std::size_t>(w.batch) * filters, seed++);
    std::vector<float> expected_y(dy.size());
    std::vector<std::int32_t> expected_argmax(dy.size());
    oracle().sequence_max_pool_forward(x.data(), lengths.data(), w, filters, expected_y.data(),
                                       expected_argmax.data());
    std::vector<float> expected_dx(x.size());
    oracle().sequence_max_pool_backward(dy.data(), expected_argmax.data(), w, filters,
                                        expected_dx.data());
    auto x_buffer = floats(x);
    auto lengths_buffer = ints(lengths);
    auto dy_buffer = floats(dy);
    auto y = garbage(dy.size());
    auto argmax = garbage_ints(dy.size());
    auto dx = garbage(x.size());
    tested().sequence_max_pool_forward(x_buffer.get(), lengths_buffer.get(), w, filters, y.get(),
                                       argmax.get());
    tested().sequence_max_pool_backward(dy_buffer.get(), argmax.get(), w, filters, dx.get());
    EXPECT_EQ(y.to_host(), expected_y);
    EXPECT_EQ(argmax.to_host(), expected_argmax);
    EXPECT_EQ(dx.to_host(), expected_dx);
  }
}

} // namespace
} // namespace herd::kernels
