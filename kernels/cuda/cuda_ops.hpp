// The CUDA implementation of kernels::ops: cuBLAS SGEMM (plain FP32, TF32 off) and one grid-stride
// kernel per elementwise op, bound to one device and one stream. No CUDA headers here, so plain C++
// may create one; in a CPU-only build make_cuda_ops() throws "built without CUDA".
#pragma once

#include "herd/ops.hpp"
#include "kernels/cuda/device.hpp"

#include <memory>

namespace herd::kernels::cuda {

/// An ops object on `device` whose work runs on `stream` (a cudaStream_t; nullptr = a stream the
/// object creates and owns), with its own cuBLAS handle bound to that stream in CUBLAS_DEFAULT_MATH
/// (no TF32: results are plain FP32, comparable with the CPU implementations). name() is "cuda".
///
/// Contract, beyond include/herd/ops.hpp:
/// - Every matrix, vector and label pointer is DEVICE memory on `device` (see device_buffer.hpp).
///   The one exception is weighted_sum: `inputs` and `weights` are HOST arrays of k entries that
///   describe the call (read before it returns); the k buffers they point to, and `out`, are device
///   memory.
/// - Calls are asynchronous on the stream, except the two that return a value:
///   softmax_xent_forward (the mean loss) and count_correct (the count) synchronise the stream.
/// - Sizes and null pointers are checked on the host (std::invalid_argument). Labels are checked on
///   the device by softmax_xent_forward and count_correct, which throw std::invalid_argument after
///   the synchronisation (probs is then unspecified); softmax_xent_backward cannot report without
///   synchronising, so there a label outside [0, classes) is the caller's broken contract: it reads
///   nothing out of bounds, and the row's gradient is probs / rows.
/// - Layer kernels: sequence_tokens checks the token batch, embedding_forward the token ids and
///   unfold1d the sequence lengths on the device, and all three synchronise the stream to throw
///   std::invalid_argument (their output is then unspecified). The other layer kernels cannot report without synchronising, so there bad
///   data is the caller's broken contract: ids outside [0, vocab) are skipped, lengths are clamped
///   into their range and an argmax that names no element matches nothing, so nothing is read or
///   written out of bounds, but the result is unspecified. embedding_backward adds with atomicAdd,
///   so a repeated id sums in an order that may change from run to run; every other kernel gives
///   the same bits on every run.
/// - A failed CUDA or cuBLAS call throws std::runtime_error (kernels/cuda/check.hpp). A kernel
/// fault
///   surfaces at the next call that synchronises.
/// - memory() is device_memory(device). copy() is queued on the stream; upload() and download()
///   wait for the stream (so they are complete when they return); synchronize() waits for it.
/// - Not thread-safe, with one exception: weighted_sum, copy and synchronize may be called from
///   several threads at once (they use nothing but the stream), which the local data plane's
///   concurrent reductions need. Otherwise one object per worker (per stream). Calls switch the
///   calling thread to `device` for their duration and restore the previous device.
///
/// Throws std::runtime_error when the device cannot be used (no driver, no device, built without
/// CUDA) and std::invalid_argument for a device index past the last device.
std::unique_ptr<ops> make_cuda_ops(int device = 0, void* stream = nullptr);

/// Loads weighted_sum's kernels on `device` now. CUDA loads a kernel at its first launch, and the
/// load may wait for every stream of the device: a data plane whose first reduction could be
/// queued while another of its streams waits on a stalled peer loads them when it is made.
void load_weighted_sum_kernels(int device);

/// The memory of CUDA device `device` (include/herd/memory.hpp; name "cuda:N", not host-accessible):
/// where a cuda ops object's operands live. Process-wide, made on first use. Throws like
/// make_cuda_ops() when the device cannot be used.
const memory& device_memory(int device = 0);

/// Whether query_devices() lists at least one device (false in a CPU-only build).
inline bool cuda_device_available() {
  return !query_devices().devices.empty();
}

} // namespace herd::kernels::cuda
