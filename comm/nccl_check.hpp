// The checking macros for NCCL, in the style of kernels/cuda/check.hpp (one macro per C API, as
// NCCL's own NCCLCHECK): a failed call throws std::runtime_error naming the file, the line, the
// call's text, NCCL's words for the result and ncclGetLastError(). Only comm's NCCL source includes
// this (it includes nccl.h); CUDA runtime calls next to NCCL's use HERD_CUDA_CHECK from
// kernels/cuda/check.hpp, included here.
#pragma once

#include "kernels/cuda/check.hpp"

#include <nccl.h>
#include <sstream>
#include <stdexcept>
#include <string>

namespace herd::detail {

/// NCCL's words for `result`, and the last error it logged (ncclGetLastError, which NCCL keeps
/// for the process; `comm` is passed as the API asks, it may be null).
inline std::string nccl_words(ncclResult_t result, ncclComm_t comm) {
  std::string words = ncclGetErrorString(result);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0')
    words += std::string(" (last NCCL error: ") + last + ")";
  return words;
}

[[noreturn]] inline void nccl_call_failed(const char* file, int line, const char* call,
                                          ncclResult_t result, ncclComm_t comm) {
  std::ostringstream out;
  out << file << ':' << line << ": " << call << " failed with NCCL error "
      << static_cast<int>(result) << ' ' << nccl_words(result, comm);
  throw std::runtime_error(out.str());
}

/// For calls on a non-blocking communicator, which may return ncclInProgress (the operation goes
/// on in the background; poll ncclCommGetAsyncError until it says ncclSuccess).
inline ncclResult_t nccl_call_started(ncclResult_t result, const char* file, int line,
                                      const char* call, ncclComm_t comm) {
  if (result != ncclSuccess && result != ncclInProgress)
    nccl_call_failed(file, line, call, result, comm);
  return result;
}

} // namespace herd::detail

/// HERD_NCCL_CHECK(ncclCommDestroy(comm), comm): throws std::runtime_error unless ncclSuccess.
#define HERD_NCCL_CHECK(call, comm)                                                                \
  do {                                                                                             \
    const ncclResult_t herd_nccl_result_ = (call);                                                 \
    if (herd_nccl_result_ != ncclSuccess)                                                          \
      ::herd::detail::nccl_call_failed(__FILE__, __LINE__, #call, herd_nccl_result_, (comm));      \
  } while (false)

/// HERD_NCCL_START(ncclGroupEnd(), comm): ncclSuccess or ncclInProgress (returned); throws
/// std::runtime_error for anything else.
#define HERD_NCCL_START(call, comm)                                                                \
  ::herd::detail::nccl_call_started((call), __FILE__, __LINE__, #call, (comm))
