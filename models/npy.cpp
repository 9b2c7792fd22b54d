// The .npy reader: a strict parser of the header's dict literal (only what np.save writes), the
// declared size checked against the file before any allocation, and values converted chunk by
// chunk into the float features and int32 labels a dataset holds.
#include "models/npy.hpp"

#include "kernels/check.hpp"
#include "models/data_files.hpp"
#include "models/npy_dict.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <unistd.h>

namespace herd::models {

namespace {

constexpr std::array<unsigned char, 6> npy_magic{0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t chunk_values = std::size_t{1} << 16;

std::string shape_string(const std::vector<std::uint64_t>& shape) {
  if (shape.empty())
    return "a scalar (shape ())";
  std::string text;
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i ? " x " : "") + std::to_string(shape[i]);
  return text;
}

std::size_t item_bytes(npy_dtype dtype) {
  switch (dtype) {
  case npy_dtype::uint8:
    return 1;
  case npy_dtype::float32:
  case npy_dtype::int32:
    return 4;
  case npy_dtype::float64:
  case npy_dtype::int64:
    return 8;
  }
  return 1;
}

class npy_file {
public:
  explicit npy_file(std::string path)
      : path_(std::move(path)), file_(open_data_file(path_, "; name an .npy file")) {}

  [[noreturn]] void fail(const std::string& problem) const { throw data_error(path_, problem); }

  const std::string& path() const { return path_; }
  std::uint64_t bytes() const { return file_.size(); }

  // Reads exactly `count` bytes or fails naming `what` was cut short.
  void read_exactly(unsigned char* destination, std::size_t count, const std::string& what) {
    std::size_t total = 0;
    try {
      total = file_.read(destination, count);
    } catch (const kernels::file_problem& problem) {
      fail(problem.what());
    }
    if (total < count)
      fail("truncated: the file ends " + std::to_string(total) + " bytes into " + what);
  }

