// The CUDA layer kernels: one grid-stride kernel per op, one thread per output element. The folds
// (col2im, fold1d) and max_pool2d_backward gather into each input element the entries that read it,
// so they need no atomics and give the same sums on every run; embedding_backward scatter-adds with
// atomicAdd (a repeated id sums in an unspecified order). The data checks of sequence_tokens,
// embedding_forward and unfold1d reduce the first bad index on the device and synchronise to throw;
// the other kernels clamp what they read from ids, lengths and argmax, so bad data never reads or
// writes out of bounds (kernels/cuda/cuda_ops.hpp has the contract).
#include "kernels/check.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cuda_layer_ops.cuh"
#include "kernels/dropout_mask.hpp"
#include "kernels/preconditions.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace herd::kernels::cuda {

namespace {

constexpr int threads_per_block = 256;
// The "no bad index" value of first_bad_index: every byte 0x7f, so one cudaMemsetAsync sets it,
// and larger than any index an int-sized shape can have here.
constexpr int no_bad_index = 0x7f7f7f7f;

// ---- kernels ------------------------------------------------------------------------------------

__device__ std::size_t global_thread() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ std::size_t grid_threads() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

// window2d with its output sizes worked out on the host (its methods are host-only).
struct image_windows {
  int channels, height, width, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
  int out_h, out_w;
};

image_windows on_device(const window2d& w) {
  return {w.channels, w.height, w.width, w.kernel_h,        w.kernel_w,      w.stride_h,
          w.stride_w, w.pad_h,  w.pad_w, w.output_height(), w.output_width()};
}

// One thread per (image, channel, oh, ow): writes that output position's kernel_h x kernel_w
// column entries (consecutive threads write consecutive columns).
__global__ void im2col_kernel(const float* x, std::size_t total, image_windows w, float* columns) {
  const std::size_t positions = static_cast<std::size_t>(w.out_h) * w.out_w;
  const std::size_t window = static_cast<std::size_t>(w.kernel_h) * w.kernel_w;
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const int ow = static_cast<int>(index % w.out_w);
    const int oh = static_cast<int>(index / w.out_w % w.out_h);
    const std::size_t plane = index / positions; // image * channels + channel
    const float* in = x + plane * w.height * w.width;
    float* out = columns + plane * window * positions + static_cast<std::size_t>(oh) * w.out_w + ow;
    for (int i = 0; i < w.kernel_h; ++i)
      for (int j = 0; j < w.kernel_w; ++j, out += positions) {
        const int row = oh * w.stride_h - w.pad_h + i;
        const int col = ow * w.stride_w - w.pad_w + j;
        *out = row >= 0 && row < w.height && col >= 0 && col < w.width ? in[row * w.width + col]
                                                                       : 0.0f;
      }
  }
}

// One thread per pixel: the sum of the column entries of every window offset that reads it.
__global__ void col2im_kernel(const float* columns, std::size_t total, image_windows w, float* x) {
  const std::size_t positions = static_cast<std::size_t>(w.out_h) * w.out_w;
  const std::size_t window = static_cast<std::size_t>(w.kernel_h) * w.kernel_w;
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const int col = static_cast<int>(index % w.width);
    const int row = static_cast<int>(index / w.width % w.height);
    const std::size_t plane = index / (static_cast<std::size_t>(w.height) * w.width);
    const float* in = columns + plane * window * positions;
    float sum = 0.0f;
    for (int i = 0; i < w.kernel_h; ++i) {
      const int start_h = row + w.pad_h - i;
      if (start_h < 0 || start_h % w.stride_h != 0 || start_h / w.stride_h >= w.out_h)
        continue;
      for (int j = 0; j < w.kernel_w; ++j) {
        const int start_w = col + w.pad_w - j;
        if (start_w < 0 || start_w % w.stride_w != 0 || start_w / w.stride_w >= w.out_w)
          continue;
        sum += in[(static_cast<std::size_t>(i) * w.kernel_w + j) * positions +
                  static_cast<std::size_t>(start_h / w.stride_h) * w.out_w + start_w / w.stride_w];
      }
    }
    x[index] = sum;
  }
}

