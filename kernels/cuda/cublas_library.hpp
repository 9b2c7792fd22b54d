// cuBLAS, loaded when the first CUDA context asks for it rather than when a program starts.
// Linked like the other libraries, libcublas brings libcublasLt (540 MB), whose initialisers ran
// before main in every herd command and every test, on machines without a GPU too: 0.4 s and
// 210 MB each time. Herd calls eight of its functions; they are looked up here once.
#pragma once

#include <cublas_v2.h>

namespace herd::kernels::cuda {

/// The functions Herd calls, as the library defines them (cublas_v2.h maps cublasCreate to
/// cublasCreate_v2 and so on; the pointers have those functions' types).
struct cublas_library {
  decltype(&::cublasCreate) create = nullptr;
  decltype(&::cublasDestroy) destroy = nullptr;
  decltype(&::cublasSetStream) set_stream = nullptr;
  decltype(&::cublasSetMathMode) set_math_mode = nullptr;
  decltype(&::cublasSgemm) sgemm = nullptr;
  decltype(&::cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&::cublasGetStatusName) status_name = nullptr;
  decltype(&::cublasGetStatusString) status_string = nullptr;
};

/// Loads cuBLAS on the first call (by its name, so LD_LIBRARY_PATH and the program's run path
/// count, then from the toolkit Herd was built with) and returns the same functions on every
/// later call, from any thread. Throws std::runtime_error naming the library and the loader's
/// reason when it cannot be loaded or lacks one of the functions; a later call tries again.
const cublas_library& cublas();

} // namespace herd::kernels::cuda
