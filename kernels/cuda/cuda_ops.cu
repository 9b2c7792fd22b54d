// make_cuda_ops(): kernels::ops on one CUDA device and stream. GEMM is cuBLAS SGEMM on row-major
// data (computed as the column-major transpose, so no copies); every other op is one grid-stride
// kernel, launched on the stream and checked; the layer kernels are in cuda_layer_ops.cu. See
// cuda_ops.hpp for the contract.
#include "kernels/check.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/cublas_library.hpp"
#include "kernels/cuda/cuda_layer_ops.cuh"
#include "kernels/cuda/cuda_ops.hpp"
#include "kernels/preconditions.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace herd::kernels::cuda {

namespace {

constexpr int threads_per_block = 256; // a multiple of the warp size; block_reduce relies on it
constexpr int warp_size = 32;
constexpr int no_bad_row = INT_MAX;

// weighted_sum passes up to this many inputs to the kernel by value (no device-side array, so no
// copy and no synchronisation per call); more are summed in chunks of this size.
constexpr int inputs_per_launch = 16;

struct weighted_inputs {
  const float* inputs[inputs_per_launch];
  float weights[inputs_per_launch];
  int count;
};

// What the value-returning ops reduce into on the device, then copy back in one transfer.
struct reduction_scratch {
  double loss_sum;
  unsigned long long correct;
  int first_bad_row; // the lowest row whose label lies outside [0, classes); no_bad_row if none
};

// ---- kernels ------------------------------------------------------------------------------------

__device__ std::size_t global_thread() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ std::size_t grid_threads() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

__device__ bool label_valid(std::int32_t label, int classes) {
  return label >= 0 && label < classes;
}

struct max_op {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct sum_op {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Reduces one value per thread over the block; every thread gets the result. `shared` holds one
// float per warp. blockDim.x must be a multiple of 32.
template <class Op>
__device__ float block_reduce(float value, Op op, float identity, float* shared) {
  const unsigned lane = threadIdx.x % warp_size;
  const unsigned warp = threadIdx.x / warp_size;
  for (int offset = warp_size / 2; offset > 0; offset /= 2)
    value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
  if (lane == 0)
    shared[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < blockDim.x / warp_size ? shared[lane] : identity;
    for (int offset = warp_size / 2; offset > 0; offset /= 2)
      value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
    if (lane == 0)
      shared[0] = value;
  }
  __syncthreads();
  const float result = shared[0];
  __syncthreads(); // shared is reused by the next reduction
  return result;
}

__global__ void bias_add_kernel(float* y, const float* bias, std::size_t total, int cols) {
  for (std::size_t i = global_thread(); i < total; i += grid_threads())
    y[i] += bias[i % static_cast<std::size_t>(cols)];
}

// Block (32, 8): 32 adjacent columns per block, so the reads of one row are coalesced; the 8 rows
// of threads stride over the rows and their partial sums (in double, like the oracle) meet in
// shared memory.
constexpr int bias_grad_columns = 32;
constexpr int bias_grad_row_lanes = 8;

__global__ void bias_grad_kernel(const float* dy, float* bias_grad, int rows, int cols) {
  __shared__ double partial[bias_grad_row_lanes][bias_grad_columns];
  const int col = static_cast<int>(blockIdx.x) * bias_grad_columns + static_cast<int>(threadIdx.x);
  double sum = 0.0;
  if (col < cols)
    for (int r = static_cast<int>(threadIdx.y); r < rows; r += bias_grad_row_lanes)
      sum += static_cast<double>(dy[static_cast<std::size_t>(r) * cols + col]);
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    for (int lane = 1; lane < bias_grad_row_lanes; ++lane)
      sum += partial[lane][threadIdx.x];
    bias_grad[col] = static_cast<float>(sum);
  }
}

__global__ void relu_forward_kernel(const float* x, float* y, std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads())
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void fill_kernel(float* y, std::size_t n, float value) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads())
    y[i] = value;
}

__global__ void relu_backward_kernel(const float* y, const float* dy, float* dx, std::size_t n) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads())
    dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

