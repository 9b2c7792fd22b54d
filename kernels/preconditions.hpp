// The argument checks of kernels::ops (ops.hpp's contract), shared by every implementation so
// that reference, cpu and cuda refuse the same calls with the same words. Host-side only: they
// look at sizes and pointers, never at the data (labels are checked where they can be read).
// Also the host-side arithmetic every implementation shares (AdamW's bias corrections).
// Plain C++, included by .cu files too.
#pragma once

#include "herd/ops.hpp"
#include "kernels/check.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace herd::kernels::preconditions {

inline void matrix(int rows, int cols) {
  HERD_CHECK_GT(rows, 0);
  HERD_CHECK_GT(cols, 0);
}

inline void gemm(transpose trans_a, transpose trans_b, int m, int n, int k, const float* a, int lda,
                 const float* b, int ldb, const float* c, int ldc) {
  HERD_CHECK_GT(m, 0);
  HERD_CHECK_GT(n, 0);
  HERD_CHECK_GT(k, 0);
  HERD_CHECK(a != nullptr && b != nullptr && c != nullptr, "gemm needs A, B and C");
  // BLAS libraries report a bad stride on stderr and return without computing: refuse it here.
  HERD_CHECK_GE(lda, trans_a == transpose::no ? k : m);
  HERD_CHECK_GE(ldb, trans_b == transpose::no ? n : k);
  HERD_CHECK_GE(ldc, n);
}

inline void bias_add(const float* y, const float* bias, int rows, int cols) {
  matrix(rows, cols);
  HERD_CHECK(y != nullptr && bias != nullptr, "bias_add needs y and bias");
}

inline void bias_grad(const float* dy, const float* bias_grad, int rows, int cols) {
  matrix(rows, cols);
  HERD_CHECK(dy != nullptr && bias_grad != nullptr, "bias_grad needs dy and bias_grad");
}

inline void relu_forward(const float* x, const float* y, std::size_t n) {
  HERD_CHECK_GT(n, 0u);
  HERD_CHECK(x != nullptr && y != nullptr, "relu_forward needs x and y");
}

inline void relu_backward(const float* y, const float* dy, const float* dx, std::size_t n) {
  HERD_CHECK_GT(n, 0u);
  HERD_CHECK(y != nullptr && dy != nullptr && dx != nullptr, "relu_backward needs y, dy and dx");
}

inline void softmax_xent_forward(const float* logits, const std::int32_t* labels, int rows,
                                 int classes, const float* probs) {
  matrix(rows, classes);
  HERD_CHECK(logits != nullptr && labels != nullptr && probs != nullptr,
             "softmax_xent_forward needs logits, labels and probs");
}

inline void softmax_xent_backward(const float* probs, const std::int32_t* labels, int rows,
                                  int classes, const float* dlogits) {
  matrix(rows, classes);
  HERD_CHECK(probs != nullptr && labels != nullptr && dlogits != nullptr,
             "softmax_xent_backward needs probs, labels and dlogits");
}

inline void count_correct(const float* scores, const std::int32_t* labels, int rows, int classes) {
  matrix(rows, classes);
  HERD_CHECK(scores != nullptr && labels != nullptr, "count_correct needs scores and labels");
}

inline void sgd_step(const float* params, const float* grads, const float* velocity, std::size_t n,
                     const sgd_hyper& hyper) {
  HERD_CHECK_GT(n, 0u);
  HERD_CHECK(params != nullptr && grads != nullptr && velocity != nullptr,
             "sgd_step needs params, grads and velocity");
  HERD_CHECK_GE(hyper.learning_rate, 0.0f);
  HERD_CHECK_GE(hyper.momentum, 0.0f);
  HERD_CHECK_GE(hyper.weight_decay, 0.0f);
}

inline void adam_step(const float* params, const float* grads, const float* moments, std::size_t n,
                      const adam_hyper& hyper, std::uint64_t step) {
  HERD_CHECK_GT(n, 0u);
  HERD_CHECK(params != nullptr && grads != nullptr && moments != nullptr,
             "adam_step needs params, grads and moments");
  HERD_CHECK_GE(hyper.learning_rate, 0.0f);
  HERD_CHECK(hyper.beta1 >= 0.0f && hyper.beta1 < 1.0f && hyper.beta2 >= 0.0f && hyper.beta2 < 1.0f,
             "adam_step's betas must lie in [0, 1), got " << hyper.beta1 << " and " << hyper.beta2);
  HERD_CHECK_GT(hyper.eps, 0.0f);
  HERD_CHECK_GE(hyper.weight_decay, 0.0f);
  HERD_CHECK_GE(step, 1u);
}

/// The step size and the second moment's correction of AdamW's step `step`, in double:
/// lr / (1 - beta1^t) and 1 / sqrt(1 - beta2^t).
struct adam_corrections {
  double step_size;
  double second_scale;
};

inline adam_corrections adam_corrections_of(const adam_hyper& hyper, std::uint64_t step) {
  const auto t = static_cast<double>(step);
  return {static_cast<double>(hyper.learning_rate) /
              (1.0 - std::pow(static_cast<double>(hyper.beta1), t)),
          1.0 / std::sqrt(1.0 - std::pow(static_cast<double>(hyper.beta2), t))};
}

inline void weighted_sum(const float* out, const float* const* inputs, const float* weights, int k,
                         std::size_t n) {
  HERD_CHECK_GE(k, 1);
  HERD_CHECK_GT(n, 0u);
  HERD_CHECK(out != nullptr && inputs != nullptr && weights != nullptr,
             "weighted_sum needs out, inputs and weights");
  for (int i = 0; i < k; ++i) {
    HERD_CHECK(inputs[i] != nullptr, "weighted_sum input " << i << " of " << k << " is null");
    HERD_CHECK(i == 0 || inputs[i] != out, "out may alias inputs[0] only, not inputs[" << i << ']');
  }
}

