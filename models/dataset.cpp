// Builds normalised in-memory datasets: from IDX arrays (Fashion-MNIST), or synthetic Gaussian
// clusters for tests that must not depend on installed data.
#include "herd/dataset.hpp"

#include "kernels/check.hpp"
#include "kernels/machine.hpp"
#include "models/sampler.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <new>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace herd::models {

namespace {

constexpr std::size_t fashion_mnist_side = 28;
constexpr int fashion_mnist_classes = 10;

std::uint64_t product(const std::vector<std::uint32_t>& dims, std::size_t first) {
  return std::accumulate(dims.begin() + static_cast<std::ptrdiff_t>(first), dims.end(),
                         std::uint64_t{1}, std::multiplies<>{});
}

std::string dims_string(const std::vector<std::uint32_t>& dims) {
  std::string text;
  for (std::size_t i = 0; i < dims.size(); ++i)
    text += (i ? " x " : "") + std::to_string(dims[i]);
  return text;
}

// read_idx guarantees this; a hand-built array that breaks it is the caller's bug.
void check_consistent(const idx_array& array, const char* what) {
  HERD_CHECK(!array.dims.empty() && product(array.dims, 0) == array.values.size(),
             what << " has dims [" << dims_string(array.dims) << "] but " << array.values.size()
                  << " values");
}

// The normal distribution from the raw 64-bit outputs of std::mt19937_64 (whose sequence the
// standard fixes) by Box-Muller, because std::normal_distribution's algorithm differs between
// standard libraries and every node must generate the same synthetic data from the same seed.
class portable_normal {
public:
  explicit portable_normal(std::uint64_t seed) : engine_(seed) {}

  double operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    // Top 53 bits as a double in (0, 1]: never 0, so the logarithm is finite.
    const double uniform_radius = static_cast<double>((engine_() >> 11) + 1) * 0x1.0p-53;
    const double uniform_angle = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    const double radius = std::sqrt(-2.0 * std::log(uniform_radius));
    const double angle = 2.0 * 3.14159265358979323846 * uniform_angle;
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

private:
  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// Within-class noise per feature, relative to the unit-scale spread of the class centres, is
// noise_per_root_feature * sqrt(features). Two centres lie about sqrt(2 * features) apart, so the
// classes overlap equally in any dimension: a nearest-centre classifier errs on about 0.2% of
// pairs, hard enough that loss and accuracy stay informative, easy enough for quick tests.
constexpr double noise_per_root_feature = 0.25;

std::filesystem::path find_fashion_mnist_file(const std::filesystem::path& dir,
                                              const std::string& stem) {
  std::error_code ignored;
  for (const std::string& name : {stem + ".gz", stem}) {
    std::filesystem::path candidate = dir / name;
    if (std::filesystem::exists(candidate, ignored))
      return candidate;
  }
  return {};
}

[[noreturn]] void fashion_mnist_not_found(const std::string& dir, const std::string& problem,
                                         const std::vector<std::string>& stems) {
  std::string holding;
  for (std::size_t i = 0; i < stems.size(); ++i)
    holding += (i == 0 ? "" : i + 1 == stems.size() ? " and " : ", ") + stems[i] + "[.gz]";
  throw data_error("Fashion-MNIST not found in " + dir + ": " + problem +
                   "; install it with `apt-get install dataset-fashion-mnist` or set data.path "
                   "to a directory holding " +
                   holding);
}

void check_fashion_mnist_images(const std::vector<std::uint32_t>& dims, const std::string& path) {
  if (dims.size() != 3 || dims[1] != fashion_mnist_side || dims[2] != fashion_mnist_side)
    throw data_error(path +
                     ": expected Fashion-MNIST images of 28 x 28 pixels (n x 28 x 28), but "
                     "the file holds " +
                     dims_string(dims));
}

// The memory the files would take once loaded, from their headers, against the limit: the
// file whose values cross it is named. Nothing has been allocated for the values yet.
void check_memory_budget(const std::vector<std::string>& paths,
                         const std::vector<idx_header>& headers, std::uint64_t max_bytes,
                         bool default_limit) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::uint64_t bytes = headers[i].values * loaded_bytes_per_value;
    total += bytes;
    if (total <= max_bytes)
      continue;
    const std::string earlier =
        total > bytes ? " (" + std::to_string(total) + " with the files before it)" : "";
    const auto& dims = headers[i].dims;
    throw data_error(paths[i] + ": the header says " + dims_string(dims) +
                     (dims.size() > 1 ? " = " + std::to_string(headers[i].values) : "") +
                     " values, " + std::to_string(bytes) + " bytes of memory once loaded" +
                     earlier + ", more than data.max-bytes = " + std::to_string(max_bytes) +
                     (default_limit ? " (half the physical memory)" : "") +
                     "; raise data.max-bytes if the file is right");
  }
}

} // namespace

