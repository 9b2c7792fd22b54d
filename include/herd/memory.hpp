// Where buffers live: host memory, or one CUDA device's memory. A tensor, a round's result buffer
// or a worker's labels hold a `memory` and allocate through it, so the code above the kernels
// (models, the data plane, the worker) is the same whether it runs on the CPU or on a GPU.
//
// A memory is a process-wide object that lives as long as the program (host_memory(),
// kernels::cuda::device_memory(d)); buffers may therefore outlive any ops object. Its copies are
// synchronous and device-wide: meant for allocation, setup and checks. The ordered, per-stream
// copies of a training loop are kernels::ops::copy/upload/download.
// No CUDA headers here.
#pragma once

#include <cstddef>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace herd::kernels {

class memory {
public:
  virtual ~memory() = default;

  /// "host", "cuda:0".
  virtual std::string_view name() const = 0;
  /// Whether the CPU may read and write these buffers directly.
  virtual bool host_accessible() const = 0;

  /// `bytes` (> 0) of uninitialised memory, aligned for any float vector load; throws
  /// std::bad_alloc (host) or std::runtime_error (device) when there is not enough.
  virtual void* allocate(std::size_t bytes) const = 0;
  /// Frees what allocate() returned; null is ignored. Never throws.
  virtual void release(void* pointer) const noexcept = 0;

  /// Synchronous copies, complete when they return: within this memory, from the host into it,
  /// and out of it to the host. A device memory waits for all work on the device first.
  virtual void copy(void* destination, const void* source, std::size_t bytes) const = 0;
  virtual void upload(void* destination, const void* host_source, std::size_t bytes) const = 0;
  virtual void download(void* host_destination, const void* source, std::size_t bytes) const = 0;
  /// Sets `bytes` to zero, synchronously.
  virtual void zero(void* destination, std::size_t bytes) const = 0;
};

/// Ordinary process memory (64-byte aligned). Its copies are memcpy.
const memory& host_memory();

/// An owned array of `size()` T in one memory (host by default). Move-only; resize() does not
/// keep the contents.
template <class T>
class buffer {
  static_assert(std::is_trivially_copyable_v<T>, "buffers hold trivially copyable data");

public:
  buffer() = default;
  explicit buffer(std::size_t size, const memory& where = host_memory()) : memory_(&where) {
    resize(size);
  }
  ~buffer() { memory_->release(data_); }

  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  buffer(buffer&& other) noexcept
      : memory_(other.memory_), data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)), capacity_(std::exchange(other.capacity_, 0)) {}
  buffer& operator=(buffer&& other) noexcept {
    if (this != &other) {
      memory_->release(data_);
      memory_ = other.memory_;
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }

  /// `size` elements with unspecified contents; keeps the allocation when it is large enough.
  void resize(std::size_t size) {
    if (size > capacity_) {
      memory_->release(data_);
      data_ = nullptr;
      size_ = 0;
      capacity_ = 0;
      data_ = static_cast<T*>(memory_->allocate(size * sizeof(T)));
      capacity_ = size;
    }
    size_ = size;
  }

  /// Copies `values` in (synchronously), resizing to fit.
  void assign(const std::vector<T>& values) {
    resize(values.size());
    if (size_ > 0)
      memory_->upload(data_, values.data(), size_ * sizeof(T));
  }

  /// The contents, copied out to the host (synchronously).
  std::vector<T> to_host() const {
    std::vector<T> values(size_);
    if (size_ > 0)
      memory_->download(values.data(), data_, size_ * sizeof(T));
    return values;
  }

  const memory& where() const { return *memory_; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }

private:
  const memory* memory_ = &host_memory();
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

} // namespace herd::kernels
