// A kernels::ops that forwards every kernel to cpu_ops(): test doubles derive from it and
// override only the kernel they make fail or slow (fault injection through the interface).
#pragma once

#include "herd/ops.hpp"

namespace herd::testing {

class delegating_ops : public kernels::ops {
public:
  std::string_view name() const override { return "test-double"; }
  void gemm(kernels::transpose ta, kernels::transpose tb, int m, int n, int k, float alpha,
            const float* a, int lda, const float* b, int ldb, float beta, float* c,
            int ldc) const override {
    base().gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void bias_add(float* y, const float* bias, int rows, int cols) const override {
    base().bias_add(y, bias, rows, cols);
  }
  void bias_grad(const float* dy, float* bias_grad, int rows, int cols) const override {
    base().bias_grad(dy, bias_grad, rows, cols);
  }
  void relu_forward(const float* x, float* y, std::size_t n) const override {
    base().relu_forward(x, y, n);
  }
  void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) const override {
    base().relu_backward(y, dy, dx, n);
  }
  float softmax_xent_forward(const float* logits, const std::int32_t* labels, int rows, int classes,
                             float* probs) const override {
    return base().softmax_xent_forward(logits, labels, rows, classes, probs);
  }
  void softmax_xent_backward(const float* probs, const std::int32_t* labels, int rows, int classes,
                             float* dlogits) const override {
    base().softmax_xent_backward(probs, labels, rows, classes, dlogits);
  }
  std::size_t count_correct(const float* scores, const std::int32_t* labels, int rows,
                            int classes) const override {
    return base().count_correct(scores, labels, rows, classes);
  }
  void sgd_step(float* params, const float* grads, float* velocity, std::size_t n,
                const kernels::sgd_hyper& hyper) const override {
    base().sgd_step(params, grads, velocity, n, hyper);
  }
  void adam_step(float* params, const float* grads, float* moments, std::size_t n,
                 const kernels::adam_hyper& hyper, std::uint64_t step) const override {
    base().adam_step(params, grads, moments, n, hyper, step);
  }
  void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                    std::size_t n) const override {
    base().weighted_sum(out, inputs, weights, k, n);
  }
  void im2col(const float* x, int images, const kernels::window2d& window,
              float* columns) const override {
    base().im2col(x, images, window, columns);
  }
  void col2im(const float* columns, int images, const kernels::window2d& window,
              float* x) const override {
    base().col2im(columns, images, window, x);
  }
  void max_pool2d_forward(const float* x, int images, const kernels::window2d& window, float* y,
                          std::int32_t* argmax) const override {
    base().max_pool2d_forward(x, images, window, y, argmax);
  }
  void max_pool2d_backward(const float* dy, const std::int32_t* argmax, int images,
                           const kernels::window2d& window, float* dx) const override {
    base().max_pool2d_backward(dy, argmax, images, window, dx);
  }
  void dropout_forward(const float* x, float* y, std::size_t n, float p,
                       std::uint64_t seed) const override {
    base().dropout_forward(x, y, n, p, seed);
  }
  void dropout_backward(const float* dy, float* dx, std::size_t n, float p,
                        std::uint64_t seed) const override {
    base().dropout_backward(dy, dx, n, p, seed);
  }
  void sequence_tokens(const float* x, int rows, int cols, int steps, std::int32_t* ids,
                       std::int32_t* lengths) const override {
    base().sequence_tokens(x, rows, cols, steps, ids, lengths);
  }
  void embedding_forward(const float* table, int vocab, int dim, const std::int32_t* ids,
                         int tokens, float* y) const override {
    base().embedding_forward(table, vocab, dim, ids, tokens, y);
  }
  void embedding_backward(const float* dy, const std::int32_t* ids, int tokens, int vocab, int dim,
                          float* table_grad) const override {
    base().embedding_backward(dy, ids, tokens, vocab, dim, table_grad);
  }
  void unfold1d(const float* x, const std::int32_t* lengths, const kernels::sequence_window& window,
                float* columns) const override {
    base().unfold1d(x, lengths, window, columns);
  }
  void fold1d(const float* columns, const std::int32_t* lengths,
              const kernels::sequence_window& window, float* x) const override {
    base().fold1d(columns, lengths, window, x);
  }
  void sequence_max_pool_forward(const float* x, const std::int32_t* lengths,
                                 const kernels::sequence_window& window, int filters, float* y,
                                 std::int32_t* argmax) const override {
    base().sequence_max_pool_forward(x, lengths, window, filters, y, argmax);
  }
  void sequence_max_pool_backward(const float* dy, const std::int32_t* argmax,
                                  const kernels::sequence_window& window, int filters,
                                  float* dx) const override {
    base().sequence_max_pool_backward(dy, argmax, window, filters, dx);
  }

protected:
  static const kernels::ops& base() { return kernels::cpu_ops(); }
};

} // namespace herd::testing
