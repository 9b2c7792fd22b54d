// The numeric kernels every model and reduction uses, behind one interface so that models do not
// know where they run: reference_ops() (naive loops, the test oracle), cpu_ops() (OpenBLAS GEMM and
// vectorised elementwise code) and, in later work, a CUDA implementation.
//
// Conventions: float32, row-major, raw pointers with explicit sizes, all in the ops' memory()
// (host memory for the CPU implementations, device memory for CUDA). No kernel allocates. Sizes
// must be positive: an empty shape is a caller's mistake and throws std::invalid_argument, as do
// labels outside [0, classes), token ids outside [0, vocab) (other than padding_id), sequence
// lengths outside their range and negative hyperparameters. (The CUDA implementation checks data on
// the device only where its contract says so; docs/gpu.md.)
#pragma once

#include "herd/memory.hpp"

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

/// AdamW (Loshchilov and Hutter's decoupled weight decay), PyTorch's torch.optim.AdamW semantics,
/// at step t >= 1 (counting this one), with m and v the first and second moments:
///   param *= 1 - lr * weight_decay;  m = beta1 * m + (1 - beta1) * grad;
///   v = beta2 * v + (1 - beta2) * grad^2;
///   param -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
struct adam_hyper {
  float learning_rate = 0.0f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
};

/// The windows of a 2-D convolution or pooling over NCHW images: `channels` planes of height x
/// width, a kernel_h x kernel_w window moved by stride_h / stride_w over each plane padded with
/// pad_h / pad_w zeros on every side. Output sizes round down, as in PyTorch: a window that would
/// run past the padded edge is dropped.
struct window2d {
  int channels = 0;
  int height = 0;
  int width = 0;
  int kernel_h = 0;
  int kernel_w = 0;
  int stride_h = 1;
  int stride_w = 1;
  int pad_h = 0;
  int pad_w = 0;

  int output_height() const { return (height + 2 * pad_h - kernel_h) / stride_h + 1; }
  int output_width() const { return (width + 2 * pad_w - kernel_w) / stride_w + 1; }
  /// Floats in one image: channels x height x width.
  std::size_t image_size() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) *
           static_cast<std::size_t>(width);
  }
  /// Rows of one image's column matrix (im2col): channels x kernel_h x kernel_w.
  std::size_t column_rows() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(kernel_h) *
           static_cast<std::size_t>(kernel_w);
  }
  /// Output positions per plane, the columns of one image's column matrix: output_height x width.
  std::size_t output_positions() const {
    return static_cast<std::size_t>(output_height()) * static_cast<std::size_t>(output_width());
  }
};

/// 1-D windows over a batch of variable-length sequences stored channels-last: batch x length x
/// channels, `length` being the padded length. Sample b has lengths[b] valid steps (an int32 array
/// of batch entries in the ops' memory, each in [1, length]); its steps from lengths[b] on are
/// padding, which no kernel reads. A `kernel`-wide window moves by one step over each sample padded
/// with `padding` zeros on both sides of its own length, so sample b has
/// valid_outputs(lengths[b]) = lengths[b] + 2 padding - kernel + 1 output positions (at least 1
/// for every sample, else the call throws), out of output_length() stored per sample.
struct sequence_window {
  int batch = 0;
  int length = 0;
  int channels = 0;
  int kernel = 0;
  int padding = 0;

  int output_length() const { return length + 2 * padding - kernel + 1; }
  int valid_outputs(int sample_length) const { return sample_length + 2 * padding - kernel + 1; }
  /// The shortest sample length that has an output position.
  int shortest_length() const { return kernel - 2 * padding > 1 ? kernel - 2 * padding : 1; }
  /// Columns of the unfolded matrix: one window, kernel x channels.
  std::size_t window_size() const {
    return static_cast<std::size_t>(kernel) * static_cast<std::size_t>(channels);
  }
  /// Rows of the unfolded matrix: batch x output_length.
  std::size_t output_rows() const {
    return static_cast<std::size_t>(batch) * static_cast<std::size_t>(output_length());
  }
};

