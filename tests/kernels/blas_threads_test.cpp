// set_blas_threads / blas_threads: the process-wide OpenBLAS thread count that workers lower to 1.
#include "herd/ops.hpp"

#include <cblas.h>
#include <gtest/gtest.h>
#include <stdexcept>

namespace herd::kernels {
namespace {

// The count is process-wide, so every test puts back what it found.
class blas_threads_test : public ::testing::Test {
protected:
  void TearDown() override { set_blas_threads(threads_before_); }

private:
  int threads_before_ = blas_threads();
};

TEST_F(blas_threads_test, reports_the_count_last_set) {
  set_blas_threads(1);
  EXPECT_EQ(blas_threads(), 1);
  set_blas_threads(2);
  EXPECT_EQ(blas_threads(), 2);
}

TEST_F(blas_threads_test, zero_restores_one_thread_per_core) {
  set_blas_threads(1);
  set_blas_threads(0);
  EXPECT_EQ(blas_threads(), openblas_get_num_procs());
}

TEST_F(blas_threads_test, rejects_a_negative_count) {
  EXPECT_THROW(set_blas_threads(-1), std::invalid_argument);
}

} // namespace
} // namespace herd::kernels
