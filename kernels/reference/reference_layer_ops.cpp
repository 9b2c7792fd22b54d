// reference_ops()' layer kernels: each output element computed on its own from the definition in
// ops.hpp, gathers rather than scatters where that is plainer, sums in double. The dropout mask is
// written out here again rather than taken from kernels/dropout_mask.hpp, so that the oracle shares
// no code with the implementations it judges.
#include "kernels/reference/reference_layer_ops.hpp"

#include "kernels/check.hpp"
#include "kernels/preconditions.hpp"

#include <cstddef>
#include <cstdint>

namespace herd::kernels {
namespace {

std::size_t size(int value) {
  return static_cast<std::size_t>(value);
}

// Where x[image][channel][row][col] sits in a batch of NCHW images.
std::size_t pixel(const window2d& w, int image, int channel, int row, int col) {
  return ((size(image) * size(w.channels) + size(channel)) * size(w.height) + size(row)) *
             size(w.width) +
         size(col);
}

// Where row (channel, i, j), column (oh, ow) of one image's column matrix sits among all images'.
std::size_t column_entry(const window2d& w, int image, int channel, int i, int j, int oh, int ow) {
  const std::size_t row = (size(channel) * size(w.kernel_h) + size(i)) * size(w.kernel_w) + size(j);
  return (size(image) * w.column_rows() + row) * w.output_positions() +
         size(oh) * size(w.output_width()) + size(ow);
}

// The output position whose window, starting at `position * stride - pad`, has offset `offset` at
// `input`; -1 when no output position does.
int covering_output(int input, int offset, int stride, int pad, int outputs) {
  const int start = input + pad - offset;
  if (start < 0 || start % stride != 0 || start / stride >= outputs)
    return -1;
  return start / stride;
}

std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

// ops.hpp's dropout mask: kept when the top 24 bits of splitmix64(seed, index), over 2^24, are at
// least p.
bool dropout_keeps(std::uint64_t seed, std::size_t index, float p) {
  const std::uint64_t state = splitmix64_mix(seed) + (index + 1U) * 0x9E3779B97F4A7C15ULL;
  const std::uint64_t top_24_bits = splitmix64_mix(state) >> 40U;
  return static_cast<double>(top_24_bits) / 16777216.0 >= static_cast<double>(p);
}

void dropout(const float* in, float* out, std::size_t n, float p, std::uint64_t seed) {
  const float scale = 1.0f / (1.0f - p);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = dropout_keeps(seed, i, p) ? in[i] * scale : 0.0f;
}

void check_ids(const std::int32_t* ids, int tokens, int vocab) {
  for (int t = 0; t < tokens; ++t)
    HERD_CHECK(ids[t] == padding_id || (ids[t] >= 0 && ids[t] < vocab),
               "token " << t << " has id " << ids[t] << ", outside [0, " << vocab << ')');
}

void check_lengths(const std::int32_t* lengths, const sequence_window& w) {
  for (int b = 0; b < w.batch; ++b)
    HERD_CHECK(lengths[b] >= w.shortest_length() && lengths[b] <= w.length,
               "sample " << b << " has length " << lengths[b] << ", outside ["
                         << w.shortest_length() << ", " << w.length << ']');
}

// Where x[b][t][c] sits in a batch x steps x channels array.
std::size_t step(int b, int t, int c, int steps, int channels) {
  return (size(b) * size(steps) + size(t)) * size(channels) + size(c);
}

} // namespace

void reference_layer_ops::im2col(const float* x, int images, const window2d& window,
                                 float* columns) const {
  preconditions::im2col(x, images, window, columns);
  const window2d& w = window;
  for (int n = 0; n < images; ++n)
    for (int c = 0; c < w.channels; ++c)
      for (int i = 0; i < w.kernel_h; ++i)
        for (int j = 0; j < w.kernel_w; ++j)
          for (int oh = 0; oh < w.output_height(); ++oh)
            for (int ow = 0; ow < w.output_width(); ++ow) {
              const int row = oh * w.stride_h - w.pad_h + i;
              const int col = ow * w.stride_w - w.pad_w + j;
              const bool inside = row >= 0 && row < w.height && col >= 0 && col < w.width;
              columns[column_entry(w, n, c, i, j, oh, ow)] =
                  inside ? x[pixel(w, n, c, row, col)] : 0.0f;
            }
}

void reference_layer_ops::col2im(const float* columns, int images, const window2d& window,
                                 float* x) const {
  preconditions::col2im(columns, images, window, x);
  const window2d& w = window;
  for (int n = 0; n < images; ++n)
    for (int c = 0; c < w.channels; ++c)
      for (int row = 0; row < w.height; ++row)
        for (int col = 0; col < w.width; ++col) {
          double sum = 0.0;
          for (int i = 0; i < w.kernel_h; ++i)
            for (int j = 0; j < w.kernel_w; ++j) {
              const int oh = covering_output(row, i, w.stride_h, w.pad_h, w.output_height());
              const int ow = covering_output(col, j, w.stride_w, w.pad_w, w.output_width());
              if (oh >= 0 && ow >= 0)
                sum += static_cast<double>(columns[column_entry(w, n, c, i, j, oh, ow)]);
            }
          x[pixel(w, n, c, row, col)] = static_cast<float>(sum);
        }
}

void reference_layer_ops::max_pool2d_forward(const float* x, int images, const window2d& window,
                                             float* y, std::int32_t* argmax) const {
  preconditions::max_pool2d(x, images, window, argmax, y);
  const window2d& w = window;
  std::size_t out = 0;
  for (int n = 0; n < images; ++n)
    for (int c = 0; c < w.channels; ++c)
      for (int oh = 0; oh < w.output_height(); ++oh)
        for (int ow = 0; ow < w.output_width(); ++ow, ++out) {
          int best_row = oh * w.stride_h;
          int best_col = ow * w.stride_w;
          for (int i = 0; i < w.kernel_h; ++i)
            for (int j = 0; j < w.kernel_w; ++j) {
              const int row = oh * w.stride_h + i;
              const int col = ow * w.stride_w + j;
              if (x[pixel(w, n, c, row, col)] > x[pixel(w, n, c, best_row, best_col)]) {
                best_row = row;
                best_col = col;
              }
            }
          y[out] = x[pixel(w, n, c, best_row, best_col)];
          argmax[out] = best_row * w.width + best_col;
        }
}

void reference_layer_ops::max_pool2d_backward(const float* dy, const std::int32_t* argmax,
                                              int images, const window2d& window, float* dx) const {
  preconditions::max_pool2d(dy, images, window, argmax, dx);
  const window2d& w = window;
  const int plane = w.height * w.width;
  for (std::size_t i = 0; i < size(images) * w.image_size(); ++i)
    dx[i] = 0.0f;
  std::size_t out = 0;
  for (int n = 0; n < images; ++n)
    for (int c = 0; c < w.channels; ++c)
      for (std::size_t o = 0; o < w.output_positions(); ++o, ++out) {
        HERD_CHECK(argmax[out] >= 0 && argmax[out] < plane,
                   "output " << out << " has argmax " << argmax[out] << ", outside [0, " << plane
                             << ')');
        dx[pixel(w, n, c, 0, 0) + size(argmax[out])] += dy[out];
      }
}

void reference_layer_ops::dropout_forward(const float* x, float* y, std::size_t n, float p,
                                          std::uint64_t seed) const {
  preconditions::dropout(x, y, n, p);
  dropout(x, y, n, p, seed);
}

void reference_layer_ops::dropout_backward(const float* dy, float* dx, std::size_t n, float p,
                                           std::uint64_t seed) const {
  preconditions::dropout(dy, dx, n, p);
  dropout(dy, dx, n, p, seed);
}

void reference_layer_ops::sequence_tokens(const float* x, int rows, int cols, int steps,
                                          std::int32_t* ids, std::int32_t* lengths) const {
  preconditions::sequence_tokens(x, rows, cols, steps, ids, lengths);
  for (int r = 0; r < rows; ++r) {
    int length = 0; // up to the first negative value
    while (length < cols && !(x[size(r) * size(cols) + size(length)] < 0.0f))
      ++length;
    for (int c = 0; c < cols; ++c)
      preconditions::token_entry(r, c, x[size(r) * size(cols) + size(c)], length);
    lengths[r] = length;
    for (int c = 0; c < steps; ++c)
      ids[size(r) * size(steps) + size(c)] =
          c < length ? static_cast<std::int32_t>(x[size(r) * size(cols) + size(c)]) : padding_id;
  }
}

void reference_layer_ops::embedding_forward(const float* table, int vocab, int dim,
                                            const std::int32_t* ids, int tokens, float* y) const {
  preconditions::embedding(table, vocab, dim, ids, tokens, y);
  check_ids(ids, tokens, vocab);
  for (int t = 0; t < tokens; ++t)
    for (int d = 0; d < dim; ++d)
      y[size(t) * size(dim) + size(d)] =
          ids[t] == padding_id ? 0.0f : table[size(ids[t]) * size(dim) + size(d)];
}

void reference_layer_ops::embedding_backward(const float* dy, const std::int32_t* ids, int tokens,
                                             int vocab, int dim, float* table_grad) const {
  preconditions::embedding(table_grad, vocab, dim, ids, tokens, dy);
  check_ids(ids, tokens, vocab);
  for (int v = 0; v < vocab; ++v)
    for (int d = 0; d < dim; ++d) {
      double sum = 0.0;
      for (int t = 0; t < tokens; ++t)
        if (ids[t] == v)
          sum += static_cast<double>(dy[size(t) * size(dim) + size(d)]);
      table_grad[size(v) * size(dim) + size(d)] = static_cast<float>(sum);
    }
}

void reference_layer_ops::unfold1d(const float* x, const std::int32_t* lengths,
                                   const sequence_window& window, float* columns) const {
  preconditions::unfold1d(x, lengths, window, columns);
  const sequence_window& w = window;
  check_lengths(lengths, w);
  std::size_t out = 0;
  for (int b = 0; b < w.batch; ++b)
    for (int t = 0; t < w.output_length(); ++t)
      for (int j = 0; j < w.kernel; ++j)
        for (int c = 0; c < w.channels; ++c, ++out) {
          const int source = t - w.padding + j;
          const bool valid = t < w.valid_outputs(lengths[b]) && source >= 0 && source < lengths[b];
          columns[out] = valid ? x[step(b, source, c, w.length, w.channels)] : 0.0f;
        }
}

void reference_layer_ops::fold1d(const float* columns, const std::int32_t* lengths,
                                 const sequence_window& window, float* x) const {
  preconditions::unfold1d(x, lengths, window, columns);
  const sequence_window& w = window;
  check_lengths(lengths, w);
  for (int b = 0; b < w.batch; ++b)
    for (int s = 0; s < w.length; ++s)
      for (int c = 0; c < w.channels; ++c) {
        double sum = 0.0;
        if (s < lengths[b])
          for (int j = 0; j < w.kernel; ++j) {
            const int t = s + w.padding - j; // the output position that reads step s at offset j
            if (t >= 0 && t < w.valid_outputs(lengths[b]))
              sum += static_cast<double>(
                  columns[step(b, t, 0, w.output_length(), 1) * w.window_size() +
                          size(j) * size(w.channels) + size(c)]);
          }
        x[step(b, s, c, w.length, w.channels)] = static_cast<float>(sum);
      }
}

void reference_layer_ops::sequence_max_pool_forward(const float* x, const std::int32_t* lengths,
                                                    const sequence_window& window, int filters,
                                                    float* y, std::int32_t* argmax) const {
  preconditions::sequence_max_pool(x, window, filters, argmax, y);
  preconditions::sequence_lengths(lengths);
  const sequence_window& w = window;
  check_lengths(lengths, w);
  for (int b = 0; b < w.batch; ++b)
    for (int f = 0; f < filters; ++f) {
      int best = 0;
      for (int t = 1; t < w.valid_outputs(lengths[b]); ++t)
        if (x[step(b, t, f, w.output_length(), filters)] >
            x[step(b, best, f, w.output_length(), filters)])
          best = t;
      y[step(b, 0, f, 1, filters)] = x[step(b, best, f, w.output_length(), filters)];
      argmax[step(b, 0, f, 1, filters)] = best;
    }
}

void reference_layer_ops::sequence_max_pool_backward(const float* dy, const std::int32_t* argmax,
                                                     const sequence_window& window, int filters,
                                                     float* dx) const {
  preconditions::sequence_max_pool(dy, window, filters, argmax, dx);
  const sequence_window& w = window;
  for (int b = 0; b < w.batch; ++b)
    for (int f = 0; f < filters; ++f) {
      const std::int32_t position = argmax[step(b, 0, f, 1, filters)];
      HERD_CHECK(position >= 0 && position < w.output_length(),
                 "sample " << b << " filter " << f << " has argmax " << position << ", outside [0, "
                           << w.output_length() << ')');
      for (int t = 0; t < w.output_length(); ++t)
        dx[step(b, t, f, w.output_length(), filters)] =
            t == position ? dy[step(b, 0, f, 1, filters)] : 0.0f;
    }
}

} // namespace herd::kernels
