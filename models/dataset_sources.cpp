// In-memory and callback dataset sources; see dataset_sources.hpp.
#include "herd/dataset_sources.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace herd::models {

namespace {

std::string shape_words(const std::vector<std::size_t>& shape) {
  std::string text;
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i > 0 ? "x" : "") + std::to_string(shape[i]);
  return text;
}

// The floats in one sample; refuses shapes no model can take.
std::size_t checked_sample_elements(const std::vector<std::size_t>& sample_shape,
                                    const std::string& name) {
  if (sample_shape.empty())
    throw std::invalid_argument(name + ": the sample shape is empty; give one dimension per axis, "
                                       "e.g. {20} for vectors of 20 floats");
  std::size_t product = 1;
  for (std::size_t axis = 0; axis < sample_shape.size(); ++axis) {
    const std::size_t size = sample_shape[axis];
    if (size == 0)
      throw std::invalid_argument(name + ": dimension " + std::to_string(axis + 1) +
                                  " of the sample shape " + shape_words(sample_shape) + " is 0");
    if (product > std::numeric_limits<std::size_t>::max() / size)
      throw std::invalid_argument(name + ": the sample shape " + shape_words(sample_shape) +
                                  " holds more floats than memory can address");
    product *= size;
  }
  return product;
}

void check_classes(int classes, const std::string& name) {
  if (classes < 1)
    throw std::invalid_argument(name + ": classes = " + std::to_string(classes) +
                                "; a classification needs at least one class");
}

void check_label(std::int32_t label, std::size_t index, int classes, const std::string& name) {
  if (label < 0 || label >= classes)
    throw std::invalid_argument(name + ": sample " + std::to_string(index) + " has label " +
                                std::to_string(label) + ", outside [0, " + std::to_string(classes) +
                                ") for " + std::to_string(classes) + " classes");
}

// A NaN or an infinity poisons every gradient it reaches, and from there every replica's
// parameters; it is far easier to find here, with its position, than after a run diverged.
void check_finite(const float* sample, std::size_t elements, std::size_t index,
                  const std::string& name) {
  for (std::size_t i = 0; i < elements; ++i)
    if (!std::isfinite(sample[i]))
      throw std::invalid_argument(name + ": sample " + std::to_string(index) + ", value " +
                                  std::to_string(i) + " is " +
                                  (std::isnan(sample[i]) ? "NaN" : "infinite") +
                                  "; every feature must be a finite number");
}

dataset empty_dataset(std::size_t count, std::size_t elements,
                      const std::vector<std::size_t>& sample_shape, int classes,
                      const std::string& name) {
  dataset data;
  data.images = tensor({count, elements});
  data.labels.resize(count);
  data.classes = classes;
  data.name = name;
  // A flat shape stays empty: dataset::input_shape() gives {features()} for it, as for .npy data.
  if (sample_shape.size() > 1)
    data.sample_shape = sample_shape;
  return data;
}

// Token texts: each one's span within the tokens, in order.
void check_offsets(const dataset& data) {
  const auto& name = data.name;
  if (data.offsets.size() != data.size() + 1)
    throw std::invalid_argument(name + ": " + std::to_string(data.offsets.size()) +
                                " text offsets for " + std::to_string(data.size()) +
                                " labels; expected one more offset than labels");
  if (data.max_length == 0)
    throw std::invalid_argument(name + ": max_length = 0; a text model reads at least one token");
  if (data.offsets.front() != 0)
    throw std::invalid_argument(name + ": the first text starts at token " +
                                std::to_string(data.offsets.front()) + ", not 0");
  for (std::size_t i = 0; i < data.size(); ++i)
    if (data.offsets[i + 1] < data.offsets[i] || data.offsets[i + 1] > data.tokens.size())
      throw std::invalid_argument(name + ": text " + std::to_string(i) + " ends at token " +
                                  std::to_string(data.offsets[i + 1]) + ", outside [" +
                                  std::to_string(data.offsets[i]) + ", " +
                                  std::to_string(data.tokens.size()) + "]");
}

