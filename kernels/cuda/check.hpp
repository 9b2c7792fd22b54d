// The checking macros for the CUDA runtime and cuBLAS, in the style of kernels/check.hpp (and
// NCCL's CUDACHECK): a failed call throws std::runtime_error naming the file, the line, the call's
// text and the library's error name and words. Only .cu/.cpp files that call CUDA include this
// (kernels/cuda, comm/nccl_device.cpp and nccl_plane.cpp, bench_cuda): it brings the CUDA headers.
#pragma once

#include "kernels/cuda/cublas_library.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <sstream>
#include <stdexcept>
#include <string>

namespace herd::detail {

[[noreturn]] inline void cuda_call_failed(const char* file, int line, const char* call,
                                          cudaError_t status) {
  // Clears a non-sticky error, so that the next, unrelated call does not report this one again.
  cudaGetLastError();
  std::ostringstream out;
  out << file << ':' << line << ": " << call << " failed with CUDA error "
      << static_cast<int>(status) << ' ' << cudaGetErrorName(status) << " ("
      << cudaGetErrorString(status) << ')';
  throw std::runtime_error(out.str());
}

[[noreturn]] inline void cublas_call_failed(const char* file, int line, const char* call,
                                            cublasStatus_t status) {
  std::ostringstream out;
  out << file << ':' << line << ": " << call << " failed with cuBLAS status "
      << static_cast<int>(status) << ' ' << kernels::cuda::cublas().status_name(status) << " ("
      << kernels::cuda::cublas().status_string(status) << ')';
  throw std::runtime_error(out.str());
}

} // namespace herd::detail

/// HERD_CUDA_CHECK(cudaMalloc(&p, bytes)): throws std::runtime_error unless the call succeeds.
#define HERD_CUDA_CHECK(call)                                                                      \
  do {                                                                                             \
    const cudaError_t herd_cuda_status_ = (call);                                                  \
    if (herd_cuda_status_ != cudaSuccess)                                                          \
      ::herd::detail::cuda_call_failed(__FILE__, __LINE__, #call, herd_cuda_status_);              \
  } while (false)

/// HERD_CUBLAS_CHECK(cublasCreate(&handle)): throws std::runtime_error unless the call succeeds.
#define HERD_CUBLAS_CHECK(call)                                                                    \
  do {                                                                                             \
    const cublasStatus_t herd_cublas_status_ = (call);                                             \
    if (herd_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                              \
      ::herd::detail::cublas_call_failed(__FILE__, __LINE__, #call, herd_cublas_status_);          \
  } while (false)

namespace herd::kernels::cuda {

/// Makes `device` current for a scope on the calling thread and restores the caller's device
/// afterwards; throws (HERD_CUDA_CHECK) when it cannot switch.
class device_scope {
public:
  explicit device_scope(int device) : device_(device) {
    HERD_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device_)
      HERD_CUDA_CHECK(cudaSetDevice(device_));
  }
  ~device_scope() {
    if (previous_ != device_)
      (void)cudaSetDevice(previous_); // a destructor must not throw
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

private:
  int device_;
  int previous_ = 0;
};

/// The same for destructors and release paths: switches when it can, never throws (a sticky
/// error from an earlier launch may make cudaGetDevice fail there).
class quiet_device_scope {
public:
  explicit quiet_device_scope(int device) noexcept {
    switched_ = cudaGetDevice(&previous_) == cudaSuccess && previous_ != device &&
                cudaSetDevice(device) == cudaSuccess;
  }
  ~quiet_device_scope() {
    if (switched_)
      (void)cudaSetDevice(previous_);
  }
  quiet_device_scope(const quiet_device_scope&) = delete;
  quiet_device_scope& operator=(const quiet_device_scope&) = delete;

private:
  int previous_ = 0;
  bool switched_ = false;
};

} // namespace herd::kernels::cuda