  void seek(std::uint64_t offset) {
    if (::lseek(file_.descriptor(), static_cast<off_t>(offset), SEEK_SET) < 0)
      fail(std::string("cannot seek (") + std::strerror(errno) + ")");
  }

private:
  std::string path_;
  kernels::regular_file file_;
};

std::uint32_t little_endian(const unsigned char* bytes, std::size_t count) {
  std::uint32_t value = 0;
  for (std::size_t i = count; i-- > 0;)
    value = (value << 8) | bytes[i];
  return value;
}

npy_header read_header(npy_file& file) {
  npy_header header;
  header.file_bytes = file.bytes();
  if (file.bytes() == 0)
    file.fail("empty file: its size is 0 bytes (files under /proc and /sys say 0 whatever they "
              "hold; a .npy file starts with the magic \\x93NUMPY)");
  std::array<unsigned char, 8> start{};
  if (file.bytes() < start.size())
    file.fail("truncated: " + std::to_string(file.bytes()) +
              " bytes, shorter than the magic and version (8 bytes)");
  file.read_exactly(start.data(), start.size(), "the magic");
  if (!std::equal(npy_magic.begin(), npy_magic.end(), start.begin()))
    file.fail("bad magic (expected \\x93NUMPY: this is not a .npy file)");
  const unsigned major = start[6];
  const unsigned minor = start[7];
  if (major < 1 || major > 3 || minor != 0)
    file.fail("unsupported .npy format version " + std::to_string(major) + "." +
              std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  std::array<unsigned char, 4> length{};
  file.read_exactly(length.data(), length_bytes, "the header length");
  const std::uint64_t header_bytes = little_endian(length.data(), length_bytes);
  if (header_bytes > npy_max_header_bytes)
    file.fail("header too long: " + std::to_string(header_bytes) + " bytes (at most " +
              std::to_string(npy_max_header_bytes) + "; a corrupt file?)");
  header.data_offset = start.size() + length_bytes + header_bytes;
  if (header.data_offset > file.bytes())
    file.fail("truncated: the header length says " + std::to_string(header_bytes) +
              " bytes but the file ends after " +
              std::to_string(file.bytes() - start.size() - length_bytes) + " of them");
  std::string text(static_cast<std::size_t>(header_bytes), '\0');
  file.read_exactly(reinterpret_cast<unsigned char*>(text.data()), text.size(), "the header");
  parse_npy_dict(file.path(), text, header);

  // Every extent at least 1 and the product bounded by the file: checked multiplication.
  const std::uint64_t item = item_bytes(header.dtype);
  const std::uint64_t room = (file.bytes() - header.data_offset) / item;
  header.values = 1;
  for (std::size_t i = 0; i < header.shape.size(); ++i) {
    if (header.shape[i] == 0)
      file.fail("dimension " + std::to_string(i + 1) + " of " +
                std::to_string(header.shape.size()) + " is zero (shape " +
                shape_string(header.shape) + ")");
    if (header.values > std::numeric_limits<std::uint64_t>::max() / item / header.shape[i])
      file.fail("the header says " + shape_string(header.shape) +
                " values, more bytes than 64 bits count (a corrupt header?)");
    header.values *= header.shape[i];
  }
  const std::uint64_t data_bytes = file.bytes() - header.data_offset;
  if (header.values > room)
    file.fail("truncated: the header says " + shape_string(header.shape) + " values of " +
              npy_dtype_name(header.dtype) + ", " + std::to_string(header.values * item) +
              " bytes, but the file holds " + std::to_string(data_bytes) + " after the header");
  if (header.values * item != data_bytes) {
    const std::uint64_t trailing = data_bytes - header.values * item;
    file.fail(std::to_string(trailing) +
              (trailing == 1 ? " unexpected byte" : " unexpected bytes") +
              " after the data (the header says " + shape_string(header.shape) + " values of " +
              npy_dtype_name(header.dtype) + ")");
  }
  return header;
}

template <typename T>
T load_little_endian(const unsigned char* bytes) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, bytes, sizeof value); // the hosts Herd runs on are little-endian
  return value;
}

// Streams the values of `path` in chunks, calling convert(chunk_bytes, first_index, count).
template <typename Convert>
void stream_values(const std::string& path, const npy_header& header, Convert convert) {
  npy_file file(path);
  if (file.bytes() != header.file_bytes)
    file.fail("the file changed while it was being read");
  file.seek(header.data_offset);
  const std::size_t item = item_bytes(header.dtype);
  std::vector<unsigned char> chunk(chunk_values * item);
  for (std::uint64_t first = 0; first < header.values; first += chunk_values) {
    const auto count =
        static_cast<std::size_t>(std::min<std::uint64_t>(chunk_values, header.values - first));
    file.read_exactly(chunk.data(), count * item, "the values");
    convert(file, chunk.data(), first, count);
  }
}

struct checked_file {
  std::string path;
  npy_header header;
};

// The largest whole number below which every whole number is a float32 (2^24).
constexpr std::int64_t float_exact_integer = std::int64_t{1} << 24;

checked_file check_features(const std::string& path) {
  checked_file result{path, read_npy_header(path)};
  // Every dtype Herd reads will do: integers are whole-number features, token ids above all
  // (tokenizers give int64).
  const auto& header = result.header;
  if (header.shape.size() < 2)
    throw data_error(path, "features must have at least 2 dimensions (n x d, n x h x w or "
                           "n x c x h x w), but the file holds " +
                               shape_string(header.shape));
  return result;
}

checked_file check_labels(const std::string& path) {
  checked_file result{path, read_npy_header(path)};
  const auto& header = result.header;
  if (header.dtype != npy_dtype::int32 && header.dtype != npy_dtype::int64 &&
      header.dtype != npy_dtype::uint8)
    throw data_error(path, "labels of dtype " + npy_dtype_name(header.dtype) +
                               " (expected int32 '<i4', int64 '<i8' or uint8 '|u1')");
  if (header.shape.size() != 1)
    throw data_error(path, "labels must be 1-dimensional (n), but the file holds " +
                               shape_string(header.shape));
  return result;
}

void check_pair(const checked_file& features, const checked_file& labels) {
  if (features.header.shape[0] != labels.header.shape[0])
    throw data_error(features.path, std::to_string(features.header.shape[0]) + " samples, but " +
                                        labels.path + " has " +
                                        std::to_string(labels.header.shape[0]) + " labels");
}

// One sample's shape in a features file: d for n x d, 1 x h x w for n x h x w (one channel), the
// rest of the shape above that.
std::vector<std::uint64_t> sample_shape_of(const npy_header& header) {
  if (header.shape.size() == 3)
    return {1, header.shape[1], header.shape[2]};
  return {header.shape.begin() + 1, header.shape.end()};
}

// The samples of a checked features file: n x width floats, and one sample's shape (empty for
// n x d, as sample_shape_of() above that).
npy_samples read_samples(const checked_file& features) {
  const auto& shape = features.header.shape;
  const auto count = static_cast<std::size_t>(shape[0]);
  const auto width = static_cast<std::size_t>(features.header.values / shape[0]);
  npy_samples result;
  result.bytes = features.header.dtype == npy_dtype::uint8;
  if (shape.size() >= 3)
    for (auto extent : sample_shape_of(features.header))
      result.sample_shape.push_back(static_cast<std::size_t>(extent));
  try {
    result.values = tensor({count, width});
  } catch (const std::bad_alloc&) {
    throw data_error(
        features.path,
        "out of memory for " + shape_string(shape) +
            " values; free memory or lower data.max-bytes to refuse such files up front");
  }

  float* destination = result.values.data();
  const npy_dtype dtype = features.header.dtype;
  // "value nan at sample 5, position 3 (flat index 43)": a flat index into 60000 x 784 values
  // means nothing to whoever has to find the value.
  const auto value_at = [width](const std::string& value, std::uint64_t flat) {
    return "value " + value + " at sample " + std::to_string(flat / width) + ", position " +
           std::to_string(flat % width) + " (flat index " + std::to_string(flat) + ")";
  };
  stream_values(
      features.path, features.header,
      [&](const npy_file& file, const unsigned char* bytes, std::uint64_t first, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
          float value = 0.0f;
          switch (dtype) {
          case npy_dtype::uint8:
            value = static_cast<float>(bytes[i]) / 255.0f;
            break;
          case npy_dtype::float32:
            value = load_little_endian<float>(bytes + 4 * i);
            break;
          case npy_dtype::float64:
            value = static_cast<float>(load_little_endian<double>(bytes + 8 * i));
            break;
          default: { // int32, int64: whole numbers, exact in a float32 up to 2^24
            const std::int64_t whole = dtype == npy_dtype::int32
                                           ? load_little_endian<std::int32_t>(bytes + 4 * i)
                                           : load_little_endian<std::int64_t>(bytes + 8 * i);
            if (whole > float_exact_integer || whole < -float_exact_integer)
              file.fail(value_at(std::to_string(whole), first + i) +
                        " is beyond 16777216 (2^24), past which a float32 does not hold whole "
                        "numbers exactly");
            value = static_cast<float>(whole);
          }
          }
          if (!std::isfinite(value))
            file.fail(value_at(std::to_string(value), first + i) +
                      " is not finite as a float32 (features must be finite numbers)");
          destination[first + i] = value;
        }
      });
  return result;
}