// One block per row: max, sum of exp(x - max), probs, and -log p[label] = log(sum) - (x[label] -
// max), which never takes the log of an underflowed probability. Row losses meet in a double.
__global__ void softmax_xent_forward_kernel(const float* logits, const std::int32_t* labels,
                                            int classes, float* probs, reduction_scratch* scratch) {
  __shared__ float shared[threads_per_block / warp_size];
  const int row = static_cast<int>(blockIdx.x);
  const float* x = logits + static_cast<std::size_t>(row) * classes;
  float* p = probs + static_cast<std::size_t>(row) * classes;

  float row_max = -INFINITY;
  for (int c = static_cast<int>(threadIdx.x); c < classes; c += blockDim.x)
    row_max = fmaxf(row_max, x[c]);
  row_max = block_reduce(row_max, max_op{}, -INFINITY, shared);

  float sum = 0.0f;
  for (int c = static_cast<int>(threadIdx.x); c < classes; c += blockDim.x)
    sum += expf(x[c] - row_max);
  sum = block_reduce(sum, sum_op{}, 0.0f, shared);

  for (int c = static_cast<int>(threadIdx.x); c < classes; c += blockDim.x)
    p[c] = expf(x[c] - row_max) / sum;

  if (threadIdx.x == 0) {
    const std::int32_t label = labels[row];
    if (label_valid(label, classes)) {
      const double row_loss = static_cast<double>(logf(sum)) -
                              (static_cast<double>(x[label]) - static_cast<double>(row_max));
      atomicAdd(&scratch->loss_sum, row_loss);
    } else {
      atomicMin(&scratch->first_bad_row, row);
    }
  }
}

__global__ void softmax_xent_backward_kernel(const float* probs, const std::int32_t* labels,
                                             int classes, std::size_t total, double rows,
                                             float* dlogits) {
  for (std::size_t i = global_thread(); i < total; i += grid_threads()) {
    const std::size_t row = i / static_cast<std::size_t>(classes);
    const auto col = static_cast<std::int32_t>(i % static_cast<std::size_t>(classes));
    const double onehot = col == labels[row] ? 1.0 : 0.0;
    dlogits[i] = static_cast<float>((static_cast<double>(probs[i]) - onehot) / rows);
  }
}

// One thread per row, scanning left to right with `>`: the first maximum wins, as in the oracle.
__global__ void count_correct_kernel(const float* scores, const std::int32_t* labels, int rows,
                                     int classes, reduction_scratch* scratch) {
  for (std::size_t r = global_thread(); r < static_cast<std::size_t>(rows); r += grid_threads()) {
    const float* row = scores + r * static_cast<std::size_t>(classes);
    int best = 0;
    for (int c = 1; c < classes; ++c)
      if (row[c] > row[best])
        best = c;
    const std::int32_t label = labels[r];
    if (!label_valid(label, classes))
      atomicMin(&scratch->first_bad_row, static_cast<int>(r));
    else if (best == label)
      atomicAdd(&scratch->correct, 1ull);
  }
}

__global__ void reset_scratch_kernel(reduction_scratch* scratch) {
  scratch->loss_sum = 0.0;
  scratch->correct = 0;
  scratch->first_bad_row = no_bad_row;
}

// PyTorch's SGD, computed in double like the oracle (memory-bound, so the doubles cost nothing).
__global__ void sgd_step_kernel(float* params, const float* grads, float* velocity, std::size_t n,
                                sgd_hyper hyper) {
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    const double param = params[i];
    const double gradient =
        static_cast<double>(grads[i]) + static_cast<double>(hyper.weight_decay) * param;
    const double new_velocity =
        static_cast<double>(hyper.momentum) * static_cast<double>(velocity[i]) + gradient;
    velocity[i] = static_cast<float>(new_velocity);
    params[i] = static_cast<float>(param - static_cast<double>(hyper.learning_rate) * new_velocity);
  }
}

