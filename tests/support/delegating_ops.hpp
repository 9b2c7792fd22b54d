// A kernels::ops that forwards every kernel to cpu_ops(): test doubles derive from it and
// override only the kernel they make fail or slow (fault injection through the interface).
#pragma once

#include "kernels/ops.hpp"

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
  void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                    std::size_t n) const override {
    base().weighted_sum(out, inputs, weights, k, n);
  }

protected:
  static const kernels::ops& base() { return kernels::cpu_ops(); }
};

} // namespace herd::testing