normalisation pixel_statistics(const idx_array& images, const std::vector<bool>* excluded) {
  check_consistent(images, "the image array");
  const std::size_t count_of_images = images.dims.empty() ? 0 : images.dims[0];
  if (excluded != nullptr && excluded->size() != count_of_images)
    throw std::invalid_argument("pixel_statistics: " + std::to_string(excluded->size()) +
                                " flags for " + std::to_string(count_of_images) + " images");
  // A histogram of the 256 byte values makes the sums exact and the pass one cheap load per
  // pixel; mean and variance then come from 256 terms in double precision.
  std::array<std::uint64_t, 256> histogram{};
  const std::size_t per_image = count_of_images == 0 ? 0 : images.values.size() / count_of_images;
  std::uint64_t counted = 0;
  for (std::size_t image = 0; image < count_of_images; ++image) {
    if (excluded != nullptr && (*excluded)[image])
      continue;
    const auto* first = images.values.data() + image * per_image;
    for (const auto* value = first; value != first + per_image; ++value)
      ++histogram[*value];
    counted += per_image;
  }
  const auto count = static_cast<double>(counted);
  double sum = 0.0;
  for (std::size_t value = 0; value < histogram.size(); ++value)
    sum += static_cast<double>(histogram[value]) * (static_cast<double>(value) / 255.0);
  const double mean = sum / count;
  double squared_deviations = 0.0;
  for (std::size_t value = 0; value < histogram.size(); ++value) {
    const double deviation = static_cast<double>(value) / 255.0 - mean;
    squared_deviations += static_cast<double>(histogram[value]) * deviation * deviation;
  }
  const double stddev = std::sqrt(squared_deviations / count);
  normalisation result;
  result.mean = static_cast<float>(mean);
  // Images that are all one value have no spread to divide by; they stay merely centred.
  result.stddev = stddev > 1e-6 ? static_cast<float>(stddev) : 1.0f;
  return result;
}

dataset renormalised(const dataset& set, const normalisation& to) {
  const normalisation& from = set.input_normalisation;
  if (!from.scaled_bytes || set.ragged())
    throw std::invalid_argument("renormalised: the set \"" + set.name +
                                "\" was not made from bytes");
  std::array<float, 256> table{};
  for (std::size_t value = 0; value < table.size(); ++value)
    table[value] = to.apply(static_cast<float>(value) / 255.0f);
  dataset result = set;
  result.input_normalisation = to;
  result.input_normalisation.scaled_bytes = true;
  float* values = result.images.data();
  for (std::size_t i = 0; i < result.images.size(); ++i) {
    const double byte = (static_cast<double>(values[i]) * from.stddev + from.mean) * 255.0;
    const double nearest = std::round(byte);
    if (!(nearest >= 0.0 && nearest <= 255.0 && std::abs(byte - nearest) < 0.01))
      throw std::invalid_argument("renormalised: value " + std::to_string(values[i]) + " of \"" +
                                  set.name + "\" is not a normalised byte");
    values[i] = table[static_cast<std::size_t>(nearest)];
  }
  return result;
}

