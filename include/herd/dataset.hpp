// Datasets in memory: normalised float images and int32 labels, Fashion-MNIST loaded from the
// Debian package's files, and a small synthetic dataset for fast tests.
#pragma once

#include "herd/idx.hpp"
#include "herd/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace herd::models {

/// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr const char* default_fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";

/// Pixel normalisation x' = (x / 255 - mean) / stddev.
struct normalisation {
  float mean = 0.0f;
  float stddev = 1.0f;
  /// The source's values were bytes, divided by 255 before the rest (Fashion-MNIST's pixels, a
  /// .npy file of uint8): new inputs must come as bytes or as byte / 255 too.
  bool scaled_bytes = false;
  /// A value already scaled to [0, 1] (x / 255), normalised.
  float apply(float scaled) const { return (scaled - mean) / stddev; }
  bool identity() const { return mean == 0.0f && stddev == 1.0f; }
};

struct dataset {
  tensor images; // size() x features(), normalised; empty for token texts
  /// Token texts (ragged): sample i is tokens[offsets[i], offsets[i + 1]), byte values as token
  /// ids. Kept ragged because padding every text to the longest allowed would multiply the memory
  /// by the ratio of that cap to the median length (about 20 for the fortunes); batches are padded
  /// only to their own longest text (gather_batch, gather_rows). Empty for dense data.
  std::vector<std::uint8_t> tokens;
  std::vector<std::size_t> offsets; // size() + 1 entries when the data is token texts
  /// With token texts: the longest a batch row may be (data.max-length), and so features().
  std::size_t max_length = 0;
  std::vector<std::int32_t> labels; // size() labels in [0, classes)
  int classes = 0;
  std::string name; // for messages: "fashion-mnist/train", "synthetic"
  /// One sample's shape as a model sees it ({1, 28, 28}: channels, height, width); its elements
  /// are features(). Empty: flat, {features()}.
  std::vector<std::size_t> sample_shape;
  /// What was done to the source's values, scaled to [0, 1] where they were bytes, to make these
  /// features: new inputs (herd predict) get the same. Identity where the source's values are
  /// used as they are (.npy, synthetic).
  normalisation input_normalisation;

  std::size_t size() const { return labels.size(); }
  /// Whether the samples are token texts of their own lengths rather than rows of `images`.
  bool ragged() const { return !offsets.empty(); }
  /// Elements of one sample: a dense row's, or the cap on a token text's.
  std::size_t features() const {
    return ragged() ? max_length : images.empty() ? 0 : images.cols();
  }
  /// Tokens of text `sample` (ragged data only).
  std::size_t length(std::size_t sample) const { return offsets[sample + 1] - offsets[sample]; }
  /// sample_shape, or {features()} when it is empty.
  std::vector<std::size_t> input_shape() const {
    return sample_shape.empty() ? std::vector<std::size_t>{features()} : sample_shape;
  }
};

/// Copies samples `indices` into x: dense rows as they are (x is indices.size() x features()), or
/// token texts as floats, each row padded with -1 to the longest of these texts (x is
/// indices.size() x min(longest, max_length); tokens past max_length are left out), so a batch
/// costs what its own longest text does.
void gather_rows(const dataset& data, const std::size_t* indices, std::size_t count, tensor& x);

/// The samples `rows` of `data` (in that order) as a dataset of their own, in the same form.
dataset subset(const dataset& data, const std::vector<std::size_t>& rows);

struct train_test_split {
  dataset train;
  dataset test;
  /// Samples held out of the training set to choose by (data.validation-fraction,
  /// hold_out_validation): where it is not empty, a job's evaluations measure it (the periodic
  /// ones, train.target-accuracy, the parameters a target stop keeps) and the test set is measured
  /// once, at the end. Empty: the evaluations measure the test set.
  dataset validation;
};

/// Moves `fraction` (in (0, 1)) of `split.train` into `split.validation`: of every class, that
/// share of its samples rounded to the nearest whole number (a class of one sample goes whole to
/// the validation set at 0.5, and stays whole below), chosen at random from `seed`. Both keep the
/// training set's order. The same split, fraction and seed always hold out the same samples. Throws
/// std::invalid_argument for a fraction outside (0, 1) or a split that already has a validation
/// set, and data_error where the training set would be left without samples or the validation set
/// would get none.
void hold_out_validation(train_test_split& split, double fraction, std::uint64_t seed);

