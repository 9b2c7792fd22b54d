// A float32 tensor: a shape and one contiguous row-major buffer. Models keep all parameters (and
// all gradients) in one tensor each, so a reduction is always over one buffer.
#pragma once

#include "herd/memory.hpp"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace herd::models {

/// The buffer lives in a kernels::memory: host memory by default, or a GPU's (then data() is a
/// device pointer, for kernels::ops of that device, and element access from the CPU is refused).
class tensor {
public:
  tensor() = default;
  /// An empty tensor whose buffers will live in `where`.
  explicit tensor(const kernels::memory& where) : storage_(0, where) {}
  /// A zero-filled tensor of the given shape. Every dimension must be positive.
  explicit tensor(std::vector<std::size_t> shape,
                  const kernels::memory& where = kernels::host_memory());
  tensor(std::initializer_list<std::size_t> shape) : tensor(std::vector<std::size_t>(shape)) {}
  /// A copy of `other` (its shape and contents) in `where`.
  tensor(const tensor& other, const kernels::memory& where);

  /// A copy lives in the same memory as the original; an assignment copies into the memory the
  /// assigned tensor lives in (as an allocator-aware container keeps its allocator).
  tensor(const tensor& other) : tensor(other, other.where()) {}
  tensor& operator=(const tensor& other);
  tensor(tensor&&) noexcept = default;
  tensor& operator=(tensor&&) noexcept = default;
  ~tensor() = default;

  const kernels::memory& where() const { return storage_.where(); }
  bool on_host() const { return where().host_accessible(); }

  const std::vector<std::size_t>& shape() const { return shape_; }
  std::size_t rank() const { return shape_.size(); }
  std::size_t dim(std::size_t axis) const;
  std::size_t size() const { return storage_.size(); }
  bool empty() const { return storage_.empty(); }

  /// For a rank-2 tensor: dim(0) and dim(1). Rank-1 tensors are one row.
  std::size_t rows() const;
  std::size_t cols() const;

  /// The buffer, in where() (a device pointer for a GPU's memory).
  float* data() { return storage_.data(); }
  const float* data() const { return storage_.data(); }
  /// Element and row access from the CPU: host tensors only (std::logic_error otherwise).
  float& operator[](std::size_t i) { return host_data()[i]; }
  float operator[](std::size_t i) const { return host_data()[i]; }
  float* row(std::size_t r) { return host_data() + r * cols(); }
  const float* row(std::size_t r) const { return host_data() + r * cols(); }

  /// Changes the shape; keeps the buffer's capacity, so a per-batch resize does not allocate once
  /// the largest batch has been seen. New elements are zero.
  void reshape(std::vector<std::size_t> shape);
  /// Host tensors only.
  void fill(float value);

  /// The contents, copied to the host.
  std::vector<float> to_host() const { return storage_.to_host(); }

  /// "[32, 784]"
  std::string shape_string() const;

private:
  void require_host() const;
  float* host_data() {
    require_host();
    return storage_.data();
  }
  const float* host_data() const {
    require_host();
    return storage_.data();
  }

  std::vector<std::size_t> shape_;
  kernels::buffer<float> storage_;
};

/// Largest |a_i - b_i| / max(|a|_inf, |b|_inf, tiny): the relative difference of two host buffers.
double relative_difference(const float* a, const float* b, std::size_t n);

} // namespace herd::models