dataset make_dataset(const idx_array& images, const idx_array& labels, int classes,
                     const normalisation& norm, const std::string& name,
                     const std::string& images_path, const std::string& labels_path) {
  HERD_CHECK_GT(classes, 0);
  HERD_CHECK(norm.stddev > 0.0f && std::isfinite(norm.stddev) && std::isfinite(norm.mean),
             "normalisation mean " << norm.mean << ", stddev " << norm.stddev);
  check_consistent(images, "the image array");
  check_consistent(labels, "the label array");

  if (images.dims.size() < 2)
    throw data_error(images_path +
                     ": expected images (at least 2 dimensions: count x pixels), "
                     "but the file holds a 1-dimensional array of " +
                     dims_string(images.dims) + " values");
  if (labels.dims.size() != 1)
    throw data_error(labels_path +
                     ": expected a 1-dimensional array of labels, but the file holds " +
                     dims_string(labels.dims));
  const std::size_t count = images.dims[0];
  if (labels.dims[0] != count)
    throw data_error(images_path + " has " + std::to_string(count) + " images but " + labels_path +
                     " has " + std::to_string(labels.dims[0]) + " labels");

  dataset result;
  result.classes = classes;
  result.name = name;
  result.input_normalisation = norm;
  result.input_normalisation.scaled_bytes = true; // IDX images are bytes
  result.labels.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t label = labels.values[i];
    if (label >= classes)
      throw data_error(labels_path + ": label " + std::to_string(label) + " at index " +
                       std::to_string(i) + " is out of range (expected below " +
                       std::to_string(classes) + " classes)");
    result.labels[i] = label;
  }

  // Every pixel is one of 256 bytes, so the normalised values are looked up, not computed.
  std::array<float, 256> normalised{};
  for (std::size_t value = 0; value < normalised.size(); ++value)
    normalised[value] = norm.apply(static_cast<float>(value) / 255.0f);
  const auto features = static_cast<std::size_t>(product(images.dims, 1));
  result.images = tensor({count, features});
  if (images.dims.size() == 3)
    result.sample_shape = {1, images.dims[1], images.dims[2]};
  else
    result.sample_shape.assign(images.dims.begin() + 1, images.dims.end());
  float* destination = result.images.data();
  for (std::size_t i = 0; i < images.values.size(); ++i)
    destination[i] = normalised[images.values[i]];
  return result;
}

std::uint64_t default_max_data_bytes() {
  std::uint64_t memory = kernels::this_process_memory().usable();
  if (memory == 0)
    memory = std::uint64_t{8} << 30; // unknown: assume a small machine
  return memory / 2;
}

namespace {

// Fashion-MNIST's files `stems` (images and labels, in pairs) in `dir`: their paths, and their
// headers, read and checked (28 x 28 images, the memory within data.max-bytes) before a byte of
// their values is.
struct idx_files {
  std::vector<std::string> paths;
  std::vector<idx_header> headers;
};

idx_files open_fashion_mnist(const std::string& dir, const std::vector<std::string>& stems,
                             std::uint64_t max_bytes) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error))
    fashion_mnist_not_found(dir,
                            std::filesystem::exists(dir, error)
                                ? "it is a file, not a directory (data.path names the directory "
                                  "that holds the IDX files)"
                                : "there is no such directory",
                            stems);
  idx_files files;
  std::string missing;
  for (const auto& stem : stems) {
    files.paths.push_back(find_fashion_mnist_file(dir, stem).string());
    if (files.paths.back().empty())
      missing += (missing.empty() ? "" : ", ") + stem + "[.gz]";
  }
  if (!missing.empty())
    fashion_mnist_not_found(dir, "missing " + missing, stems);
  for (std::size_t i = 0; i < files.paths.size(); ++i) {
    files.headers.push_back(read_idx_header(files.paths[i]));
    if (i % 2 == 0)
      check_fashion_mnist_images(files.headers[i].dims, files.paths[i]);
  }
  check_memory_budget(files.paths, files.headers,
                      max_bytes != 0 ? max_bytes : default_max_data_bytes(), max_bytes == 0);
  return files;
}

// Each file may hold no more than its header said a moment ago.
idx_array read_fashion_mnist(const idx_files& files, std::size_t index) {
  auto array = read_idx(files.paths[index], files.headers[index].values);
  if (index % 2 == 0)
    check_fashion_mnist_images(array.dims, files.paths[index]);
  return array;
}

[[noreturn]] void out_of_memory(const std::string& dir) {
  throw data_error("Fashion-MNIST in " + dir +
                   ": out of memory while loading it; free memory, or lower data.max-bytes to "
                   "refuse such a dataset up front");
}

} // namespace

dataset load_fashion_mnist_test(const std::string& dir, std::uint64_t max_bytes,
                                const normalisation& norm) {
  const auto files =
      open_fashion_mnist(dir, {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}, max_bytes);
  try {
    return make_dataset(read_fashion_mnist(files, 0), read_fashion_mnist(files, 1),
                        fashion_mnist_classes, norm, "fashion-mnist/test", files.paths[0],
                        files.paths[1]);
  } catch (const std::bad_alloc&) {
    out_of_memory(dir);
  }
}

train_test_split load_fashion_mnist(const std::string& dir, std::uint64_t max_bytes) {
  return load_fashion_mnist(dir, max_bytes, 0.0, 0);
}