/// The samples hold_out_validation holds out of a training set with these labels (of `classes`
/// classes): true for each one it moves to the validation set.
std::vector<bool> validation_choice(const std::vector<std::int32_t>& labels, int classes,
                                    double fraction, std::uint64_t seed);

/// `set`, made from bytes (input_normalisation.scaled_bytes) with one normalisation, as it is
/// with `to` instead: each value's byte is recovered and normalised anew, so the result is bit for
/// bit what make_dataset would have made with `to`. Throws std::invalid_argument for a set not
/// made from bytes, or one whose values are not the normalised bytes of its normalisation.
dataset renormalised(const dataset& set, const normalisation& to);

/// Mean and standard deviation of all pixels (scaled to [0, 1]) of an image array; with
/// `excluded` (one flag per image, else std::invalid_argument), of the images not flagged only.
normalisation pixel_statistics(const idx_array& images,
                               const std::vector<bool>* excluded = nullptr);

/// Builds a dataset from an image array (n x rows x cols, or n x features) and a label array (n),
/// checking that they match: same n, labels below `classes`. Images of n x rows x cols have the
/// sample shape 1 x rows x cols (one channel); n x d1 x d2 x ... has d1 x d2 x ... The paths only
/// name the files in errors.
dataset make_dataset(const idx_array& images, const idx_array& labels, int classes,
                     const normalisation& norm, const std::string& name,
                     const std::string& images_path, const std::string& labels_path);

/// Memory one value of an IDX file takes once loaded: its byte, kept while the dataset is built,
/// and the 4-byte float (a pixel) or int32 (a label) it becomes.
inline constexpr std::uint64_t loaded_bytes_per_value = 1 + 4;

/// The memory limit data.max-bytes = 0 stands for: half the physical memory, or half the memory
/// limit of this process's cgroup where that is lower.
std::uint64_t default_max_data_bytes();

/// Loads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
/// t10k-labels-idx1-ubyte (each either with ".gz" or without) from `dir`, normalised with the
/// training set's pixel statistics. A missing directory or file is a data_error that says to
/// `apt-get install dataset-fashion-mnist` or to set data.path. Before any values are read, the
/// four headers are checked against their files (read_idx_header) and the memory the dataset would
/// take (loaded_bytes_per_value for every declared value) against `max_bytes`
/// (0 = default_max_data_bytes()); a dataset over the limit is a data_error naming the file that
/// crosses it, its declared size and the limit.
train_test_split load_fashion_mnist(const std::string& dir = default_fashion_mnist_dir,
                                    std::uint64_t max_bytes = 0);

/// The test set alone (t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte), normalised with
/// `norm` (a run's, which a checkpoint records): to evaluate a trained model, the training files
/// need not be there. Checked and refused as above.
dataset load_fashion_mnist_test(const std::string& dir, std::uint64_t max_bytes,
                                const normalisation& norm);

/// As above, then holds out a validation set as hold_out_validation(split, validation_fraction,
/// seed) does (the same samples; no validation set for a fraction of 0). The pixel statistics
/// every set is normalised with are those of the images left to train on: nothing of the
/// validation set shapes the inputs. Throws as both do.
train_test_split load_fashion_mnist(const std::string& dir, std::uint64_t max_bytes,
                                    double validation_fraction, std::uint64_t seed);

/// A learnable synthetic classification problem: `classes` Gaussian clusters in `features`
/// dimensions with seeded centres, `n` samples with labels cycling through the classes.
dataset make_synthetic_dataset(std::size_t n, int features, int classes, std::uint64_t seed);

/// A training and a test set drawn around the same cluster centres (those of
/// make_synthetic_dataset with the same seed), from different noise, so test accuracy measures
/// generalisation to new samples of the same problem.
train_test_split make_synthetic_split(std::size_t train_samples, std::size_t test_samples,
                                      int features, int classes, std::uint64_t seed);

} // namespace herd::models