// One thread per output; the first maximum in row-major window order wins, as in the oracle.
__global__ void max_pool2d_forward_kernel(const float* x, std::size_t total, image_windows w,
                                          float* y, std::int32_t* argmax) {
  const std::size_t positions = static_cast<std::size_t>(w.out_h) * w.out_w;
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const int ow = static_cast<int>(index % w.out_w);
    const int oh = static_cast<int>(index / w.out_w % w.out_h);
    const float* in = x + index / positions * w.height * w.width;
    int best = oh * w.stride_h * w.width + ow * w.stride_w;
    for (int i = 0; i < w.kernel_h; ++i) {
      const int row_start = (oh * w.stride_h + i) * w.width + ow * w.stride_w;
      for (int j = 0; j < w.kernel_w; ++j)
        if (in[row_start + j] > in[best])
          best = row_start + j;
    }
    y[index] = in[best];
    argmax[index] = best;
  }
}

// One thread per input element: the sum of dy over the windows that cover it and chose it.
__global__ void max_pool2d_backward_kernel(const float* dy, const std::int32_t* argmax,
                                           std::size_t total, image_windows w, float* dx) {
  const std::size_t positions = static_cast<std::size_t>(w.out_h) * w.out_w;
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const int col = static_cast<int>(index % w.width);
    const int row = static_cast<int>(index / w.width % w.height);
    const std::size_t first_output =
        index / (static_cast<std::size_t>(w.height) * w.width) * positions;
    const int me = row * w.width + col;
    // Windows oh with oh * stride <= row < oh * stride + kernel, likewise for the columns.
    const int first_oh = row < w.kernel_h ? 0 : (row - w.kernel_h) / w.stride_h + 1;
    const int last_oh = min(row / w.stride_h, w.out_h - 1);
    const int first_ow = col < w.kernel_w ? 0 : (col - w.kernel_w) / w.stride_w + 1;
    const int last_ow = min(col / w.stride_w, w.out_w - 1);
    float sum = 0.0f;
    for (int oh = first_oh; oh <= last_oh; ++oh)
      for (int ow = first_ow; ow <= last_ow; ++ow) {
        const std::size_t out = first_output + static_cast<std::size_t>(oh) * w.out_w + ow;
        if (argmax[out] == me)
          sum += dy[out];
      }
    dx[index] = sum;
  }
}

__global__ void dropout_kernel(const float* in, float* out, std::size_t n, float p, float scale,
                               std::uint64_t seed) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads())
    out[i] = dropout_mask::keep(seed, i, p) ? in[i] * scale : 0.0f;
}

// Every row's length starts as cols.
__global__ void fill_lengths_kernel(std::int32_t* lengths, int rows, int cols) {
  for (std::size_t r = global_thread(); r < static_cast<std::size_t>(rows); r += grid_threads())
    lengths[r] = cols;
}

// Each padding entry lowers its row's length to its own step: the first one wins.
__global__ void token_lengths_kernel(const float* x, std::size_t total, int cols,
                                     std::int32_t* lengths) {
  for (std::size_t index = global_thread(); index < total; index += grid_threads())
    if (x[index] < 0.0f)
      atomicMin(&lengths[index / cols], static_cast<int>(index % cols));
}

// One thread per entry of x: its id (padding_id past the row's length, or where the entry is bad)
// when its step is kept, and the first entry that is neither an id before the padding nor padding.
__global__ void token_ids_kernel(const float* x, std::size_t total, int cols, int steps,
                                 const std::int32_t* lengths, std::int32_t* ids,
                                 int* first_bad_index) {
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const std::size_t row = index / cols;
    const int step = static_cast<int>(index % cols);
    const float value = x[index];
    const bool padding = value < 0.0f;
    const bool bad = !padding && (!(value <= static_cast<float>(largest_token)) ||
                                  value != floorf(value) || step >= lengths[row]);
    if (bad)
      atomicMin(first_bad_index, static_cast<int>(index));
    if (step < steps)
      ids[row * steps + step] = padding || bad ? padding_id : static_cast<std::int32_t>(value);
  }
}

// padding_id gives a row of zeros; any other id outside the vocabulary too, and reports its token.
__global__ void embedding_forward_kernel(const float* table, int vocab, int dim,
                                         const std::int32_t* ids, std::size_t total, float* y,
                                         int* first_bad_index) {
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const std::size_t token = index / dim;
    const std::int32_t id = ids[token];
    const bool valid = id >= 0 && id < vocab;
    y[index] = valid ? table[static_cast<std::size_t>(id) * dim + index % dim] : 0.0f;
    if (!valid && id != padding_id && index % dim == 0)
      atomicMin(first_bad_index, static_cast<int>(token));
  }
}

// Adds into a zeroed table gradient; padding_id and any other id outside the vocabulary add
// nothing.
__global__ void embedding_backward_kernel(const float* dy, const std::int32_t* ids, int vocab,
                                          int dim, std::size_t total, float* table_grad) {
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const std::int32_t id = ids[index / dim];
    if (id >= 0 && id < vocab)
      atomicAdd(&table_grad[static_cast<std::size_t>(id) * dim + index % dim], dy[index]);
  }
}