// Dense rows: one per label, each as wide as the sample shape says.
void check_rows(const dataset& data) {
  const auto& name = data.name;
  if (data.images.rank() != 2)
    throw std::invalid_argument(name + ": the features are a tensor of rank " +
                                std::to_string(data.images.rank()) +
                                "; a dataset holds them as rows (samples) x features");
  if (data.images.rows() != data.size())
    throw std::invalid_argument(name + ": " + std::to_string(data.images.rows()) +
                                " rows of features for " + std::to_string(data.size()) +
                                " labels; expected one row per label");
  if (data.images.cols() == 0)
    throw std::invalid_argument(name + ": the samples have no features");
  if (!data.sample_shape.empty()) {
    const std::size_t elements = checked_sample_elements(data.sample_shape, name);
    if (elements != data.images.cols())
      throw std::invalid_argument(name + ": the sample shape " + shape_words(data.sample_shape) +
                                  " holds " + std::to_string(elements) +
                                  " floats, but the rows have " +
                                  std::to_string(data.images.cols()));
  }
}

} // namespace

void check_dataset(const dataset& data) {
  if (data.size() == 0)
    return;
  check_classes(data.classes, data.name);
  if (data.ragged())
    check_offsets(data);
  else
    check_rows(data);
  for (std::size_t i = 0; i < data.size(); ++i) {
    check_label(data.labels[i], i, data.classes, data.name);
    if (!data.ragged() && data.images.on_host())
      check_finite(data.images.row(i), data.images.cols(), i, data.name);
  }
}

dataset dataset_from_memory(const std::vector<float>& features,
                            const std::vector<std::int32_t>& labels,
                            const std::vector<std::size_t>& sample_shape, int classes,
                            const std::string& name) {
  const std::size_t elements = checked_sample_elements(sample_shape, name);
  check_classes(classes, name);
  const std::size_t count = labels.size();
  if (count == 0)
    throw std::invalid_argument(name + ": no samples (the labels are empty)");
  if (features.size() / elements != count || features.size() % elements != 0)
    throw std::invalid_argument(
        name + ": " + std::to_string(features.size()) + " feature values for " +
        std::to_string(count) + " labels of samples of shape " + shape_words(sample_shape) +
        "; expected " + std::to_string(count) + " x " + std::to_string(elements) + " = " +
        std::to_string(count * elements));
  for (std::size_t i = 0; i < count; ++i) {
    check_label(labels[i], i, classes, name);
    check_finite(features.data() + i * elements, elements, i, name);
  }
  dataset data = empty_dataset(count, elements, sample_shape, classes, name);
  std::copy(features.begin(), features.end(), data.images.data());
  data.labels = labels;
  return data;
}

dataset dataset_from_source(std::size_t count, const std::vector<std::size_t>& sample_shape,
                            int classes, const sample_source& fill, const std::string& name,
                            std::uint64_t max_bytes) {
  const std::size_t elements = checked_sample_elements(sample_shape, name);
  check_classes(classes, name);
  if (count == 0)
    throw std::invalid_argument(name + ": no samples (count = 0)");
  if (!fill)
    throw std::invalid_argument(name + ": no function to fill the samples with");
  // Checked before the allocation, so a count off by orders of magnitude is a message, not an
  // out-of-memory kill halfway through.
  const std::uint64_t limit = max_bytes == 0 ? default_max_data_bytes() : max_bytes;
  const std::uint64_t per_sample = static_cast<std::uint64_t>(elements) * sizeof(float) +
                                   sizeof(std::int32_t);
  if (count > limit / per_sample)
    throw std::invalid_argument(name + ": " + std::to_string(count) + " samples of shape " +
                                shape_words(sample_shape) + " would take " +
                                std::to_string(count) + " x " + std::to_string(per_sample) +
                                " bytes, more than the limit of " + std::to_string(limit) +
                                " bytes");
  dataset data = empty_dataset(count, elements, sample_shape, classes, name);
  for (std::size_t i = 0; i < count; ++i) {
    float* sample = data.images.row(i);
    const std::int32_t label = fill(i, sample);
    check_label(label, i, classes, name);
    check_finite(sample, elements, i, name);
    data.labels[i] = label;
  }
  return data;
}

} // namespace herd::models
