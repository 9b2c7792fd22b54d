// Host memory, and the host defaults of kernels::ops' data movement; see memory.hpp and ops.hpp.
#include "herd/memory.hpp"

#include "herd/ops.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace herd::kernels {

namespace {

constexpr std::align_val_t host_alignment{64};

class host_memory_space final : public memory {
public:
  std::string_view name() const override { return "host"; }
  bool host_accessible() const override { return true; }
  void* allocate(std::size_t bytes) const override { return ::operator new(bytes, host_alignment); }
  void release(void* pointer) const noexcept override {
    if (pointer != nullptr)
      ::operator delete(pointer, host_alignment);
  }
  void copy(void* destination, const void* source, std::size_t bytes) const override {
    std::memmove(destination, source, bytes);
  }
  void upload(void* destination, const void* host_source, std::size_t bytes) const override {
    std::memmove(destination, host_source, bytes);
  }
  void download(void* host_destination, const void* source, std::size_t bytes) const override {
    std::memmove(host_destination, source, bytes);
  }
  void zero(void* destination, std::size_t bytes) const override {
    std::memset(destination, 0, bytes);
  }
};

} // namespace

const memory& host_memory() {
  // Never destroyed: a buffer released during static destruction still finds its memory.
  static const auto* host = new host_memory_space;
  return *host;
}

const memory& ops::memory() const {
  return host_memory();
}

void ops::copy(float* destination, const float* source, std::size_t n) const {
  if (n > 0 && destination != source)
    std::memmove(destination, source, n * sizeof(float));
}

void ops::upload(void* destination, const void* host_source, std::size_t bytes) const {
  if (bytes > 0 && destination != host_source)
    std::memmove(destination, host_source, bytes);
}

void ops::fill(float* destination, std::size_t n, float value) const {
  std::fill_n(destination, n, value);
}

void ops::download(void* host_destination, const void* source, std::size_t bytes) const {
  if (bytes > 0 && host_destination != source)
    std::memmove(host_destination, source, bytes);
}

void ops::synchronize() const {}

void ops::gemm_batched(transpose trans_a, transpose trans_b, int m, int n, int k, float alpha,
                       const float* a, int lda, std::size_t stride_a, const float* b, int ldb,
                       std::size_t stride_b, float beta, float* c, int ldc, std::size_t stride_c,
                       int batch) const {
  for (int i = 0; i < batch; ++i) {
    const auto at = static_cast<std::size_t>(i);
    gemm(trans_a, trans_b, m, n, k, alpha, a + at * stride_a, lda, b + at * stride_b, ldb, beta,
         c + at * stride_c, ldc);
  }
}

} // namespace herd::kernels