/// The id sequence_tokens() writes where a row is padding, and that embedding_forward() maps to a
/// row of zeros.
inline constexpr std::int32_t padding_id = -1;
/// The largest token id a float batch can carry: every whole number up to 2^24 is exact in float.
inline constexpr std::int32_t largest_token = (1 << 24) - 1;

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
  /// destination[0..n) = value, in memory(); queued in order with the kernels (no wait).
  virtual void fill(float* destination, std::size_t n, float value) const;
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

  /// For i in [0, batch): C_i = alpha * op(A_i) * op(B_i) + beta * C_i, as gemm() computes each,
  /// with A_i = a + i * stride_a floats (likewise B_i and C_i); a stride of 0 gives every i the
  /// same matrix (C_i must not overlap one another). The default calls gemm() once per i; an
  /// implementation with a cost per call (CUDA) does them all in one.
  virtual void gemm_batched(transpose trans_a, transpose trans_b, int m, int n, int k, float alpha,
                            const float* a, int lda, std::size_t stride_a, const float* b, int ldb,
                            std::size_t stride_b, float beta, float* c, int ldc,
                            std::size_t stride_c, int batch) const;

  /// How many images a layer should hand to one call (im2col, gemm_batched) at most: 1 where one
  /// image's column matrix kept in cache is fastest (the CPU, the default), more where every call
  /// has a fixed launch cost (a GPU). Only a hint: results agree to rounding whatever the count.
  virtual int images_per_call() const { return 1; }

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

  /// One AdamW step over n parameters, the `step`-th (>= 1); see adam_hyper. `moments` holds 2n
  /// floats: m, then v.
  virtual void adam_step(float* params, const float* grads, float* moments, std::size_t n,
                         const adam_hyper& hyper, std::uint64_t step) const = 0;

  /// out = sum_{i<k} weights[i] * inputs[i], elementwise over n floats. k >= 1. out may alias
  /// inputs[0] (and only inputs[0]). The reduction every algorithm uses.
  virtual void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                            std::size_t n) const = 0;

  // -- layers beyond the MLP -------------------------------------------------------------------
  // Convolutions are unfold + GEMM: a conv layer's forward is im2col then gemm, its input gradient
  // gemm then col2im (and the same with unfold1d / fold1d). `images` counts the images of one call:
  // pass the batch for one launch over all of them, or 1 per call to keep the column matrix small
  // (one image's columns stay in cache, and y_n = W cols_n is then already NCHW).

  /// Unfolds `images` NCHW images (images x window.image_size() floats) into their column matrices,
  /// one after the other, each column_rows() x output_positions(): row (c, i, j) =
  /// (c * kernel_h + i) * kernel_w + j, column (oh, ow) = oh * output_width() + ow, holding
  /// x[c][oh * stride_h - pad_h + i][ow * stride_w - pad_w + j], or 0 where that lies in the
  /// padding.
  virtual void im2col(const float* x, int images, const window2d& window, float* columns) const = 0;

  /// The adjoint of im2col: overwrites x (images x window.image_size()) with, at every pixel, the
  /// sum of all column entries that im2col reads from it (overlapping windows add up; a pixel no
  /// window covers gets 0). So <im2col(x), c> == <x, col2im(c)>.
  virtual void col2im(const float* columns, int images, const window2d& window, float* x) const = 0;

  /// 2-D max pooling without padding (window.pad_h and pad_w must be 0): y (images x channels x
  /// output_height x output_width) gets the maximum of each window, and argmax the index of that
  /// maximum within its input plane (ih * width + iw); the first maximum in row-major window order
  /// wins a tie.
  virtual void max_pool2d_forward(const float* x, int images, const window2d& window, float* y,
                                  std::int32_t* argmax) const = 0;

  /// The gradient of max_pool2d_forward: overwrites dx (images x image_size()) with zeros, then
  /// adds each dy to the input element its argmax names (overlapping windows add up). argmax must
  /// come from the forward pass with the same window.
  virtual void max_pool2d_backward(const float* dy, const std::int32_t* argmax, int images,
                                   const window2d& window, float* dx) const = 0;

  /// Inverted dropout: y[i] = keep(seed, i, p) ? x[i] * scale : 0 with scale = 1.0f / (1.0f - p)
  /// computed in float, so every implementation gives bit-identical results. keep() is a
  /// counter-based hash of (seed, i) (splitmix64): element i is dropped
  /// when the top 24 bits of the hash, over 2^24, are below p. The caller passes a new seed for
  /// every step. p must lie in [0, 1); p = 0 copies x. y may alias x.
  virtual void dropout_forward(const float* x, float* y, std::size_t n, float p,
                               std::uint64_t seed) const = 0;

  /// The gradient of dropout_forward with the same n, p and seed: dx[i] = keep ? dy[i] * scale : 0.
  /// dx may alias dy.
  virtual void dropout_backward(const float* dy, float* dx, std::size_t n, float p,
                                std::uint64_t seed) const = 0;

  /// Reads a batch of token sequences: x is rows x cols floats, each a token id (a whole number in
  /// [0, largest_token]) or padding (any negative value), padding only at the end of a row. Writes
  /// lengths[r], the number of leading ids of row r (0 for a row of padding only), and ids (rows x
  /// steps, 1 <= steps <= cols) the first `steps` entries of each row as int32, padding_id where
  /// the row is padding. Pass steps = cols for every entry, or the longest length to drop padding
  /// columns that no row needs. A value that is neither (NaN, 2.5, 2^24) or an id after padding
  /// throws; the CUDA implementation checks on the device and synchronises to throw.
  virtual void sequence_tokens(const float* x, int rows, int cols, int steps, std::int32_t* ids,
                               std::int32_t* lengths) const = 0;

  /// y[t] = table[ids[t]] for `tokens` int32 ids (a batch x length array, flattened): y is tokens x
  /// dim, table vocab x dim. Every id must lie in [0, vocab) or be padding_id, whose row of y is 0.
  virtual void embedding_forward(const float* table, int vocab, int dim, const std::int32_t* ids,
                                 int tokens, float* y) const = 0;

  /// The gradient of embedding_forward: overwrites table_grad (vocab x dim) with zeros, then adds
  /// every dy[t] (tokens x dim) into row ids[t]; a repeated id sums its rows, and padding_id adds
  /// nothing.
  virtual void embedding_backward(const float* dy, const std::int32_t* ids, int tokens, int vocab,
                                  int dim, float* table_grad) const = 0;

  /// Unfolds x (batch x length x channels, see sequence_window) into the rows of a conv1d GEMM:
  /// columns is output_rows() x window_size(), row (b, t) holding the window of output position t
  /// of sample b, element (j, c) = j * channels + c being x[b][t - padding + j][c], or 0 where that
  /// step lies outside [0, lengths[b]). Rows of positions t >= valid_outputs(lengths[b]) are all 0.
  /// Then y = columns W^T (W: filters x window_size()) is the conv output, batch x output_length x
  /// filters, channels-last again.
  virtual void unfold1d(const float* x, const std::int32_t* lengths, const sequence_window& window,
                        float* columns) const = 0;

  /// The adjoint of unfold1d: overwrites x (batch x length x channels) with, at every valid step,
  /// the sum of the column entries unfold1d reads from it, and with 0 at padding steps. Entries of
  /// columns that unfold1d writes as 0 whatever x holds are ignored.
  virtual void fold1d(const float* columns, const std::int32_t* lengths,
                      const sequence_window& window, float* x) const = 0;

  /// Global max pool over time of a conv1d output x (batch x window.output_length() x filters):
  /// y[b][f] (batch x filters) is the maximum of x[b][t][f] over the valid positions
  /// t < window.valid_outputs(lengths[b]) only, and argmax[b][f] that t (the first on ties). For a
  /// plain masked max over lengths[b] steps, pass kernel 1 and padding 0.
  virtual void sequence_max_pool_forward(const float* x, const std::int32_t* lengths,
                                         const sequence_window& window, int filters, float* y,
                                         std::int32_t* argmax) const = 0;

  /// The gradient of sequence_max_pool_forward: overwrites dx (batch x output_length x filters)
  /// with dy[b][f] at t = argmax[b][f] and 0 everywhere else.
  virtual void sequence_max_pool_backward(const float* dy, const std::int32_t* argmax,
                                          const sequence_window& window, int filters,
                                          float* dx) const = 0;
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
