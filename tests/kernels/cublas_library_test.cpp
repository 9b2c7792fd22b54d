// cuBLAS is loaded by the first CUDA context, not when a program starts: a program that links
// herd::kernels (every herd command, libherd.so) maps no libcublas until cublas() is called, and
// then has every function Herd calls. Runs without a GPU: loading the library needs no device.
#include "kernels/cuda/cublas_library.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <string>

namespace {

// Whether this process has a file named libcublas* mapped.
bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("/libcublas") != std::string::npos)
      return true;
  return false;
}

TEST(cublas_library, is_loaded_by_the_first_call_not_at_start_up) {
  ASSERT_FALSE(cublas_mapped()) << "libcublas was mapped before cublas() was called: something "
                                   "links it again, and every program pays for it at start-up";
  const auto& library = herd::kernels::cuda::cublas();
  EXPECT_TRUE(cublas_mapped());
  EXPECT_EQ(&library, &herd::kernels::cuda::cublas()) << "loaded once";
  for (const void* function : {reinterpret_cast<const void*>(library.create),
                               reinterpret_cast<const void*>(library.destroy),
                               reinterpret_cast<const void*>(library.set_stream),
                               reinterpret_cast<const void*>(library.set_math_mode),
                               reinterpret_cast<const void*>(library.sgemm),
                               reinterpret_cast<const void*>(library.sgemm_strided_batched),
                               reinterpret_cast<const void*>(library.status_name),
                               reinterpret_cast<const void*>(library.status_string)})
    EXPECT_NE(function, nullptr);
  // The functions are the library's: its own names for its statuses.
  EXPECT_STREQ(library.status_name(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_STRNE(library.status_string(CUBLAS_STATUS_INVALID_VALUE), "");
}

} // namespace