// ---- layers beyond the MLP ---------------------------------------------------------------------

inline void window2d(const kernels::window2d& w) {
  HERD_CHECK_GT(w.channels, 0);
  HERD_CHECK_GT(w.height, 0);
  HERD_CHECK_GT(w.width, 0);
  HERD_CHECK_GT(w.kernel_h, 0);
  HERD_CHECK_GT(w.kernel_w, 0);
  HERD_CHECK_GT(w.stride_h, 0);
  HERD_CHECK_GT(w.stride_w, 0);
  HERD_CHECK_GE(w.pad_h, 0);
  HERD_CHECK_GE(w.pad_w, 0);
  HERD_CHECK(w.height + 2 * w.pad_h >= w.kernel_h && w.width + 2 * w.pad_w >= w.kernel_w,
             "a " << w.kernel_h << 'x' << w.kernel_w << " window does not fit a " << w.height << 'x'
                  << w.width << " image padded by " << w.pad_h << 'x' << w.pad_w);
}

inline void im2col(const float* x, int images, const kernels::window2d& w, const float* columns) {
  HERD_CHECK_GT(images, 0);
  window2d(w);
  HERD_CHECK(x != nullptr && columns != nullptr, "im2col needs x and columns");
}

inline void col2im(const float* columns, int images, const kernels::window2d& w, const float* x) {
  HERD_CHECK_GT(images, 0);
  window2d(w);
  HERD_CHECK(columns != nullptr && x != nullptr, "col2im needs columns and x");
}

inline void max_pool2d(const void* in, int images, const kernels::window2d& w, const void* argmax,
                       const void* out) {
  HERD_CHECK_GT(images, 0);
  window2d(w);
  HERD_CHECK(w.pad_h == 0 && w.pad_w == 0,
             "max pooling takes no padding, not " << w.pad_h << 'x' << w.pad_w);
  HERD_CHECK(in != nullptr && argmax != nullptr && out != nullptr,
             "max pooling needs its input, argmax and output");
}

inline void dropout(const float* in, const float* out, std::size_t n, float p) {
  HERD_CHECK_GT(n, 0u);
  HERD_CHECK(in != nullptr && out != nullptr, "dropout needs its input and output");
  // Written so that a NaN p fails too.
  HERD_CHECK(p >= 0.0f && p < 1.0f, "dropout probability " << p << " lies outside [0, 1)");
}

inline void embedding(const float* table, int vocab, int dim, const std::int32_t* ids, int tokens,
                      const float* rows) {
  HERD_CHECK_GT(vocab, 0);
  HERD_CHECK_GT(dim, 0);
  HERD_CHECK_GT(tokens, 0);
  HERD_CHECK(table != nullptr && ids != nullptr && rows != nullptr,
             "embedding needs the table, the ids and the rows");
}

inline void sequence_window(const kernels::sequence_window& w) {
  HERD_CHECK_GT(w.batch, 0);
  HERD_CHECK_GT(w.length, 0);
  HERD_CHECK_GT(w.channels, 0);
  HERD_CHECK_GT(w.kernel, 0);
  HERD_CHECK_GE(w.padding, 0);
  HERD_CHECK(w.output_length() >= 1, "a window of " << w.kernel << " steps does not fit "
                                                    << w.length << " steps padded by "
                                                    << w.padding);
}

inline void sequence_lengths(const std::int32_t* lengths) {
  HERD_CHECK(lengths != nullptr, "a sequence kernel needs the lengths");
}

inline void unfold1d(const float* x, const std::int32_t* lengths, const kernels::sequence_window& w,
                     const float* columns) {
  sequence_window(w);
  sequence_lengths(lengths);
  HERD_CHECK(x != nullptr && columns != nullptr, "unfold1d and fold1d need x and columns");
}

inline void sequence_tokens(const float* x, int rows, int cols, int steps, const std::int32_t* ids,
                            const std::int32_t* lengths) {
  HERD_CHECK_GT(rows, 0);
  HERD_CHECK_GT(cols, 0);
  HERD_CHECK(steps >= 1 && steps <= cols, "sequence_tokens keeps 1 to " << cols << " steps, not "
                                                                        << steps);
  HERD_CHECK(x != nullptr && ids != nullptr && lengths != nullptr,
             "sequence_tokens needs x, the ids and the lengths");
}

/// The one check of data here, so that every implementation words it alike: throws unless
/// `value`, entry `step` of sample `row` of a token batch whose padding starts at `padding_from`,
/// is padding (negative) or a token id (a whole number in [0, largest_token]) before the padding.
inline void token_entry(int row, int step, float value, int padding_from) {
  if (value < 0.0f)
    return;
  HERD_CHECK(value <= static_cast<float>(largest_token) && value == std::floor(value),
             "sample " << row << " step " << step << " holds " << value
                       << ", neither a token id (a whole number in [0, " << largest_token
                       << "]) nor padding (negative)");
  HERD_CHECK(step < padding_from, "sample " << row << " has token " << value << " at step " << step
                                            << " after padding at step " << padding_from
                                            << "; padding must end a row");
}

inline void sequence_max_pool(const void* in, const kernels::sequence_window& w, int filters,
                              const void* argmax, const void* out) {
  sequence_window(w);
  HERD_CHECK_GT(filters, 0);
  HERD_CHECK(in != nullptr && argmax != nullptr && out != nullptr,
             "sequence max pooling needs its input, argmax and output");
}

} // namespace herd::kernels::preconditions