dataset read_dataset(const checked_file& features, const checked_file& labels,
                     const std::string& name) {
  npy_samples samples = read_samples(features);
  dataset result;
  result.name = name;
  result.images = std::move(samples.values);
  result.sample_shape = std::move(samples.sample_shape);
  result.input_normalisation.scaled_bytes = samples.bytes;
  try {
    result.labels.resize(result.images.rows());
  } catch (const std::bad_alloc&) {
    throw data_error(labels.path,
                     "out of memory for " + shape_string(labels.header.shape) + " labels");
  }
  const npy_dtype label_dtype = labels.header.dtype;
  stream_values(
      labels.path, labels.header,
      [&](const npy_file& file, const unsigned char* bytes, std::uint64_t first, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) {
          std::int64_t label = 0;
          if (label_dtype == npy_dtype::uint8)
            label = bytes[i];
          else if (label_dtype == npy_dtype::int32)
            label = load_little_endian<std::int32_t>(bytes + 4 * i);
          else
            label = load_little_endian<std::int64_t>(bytes + 8 * i);
          if (label < 0 || label >= npy_max_classes)
            file.fail("label " + std::to_string(label) + " at index " + std::to_string(first + i) +
                      " is out of range (labels must lie in "
                      "[0, " +
                      std::to_string(npy_max_classes - 1) + "])");
          result.labels[first + i] = static_cast<std::int32_t>(label);
        }
      });
  return result;
}

