// cpu_ops()' layer kernels. The unfolds work a row of output at a time: the range of a row that
// falls inside the input is found once, copied (memcpy when the stride is 1) and the rest zeroed;
// the folds are the same loops adding into a zeroed input. Data (ids, lengths, argmax) is checked
// before anything is written.
#include "kernels/cpu/cpu_layer_ops.hpp"

#include "kernels/check.hpp"
#include "kernels/cpu/vectorised.hpp"
#include "kernels/dropout_mask.hpp"
#include "kernels/preconditions.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace herd::kernels {
namespace {

std::size_t size(int value) {
  return static_cast<std::size_t>(value);
}

void zero(float* values, std::size_t n) {
  std::memset(values, 0, n * sizeof(float));
}

// ---- vectorised loops (no checks: the ops methods below check their arguments) ----------------

HERD_VECTORISED void add_into(float* __restrict destination, const float* __restrict source,
                              std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    destination[i] += source[i];
}

HERD_VECTORISED void dropout(const float* in, float* out, std::size_t n, float p,
                             std::uint64_t seed) {
  const float scale = dropout_mask::scale(p);
  HERD_ITERATIONS_INDEPENDENT
  for (std::size_t i = 0; i < n; ++i) {
    const float value = in[i];
    out[i] = dropout_mask::keep(seed, i, p) ? value * scale : 0.0f;
  }
}

// ---- 2-D windows ------------------------------------------------------------------------------

// The output positions [first, last) along one axis whose window, starting at position * stride -
// pad, reads a step inside [0, extent) at offset `offset`. Outside that range the step is padding.
struct inside_range {
  int first;
  int last;
};

inside_range inside_outputs(int offset, int stride, int pad, int extent, int outputs) {
  // position * stride - pad + offset >= 0  <=>  position >= ceil((pad - offset) / stride)
  const int lowest = pad - offset;
  const int first = lowest <= 0 ? 0 : (lowest + stride - 1) / stride;
  // position * stride - pad + offset < extent  <=>  position < ceil((extent + pad - offset) /
  // stride)
  const int highest = extent + pad - offset;
  const int last = highest <= 0 ? 0 : (highest + stride - 1) / stride;
  const int clamped_first = std::min(first, outputs);
  return {clamped_first, std::max(clamped_first, std::min(last, outputs))};
}

// Whether the unfold copies a window row into the columns or the fold adds it back.
enum class direction { unfold, fold };

// im2col (unfold) or col2im (fold, into a zeroed image) of one image.
template <direction way>
void unfold_image(const window2d& w, const float* image_in, float* columns_out,
                  const float* columns_in, float* image_out) {
  const int out_h = w.output_height();
  const int out_w = w.output_width();
  std::size_t row = 0;
  for (int c = 0; c < w.channels; ++c)
    for (int i = 0; i < w.kernel_h; ++i)
      for (int j = 0; j < w.kernel_w; ++j, ++row) {
        const std::size_t row_start = row * w.output_positions();
        const inside_range rows = inside_outputs(i, w.stride_h, w.pad_h, w.height, out_h);
        const inside_range cols = inside_outputs(j, w.stride_w, w.pad_w, w.width, out_w);
        if constexpr (way == direction::unfold) {
          // Rows of windows that lie wholly in the top or bottom padding.
          zero(columns_out + row_start, size(rows.first) * size(out_w));
          zero(columns_out + row_start + size(rows.last) * size(out_w),
               size(out_h - rows.last) * size(out_w));
        }
        for (int oh = rows.first; oh < rows.last; ++oh) {
          const int input_row = oh * w.stride_h - w.pad_h + i;
          const std::size_t plane_row =
              (size(c) * size(w.height) + size(input_row)) * size(w.width);
          const std::size_t column = row_start + size(oh) * size(out_w);
          const int count = cols.last - cols.first;
          // Only meaningful when count > 0 (then it lies in [0, width)).
          const std::size_t first_input =
              plane_row + size(count > 0 ? cols.first * w.stride_w - w.pad_w + j : 0);
          if constexpr (way == direction::unfold) {
            float* out = columns_out + column;
            const float* in = image_in + first_input;
            zero(out, size(cols.first));
            if (w.stride_w == 1)
              std::memcpy(out + cols.first, in, size(count) * sizeof(float));
            else
              for (int k = 0; k < count; ++k)
                out[cols.first + k] = in[size(k) * size(w.stride_w)];
            zero(out + cols.last, size(out_w - cols.last));
          } else {
            const float* in = columns_in + column + size(cols.first);
            float* out = image_out + first_input;
            if (w.stride_w == 1)
              add_into(out, in, size(count));
            else
              for (int k = 0; k < count; ++k)
                out[size(k) * size(w.stride_w)] += in[k];
          }
        }
      }
}

// ---- 1-D windows ------------------------------------------------------------------------------

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

// The offsets [first, last) of output position t's window that read a valid step of a sample of
// `length` steps; empty when t is past the sample's valid outputs.
inside_range window_inside(const sequence_window& w, int t, int length) {
  if (t >= w.valid_outputs(length))
    return {0, 0};
  const int first = std::max(0, w.padding - t);
  const int last = std::min(w.kernel, length + w.padding - t);
  return {first, std::max(first, last)};
}

} // namespace