// sequence_window and its derived sizes, for the device.
struct sequence_windows {
  int batch, length, channels, kernel, padding;
  int out_length;
  int shortest; // shortest_length(): lengths are clamped to [shortest, length]
};

sequence_windows on_device(const sequence_window& w) {
  return {w.batch,   w.length,          w.channels,         w.kernel,
          w.padding, w.output_length(), w.shortest_length()};
}

__device__ int clamped_length(const std::int32_t* lengths, int sample, const sequence_windows& w) {
  return max(w.shortest, min(static_cast<int>(lengths[sample]), w.length));
}

__global__ void check_lengths_kernel(const std::int32_t* lengths, sequence_windows w,
                                     int* first_bad_index) {
  for (std::size_t b = global_thread(); b < static_cast<std::size_t>(w.batch); b += grid_threads())
    if (lengths[b] < w.shortest || lengths[b] > w.length)
      atomicMin(first_bad_index, static_cast<int>(b));
}

// One thread per column entry (b, t, j, c).
__global__ void unfold1d_kernel(const float* x, const std::int32_t* lengths, sequence_windows w,
                                std::size_t total, float* columns) {
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const int c = static_cast<int>(index % w.channels);
    const int j = static_cast<int>(index / w.channels % w.kernel);
    const std::size_t row = index / (static_cast<std::size_t>(w.channels) * w.kernel);
    const int t = static_cast<int>(row % w.out_length);
    const int b = static_cast<int>(row / w.out_length);
    const int length = clamped_length(lengths, b, w);
    const int source = t - w.padding + j;
    const bool valid = t < length + 2 * w.padding - w.kernel + 1 && source >= 0 && source < length;
    columns[index] =
        valid ? x[(static_cast<std::size_t>(b) * w.length + source) * w.channels + c] : 0.0f;
  }
}

// One thread per element of x: the sum over the window offsets that read it, or 0 in the padding.
__global__ void fold1d_kernel(const float* columns, const std::int32_t* lengths, sequence_windows w,
                              std::size_t total, float* x) {
  const std::size_t window_size = static_cast<std::size_t>(w.kernel) * w.channels;
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const int c = static_cast<int>(index % w.channels);
    const int s = static_cast<int>(index / w.channels % w.length);
    const int b = static_cast<int>(index / (static_cast<std::size_t>(w.channels) * w.length));
    const int length = clamped_length(lengths, b, w);
    const int valid_outputs = length + 2 * w.padding - w.kernel + 1;
    float sum = 0.0f;
    if (s < length)
      for (int j = 0; j < w.kernel; ++j) {
        const int t = s + w.padding - j;
        if (t >= 0 && t < valid_outputs)
          sum += columns[(static_cast<std::size_t>(b) * w.out_length + t) * window_size +
                         static_cast<std::size_t>(j) * w.channels + c];
      }
    x[index] = sum;
  }
}

// One thread per (sample, filter); consecutive threads read consecutive filters.
__global__ void sequence_max_pool_forward_kernel(const float* x, const std::int32_t* lengths,
                                                 sequence_windows w, int filters, float* y,
                                                 std::int32_t* argmax) {
  const std::size_t total = static_cast<std::size_t>(w.batch) * filters;
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const int b = static_cast<int>(index / filters);
    const float* in = x + static_cast<std::size_t>(b) * w.out_length * filters + index % filters;
    const int valid_outputs = clamped_length(lengths, b, w) + 2 * w.padding - w.kernel + 1;
    int best = 0;
    for (int t = 1; t < valid_outputs; ++t)
      if (in[static_cast<std::size_t>(t) * filters] > in[static_cast<std::size_t>(best) * filters])
        best = t;
    y[index] = in[static_cast<std::size_t>(best) * filters];
    argmax[index] = best;
  }
}

__global__ void sequence_max_pool_backward_kernel(const float* dy, const std::int32_t* argmax,
                                                  sequence_windows w, int filters,
                                                  std::size_t total, float* dx) {
  for (std::size_t index = global_thread(); index < total; index += grid_threads()) {
    const std::size_t f = index % filters;
    const std::size_t row = index / filters;
    const std::size_t pooled = row / w.out_length * filters + f;
    dx[index] = argmax[pooled] == static_cast<std::int32_t>(row % w.out_length) ? dy[pooled] : 0.0f;
  }
}

// ---- host side ----------------------------------------------------------------------------------

