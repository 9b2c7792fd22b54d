// device_buffer<T>: an owned array in CUDA device memory, for tests, benchmarks and callers of
// make_cuda_ops(). No CUDA headers here; the raw calls live in device_buffer.cu (or throw "built
// without CUDA" in a CPU-only build, see cuda_unavailable.cpp).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace herd::kernels::cuda {

namespace detail {

/// cudaMalloc on the current device; every call checked (std::runtime_error on failure).
void* device_allocate(std::size_t bytes);
/// cudaFree; never throws (used by destructors).
void device_release(void* pointer) noexcept;
/// Synchronous copies: both wait for the whole device first and after, so they are ordered after
/// any kernel launched on any stream and complete when they return.
void copy_host_to_device(void* device_destination, const void* host_source, std::size_t bytes);
void copy_device_to_host(void* host_destination, const void* device_source, std::size_t bytes);

} // namespace detail

/// Owns `size()` elements of T in device memory of the device current when it was allocated.
/// Move-only. upload() and download() are synchronous (see detail::copy_*), meant for setup and
/// checks, not for a training loop's hot path.
template <class T>
class device_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "device memory holds trivially copyable data");

public:
  device_buffer() = default;
  explicit device_buffer(std::size_t size) { allocate(size); }
  explicit device_buffer(const std::vector<T>& values) { upload(values); }
  ~device_buffer() { detail::device_release(data_); }

  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  /// Leaves `other` empty (size 0, data null).
  device_buffer(device_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      detail::device_release(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  /// Replaces the contents by `size` uninitialised elements (size 0 frees the memory).
  void allocate(std::size_t size) {
    detail::device_release(data_);
    data_ = nullptr;
    size_ = 0;
    if (size > 0)
      data_ = static_cast<T*>(detail::device_allocate(size * sizeof(T)));
    size_ = size;
  }

  /// Copies `values` to the device, reallocating when the size differs.
  void upload(const std::vector<T>& values) {
    if (values.size() != size_)
      allocate(values.size());
    if (size_ > 0)
      detail::copy_host_to_device(data_, values.data(), size_ * sizeof(T));
  }

  /// The contents, copied back to the host.
  std::vector<T> download() const {
    std::vector<T> values(size_);
    if (size_ > 0)
      detail::copy_device_to_host(values.data(), data_, size_ * sizeof(T));
    return values;
  }

  std::size_t size() const { return size_; }
  T* data() { return data_; }
  const T* data() const { return data_; }

private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

} // namespace herd::kernels::cuda
