// A float32 tensor; see tensor.hpp.
#include "herd/tensor.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace herd::models {

namespace {

std::size_t element_count(const std::vector<std::size_t>& shape) {
  for (std::size_t extent : shape)
    HERD_CHECK(extent > 0, "tensor dimensions must be positive");
  return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>{});
}

} // namespace

tensor::tensor(std::vector<std::size_t> shape, const kernels::memory& where)
    : shape_(std::move(shape)), storage_(element_count(shape_), where) {
  if (!storage_.empty())
    where.zero(storage_.data(), storage_.size() * sizeof(float));
}

tensor::tensor(const tensor& other, const kernels::memory& where)
    : shape_(other.shape_), storage_(other.size(), where) {
  const std::size_t bytes = other.size() * sizeof(float);
  if (bytes == 0)
    return;
  const kernels::memory& from = other.where();
  if (&from == &where)
    where.copy(storage_.data(), other.data(), bytes);
  else if (from.host_accessible())
    where.upload(storage_.data(), other.data(), bytes);
  else if (where.host_accessible())
    from.download(storage_.data(), other.data(), bytes);
  else // between two devices: through the host
    where.upload(storage_.data(), other.to_host().data(), bytes);
}

tensor& tensor::operator=(const tensor& other) {
  if (this != &other)
    *this = tensor(other, where());
  return *this;
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

void tensor::require_host() const {
  if (!on_host())
    throw std::logic_error("element access from the CPU to a tensor of shape " + shape_string() +
                           " in " + std::string(where().name()) + " memory");
}

void tensor::reshape(std::vector<std::size_t> shape) {
  const std::size_t old_size = storage_.size();
  const std::size_t new_size = element_count(shape);
  const kernels::memory& where = storage_.where();
  if (new_size > storage_.capacity()) { // a larger allocation that keeps the contents
    kernels::buffer<float> grown(new_size, where);
    if (old_size > 0)
      where.copy(grown.data(), storage_.data(), old_size * sizeof(float));
    storage_ = std::move(grown);
  } else {
    storage_.resize(new_size);
  }
  if (new_size > old_size)
    where.zero(storage_.data() + old_size, (new_size - old_size) * sizeof(float));
  shape_ = std::move(shape);
}

void tensor::fill(float value) {
  float* values = host_data();
  std::fill(values, values + size(), value);
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
