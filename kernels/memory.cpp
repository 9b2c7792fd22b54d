// Host memory, and the host defaults of kernels::ops' data movement; see memory.hpp and ops.hpp.
#include "herd/memory.hpp"

#include "herd/ops.hpp"

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

void ops::download(void* host_destination, const void* source, std::size_t bytes) const {
  if (bytes > 0 && host_destination != source)
    std::memmove(host_destination, source, bytes);
}

void ops::synchronize() const {}

} // namespace herd::kernels
