// cublas(): dlopen and dlsym, once (cublas_library.hpp).
#include "kernels/cuda/cublas_library.hpp"

#include <dlfcn.h>
#include <mutex>
#include <stdexcept>
#include <string>

// HERD_CUBLAS_SONAME ("libcublas.so.13") and HERD_CUBLAS_DIR (the toolkit's library folder) come
// from the build.
#ifndef HERD_CUBLAS_SONAME
#error "HERD_CUBLAS_SONAME must name cuBLAS's shared library (kernels/CMakeLists.txt sets it)"
#endif

// The name a function has in the library: cublas_v2.h's macro expanded first.
#define HERD_CUBLAS_NAME(function) HERD_CUBLAS_QUOTE(function)
#define HERD_CUBLAS_QUOTE(text) #text

namespace herd::kernels::cuda {

namespace {

void* open_library(std::string& failures) {
  const std::string candidates[] = {
      HERD_CUBLAS_SONAME,
#ifdef HERD_CUBLAS_DIR
      std::string(HERD_CUBLAS_DIR) + "/" + HERD_CUBLAS_SONAME,
#endif
  };
  for (const auto& candidate : candidates) {
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL))
      return handle;
    const char* why = dlerror();
    failures += std::string(failures.empty() ? "" : "; ") + (why != nullptr ? why : candidate);
  }
  return nullptr;
}

template <class Function>
void find(void* library, const char* name, Function& into, std::string& missing) {
  into = reinterpret_cast<Function>(dlsym(library, name));
  if (into == nullptr)
    missing += std::string(missing.empty() ? "" : ", ") + name;
}

cublas_library load() {
  std::string failures;
  void* library = open_library(failures);
  if (library == nullptr)
    throw std::runtime_error("the CUDA backend needs cuBLAS (" HERD_CUBLAS_SONAME
                             "), which could not be loaded: " +
                             failures +
                             "; install the CUDA toolkit's libraries, or add their folder to "
                             "LD_LIBRARY_PATH");
  cublas_library functions;
  std::string missing;
  find(library, HERD_CUBLAS_NAME(cublasCreate), functions.create, missing);
  find(library, HERD_CUBLAS_NAME(cublasDestroy), functions.destroy, missing);
  find(library, HERD_CUBLAS_NAME(cublasSetStream), functions.set_stream, missing);
  find(library, HERD_CUBLAS_NAME(cublasSetMathMode), functions.set_math_mode, missing);
  find(library, HERD_CUBLAS_NAME(cublasSgemm), functions.sgemm, missing);
  find(library, HERD_CUBLAS_NAME(cublasSgemmStridedBatched), functions.sgemm_strided_batched,
       missing);
  find(library, HERD_CUBLAS_NAME(cublasGetStatusName), functions.status_name, missing);
  find(library, HERD_CUBLAS_NAME(cublasGetStatusString), functions.status_string, missing);
  if (!missing.empty()) {
    dlclose(library);
    throw std::runtime_error("the cuBLAS library " HERD_CUBLAS_SONAME " lacks " + missing +
                             ": it is not the version Herd was built with");
  }
  return functions; // never closed: contexts may use it until the program ends
}

} // namespace

const cublas_library& cublas() {
  static std::mutex loading;
  static cublas_library loaded;
  static bool done = false;
  const std::lock_guard<std::mutex> lock(loading);
  if (!done) {
    loaded = load(); // throws, and the next call tries again
    done = true;
  }
  return loaded;
}

} // namespace herd::kernels::cuda