train_test_split load_fashion_mnist(const std::string& dir, std::uint64_t max_bytes,
                                    double validation_fraction, std::uint64_t seed) {
  const auto files = open_fashion_mnist(dir,
                                        {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"},
                                        max_bytes);
  try {
    const idx_array train_images = read_fashion_mnist(files, 0);
    const idx_array test_images = read_fashion_mnist(files, 2);
    // Every set is normalised with the statistics of the images trained on, as a model trained on
    // them is evaluated on the others; the validation set's own images take no part in them.
    const idx_array train_labels = read_fashion_mnist(files, 1);
    const bool labels_known =
        std::all_of(train_labels.values.begin(), train_labels.values.end(), [](std::uint8_t label) {
          return label < fashion_mnist_classes;
        }); // else make_dataset says which is not
    std::vector<bool> held;
    if (validation_fraction > 0.0 && validation_fraction < 1.0 && labels_known &&
        train_labels.values.size() == train_images.dims[0])
      held = validation_choice(
          std::vector<std::int32_t>(train_labels.values.begin(), train_labels.values.end()),
          fashion_mnist_classes, validation_fraction, seed);
    // Where every image would be held out, hold_out_validation says so below.
    const bool some_kept = std::find(held.begin(), held.end(), false) != held.end();
    const normalisation norm = pixel_statistics(train_images, some_kept ? &held : nullptr);
    train_test_split split;
    split.train = make_dataset(train_images, train_labels, fashion_mnist_classes, norm,
                               "fashion-mnist/train", files.paths[0], files.paths[1]);
    split.test = make_dataset(test_images, read_fashion_mnist(files, 3), fashion_mnist_classes,
                              norm, "fashion-mnist/test", files.paths[2], files.paths[3]);
    if (validation_fraction > 0.0) // the samples `held` chose
      hold_out_validation(split, validation_fraction, seed);
    return split;
  } catch (const std::bad_alloc&) {
    out_of_memory(dir);
  }
}

namespace {

// Per-class centres with components ~ N(0, 1), drawn from `seed`.
std::vector<double> synthetic_centres(std::size_t features, std::size_t classes,
                                      std::uint64_t seed) {
  portable_normal normal(seed);
  std::vector<double> centres(classes * features);
  for (double& component : centres)
    component = normal();
  return centres;
}

// n samples around the centres, noise drawn from `sample_seed`; labels cycle through the classes.
dataset synthetic_samples(const std::vector<double>& centres, std::size_t n, std::size_t features,
                          std::size_t classes, std::uint64_t sample_seed, std::string name) {
  portable_normal normal(sample_seed);
  // Centre components and noise are independent with variances 1 and noise^2; dividing by the
  // total spread leaves every feature with mean 0 and variance 1, like the normalised images.
  const double noise = noise_per_root_feature * std::sqrt(static_cast<double>(features));
  const double scale = 1.0 / std::sqrt(1.0 + noise * noise);
  dataset result;
  result.classes = static_cast<int>(classes);
  result.name = std::move(name);
  result.images = tensor({n, features});
  result.labels.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t label = i % classes;
    result.labels[i] = static_cast<std::int32_t>(label);
    const double* centre = centres.data() + label * features;
    float* sample = result.images.row(i);
    for (std::size_t feature = 0; feature < features; ++feature)
      sample[feature] = static_cast<float>((centre[feature] + noise * normal()) * scale);
  }
  return result;
}

// Sample noise comes from a stream other than the centres'.
constexpr std::uint64_t sample_stream = 0x73616d706c6573ull; // "samples"

} // namespace

dataset make_synthetic_dataset(std::size_t n, int features, int classes, std::uint64_t seed) {
  HERD_CHECK_GT(n, std::size_t{0});
  HERD_CHECK_GT(features, 0);
  HERD_CHECK_GT(classes, 0);
  const auto feature_count = static_cast<std::size_t>(features);
  const auto class_count = static_cast<std::size_t>(classes);
  return synthetic_samples(synthetic_centres(feature_count, class_count, seed), n, feature_count,
                           class_count, seed ^ sample_stream, "synthetic");
}