// AdamW as the reference computes it, in double; the bias corrections come from the host.
__global__ void adam_step_kernel(float* params, const float* grads, float* m, float* v,
                                 std::size_t n, adam_hyper hyper, double step_size,
                                 double second_scale) {
  const double beta1 = hyper.beta1, beta2 = hyper.beta2;
  const double decay =
      1.0 - static_cast<double>(hyper.learning_rate) * static_cast<double>(hyper.weight_decay);
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    const double gradient = grads[i];
    const double first = beta1 * static_cast<double>(m[i]) + (1.0 - beta1) * gradient;
    const double second = beta2 * static_cast<double>(v[i]) + (1.0 - beta2) * gradient * gradient;
    m[i] = static_cast<float>(first);
    v[i] = static_cast<float>(second);
    params[i] = static_cast<float>(static_cast<double>(params[i]) * decay -
                                   step_size * first /
                                       (sqrt(second) * second_scale + static_cast<double>(hyper.eps)));
  }
}

// out = (accumulate ? out : 0) + sum_j weights[j] * inputs[j]. The loop over j is unrolled with
// constant indices so the by-value pointers stay in parameter space (a dynamic index would copy
// the struct to local memory). out may alias inputs[0]: each element is read before it is written,
// by the same thread.
__device__ float weighted_element(const weighted_inputs& in, std::size_t i, float start) {
  float sum = start;
#pragma unroll
  for (int j = 0; j < inputs_per_launch; ++j)
    if (j < in.count)
      sum = fmaf(in.weights[j], in.inputs[j][i], sum);
  return sum;
}

__device__ float4 weighted_element4(const weighted_inputs& in, std::size_t i, float4 sum) {
#pragma unroll
  for (int j = 0; j < inputs_per_launch; ++j) {
    if (j < in.count) {
      const float4 x = reinterpret_cast<const float4*>(in.inputs[j])[i];
      const float w = in.weights[j];
      sum = make_float4(fmaf(w, x.x, sum.x), fmaf(w, x.y, sum.y), fmaf(w, x.z, sum.z),
                        fmaf(w, x.w, sum.w));
    }
  }
  return sum;
}

// With every pointer 16-byte aligned, four floats per load (what reaches the copy bandwidth); the
// n % 4 tail, or everything when misaligned, one float at a time.
template <bool vectorised>
__global__ void weighted_sum_kernel(float* out, weighted_inputs in, bool accumulate,
                                    std::size_t n) {
  std::size_t scalar_begin = 0;
  if constexpr (vectorised) {
    const std::size_t quads = n / 4;
    auto* out4 = reinterpret_cast<float4*>(out);
    for (std::size_t i = global_thread(); i < quads; i += grid_threads()) {
      const float4 start = accumulate ? out4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      out4[i] = weighted_element4(in, i, start);
    }
    scalar_begin = quads * 4;
  }
  for (std::size_t i = scalar_begin + global_thread(); i < n; i += grid_threads())
    out[i] = weighted_element(in, i, accumulate ? out[i] : 0.0f);
}

// ---- host side ----------------------------------------------------------------------------------

cublasOperation_t to_cublas(transpose trans) {
  return trans == transpose::no ? CUBLAS_OP_N : CUBLAS_OP_T;
}

bool aligned16(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % 16 == 0;
}

