// cpu_ops(): GEMM through OpenBLAS, elementwise kernels as plain loops that GCC vectorises, each
// built for AVX2+FMA and for baseline x86-64 and picked at load time, so one binary runs anywhere
// (kernels/cpu/vectorised.hpp). The layer kernels are in cpu_layer_ops.cpp.
#include "herd/ops.hpp"
#include "kernels/check.hpp"
#include "kernels/cpu/adamw_loop.hpp"
#include "kernels/cpu/cpu_layer_ops.hpp"
#include "kernels/cpu/vectorised.hpp"
#include "kernels/preconditions.hpp"

#include <algorithm>
#include <cblas.h>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace herd::kernels {
namespace {

// weighted_sum reads at most this many inputs in one pass (see fused_weighted_sum). With more, it
// finishes one block of out (64 KiB, well inside L2) over several passes before moving on, so out
// still goes through memory once.
constexpr int inputs_per_pass = 4;
constexpr std::size_t weighted_sum_block_floats = 16384;

// ---- vectorised loops (no checks: the ops methods below check their arguments) ----------------

HERD_VECTORISED void add_to_every_row(float* __restrict y, const float* __restrict bias,
                                      std::size_t rows, std::size_t cols) {
  for (std::size_t r = 0; r < rows; ++r) {
    float* __restrict row = y + r * cols;
    for (std::size_t c = 0; c < cols; ++c)
      row[c] += bias[c];
  }
}

HERD_VECTORISED void sum_over_rows(const float* __restrict dy, float* __restrict sums,
                                   std::size_t rows, std::size_t cols) {
  for (std::size_t c = 0; c < cols; ++c)
    sums[c] = dy[c];
  for (std::size_t r = 1; r < rows; ++r) {
    const float* __restrict row = dy + r * cols;
    for (std::size_t c = 0; c < cols; ++c)
      sums[c] += row[c];
  }
}

HERD_VECTORISED void clamp_below_at_zero(const float* x, float* y, std::size_t n) {
  HERD_ITERATIONS_INDEPENDENT
  for (std::size_t i = 0; i < n; ++i)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

HERD_VECTORISED void pass_where_positive(const float* y, const float* dy, float* dx,
                                         std::size_t n) {
  HERD_ITERATIONS_INDEPENDENT
  for (std::size_t i = 0; i < n; ++i) {
    // Loaded unconditionally: a conditional load of dy[i] keeps the SSE2 clone scalar.
    const float gradient = dy[i];
    dx[i] = y[i] > 0.0f ? gradient : 0.0f;
  }
}

HERD_VECTORISED void sgd_with_momentum(float* __restrict params, const float* __restrict grads,
                                       float* __restrict velocity, std::size_t n,
                                       float learning_rate, float momentum, float weight_decay) {
  for (std::size_t i = 0; i < n; ++i) {
    const float gradient = grads[i] + weight_decay * params[i];
    const float new_velocity = momentum * velocity[i] + gradient;
    velocity[i] = new_velocity;
    params[i] -= learning_rate * new_velocity;
  }
}

HERD_VECTORISED void scale_into(float* out, const float* x, float weight, std::size_t n) {
  HERD_ITERATIONS_INDEPENDENT
  for (std::size_t i = 0; i < n; ++i)
    out[i] = weight * x[i];
}

// out = sum_{j < arity} weights[j] * inputs[j], all inputs read side by side; inputs[0] may be out.
// Measured with k = 8 inputs of 16M floats, against memcpy of the same bytes: one input per pass
// over 8 KiB blocks ran at 0.55 (the prefetcher restarts at every switch), all 8 in one pass at
// 0.83, passes of 4 over 64 KiB blocks at 1.0.
template <int arity>
[[gnu::always_inline]] inline void fused_weighted_sum(float* out, const float* const* inputs,
                                                      const float* weights, std::size_t n) {
  const float* streams[arity];
  float factors[arity];
  for (int j = 0; j < arity; ++j) {
    streams[j] = inputs[j];
    factors[j] = weights[j];
  }
  HERD_ITERATIONS_INDEPENDENT
  for (std::size_t i = 0; i < n; ++i) {
    float sum = factors[0] * streams[0][i];
    for (int j = 1; j < arity; ++j)
      sum += factors[j] * streams[j][i];
    out[i] = sum;
  }
}

// The fused loops are inlined here, so each is compiled once per clone.
HERD_VECTORISED void weighted_sum_of_few(float* out, const float* const* inputs,
                                         const float* weights, int count, std::size_t n) {
  switch (count) {
  case 1:
    fused_weighted_sum<1>(out, inputs, weights, n);
    break;
  case 2:
    fused_weighted_sum<2>(out, inputs, weights, n);
    break;
  case 3:
    fused_weighted_sum<3>(out, inputs, weights, n);
    break;
  case 4:
    fused_weighted_sum<4>(out, inputs, weights, n);
    break;
  case 5:
    fused_weighted_sum<5>(out, inputs, weights, n);
    break;
  default:
    break; // callers pass 1..inputs_per_pass + 1
  }
}

// ---- argument checks shared by the kernels ---------------------------------------------------

std::size_t as_size(int value) {
  return static_cast<std::size_t>(value);
}

void check_labels(const std::int32_t* labels, int rows, int classes) {
  for (int r = 0; r < rows; ++r)
    HERD_CHECK(labels[r] >= 0 && labels[r] < classes,
               "row " << r << " has label " << labels[r] << ", outside [0, " << classes << ')');
}

CBLAS_TRANSPOSE to_cblas(transpose trans) {
  return trans == transpose::no ? CblasNoTrans : CblasTrans;
}

class cpu_implementation final : public cpu_layer_ops {
public:
  std::string_view name() const override { return "cpu"; }

  void gemm(transpose trans_a, transpose trans_b, int m, int n, int k, float alpha, const float* a,
            int lda, const float* b, int ldb, float beta, float* c, int ldc) const override {
    preconditions::gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
    cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), m, n, k, alpha, a, lda, b, ldb,
                beta, c, ldc);
  }

