// A float32 tensor; see tensor.hpp.
#include "models/tensor.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>

namespace herd::models {

namespace {

std::size_t element_count(const std::vector<std::size_t>& shape) {
  for (std::size_t extent : shape)
    HERD_CHECK(extent > 0, "tensor dimensions must be positive");
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>{});
}

} // namespace

tensor::tensor(std::vector<std::size_t> shape) : shape_(std::move(shape)) {
  data_.assign(element_count(shape_), 0.0f);
}

std::size_t tensor::dim(std::size_t axis) const {
  HERD_CHECK_LT(axis, shape_.size());
  return shape_[axis];
}

std::size_t tensor::rows() const {
  HERD_CHECK(rank() == 1 || rank() == 2, "rows() of a tensor of shape " << shape_string());
  return rank() == 1 ? 1 : shape_[0];
}

std::size_t tensor::cols() const {
  HERD_CHECK(rank() == 1 || rank() == 2, "cols() of a tensor of shape " << shape_string());
  return shape_.back();
}

void tensor::reshape(std::vector<std::size_t> shape) {
  data_.resize(element_count(shape), 0.0f);
  shape_ = std::move(shape);
}

void tensor::fill(float value) {
  std::fill(data_.begin(), data_.end(), value);
}

std::string tensor::shape_string() const {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape_.size(); ++i)
    out << (i ? ", " : "") << shape_[i];
  out << ']';
  return out.str();
}

double relative_difference(const float* a, const float* b, std::size_t n) {
  double max_abs = 1e-30;
  double max_diff = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    max_abs = std::max({max_abs, std::fabs(double{a[i]}), std::fabs(double{b[i]})});
    max_diff = std::max(max_diff, std::fabs(double{a[i]} - double{b[i]}));
  }
  return max_diff / max_abs;
}

} // namespace herd::models