class cuda_implementation final : public cuda_layer_ops {
public:
  cuda_implementation(int device, void* stream) : device_(device), memory_(&device_memory(device)) {
    const device_scope scope(device_);
    try {
      if (stream == nullptr) {
        HERD_CUDA_CHECK(cudaStreamCreate(&stream_));
        owns_stream_ = true;
      } else {
        stream_ = static_cast<cudaStream_t>(stream);
      }
      HERD_CUDA_CHECK(
          cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, device_));
      cublas_ = &cublas(); // loaded now, by the first context
      HERD_CUBLAS_CHECK(cublas_->create(&blas_));
      HERD_CUBLAS_CHECK(cublas_->set_stream(blas_, stream_));
      // Plain FP32: no TF32 tensor cores and no emulation, so results match the CPU's to FP32
      // rounding (the tests hold GEMM to 1e-4 relative, which TF32 would miss).
      HERD_CUBLAS_CHECK(cublas_->set_math_mode(blas_, CUBLAS_DEFAULT_MATH));
      HERD_CUDA_CHECK(cudaMalloc(&scratch_, sizeof(reduction_scratch)));
    } catch (...) {
      release();
      throw;
    }
  }

  ~cuda_implementation() override {
    const quiet_device_scope scope(device_);
    release();
  }

  cuda_implementation(const cuda_implementation&) = delete;
  cuda_implementation& operator=(const cuda_implementation&) = delete;

  std::string_view name() const override { return "cuda"; }

  const kernels::memory& memory() const override { return *memory_; }

  void copy(float* destination, const float* source, std::size_t n) const override {
    HERD_CHECK(n == 0 || (destination != nullptr && source != nullptr),
               "copy of " << n << " floats with a null pointer");
    if (n == 0 || destination == source)
      return;
    const device_scope scope(device_);
    HERD_CUDA_CHECK(
        cudaMemcpyAsync(destination, source, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
  }

  void fill(float* destination, std::size_t n, float value) const override {
    HERD_CHECK(n == 0 || destination != nullptr, "fill of " << n << " floats at a null pointer");
    if (n == 0)
      return;
    const device_scope scope(device_);
    fill_kernel<<<blocks_for(n), threads_per_block, 0, stream_>>>(destination, n, value);
    HERD_CUDA_CHECK(cudaGetLastError());
  }

  // Waits for the copy: the host source may be pageable memory the caller reuses at once.
  void upload(void* destination, const void* host_source, std::size_t bytes) const override {
    HERD_CHECK(bytes == 0 || (destination != nullptr && host_source != nullptr),
               "upload of " << bytes << " bytes with a null pointer");
    if (bytes == 0)
      return;
    const device_scope scope(device_);
    HERD_CUDA_CHECK(
        cudaMemcpyAsync(destination, host_source, bytes, cudaMemcpyHostToDevice, stream_));
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void download(void* host_destination, const void* source, std::size_t bytes) const override {
    HERD_CHECK(bytes == 0 || (host_destination != nullptr && source != nullptr),
               "download of " << bytes << " bytes with a null pointer");
    if (bytes == 0)
      return;
    const device_scope scope(device_);
    HERD_CUDA_CHECK(
        cudaMemcpyAsync(host_destination, source, bytes, cudaMemcpyDeviceToHost, stream_));
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void synchronize() const override {
    const device_scope scope(device_);
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void gemm(transpose trans_a, transpose trans_b, int m, int n, int k, float alpha, const float* a,
            int lda, const float* b, int ldb, float beta, float* c, int ldc) const override {
    preconditions::gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
    const device_scope scope(device_);
    // Row-major C (m x n) is column-major C^T (n x m), and C^T = op(B)^T op(A)^T: so swap A and B
    // and m and n; each stored matrix read column-major is already its transpose, so the
    // transpose flags and leading dimensions carry over unchanged.
    HERD_CUBLAS_CHECK(cublas_->sgemm(blas_, to_cublas(trans_b), to_cublas(trans_a), n, m, k, &alpha,
                                     b, ldb, a, lda, &beta, c, ldc));
  }

  void gemm_batched(transpose trans_a, transpose trans_b, int m, int n, int k, float alpha,
                    const float* a, int lda, std::size_t stride_a, const float* b, int ldb,
                    std::size_t stride_b, float beta, float* c, int ldc, std::size_t stride_c,
                    int batch) const override {
    preconditions::gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc);
    HERD_CHECK_GT(batch, 0);
    const device_scope scope(device_);
    // As in gemm: A and B swap places (and so do their strides).
    HERD_CUBLAS_CHECK(cublas_->sgemm_strided_batched(
        blas_, to_cublas(trans_b), to_cublas(trans_a), n, m, k, &alpha, b, ldb,
        static_cast<long long>(stride_b), a, lda, static_cast<long long>(stride_a), &beta, c, ldc,
        static_cast<long long>(stride_c), batch));
  }

  // Each call costs a launch or more: a convolution's images go in chunks.
  int images_per_call() const override { return 64; }

  void bias_add(float* y, const float* bias, int rows, int cols) const override {
    preconditions::bias_add(y, bias, rows, cols);
    const device_scope scope(device_);
    const std::size_t total = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
    bias_add_kernel<<<blocks_for(total), threads_per_block, 0, stream_>>>(y, bias, total, cols);
    HERD_CUDA_CHECK(cudaGetLastError());
  }

  void bias_grad(const float* dy, float* bias_grad, int rows, int cols) const override {
    preconditions::bias_grad(dy, bias_grad, rows, cols);
    const device_scope scope(device_);
    const dim3 block(bias_grad_columns, bias_grad_row_lanes);
    const dim3 grid(static_cast<unsigned>((cols + bias_grad_columns - 1) / bias_grad_columns));
    bias_grad_kernel<<<grid, block, 0, stream_>>>(dy, bias_grad, rows, cols);
    HERD_CUDA_CHECK(cudaGetLastError());
  }

  void relu_forward(const float* x, float* y, std::size_t n) const override {
    preconditions::relu_forward(x, y, n);
    const device_scope scope(device_);
    relu_forward_kernel<<<blocks_for(n), threads_per_block, 0, stream_>>>(x, y, n);
    HERD_CUDA_CHECK(cudaGetLastError());
  }

  void relu_backward(const float* y, const float* dy, float* dx, std::size_t n) const override {
    preconditions::relu_backward(y, dy, dx, n);
    const device_scope scope(device_);
    relu_backward_kernel<<<blocks_for(n), threads_per_block, 0, stream_>>>(y, dy, dx, n);
    HERD_CUDA_CHECK(cudaGetLastError());
  }

  float softmax_xent_forward(const float* logits, const std::int32_t* labels, int rows, int classes,
                             float* probs) const override {
    preconditions::softmax_xent_forward(logits, labels, rows, classes, probs);
    const device_scope scope(device_);
    reset_scratch_kernel<<<1, 1, 0, stream_>>>(scratch_);
    HERD_CUDA_CHECK(cudaGetLastError());
    softmax_xent_forward_kernel<<<static_cast<unsigned>(rows), threads_per_block, 0, stream_>>>(
        logits, labels, classes, probs, scratch_);
    HERD_CUDA_CHECK(cudaGetLastError());
    const reduction_scratch result = read_scratch();
    check_labels(result, labels, classes);
    return static_cast<float>(result.loss_sum / rows);
  }

  void softmax_xent_backward(const float* probs, const std::int32_t* labels, int rows, int classes,
                             float* dlogits) const override {
    preconditions::softmax_xent_backward(probs, labels, rows, classes, dlogits);
    const device_scope scope(device_);
    const std::size_t total = static_cast<std::size_t>(rows) * static_cast<std::size_t>(classes);
    softmax_xent_backward_kernel<<<blocks_for(total), threads_per_block, 0, stream_>>>(
        probs, labels, classes, total, static_cast<double>(rows), dlogits);
    HERD_CUDA_CHECK(cudaGetLastError());
  }

  std::size_t count_correct(const float* scores, const std::int32_t* labels, int rows,
                            int classes) const override {
    preconditions::count_correct(scores, labels, rows, classes);
    const device_scope scope(device_);
    reset_scratch_kernel<<<1, 1, 0, stream_>>>(scratch_);
    HERD_CUDA_CHECK(cudaGetLastError());
    count_correct_kernel<<<blocks_for(static_cast<std::size_t>(rows)), threads_per_block, 0,
                           stream_>>>(scores, labels, rows, classes, scratch_);
    HERD_CUDA_CHECK(cudaGetLastError());
    const reduction_scratch result = read_scratch();
    check_labels(result, labels, classes);
    return static_cast<std::size_t>(result.correct);
  }

  void sgd_step(float* params, const float* grads, float* velocity, std::size_t n,
                const sgd_hyper& hyper) const override {
    preconditions::sgd_step(params, grads, velocity, n, hyper);
    const device_scope scope(device_);
    sgd_step_kernel<<<blocks_for(n), threads_per_block, 0, stream_>>>(params, grads, velocity, n,
                                                                      hyper);
    HERD_CUDA_CHECK(cudaGetLastError());
  }

  void adam_step(float* params, const float* grads, float* moments, std::size_t n,
                 const adam_hyper& hyper, std::uint64_t step) const override {
    preconditions::adam_step(params, grads, moments, n, hyper, step);
    const auto corrections = preconditions::adam_corrections_of(hyper, step);
    const device_scope scope(device_);
    adam_step_kernel<<<blocks_for(n), threads_per_block, 0, stream_>>>(
        params, grads, moments, moments + n, n, hyper, corrections.step_size,
        corrections.second_scale);
    HERD_CUDA_CHECK(cudaGetLastError());
  }

  void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                    std::size_t n) const override {
    preconditions::weighted_sum(out, inputs, weights, k, n);
    const device_scope scope(device_);
    // Chunks of inputs_per_launch: the first writes out, the rest add to it. out may alias
    // inputs[0] only, which the first chunk reads before anything is written.
    for (int first = 0; first < k; first += inputs_per_launch) {
      weighted_inputs chunk{};
      chunk.count = std::min(inputs_per_launch, k - first);
      bool vectorised = aligned16(out);
      for (int j = 0; j < chunk.count; ++j) {
        chunk.inputs[j] = inputs[first + j];
        chunk.weights[j] = weights[first + j];
        vectorised = vectorised && aligned16(chunk.inputs[j]);
      }
      const bool accumulate = first > 0;
      if (vectorised)
        weighted_sum_kernel<true>
            <<<blocks_for((n + 3) / 4), threads_per_block, 0, stream_>>>(out, chunk, accumulate, n);
      else
        weighted_sum_kernel<false>
            <<<blocks_for(n), threads_per_block, 0, stream_>>>(out, chunk, accumulate, n);
      HERD_CUDA_CHECK(cudaGetLastError());
    }
  }

protected:
  // The layer kernels' data checks share the label checks' scratch: every call resets what it
  // uses, and calls on one object do not overlap.
  launch_target target() const override {
    return {device_, stream_, multiprocessors_, &scratch_->first_bad_row};
  }

private:
  // Enough blocks to cover `work` one element per thread, capped at a few waves of resident
  // blocks; the grid-stride loops do the rest.
  unsigned blocks_for(std::size_t work) const {
    const std::size_t wanted = (work + threads_per_block - 1) / threads_per_block;
    const std::size_t cap = static_cast<std::size_t>(multiprocessors_) * 32;
    return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, cap)));
  }

  reduction_scratch read_scratch() const {
    reduction_scratch result{};
    HERD_CUDA_CHECK(
        cudaMemcpyAsync(&result, scratch_, sizeof result, cudaMemcpyDeviceToHost, stream_));
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return result;
  }

  // Throws the same std::invalid_argument as the CPU implementations, naming the first bad row.
  void check_labels(const reduction_scratch& result, const std::int32_t* labels,
                    int classes) const {
    if (result.first_bad_row == no_bad_row)
      return;
    std::int32_t label = 0;
    HERD_CUDA_CHECK(
        cudaMemcpy(&label, labels + result.first_bad_row, sizeof label, cudaMemcpyDeviceToHost));
    HERD_CHECK(label >= 0 && label < classes, "row " << result.first_bad_row << " has label "
                                                     << label << ", outside [0, " << classes
                                                     << ')');
  }

  void release() noexcept {
    if (scratch_ != nullptr)
      cudaFree(scratch_);
    if (blas_ != nullptr)
      cublas_->destroy(blas_);
    if (owns_stream_ && stream_ != nullptr)
      cudaStreamDestroy(stream_);
    scratch_ = nullptr;
    blas_ = nullptr;
    stream_ = nullptr;
  }

  int device_;
  const kernels::memory* memory_;
  cudaStream_t stream_ = nullptr;
  bool owns_stream_ = false;
  int multiprocessors_ = 1;
  const cublas_library* cublas_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  reduction_scratch* scratch_ = nullptr;
};

} // namespace

std::unique_ptr<ops> make_cuda_ops(int device, void* stream) {
  return std::make_unique<cuda_implementation>(device, stream); // device_memory() checks it
}

void load_weighted_sum_kernels(int device) {
  const device_scope scope(device);
  cudaFuncAttributes attributes{}; // asking for them loads the kernel
  HERD_CUDA_CHECK(cudaFuncGetAttributes(&attributes, weighted_sum_kernel<true>));
  HERD_CUDA_CHECK(cudaFuncGetAttributes(&attributes, weighted_sum_kernel<false>));
}

} // namespace herd::kernels::cuda