void cpu_layer_ops::im2col(const float* x, int images, const window2d& window,
                           float* columns) const {
  preconditions::im2col(x, images, window, columns);
  const std::size_t column_floats = window.column_rows() * window.output_positions();
  for (std::size_t n = 0; n < size(images); ++n)
    unfold_image<direction::unfold>(window, x + n * window.image_size(),
                                    columns + n * column_floats, nullptr, nullptr);
}

void cpu_layer_ops::col2im(const float* columns, int images, const window2d& window,
                           float* x) const {
  preconditions::col2im(columns, images, window, x);
  const std::size_t column_floats = window.column_rows() * window.output_positions();
  zero(x, size(images) * window.image_size());
  for (std::size_t n = 0; n < size(images); ++n)
    unfold_image<direction::fold>(window, nullptr, nullptr, columns + n * column_floats,
                                  x + n * window.image_size());
}

void cpu_layer_ops::max_pool2d_forward(const float* x, int images, const window2d& window, float* y,
                                       std::int32_t* argmax) const {
  preconditions::max_pool2d(x, images, window, argmax, y);
  const window2d& w = window;
  const std::size_t plane = size(w.height) * size(w.width);
  std::size_t out = 0;
  for (std::size_t p = 0; p < size(images) * size(w.channels); ++p) {
    const float* in = x + p * plane;
    for (int oh = 0; oh < w.output_height(); ++oh)
      for (int ow = 0; ow < w.output_width(); ++ow, ++out) {
        int best = oh * w.stride_h * w.width + ow * w.stride_w;
        for (int i = 0; i < w.kernel_h; ++i) {
          const int row_start = (oh * w.stride_h + i) * w.width + ow * w.stride_w;
          for (int j = 0; j < w.kernel_w; ++j)
            if (in[row_start + j] > in[best])
              best = row_start + j;
        }
        y[out] = in[best];
        argmax[out] = best;
      }
  }
}

void cpu_layer_ops::max_pool2d_backward(const float* dy, const std::int32_t* argmax, int images,
                                        const window2d& window, float* dx) const {
  preconditions::max_pool2d(dy, images, window, argmax, dx);
  const std::size_t plane = size(window.height) * size(window.width);
  const std::size_t outputs_per_plane = window.output_positions();
  const std::size_t planes = size(images) * size(window.channels);
  for (std::size_t out = 0; out < planes * outputs_per_plane; ++out)
    HERD_CHECK(argmax[out] >= 0 && size(argmax[out]) < plane,
               "output " << out << " has argmax " << argmax[out] << ", outside [0, " << plane
                         << ')');
  zero(dx, planes * plane);
  for (std::size_t p = 0; p < planes; ++p)
    for (std::size_t o = 0; o < outputs_per_plane; ++o) {
      const std::size_t out = p * outputs_per_plane + o;
      dx[p * plane + size(argmax[out])] += dy[out];
    }
}

void cpu_layer_ops::dropout_forward(const float* x, float* y, std::size_t n, float p,
                                    std::uint64_t seed) const {
  preconditions::dropout(x, y, n, p);
  dropout(x, y, n, p, seed);
}

void cpu_layer_ops::dropout_backward(const float* dy, float* dx, std::size_t n, float p,
                                     std::uint64_t seed) const {
  preconditions::dropout(dy, dx, n, p);
  dropout(dy, dx, n, p, seed);
}

void cpu_layer_ops::sequence_tokens(const float* x, int rows, int cols, int steps,
                                    std::int32_t* ids, std::int32_t* lengths) const {
  preconditions::sequence_tokens(x, rows, cols, steps, ids, lengths);
  // Each row's length is where its first negative value sits (or cols).
  auto length_of = [&](const float* row) {
    return static_cast<int>(std::find_if(row, row + cols, [](float v) { return v < 0.0f; }) - row);
  };
  for (int r = 0; r < rows; ++r) {
    const float* row = x + size(r) * size(cols);
    const int length = length_of(row);
    for (int c = 0; c < cols; ++c)
      preconditions::token_entry(r, c, row[c], length);
  }
  for (int r = 0; r < rows; ++r) {
    const float* row = x + size(r) * size(cols);
    const int length = length_of(row);
    lengths[r] = length;
    std::int32_t* out = ids + size(r) * size(steps);
    for (int c = 0; c < steps; ++c)
      out[c] = c < length ? static_cast<std::int32_t>(row[c]) : padding_id;
  }
}

