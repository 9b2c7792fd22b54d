// Reader for NumPy's .npy format, the arrays people export from Python with np.save: the magic
// "\x93NUMPY", a version (1.0, 2.0 or 3.0), a little-endian header length, then a Python dict
// literal {'descr': '<f4', 'fortran_order': False, 'shape': (n, d)} and the values in C order.
// As with IDX files, nothing the header declares is trusted: it is parsed and checked against the
// file's size before anything is allocated for the values.
#pragma once

#include "herd/dataset.hpp"
#include "herd/idx.hpp" // data_error

#include <cstdint>
#include <string>
#include <vector>

namespace herd::models {

/// The element types Herd reads: float32 '<f4', float64 '<f8' and uint8 '|u1' for features;
/// int32 '<i4', int64 '<i8' and uint8 '|u1' for labels.
enum class npy_dtype { float32, float64, uint8, int32, int64 };

/// The NumPy spelling of a dtype ("'<f4' (float32)"), for messages.
std::string npy_dtype_name(npy_dtype dtype);

/// The longest header (the dict and its padding) accepted, as NumPy's own reader does by default:
/// anything longer is a corrupt or hostile file.
inline constexpr std::uint64_t npy_max_header_bytes = 10000;

/// What a .npy file's header declares, checked against the file.
struct npy_header {
  npy_dtype dtype = npy_dtype::float32;
  std::vector<std::uint64_t> shape; // C order; every extent at least 1
  std::uint64_t values = 0;         // product(shape)
  std::uint64_t data_offset = 0;    // where the values start
  std::uint64_t file_bytes = 0;
};

/// Reads and checks one .npy header: the magic, the version, the header length (at most
/// npy_max_header_bytes), the dict (exactly the keys descr, fortran_order and shape),
/// a supported little-endian dtype, C order, no zero extent, and a file that holds exactly the
/// declared values after the header. Throws data_error naming `path` and the problem, also for
/// a file that is not a regular file (refused before anything is read from it).
npy_header read_npy_header(const std::string& path);

/// The .npy files of data.dataset = npy: four, and a validation pair where one is given.
struct npy_files {
  std::string train_features;
  std::string train_labels;
  std::string test_features;
  std::string test_labels;
  std::string validation_features; // empty: no validation set
  std::string validation_labels;
};

/// Memory one loaded value takes: a float32 feature or an int32 label. Values are converted in
/// small chunks as they are read, so nothing else grows with the file.
inline constexpr std::uint64_t npy_loaded_bytes_per_value = 4;

/// Loads a training and a test set from .npy files. Features: float32, float64, int32 or int64
/// (whole numbers within +-2^24, which float32 holds exactly), or uint8 (scaled
/// to [0, 1]), rank at least 2: n x d (flat samples), n x h x w (sample shape 1 x h x w) or
/// n x c x h x w (c x h x w); every value finite. Labels: int32, int64 or uint8, rank 1, as many
/// as the features' n, every label in [0, npy_max_classes). classes is the largest label over all
/// sets plus one. Train, test (and validation) samples must have the same shape. Every header is
/// checked, and the memory the loaded dataset takes against `max_bytes` (0 =
/// default_max_data_bytes()), before any values are read. Throws data_error naming the file (both,
/// for a mismatch).
train_test_split load_npy_dataset(const npy_files& files, std::uint64_t max_bytes = 0);

/// The test set alone, by load_npy_dataset's rules for one pair of files: what `herd evaluate`
/// reads, where the training files may be elsewhere or gone. Its classes are its largest label
/// plus one.
dataset load_npy_test_set(const std::string& features, const std::string& labels,
                          std::uint64_t max_bytes = 0);

/// The samples of one features file (the rules of load_npy_dataset's features), without labels:
/// what `herd predict` reads.
struct npy_samples {
  tensor values;                        // n x elements(sample), uint8 scaled to [0, 1]
  std::vector<std::size_t> sample_shape; // as dataset::sample_shape
  bool bytes = false;                   // the file held uint8 (so values were scaled)
};

/// Reads a features file (any dtype load_npy_dataset takes; rank at least 2; finite), refusing one
/// whose loaded values would take more than `max_bytes` (0 = default_max_data_bytes()). Throws
/// data_error naming the file and the problem.
npy_samples read_npy_samples(const std::string& path, std::uint64_t max_bytes = 0);

/// The bytes of a .npy file (version 1.0, C order, float32) holding a rows x cols host tensor, as
/// np.save writes it.
std::string npy_bytes(const tensor& values);

/// The same for `values` of any shape `dims` (at least one dimension), row-major, in host memory.
std::string npy_bytes(const float* values, const std::vector<std::size_t>& dims);

/// The most classes a labels file may imply (largest label + 1): the output layer has one unit
/// per class, so a stray huge label would otherwise ask for a huge model.
inline constexpr std::int64_t npy_max_classes = 65536;

} // namespace herd::models