// Enough blocks to cover `work` one element per thread, capped at a few waves of resident blocks;
// the grid-stride loops do the rest.
unsigned blocks_for(const launch_target& target, std::size_t work) {
  const std::size_t wanted = (work + threads_per_block - 1) / threads_per_block;
  const std::size_t cap = static_cast<std::size_t>(target.multiprocessors) * 32;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, cap)));
}

void reset_first_bad_index(const launch_target& target) {
  HERD_CUDA_CHECK(cudaMemsetAsync(target.first_bad_index, 0x7f, sizeof(int), target.stream));
}

// Waits for the stream and returns the first bad index the checks found, or no_bad_index.
int first_bad_index(const launch_target& target) {
  int first = no_bad_index;
  HERD_CUDA_CHECK(cudaMemcpyAsync(&first, target.first_bad_index, sizeof first,
                                  cudaMemcpyDeviceToHost, target.stream));
  HERD_CUDA_CHECK(cudaStreamSynchronize(target.stream));
  return first;
}

template <class T>
T read_element(const T* values, std::size_t index) {
  T value{};
  HERD_CUDA_CHECK(cudaMemcpy(&value, values + index, sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

std::size_t size(int value) {
  return static_cast<std::size_t>(value);
}

} // namespace

void cuda_layer_ops::im2col(const float* x, int images, const window2d& window,
                            float* columns) const {
  preconditions::im2col(x, images, window, columns);
  const launch_target t = target();
  const device_scope scope(t.device);
  const std::size_t total = size(images) * size(window.channels) * window.output_positions();
  im2col_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(
      x, total, on_device(window), columns);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void cuda_layer_ops::col2im(const float* columns, int images, const window2d& window,
                            float* x) const {
  preconditions::col2im(columns, images, window, x);
  const launch_target t = target();
  const device_scope scope(t.device);
  const std::size_t total = size(images) * window.image_size();
  col2im_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(columns, total,
                                                                          on_device(window), x);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void cuda_layer_ops::max_pool2d_forward(const float* x, int images, const window2d& window,
                                        float* y, std::int32_t* argmax) const {
  preconditions::max_pool2d(x, images, window, argmax, y);
  const launch_target t = target();
  const device_scope scope(t.device);
  const std::size_t total = size(images) * size(window.channels) * window.output_positions();
  max_pool2d_forward_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(
      x, total, on_device(window), y, argmax);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void cuda_layer_ops::max_pool2d_backward(const float* dy, const std::int32_t* argmax, int images,
                                         const window2d& window, float* dx) const {
  preconditions::max_pool2d(dy, images, window, argmax, dx);
  const launch_target t = target();
  const device_scope scope(t.device);
  const std::size_t total = size(images) * window.image_size();
  max_pool2d_backward_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(
      dy, argmax, total, on_device(window), dx);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void cuda_layer_ops::dropout_forward(const float* x, float* y, std::size_t n, float p,
                                     std::uint64_t seed) const {
  preconditions::dropout(x, y, n, p);
  const launch_target t = target();
  const device_scope scope(t.device);
  dropout_kernel<<<blocks_for(t, n), threads_per_block, 0, t.stream>>>(
      x, y, n, p, dropout_mask::scale(p), seed);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void cuda_layer_ops::dropout_backward(const float* dy, float* dx, std::size_t n, float p,
                                      std::uint64_t seed) const {
  preconditions::dropout(dy, dx, n, p);
  const launch_target t = target();
  const device_scope scope(t.device);
  dropout_kernel<<<blocks_for(t, n), threads_per_block, 0, t.stream>>>(
      dy, dx, n, p, dropout_mask::scale(p), seed);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void cuda_layer_ops::sequence_tokens(const float* x, int rows, int cols, int steps,
                                     std::int32_t* ids, std::int32_t* lengths) const {
  preconditions::sequence_tokens(x, rows, cols, steps, ids, lengths);
  const std::size_t total = size(rows) * size(cols);
  HERD_CHECK(total < static_cast<std::size_t>(no_bad_index),
             "a batch of " << total << " tokens is more than the device check can index");
  const launch_target t = target();
  const device_scope scope(t.device);
  reset_first_bad_index(t);
  fill_lengths_kernel<<<blocks_for(t, size(rows)), threads_per_block, 0, t.stream>>>(lengths, rows,
                                                                                   cols);
  HERD_CUDA_CHECK(cudaGetLastError());
  token_lengths_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(x, total, cols,
                                                                                 lengths);
  HERD_CUDA_CHECK(cudaGetLastError());
  token_ids_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(
      x, total, cols, steps, lengths, ids, t.first_bad_index);
  HERD_CUDA_CHECK(cudaGetLastError());
  const int bad = first_bad_index(t);
  if (bad != no_bad_index) {
    const int row = bad / cols;
    preconditions::token_entry(row, bad % cols, read_element(x, size(bad)),
                               read_element(lengths, size(row)));
  }
}

void cuda_layer_ops::embedding_forward(const float* table, int vocab, int dim,
                                       const std::int32_t* ids, int tokens, float* y) const {
  preconditions::embedding(table, vocab, dim, ids, tokens, y);
  const launch_target t = target();
  const device_scope scope(t.device);
  reset_first_bad_index(t);
  const std::size_t total = size(tokens) * size(dim);
  embedding_forward_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(
      table, vocab, dim, ids, total, y, t.first_bad_index);
  HERD_CUDA_CHECK(cudaGetLastError());
  const int bad = first_bad_index(t);
  if (bad != no_bad_index) {
    const std::int32_t id = read_element(ids, size(bad));
    HERD_CHECK(id >= 0 && id < vocab,
               "token " << bad << " has id " << id << ", outside [0, " << vocab << ')');
  }
}

void cuda_layer_ops::embedding_backward(const float* dy, const std::int32_t* ids, int tokens,
                                        int vocab, int dim, float* table_grad) const {
  preconditions::embedding(table_grad, vocab, dim, ids, tokens, dy);
  const launch_target t = target();
  const device_scope scope(t.device);
  HERD_CUDA_CHECK(
      cudaMemsetAsync(table_grad, 0, size(vocab) * size(dim) * sizeof(float), t.stream));
  const std::size_t total = size(tokens) * size(dim);
  embedding_backward_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(
      dy, ids, vocab, dim, total, table_grad);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void cuda_layer_ops::unfold1d(const float* x, const std::int32_t* lengths,
                              const sequence_window& window, float* columns) const {
  preconditions::unfold1d(x, lengths, window, columns);
  const launch_target t = target();
  const device_scope scope(t.device);
  const sequence_windows w = on_device(window);
  reset_first_bad_index(t);
  check_lengths_kernel<<<blocks_for(t, size(window.batch)), threads_per_block, 0, t.stream>>>(
      lengths, w, t.first_bad_index);
  HERD_CUDA_CHECK(cudaGetLastError());
  const std::size_t total = window.output_rows() * window.window_size();
  unfold1d_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(x, lengths, w, total,
                                                                            columns);
  HERD_CUDA_CHECK(cudaGetLastError());
  const int bad = first_bad_index(t);
  if (bad != no_bad_index) {
    const std::int32_t length = read_element(lengths, size(bad));
    HERD_CHECK(length >= window.shortest_length() && length <= window.length,
               "sample " << bad << " has length " << length << ", outside ["
                         << window.shortest_length() << ", " << window.length << ']');
  }
}

void cuda_layer_ops::fold1d(const float* columns, const std::int32_t* lengths,
                            const sequence_window& window, float* x) const {
  preconditions::unfold1d(x, lengths, window, columns);
  const launch_target t = target();
  const device_scope scope(t.device);
  const std::size_t total = size(window.batch) * size(window.length) * size(window.channels);
  fold1d_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(
      columns, lengths, on_device(window), total, x);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void cuda_layer_ops::sequence_max_pool_forward(const float* x, const std::int32_t* lengths,
                                               const sequence_window& window, int filters, float* y,
                                               std::int32_t* argmax) const {
  preconditions::sequence_max_pool(x, window, filters, argmax, y);
  preconditions::sequence_lengths(lengths);
  const launch_target t = target();
  const device_scope scope(t.device);
  sequence_max_pool_forward_kernel<<<blocks_for(t, size(window.batch) * size(filters)),
                                     threads_per_block, 0, t.stream>>>(
      x, lengths, on_device(window), filters, y, argmax);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void cuda_layer_ops::sequence_max_pool_backward(const float* dy, const std::int32_t* argmax,
                                                const sequence_window& window, int filters,
                                                float* dx) const {
  preconditions::sequence_max_pool(dy, window, filters, argmax, dx);
  const launch_target t = target();
  const device_scope scope(t.device);
  const std::size_t total = window.output_rows() * size(filters);
  sequence_max_pool_backward_kernel<<<blocks_for(t, total), threads_per_block, 0, t.stream>>>(
      dy, argmax, on_device(window), filters, total, dx);
  HERD_CUDA_CHECK(cudaGetLastError());
}

} // namespace herd::kernels::cuda