// Refuses files whose loaded values would take more than `max_bytes` together (0:
// default_max_data_bytes()), naming the file that crosses the limit; before any value is read.
void check_loaded_bytes(const std::vector<const checked_file*>& files, std::uint64_t max_bytes) {
  const bool default_limit = max_bytes == 0;
  if (default_limit)
    max_bytes = default_max_data_bytes();
  std::uint64_t total = 0;
  for (const checked_file* file : files) {
    // values <= file bytes, so this product cannot overflow.
    const std::uint64_t bytes = file->header.values * npy_loaded_bytes_per_value;
    total += bytes;
    if (total > max_bytes)
      throw data_error(file->path, shape_string(file->header.shape) + " values take " +
                                       std::to_string(bytes) + " bytes of memory once loaded" +
                                       (total > bytes ? " (" + std::to_string(total) +
                                                            " with the files before it)"
                                                      : std::string()) +
                                       ", more than data.max-bytes = " + std::to_string(max_bytes) +
                                       (default_limit ? " (half the physical memory)" : "") +
                                       "; raise data.max-bytes if the file is right");
  }
}

int largest_label(const dataset& set) {
  return set.labels.empty() ? 0 : *std::max_element(set.labels.begin(), set.labels.end());
}

} // namespace

std::string npy_dtype_name(npy_dtype dtype) {
  switch (dtype) {
  case npy_dtype::float32:
    return "'<f4' (float32)";
  case npy_dtype::float64:
    return "'<f8' (float64)";
  case npy_dtype::uint8:
    return "'|u1' (uint8)";
  case npy_dtype::int32:
    return "'<i4' (int32)";
  case npy_dtype::int64:
    return "'<i8' (int64)";
  }
  return "?";
}

npy_header read_npy_header(const std::string& path) {
  npy_file file(path);
  return read_header(file);
}

npy_samples read_npy_samples(const std::string& path, std::uint64_t max_bytes) {
  const checked_file features = check_features(path);
  const bool default_limit = max_bytes == 0;
  if (default_limit)
    max_bytes = default_max_data_bytes();
  const std::uint64_t bytes = features.header.values * npy_loaded_bytes_per_value;
  if (bytes > max_bytes)
    throw data_error(path, shape_string(features.header.shape) + " values take " +
                               std::to_string(bytes) + " bytes of memory once loaded, more than " +
                               std::to_string(max_bytes) +
                               (default_limit ? " (half the physical memory)" : "") +
                               "; split the file into smaller ones");
  return read_samples(features);
}

train_test_split load_npy_dataset(const npy_files& files, std::uint64_t max_bytes) {
  // Every header first: a bad test file is reported before minutes go into the training set.
  struct set_files {
    checked_file features;
    checked_file labels;
    std::string name; // "train", "test", "validation"
    dataset train_test_split::*set;
  };
  std::vector<set_files> sets;
  sets.push_back({check_features(files.train_features), check_labels(files.train_labels), "train",
                  &train_test_split::train});
  sets.push_back({check_features(files.test_features), check_labels(files.test_labels), "test",
                  &train_test_split::test});
  if (!files.validation_features.empty())
    sets.push_back({check_features(files.validation_features),
                    check_labels(files.validation_labels), "validation",
                    &train_test_split::validation});
  const auto& train = sets.front().features;
  std::vector<const checked_file*> all;
  for (const auto& files_of : sets) {
    check_pair(files_of.features, files_of.labels);
    const auto& features = files_of.features;
    if (sample_shape_of(features.header) != sample_shape_of(train.header)) {
      auto sample = [](const npy_header& header) { return shape_string(sample_shape_of(header)); };
      throw data_error(features.path, "samples of " + sample(features.header) + ", but " +
                                          train.path + " holds samples of " + sample(train.header) +
                                          "; train and " + files_of.name + " samples must match");
    }
    all.insert(all.end(), {&files_of.features, &files_of.labels});
  }
  check_loaded_bytes(all, max_bytes);

  train_test_split split;
  int largest = 0;
  for (const auto& files_of : sets) {
    auto& set = split.*files_of.set;
    set = read_dataset(files_of.features, files_of.labels, "npy/" + files_of.name);
    largest = std::max(largest, largest_label(set));
  }
  for (dataset* set : {&split.train, &split.test, &split.validation})
    set->classes = largest + 1;
  return split;
}

dataset load_npy_test_set(const std::string& features, const std::string& labels,
                          std::uint64_t max_bytes) {
  const checked_file test_features = check_features(features);
  const checked_file test_labels = check_labels(labels);
  check_pair(test_features, test_labels);
  check_loaded_bytes({&test_features, &test_labels}, max_bytes);
  dataset test = read_dataset(test_features, test_labels, "npy/test");
  test.classes = largest_label(test) + 1;
  return test;
}

} // namespace herd::models
