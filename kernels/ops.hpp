// The numeric kernels every model and reduction uses, behind one interface so that models do not
// know where they run: reference_ops() (naive loops, the test oracle), cpu_ops() (OpenBLAS GEMM and
// vectorised elementwise code) and, in later work, a CUDA implementation.
//
// Conventions: float32, row-major, raw pointers with explicit sizes, all in the ops' memory()
// (host memory for the CPU implementations, device memory for CUDA). No kernel allocates. Sizes
// must be positive: an empty shape is a caller's mistake and throws std::invalid_argument, as do
// labels outside [0, classes) and negative hyperparameters.
#pragma once

#include "kernels/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace herd::kernels {

enum class transpose { no, yes };

/// SGD with momentum and plain (coupled) L2 weight decay, PyTorch semantics:
///   g = grad + weight_decay * param;  velocity = momentum * velocity + g;  param -= lr * velocity.
/// With momentum == 0 the velocity buffer is still written (it holds g), so callers need not care.
struct sgd_hyper {
  float learning_rate = 0.0f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
};

class ops {
public:
  virtual ~ops() = default;

  /// Short name for logs and test names: "reference", "cpu", "cuda".
  virtual std::string_view name() const = 0;

  // -- where the operands live, and moving data in that order ----------------------------------
  // The CPU implementations keep the defaults below (host memory, memcpy, nothing to wait for).
  // An asynchronous implementation (CUDA) queues copy() in order with its kernels, and
  // synchronize() waits for all of them: a caller synchronises before another thread (or another
  // ops object) reads what these calls wrote.

  /// Where every pointer passed to this object's kernels must point.
  virtual const kernels::memory& memory() const;
  /// destination = source, n floats, both in memory(); queued in order with the kernels.
  virtual void copy(float* destination, const float* source, std::size_t n) const;
  /// From the host into memory(), queued in order; `host_source` may be reused once it returns.
  virtual void upload(void* destination, const void* host_source, std::size_t bytes) const;
  /// Out of memory() to the host, after all queued work; complete when it returns.
  virtual void download(void* host_destination, const void* source, std::size_t bytes) const;
  /// Waits until every queued call has finished.
  virtual void synchronize() const;

  /// C = alpha * op(A) * op(B) + beta * C, with op(A) m x k, op(B) k x n, C m x n (row-major).
  /// lda/ldb/ldc are the row strides of A, B, C as stored (before op). With beta == 0, C is
  /// write-only (its old contents, even NaN, do not matter), as in BLAS.
  virtual void gemm(transpose trans_a, transpose trans_b, int m, int n, int k, float alpha,
                    const float* a, int lda, const float* b, int ldb, float beta, float* c,
                    int ldc) const = 0;

  /// y[r][c] += bias[c] for a rows x cols matrix y.
  virtual void bias_add(float* y, const float* bias, int rows, int cols) const = 0;

  /// bias_grad[c] = sum_r dy[r][c] (overwrites bias_grad).
  virtual void bias_grad(const float* dy, float* bias_grad, int rows, int cols) const = 0;

  /// y = max(x, 0). y may alias x.
  virtual void relu_forward(const float* x, float* y, std::size_t n) const = 0;

  /// dx = dy where y > 0, else 0 (y is the forward output). dx may alias dy.
  virtual void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) const = 0;

  /// Row-wise softmax of logits (rows x classes) into probs, computed stably (max subtracted);
  /// returns the mean cross-entropy -log p[label] over the rows. Labels must lie in [0, classes).
  virtual float softmax_xent_forward(const float* logits, const std::int32_t* labels, int rows,
                                     int classes, float* probs) const = 0;

  /// Gradient of the mean cross-entropy with respect to the logits: (probs - onehot(label)) / rows.
  /// dlogits may alias probs.
  virtual void softmax_xent_backward(const float* probs, const std::int32_t* labels, int rows,
                                     int classes, float* dlogits) const = 0;

  /// Number of rows whose largest score (first one on ties) sits at the label's index.
  virtual std::size_t count_correct(const float* scores, const std::int32_t* labels, int rows,
                                    int classes) const = 0;

  /// One SGD step over n parameters; see sgd_hyper.
  virtual void sgd_step(float* params, const float* grads, float* velocity, std::size_t n,
                        const sgd_hyper& hyper) const = 0;

  /// out = sum_{i<k} weights[i] * inputs[i], elementwise over n floats. k >= 1. out may alias
  /// inputs[0] (and only inputs[0]). The reduction every algorithm uses.
  virtual void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                            std::size_t n) const = 0;
};

/// Naive loops: slow, obviously right, the oracle of every kernel test.
const ops& reference_ops();

/// OpenBLAS GEMM and vectorised elementwise kernels (AVX2 where the CPU has it, chosen at run
/// time).
const ops& cpu_ops();

/// Threads OpenBLAS may use inside one GEMM. Process-wide. 0 = one thread per core.
/// Several workers in one process each compute in their own thread, so they want 1.
void set_blas_threads(int threads);
int blas_threads();

/// The BLAS library and its build, for `herd devices`: "OpenBLAS 0.3.21 DYNAMIC_ARCH ... Haswell".
std::string blas_description();
/// Whether the elementwise kernels run their AVX2+FMA version on this CPU.
bool vectorised_kernels();

} // namespace herd::kernels
