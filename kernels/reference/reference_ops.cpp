// reference_ops(): every kernel of ops as the plainest loop that can be checked by eye, summing in
// double. The oracle of the kernel tests; it shares no code with the implementations it judges.
#include "herd/ops.hpp"
#include "kernels/check.hpp"
#include "kernels/preconditions.hpp"
#include "kernels/reference/reference_layer_ops.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace herd::kernels {
namespace {

// Element (row, col) of op(matrix), where matrix is stored row-major with row stride ld.
float op_element(const float* matrix, int ld, transpose trans, int row, int col) {
  const auto stored_row = static_cast<std::size_t>(trans == transpose::no ? row : col);
  const auto stored_col = static_cast<std::size_t>(trans == transpose::no ? col : row);
  return matrix[stored_row * static_cast<std::size_t>(ld) + stored_col];
}

std::size_t at(int row, int cols, int col) {
  return static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) +
         static_cast<std::size_t>(col);
}

void check_labels(const std::int32_t* labels, int rows, int classes) {
  for (int r = 0; r < rows; ++r)
    HERD_CHECK(labels[r] >= 0 && labels[r] < classes,
               "row " << r << " has label " << labels[r] << ", outside [0, " << classes << ')');
}

class reference_implementation final : public reference_layer_ops {
public:
  std::string_view name() const override { return "reference"; }

  void gemm(transpose trans_a, transpose trans_b, int m, int n, int k, float alpha, const float* a,
            int lda, const float* b, int ldb, float beta, float* c, int ldc) const override {
    preconditions::gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double dot = 0.0;
        for (int p = 0; p < k; ++p)
          dot += static_cast<double>(op_element(a, lda, trans_a, i, p)) *
                 static_cast<double>(op_element(b, ldb, trans_b, p, j));
        float& out = c[at(i, ldc, j)];
        // BLAS convention: with beta == 0, C is write-only, so garbage (even NaN) in it is ignored.
        const double previous = beta == 0.0f ? 0.0 : static_cast<double>(beta) * out;
        out = static_cast<float>(static_cast<double>(alpha) * dot + previous);
      }
    }
  }

  void bias_add(float* y, const float* bias, int rows, int cols) const override {
    preconditions::bias_add(y, bias, rows, cols);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        y[at(r, cols, c)] += bias[c];
  }

  void bias_grad(const float* dy, float* bias_grad, int rows, int cols) const override {
    preconditions::bias_grad(dy, bias_grad, rows, cols);
    for (int c = 0; c < cols; ++c) {
      double sum = 0.0;
      for (int r = 0; r < rows; ++r)
        sum += static_cast<double>(dy[at(r, cols, c)]);
      bias_grad[c] = static_cast<float>(sum);
    }
  }

  void relu_forward(const float* x, float* y, std::size_t n) const override {
    preconditions::relu_forward(x, y, n);
    for (std::size_t i = 0; i < n; ++i)
      y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  }

  void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) const override {
    preconditions::relu_backward(y, dy, dx, n);
    for (std::size_t i = 0; i < n; ++i)
      dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
  }

  float softmax_xent_forward(const float* logits, const std::int32_t* labels, int rows, int classes,
                             float* probs) const override {
    preconditions::softmax_xent_forward(logits, labels, rows, classes, probs);
    check_labels(labels, rows, classes);
    double total_loss = 0.0;
    for (int r = 0; r < rows; ++r) {
      double max_logit = logits[at(r, classes, 0)];
      for (int c = 1; c < classes; ++c)
        max_logit = std::fmax(max_logit, static_cast<double>(logits[at(r, classes, c)]));
      double sum = 0.0;
      for (int c = 0; c < classes; ++c)
        sum += std::exp(static_cast<double>(logits[at(r, classes, c)]) - max_logit);
      for (int c = 0; c < classes; ++c)
        probs[at(r, classes, c)] = static_cast<float>(
            std::exp(static_cast<double>(logits[at(r, classes, c)]) - max_logit) / sum);
      // -log p[label] = log(sum) - (logit[label] - max): never takes the log of an underflowed p.
      total_loss +=
          std::log(sum) - (static_cast<double>(logits[at(r, classes, labels[r])]) - max_logit);
    }
    return static_cast<float>(total_loss / rows);
  }

  void softmax_xent_backward(const float* probs, const std::int32_t* labels, int rows, int classes,
                             float* dlogits) const override {
    preconditions::softmax_xent_backward(probs, labels, rows, classes, dlogits);
    check_labels(labels, rows, classes);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < classes; ++c) {
        const double onehot = c == labels[r] ? 1.0 : 0.0;
        dlogits[at(r, classes, c)] =
            static_cast<float>((static_cast<double>(probs[at(r, classes, c)]) - onehot) / rows);
      }
    }
  }

  std::size_t count_correct(const float* scores, const std::int32_t* labels, int rows,
                            int classes) const override {
    preconditions::count_correct(scores, labels, rows, classes);
    check_labels(labels, rows, classes);
    std::size_t correct = 0;
    for (int r = 0; r < rows; ++r) {
      int best = 0;
      for (int c = 1; c < classes; ++c)
        if (scores[at(r, classes, c)] > scores[at(r, classes, best)])
          best = c;
      if (best == labels[r])
        ++correct;
    }
    return correct;
  }

  void sgd_step(float* params, const float* grads, float* velocity, std::size_t n,
                const sgd_hyper& hyper) const override {
    preconditions::sgd_step(params, grads, velocity, n, hyper);
    for (std::size_t i = 0; i < n; ++i) {
      const double gradient =
          static_cast<double>(grads[i]) + static_cast<double>(hyper.weight_decay) * params[i];
      const double new_velocity = static_cast<double>(hyper.momentum) * velocity[i] + gradient;
      velocity[i] = static_cast<float>(new_velocity);
      params[i] =
          static_cast<float>(params[i] - static_cast<double>(hyper.learning_rate) * new_velocity);
    }
  }

  void adam_step(float* params, const float* grads, float* moments, std::size_t n,
                 const adam_hyper& hyper, std::uint64_t step) const override {
    preconditions::adam_step(params, grads, moments, n, hyper, step);
    const auto corrections = preconditions::adam_corrections_of(hyper, step);
    const double lr = hyper.learning_rate, beta1 = hyper.beta1, beta2 = hyper.beta2;
    float* m = moments;
    float* v = moments + n;
    for (std::size_t i = 0; i < n; ++i) {
      const double gradient = grads[i];
      const double first = beta1 * m[i] + (1.0 - beta1) * gradient;
      const double second = beta2 * v[i] + (1.0 - beta2) * gradient * gradient;
      m[i] = static_cast<float>(first);
      v[i] = static_cast<float>(second);
      const double decayed = params[i] * (1.0 - lr * static_cast<double>(hyper.weight_decay));
      params[i] = static_cast<float>(
          decayed - corrections.step_size * first /
                        (std::sqrt(second) * corrections.second_scale + hyper.eps));
    }
  }

  void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                    std::size_t n) const override {
    preconditions::weighted_sum(out, inputs, weights, k, n);
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int i = 0; i < k; ++i)
        sum += static_cast<double>(weights[i]) * inputs[i][j];
      out[j] = static_cast<float>(sum);
    }
  }
};

} // namespace

const ops& reference_ops() {
  static const reference_implementation instance;
  return instance;
}

} // namespace herd::kernels