train_test_split make_synthetic_split(std::size_t train_samples, std::size_t test_samples,
                                      int features, int classes, std::uint64_t seed) {
  HERD_CHECK_GT(train_samples, std::size_t{0});
  HERD_CHECK_GT(test_samples, std::size_t{0});
  HERD_CHECK_GT(features, 0);
  HERD_CHECK_GT(classes, 0);
  const auto feature_count = static_cast<std::size_t>(features);
  const auto class_count = static_cast<std::size_t>(classes);
  const auto centres = synthetic_centres(feature_count, class_count, seed);
  train_test_split split;
  split.train = synthetic_samples(centres, train_samples, feature_count, class_count,
                                  seed ^ sample_stream, "synthetic/train");
  split.test = synthetic_samples(centres, test_samples, feature_count, class_count,
                                 (seed ^ sample_stream) + 1, "synthetic/test");
  return split;
}

void gather_rows(const dataset& data, const std::size_t* indices, std::size_t count, tensor& x) {
  if (!data.ragged()) {
    const std::size_t features = data.features();
    x.reshape({count, features});
    for (std::size_t row = 0; row < count; ++row)
      std::memcpy(x.row(row), data.images.row(indices[row]), features * sizeof(float));
    return;
  }
  HERD_CHECK_GT(data.max_length, std::size_t{0});
  std::size_t longest = 1;
  for (std::size_t row = 0; row < count; ++row)
    longest = std::max(longest, std::min(data.length(indices[row]), data.max_length));
  x.reshape({count, longest});
  for (std::size_t row = 0; row < count; ++row) {
    const std::size_t sample = indices[row];
    const std::size_t length = std::min(data.length(sample), data.max_length);
    const std::uint8_t* text = data.tokens.data() + data.offsets[sample];
    float* out = x.row(row);
    for (std::size_t step = 0; step < length; ++step)
      out[step] = static_cast<float>(text[step]);
    std::fill(out + length, out + longest, -1.0f);
  }
}

dataset subset(const dataset& data, const std::vector<std::size_t>& rows) {
  dataset result;
  result.classes = data.classes;
  result.name = data.name;
  result.sample_shape = data.sample_shape;
  result.input_normalisation = data.input_normalisation;
  result.max_length = data.max_length;
  for (std::size_t row : rows)
    result.labels.push_back(data.labels.at(row));
  if (data.ragged()) {
    result.offsets.push_back(0);
    for (std::size_t row : rows) {
      const auto first = data.tokens.begin() + static_cast<std::ptrdiff_t>(data.offsets[row]);
      result.tokens.insert(result.tokens.end(), first,
                           first + static_cast<std::ptrdiff_t>(data.length(row)));
      result.offsets.push_back(result.tokens.size());
    }
    return result;
  }
  if (rows.empty())
    return result;
  const std::size_t features = data.features();
  result.images = tensor({rows.size(), features});
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::memcpy(result.images.row(r), data.images.row(rows[r]), features * sizeof(float));
  return result;
}

std::vector<bool> validation_choice(const std::vector<std::int32_t>& labels, int classes,
                                    double fraction, std::uint64_t seed) {
  // Its own stream: the validation set must not be the samples a shard or a shuffle seeded with
  // train.seed comes to first.
  constexpr std::uint64_t validation_stream = 0x76616c6964617465; // "validate"
  return stratified_test_choice(labels, classes, fraction, seed ^ validation_stream);
}

void hold_out_validation(train_test_split& split, double fraction, std::uint64_t seed) {
  std::ostringstream share;
  share << fraction;
  if (!(fraction > 0.0 && fraction < 1.0))
    throw std::invalid_argument("hold_out_validation: a fraction of " + share.str() +
                                " of the training set; it must lie between 0 and 1");
  if (split.validation.size() != 0)
    throw std::invalid_argument("hold_out_validation: the split already has a validation set");
  auto& train = split.train;
  const auto held = validation_choice(train.labels, train.classes, fraction, seed);
  std::vector<std::size_t> kept_rows;
  std::vector<std::size_t> held_rows;
  for (std::size_t row = 0; row < held.size(); ++row)
    (held[row] ? held_rows : kept_rows).push_back(row);
  const std::string where = "data.validation-fraction = " + share.str() + " of the " +
                            std::to_string(train.size()) + " training samples" +
                            (train.name.empty() ? "" : " of " + train.name);
  if (held_rows.empty())
    throw data_error(where + " holds out no sample (each class's share rounds to 0); raise it");
  if (kept_rows.empty())
    throw data_error(where + " holds out every sample, leaving none to train on; lower it");
  split.validation = subset(train, held_rows);
  split.validation.name = train.name.empty() ? "validation" : train.name + "/validation";
  train = subset(train, kept_rows);
}

} // namespace herd::models
