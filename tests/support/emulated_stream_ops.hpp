// A GPU stream emulated on the CPU, to check the hand-overs of code written for one: every call
// of one object is queued in order and runs only when someone waits for it (synchronize(),
// download(), upload() as the CUDA ops do, or a call that returns a value). Work queued on one
// object is invisible to another until that happens, as across two CUDA streams, so a missing
// synchronisation shows up as stale data. Operands live in a separate_memory; the kernels are
// cpu_ops().
#pragma once

#include "herd/ops.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

#include "support/separate_memory_ops.hpp"

namespace herd::testing {

class emulated_stream_ops : public kernels::ops {
public:
  explicit emulated_stream_ops(const separate_memory& where) : memory_(where) {}
  ~emulated_stream_ops() override { flush(); }
  emulated_stream_ops(const emulated_stream_ops&) = delete;
  emulated_stream_ops& operator=(const emulated_stream_ops&) = delete;

  std::string_view name() const override { return "emulated-stream"; }
  const kernels::memory& memory() const override { return memory_; }

  void gemm(kernels::transpose ta, kernels::transpose tb, int m, int n, int k, float alpha,
            const float* a, int lda, const float* b, int ldb, float beta, float* c,
            int ldc) const override {
    enqueue([=] { cpu().gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
  }
  void bias_add(float* y, const float* bias, int rows, int cols) const override {
    enqueue([=] { cpu().bias_add(y, bias, rows, cols); });
  }
  void bias_grad(const float* dy, float* bias_grad, int rows, int cols) const override {
    enqueue([=] { cpu().bias_grad(dy, bias_grad, rows, cols); });
  }
  void relu_forward(const float* x, float* y, std::size_t n) const override {
    enqueue([=] { cpu().relu_forward(x, y, n); });
  }
  void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) const override {
    enqueue([=] { cpu().relu_backward(y, dy, dx, n); });
  }
  float softmax_xent_forward(const float* logits, const std::int32_t* labels, int rows, int classes,
                             float* probs) const override {
    flush();
    return cpu().softmax_xent_forward(logits, labels, rows, classes, probs);
  }
  void softmax_xent_backward(const float* probs, const std::int32_t* labels, int rows, int classes,
                             float* dlogits) const override {
    enqueue([=] { cpu().softmax_xent_backward(probs, labels, rows, classes, dlogits); });
  }
  std::size_t count_correct(const float* scores, const std::int32_t* labels, int rows,
                            int classes) const override {
    flush();
    return cpu().count_correct(scores, labels, rows, classes);
  }
  void sgd_step(float* params, const float* grads, float* velocity, std::size_t n,
                const kernels::sgd_hyper& hyper) const override {
    enqueue([=] { cpu().sgd_step(params, grads, velocity, n, hyper); });
  }
  void adam_step(float* params, const float* grads, float* moments, std::size_t n,
                 const kernels::adam_hyper& hyper, std::uint64_t step) const override {
    enqueue([=] { cpu().adam_step(params, grads, moments, n, hyper, step); });
  }
  // The inputs and weights arrays describe the call and are read before it returns.
  void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                    std::size_t n) const override {
    std::vector<const float*> sources(inputs, inputs + k);
    std::vector<float> factors(weights, weights + k);
    enqueue([=] { cpu().weighted_sum(out, sources.data(), factors.data(), k, n); });
  }
  // The layer kernels read their data (ids, lengths, argmax) when they run, like the CUDA ones.
  void im2col(const float* x, int images, const kernels::window2d& window,
              float* columns) const override {
    enqueue([=] { cpu().im2col(x, images, window, columns); });
  }
  void col2im(const float* columns, int images, const kernels::window2d& window,
              float* x) const override {
    enqueue([=] { cpu().col2im(columns, images, window, x); });
  }
  void max_pool2d_forward(const float* x, int images, const kernels::window2d& window, float* y,
                          std::int32_t* argmax) const override {
    enqueue([=] { cpu().max_pool2d_forward(x, images, window, y, argmax); });
  }
  void max_pool2d_backward(const float* dy, const std::int32_t* argmax, int images,
                           const kernels::window2d& window, float* dx) const override {
    enqueue([=] { cpu().max_pool2d_backward(dy, argmax, images, window, dx); });
  }
  void dropout_forward(const float* x, float* y, std::size_t n, float p,
                       std::uint64_t seed) const override {
    enqueue([=] { cpu().dropout_forward(x, y, n, p, seed); });
  }
  void dropout_backward(const float* dy, float* dx, std::size_t n, float p,
                        std::uint64_t seed) const override {
    enqueue([=] { cpu().dropout_backward(dy, dx, n, p, seed); });
  }
  // Like the CUDA ops, sequence_tokens checks the batch and so waits for the queue.
  void sequence_tokens(const float* x, int rows, int cols, int steps, std::int32_t* ids,
                       std::int32_t* lengths) const override {
    flush();
    cpu().sequence_tokens(x, rows, cols, steps, ids, lengths);
  }
  // Like the CUDA ops, the forward pass checks the ids and so waits for the queue.
  void embedding_forward(const float* table, int vocab, int dim, const std::int32_t* ids,
                         int tokens, float* y) const override {
    flush();
    cpu().embedding_forward(table, vocab, dim, ids, tokens, y);
  }
  void embedding_backward(const float* dy, const std::int32_t* ids, int tokens, int vocab, int dim,
                          float* table_grad) const override {
    enqueue([=] { cpu().embedding_backward(dy, ids, tokens, vocab, dim, table_grad); });
  }
  // Like the CUDA ops, unfold1d checks the lengths and so waits for the queue.
  void unfold1d(const float* x, const std::int32_t* lengths, const kernels::sequence_window& window,
                float* columns) const override {
    flush();
    cpu().unfold1d(x, lengths, window, columns);
  }
  void fold1d(const float* columns, const std::int32_t* lengths,
              const kernels::sequence_window& window, float* x) const override {
    enqueue([=] { cpu().fold1d(columns, lengths, window, x); });
  }
  void sequence_max_pool_forward(const float* x, const std::int32_t* lengths,
                                 const kernels::sequence_window& window, int filters, float* y,
                                 std::int32_t* argmax) const override {
    enqueue([=] { cpu().sequence_max_pool_forward(x, lengths, window, filters, y, argmax); });
  }
  void sequence_max_pool_backward(const float* dy, const std::int32_t* argmax,
                                  const kernels::sequence_window& window, int filters,
                                  float* dx) const override {
    enqueue([=] { cpu().sequence_max_pool_backward(dy, argmax, window, filters, dx); });
  }

