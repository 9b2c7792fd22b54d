// The user's own data as a Herd dataset: from values the caller already holds in memory, or from a
// function Herd calls once per sample. Either way Herd copies the samples into one dataset in
// memory (a training run reads random batches many times over, so a source is read once, up
// front) and checks them on the way: the sizes agree, every label names a class, every value is
// finite. Files: load_dataset (herd/data.hpp) reads NumPy .npy arrays, herd/dataset.hpp IDX
// (MNIST) files.
#pragma once

#include "herd/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace herd::models {

/// A dataset of `labels.size()` samples, each of shape `sample_shape` ({20} for flat vectors,
/// {1, 28, 28} for one-channel images): `features` holds the samples one after the other,
/// elements(sample_shape) floats each, row-major. The values are used as they are (no
/// normalisation). `name` appears in messages ("my-data/train").
///
/// Throws std::invalid_argument, naming `name` and what is wrong: no samples, an empty or zero
/// dimension in `sample_shape`, fewer than one class, a feature count that is not
/// labels.size() x elements(sample_shape), a label outside [0, classes) (its index and value), a
/// value that is NaN or infinite (its sample and position).
dataset dataset_from_memory(const std::vector<float>& features,
                            const std::vector<std::int32_t>& labels,
                            const std::vector<std::size_t>& sample_shape, int classes,
                            const std::string& name = "in-memory");

/// Writes sample `index`'s elements(sample_shape) floats to `features` and returns its label.
/// Called once per index, in order, on the caller's thread.
using sample_source = std::function<std::int32_t(std::size_t index, float* features)>;

/// A dataset of `count` samples of shape `sample_shape`, each written by `fill` straight into the
/// dataset's memory (no second copy of the data is held). Checked as dataset_from_memory() is, each
/// sample as soon as it is written, so an error names the first sample at fault. Before any
/// sample is asked for, the memory the dataset would take is checked against `max_bytes`
/// (0 = default_max_data_bytes()). An exception from `fill` propagates unchanged.
dataset dataset_from_source(std::size_t count, const std::vector<std::size_t>& sample_shape,
                            int classes, const sample_source& fill,
                            const std::string& name = "callback", std::uint64_t max_bytes = 0);

/// The checks dataset_from_memory() runs, on a dataset made any other way (dataset and
/// train_test_split are plain structs): herd::job::start and spawn_job run them on every set of
/// the split they are given. Throws std::invalid_argument, naming data.name and what is wrong:
/// fewer than one class (of a set with samples), labels and feature rows (or token texts) of
/// different counts, a row width other than sample_shape's, text offsets outside the tokens, a
/// label outside [0, classes), a value that is NaN or infinite. An empty dataset passes.
void check_dataset(const dataset& data);

} // namespace herd::models