  void bias_add(float* y, const float* bias, int rows, int cols) const override {
    preconditions::bias_add(y, bias, rows, cols);
    add_to_every_row(y, bias, as_size(rows), as_size(cols));
  }

  void bias_grad(const float* dy, float* bias_grad, int rows, int cols) const override {
    preconditions::bias_grad(dy, bias_grad, rows, cols);
    sum_over_rows(dy, bias_grad, as_size(rows), as_size(cols));
  }

  void relu_forward(const float* x, float* y, std::size_t n) const override {
    preconditions::relu_forward(x, y, n);
    clamp_below_at_zero(x, y, n);
  }

  void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) const override {
    preconditions::relu_backward(y, dy, dx, n);
    pass_where_positive(y, dy, dx, n);
  }

  float softmax_xent_forward(const float* logits, const std::int32_t* labels, int rows, int classes,
                             float* probs) const override {
    preconditions::softmax_xent_forward(logits, labels, rows, classes, probs);
    check_labels(labels, rows, classes);
    const std::size_t width = as_size(classes);
    double total_loss = 0.0;
    for (std::size_t r = 0; r < as_size(rows); ++r) {
      const float* row = logits + r * width;
      float* row_probs = probs + r * width;
      const float max_logit = *std::max_element(row, row + width);
      // Every exponent is <= 0 and the largest is exactly 1, so sum lies in [1, classes]: nothing
      // overflows, and log(sum) is exact enough in float.
      float sum = 0.0f;
      for (std::size_t c = 0; c < width; ++c) {
        row_probs[c] = std::exp(row[c] - max_logit);
        sum += row_probs[c];
      }
      const float inverse_sum = 1.0f / sum;
      for (std::size_t c = 0; c < width; ++c)
        row_probs[c] *= inverse_sum;
      // -log p[label] = log(sum) - (logit[label] - max): finite even when p[label] underflows.
      total_loss +=
          static_cast<double>(std::log(sum)) - static_cast<double>(row[labels[r]] - max_logit);
    }
    return static_cast<float>(total_loss / rows);
  }

  void softmax_xent_backward(const float* probs, const std::int32_t* labels, int rows, int classes,
                             float* dlogits) const override {
    preconditions::softmax_xent_backward(probs, labels, rows, classes, dlogits);
    check_labels(labels, rows, classes);
    const std::size_t width = as_size(classes);
    const float inverse_rows = 1.0f / static_cast<float>(rows);
    for (std::size_t r = 0; r < as_size(rows); ++r) {
      const float* row_probs = probs + r * width;
      float* row_grads = dlogits + r * width;
      const auto label = as_size(labels[r]);
      // Read before the row is overwritten: dlogits may be probs.
      const float label_prob = row_probs[label];
      scale_into(row_grads, row_probs, inverse_rows, width);
      row_grads[label] = (label_prob - 1.0f) * inverse_rows;
    }
  }

  std::size_t count_correct(const float* scores, const std::int32_t* labels, int rows,
                            int classes) const override {
    preconditions::count_correct(scores, labels, rows, classes);
    check_labels(labels, rows, classes);
    const std::size_t width = as_size(classes);
    std::size_t correct = 0;
    for (std::size_t r = 0; r < as_size(rows); ++r) {
      const float* row = scores + r * width;
      // std::max_element returns the first of equal maxima: the documented tie rule.
      if (std::max_element(row, row + width) - row == labels[r])
        ++correct;
    }
    return correct;
  }

  void sgd_step(float* params, const float* grads, float* velocity, std::size_t n,
                const sgd_hyper& hyper) const override {
    preconditions::sgd_step(params, grads, velocity, n, hyper);
    sgd_with_momentum(params, grads, velocity, n, hyper.learning_rate, hyper.momentum,
                      hyper.weight_decay);
  }

  void adam_step(float* params, const float* grads, float* moments, std::size_t n,
                 const adam_hyper& hyper, std::uint64_t step) const override {
    preconditions::adam_step(params, grads, moments, n, hyper, step);
    const auto corrections = preconditions::adam_corrections_of(hyper, step);
    adamw_loop(params, grads, moments, moments + n, n,
               1.0f - hyper.learning_rate * hyper.weight_decay, hyper.beta1, hyper.beta2, hyper.eps,
               static_cast<float>(corrections.step_size),
               static_cast<float>(corrections.second_scale));
  }

  void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                    std::size_t n) const override {
    preconditions::weighted_sum(out, inputs, weights, k, n);
    if (k <= inputs_per_pass) {
      weighted_sum_of_few(out, inputs, weights, k, n);
      return;
    }
    // A block of out gets the first inputs, then goes on as input 0 (weight 1, which is exact) of
    // each later pass, staying in cache meanwhile.
    const float* group_inputs[inputs_per_pass + 1];
    float group_weights[inputs_per_pass + 1];
    for (std::size_t start = 0; start < n; start += weighted_sum_block_floats) {
      const std::size_t length = std::min(weighted_sum_block_floats, n - start);
      float* block = out + start;
      for (int j = 0; j < inputs_per_pass; ++j) {
        group_inputs[j] = inputs[j] + start;
        group_weights[j] = weights[j];
      }
      weighted_sum_of_few(block, group_inputs, group_weights, inputs_per_pass, length);
      group_inputs[0] = block;
      group_weights[0] = 1.0f;
      for (int next = inputs_per_pass; next < k;) {
        const int fresh = std::min(inputs_per_pass, k - next);
        for (int j = 0; j < fresh; ++j) {
          group_inputs[j + 1] = inputs[next + j] + start;
          group_weights[j + 1] = weights[next + j];
        }
        weighted_sum_of_few(block, group_inputs, group_weights, fresh + 1, length);
        next += fresh;
      }
    }
  }
};

} // namespace

const ops& cpu_ops() {
  static const cpu_implementation instance;
  return instance;
}

void set_blas_threads(int threads) {
  HERD_CHECK_GE(threads, 0);
  // OpenBLAS reads a count below 1 as "the most threads started so far", not as its default, so
  // 0 is mapped to the core count, which OpenBLAS starts with (unless OPENBLAS_NUM_THREADS is set).
  openblas_set_num_threads(threads == 0 ? openblas_get_num_procs() : threads);
}

int blas_threads() {
  return openblas_get_num_threads();
}

std::string blas_description() {
  const char* config = openblas_get_config();
  return config != nullptr ? config : "OpenBLAS (no build description)";
}

bool vectorised_kernels() {
#if defined(__SANITIZE_THREAD__)
  return false; // the baseline code only (see HERD_VECTORISED)
#else
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v3");
#endif
}

} // namespace herd::kernels
