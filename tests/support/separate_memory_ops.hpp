// A memory the CPU must not touch directly, and ops over it: the GPU path of the code above the
// kernels (staging batches, uploading labels, downloading snapshots, settling streams) run on
// the CPU, with every transfer counted. The bytes are host bytes underneath, so the kernels are
// cpu_ops() and results can be compared bit for bit with a plain CPU run.
#pragma once

#include "herd/memory.hpp"

#include <atomic>
#include <cstring>
#include <new>

#include "support/delegating_ops.hpp"

namespace herd::testing {

struct transfer_counts {
  std::atomic<std::size_t> uploads{0};
  std::atomic<std::size_t> downloads{0};
  std::atomic<std::size_t> copies{0};
  std::atomic<std::size_t> synchronizations{0};
};

class separate_memory final : public kernels::memory {
public:
  std::string_view name() const override { return "separate"; }
  bool host_accessible() const override { return false; }
  void* allocate(std::size_t bytes) const override {
    return ::operator new (bytes, std::align_val_t{64});
  }
  void release(void* pointer) const noexcept override {
    if (pointer != nullptr)
      ::operator delete (pointer, std::align_val_t{64});
  }
  void copy(void* destination, const void* source, std::size_t bytes) const override {
    ++counts.copies;
    std::memmove(destination, source, bytes);
  }
  void upload(void* destination, const void* host_source, std::size_t bytes) const override {
    ++counts.uploads;
    std::memmove(destination, host_source, bytes);
  }
  void download(void* host_destination, const void* source, std::size_t bytes) const override {
    ++counts.downloads;
    std::memmove(host_destination, source, bytes);
  }
  void zero(void* destination, std::size_t bytes) const override {
    std::memset(destination, 0, bytes);
  }

  mutable transfer_counts counts;
};

/// cpu_ops() kernels on a separate_memory; its ordered transfers count into the same counters.
class separate_memory_ops final : public delegating_ops {
public:
  explicit separate_memory_ops(const separate_memory& where) : memory_(where) {}
  std::string_view name() const override { return "separate"; }
  const kernels::memory& memory() const override { return memory_; }
  void copy(float* destination, const float* source, std::size_t n) const override {
    memory_.copy(destination, source, n * sizeof(float));
  }
  void upload(void* destination, const void* host_source, std::size_t bytes) const override {
    memory_.upload(destination, host_source, bytes);
  }
  void download(void* host_destination, const void* source, std::size_t bytes) const override {
    memory_.download(host_destination, source, bytes);
  }
  void synchronize() const override { ++memory_.counts.synchronizations; }

private:
  const separate_memory& memory_;
};

} // namespace herd::testing