void cpu_layer_ops::embedding_forward(const float* table, int vocab, int dim,
                                      const std::int32_t* ids, int tokens, float* y) const {
  preconditions::embedding(table, vocab, dim, ids, tokens, y);
  check_ids(ids, tokens, vocab);
  for (std::size_t t = 0; t < size(tokens); ++t) {
    if (ids[t] == padding_id)
      zero(y + t * size(dim), size(dim));
    else
      std::memcpy(y + t * size(dim), table + size(ids[t]) * size(dim), size(dim) * sizeof(float));
  }
}

void cpu_layer_ops::embedding_backward(const float* dy, const std::int32_t* ids, int tokens,
                                       int vocab, int dim, float* table_grad) const {
  preconditions::embedding(table_grad, vocab, dim, ids, tokens, dy);
  check_ids(ids, tokens, vocab);
  zero(table_grad, size(vocab) * size(dim));
  for (std::size_t t = 0; t < size(tokens); ++t)
    if (ids[t] != padding_id)
      add_into(table_grad + size(ids[t]) * size(dim), dy + t * size(dim), size(dim));
}

void cpu_layer_ops::unfold1d(const float* x, const std::int32_t* lengths,
                             const sequence_window& window, float* columns) const {
  preconditions::unfold1d(x, lengths, window, columns);
  const sequence_window& w = window;
  check_lengths(lengths, w);
  const std::size_t channels = size(w.channels);
  float* row = columns;
  for (int b = 0; b < w.batch; ++b) {
    const float* sample = x + size(b) * size(w.length) * channels;
    for (int t = 0; t < w.output_length(); ++t, row += w.window_size()) {
      // The offsets inside the sample read consecutive steps: one copy, zeros on either side.
      const inside_range inside = window_inside(w, t, lengths[b]);
      zero(row, size(inside.first) * channels);
      if (inside.last > inside.first)
        std::memcpy(row + size(inside.first) * channels,
                    sample + size(t - w.padding + inside.first) * channels,
                    size(inside.last - inside.first) * channels * sizeof(float));
      zero(row + size(inside.last) * channels, size(w.kernel - inside.last) * channels);
    }
  }
}

void cpu_layer_ops::fold1d(const float* columns, const std::int32_t* lengths,
                           const sequence_window& window, float* x) const {
  preconditions::unfold1d(x, lengths, window, columns);
  const sequence_window& w = window;
  check_lengths(lengths, w);
  const std::size_t channels = size(w.channels);
  zero(x, size(w.batch) * size(w.length) * channels);
  const float* row = columns;
  for (int b = 0; b < w.batch; ++b) {
    float* sample = x + size(b) * size(w.length) * channels;
    for (int t = 0; t < w.output_length(); ++t, row += w.window_size()) {
      const inside_range inside = window_inside(w, t, lengths[b]);
      if (inside.last > inside.first)
        add_into(sample + size(t - w.padding + inside.first) * channels,
                 row + size(inside.first) * channels, size(inside.last - inside.first) * channels);
    }
  }
}

void cpu_layer_ops::sequence_max_pool_forward(const float* x, const std::int32_t* lengths,
                                              const sequence_window& window, int filters, float* y,
                                              std::int32_t* argmax) const {
  preconditions::sequence_max_pool(x, window, filters, argmax, y);
  preconditions::sequence_lengths(lengths);
  const sequence_window& w = window;
  check_lengths(lengths, w);
  const std::size_t width = size(filters);
  for (std::size_t b = 0; b < size(w.batch); ++b) {
    const float* sample = x + b * size(w.output_length()) * width;
    float* best = y + b * width;
    std::int32_t* best_at = argmax + b * width;
    std::memcpy(best, sample, width * sizeof(float));
    std::fill(best_at, best_at + width, 0);
    // Position by position, so every read walks along a row of filters.
    for (int t = 1; t < w.valid_outputs(lengths[b]); ++t) {
      const float* step = sample + size(t) * width;
      for (std::size_t f = 0; f < width; ++f)
        if (step[f] > best[f]) {
          best[f] = step[f];
          best_at[f] = t;
        }
    }
  }
}

void cpu_layer_ops::sequence_max_pool_backward(const float* dy, const std::int32_t* argmax,
                                               const sequence_window& window, int filters,
                                               float* dx) const {
  preconditions::sequence_max_pool(dy, window, filters, argmax, dx);
  const sequence_window& w = window;
  const std::size_t width = size(filters);
  for (std::size_t i = 0; i < size(w.batch) * width; ++i)
    HERD_CHECK(argmax[i] >= 0 && argmax[i] < w.output_length(),
               "sample " << i / width << " filter " << i % width << " has argmax " << argmax[i]
                         << ", outside [0, " << w.output_length() << ')');
  zero(dx, size(w.batch) * size(w.output_length()) * width);
  for (std::size_t b = 0; b < size(w.batch); ++b)
    for (std::size_t f = 0; f < width; ++f)
      dx[(b * size(w.output_length()) + size(argmax[b * width + f])) * width + f] =
          dy[b * width + f];
}

} // namespace herd::kernels