  void copy(float* destination, const float* source, std::size_t n) const override {
    ++memory_.counts.copies;
    enqueue([=] { std::memmove(destination, source, n * sizeof(float)); });
  }
  void fill(float* destination, std::size_t n, float value) const override {
    enqueue([=] { std::fill_n(destination, n, value); });
  }
  void upload(void* destination, const void* host_source, std::size_t bytes) const override {
    ++memory_.counts.uploads;
    flush();
    std::memmove(destination, host_source, bytes);
  }
  void download(void* host_destination, const void* source, std::size_t bytes) const override {
    ++memory_.counts.downloads;
    flush();
    std::memmove(host_destination, source, bytes);
  }
  void synchronize() const override {
    ++memory_.counts.synchronizations;
    flush();
  }

private:
  static const kernels::ops& cpu() { return kernels::cpu_ops(); }

  void enqueue(std::function<void()> work) const {
    const std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.push_back(std::move(work));
  }

  // Runs what is queued, in order; flushes from several threads run one after another.
  void flush() const {
    const std::lock_guard<std::mutex> running(run_mutex_);
    std::vector<std::function<void()>> ready;
    {
      const std::lock_guard<std::mutex> lock(queue_mutex_);
      ready.swap(queue_);
    }
    for (auto& work : ready)
      work();
  }

  const separate_memory& memory_;
  mutable std::mutex run_mutex_;
  mutable std::mutex queue_mutex_;
  mutable std::vector<std::function<void()>> queue_;
};

} // namespace herd::testing
