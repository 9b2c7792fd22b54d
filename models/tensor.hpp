// A float32 tensor: a shape and one contiguous row-major buffer. Models keep all parameters (and
// all gradients) in one tensor each, so a reduction is always over one buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace herd::models {

class tensor {
public:
  tensor() = default;
  /// A zero-filled tensor of the given shape. Every dimension must be positive.
  explicit tensor(std::vector<std::size_t> shape);
  tensor(std::initializer_list<std::size_t> shape) : tensor(std::vector<std::size_t>(shape)) {}

  const std::vector<std::size_t>& shape() const { return shape_; }
  std::size_t rank() const { return shape_.size(); }
  std::size_t dim(std::size_t axis) const;
  std::size_t size() const { return data_.size(); }
  bool empty() const { return data_.empty(); }

  /// For a rank-2 tensor: dim(0) and dim(1). Rank-1 tensors are one row.
  std::size_t rows() const;
  std::size_t cols() const;

  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  float& operator[](std::size_t i) { return data_[i]; }
  float operator[](std::size_t i) const { return data_[i]; }
  float* row(std::size_t r) { return data_.data() + r * cols(); }
  const float* row(std::size_t r) const { return data_.data() + r * cols(); }

  /// Changes the shape; keeps the buffer's capacity, so a per-batch resize does not allocate once
  /// the largest batch has been seen. New elements are zero.
  void reshape(std::vector<std::size_t> shape);
  void fill(float value);

  /// "[32, 784]"
  std::string shape_string() const;

private:
  std::vector<std::size_t> shape_;
  std::vector<float> data_;
};

/// Largest |a_i - b_i| / max(|a|_inf, |b|_inf, tiny): the relative difference of two buffers.
double relative_difference(const float* a, const float* b, std::size_t n);

} // namespace herd::models
