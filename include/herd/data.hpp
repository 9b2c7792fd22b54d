// Herd's public data API: the dataset a configuration names (load_dataset: data.dataset,
// data.path and the other [data] keys, loaded as every `herd` command loads them), and datasets of
// the caller's own values (dataset_from_memory, dataset_from_source, from
// include/herd/dataset_sources.hpp). Each gives a models::train_test_split or models::dataset that
// jobs take (herd/job.hpp). Datasets in memory: include/herd/dataset.hpp.
#pragma once

#include "herd/dataset.hpp"
#include "herd/dataset_sources.hpp"
#include "herd/run_config.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herd::models {

/// Receives what load_dataset has to tell a person about the data it loaded, one sentence at a
/// time, e.g. "fortunes: 9000 training and 1000 test texts in 7 languages, read from the cache
/// ...". The commands print each as "herd: <note>" on stderr; a service may log it.
using data_notes = std::function<void(const std::string& note)>;

/// The training and test sets `config.data` names:
/// - fashion-mnist: the IDX files in data.path (load_fashion_mnist), within data.max-bytes;
/// - synthetic: 6000 training and 1000 test samples of Fashion-MNIST's shape (1x28x28, 10
///   classes) drawn from train.seed, for smoke tests without the package;
/// - npy: data.train-features, data.train-labels, data.test-features, data.test-labels,
///   within data.max-bytes;
/// - fortunes: Debian's fortunes packages, prepared once and cached in data.cache-dir, its
///   texts capped at data.max-length bytes and data.max-texts texts; one note.
/// With data.validation-fraction > 0 that share of the training set is held out as the split's
/// validation set (hold_out_validation, seeded from train.seed), with a note saying how many.
///
/// Throws data_error naming the file (or directory) and the problem, and the key that names it
/// where the key is what to change (a missing Fashion-MNIST directory: "set data.path"); and
/// config::invalid_config (key data.dataset) for a dataset it does not know, which validate()
/// refuses before. `notes` may be empty. Threads may call it at once (a service starting jobs):
/// the fortunes cache each writes goes through a temporary file of its own.
std::shared_ptr<const train_test_split> load_dataset(const config::run_config& config,
                                                     const data_notes& notes = {});

/// The test set of load_dataset(config) alone, to evaluate a trained model: of data.dataset = npy
/// only data.test-features and data.test-labels are read (the training files may be elsewhere or
/// gone), and its classes are its own largest label plus one; of Fashion-MNIST, given the
/// normalisation the run used (`recorded`, scaled_bytes set: a checkpoint's), only the test
/// files, normalised with it; the other datasets (packaged or generated) are loaded whole and
/// their test set kept. Throws as load_dataset does.
std::shared_ptr<const dataset> load_test_dataset(const config::run_config& config,
                                                 const data_notes& notes = {},
                                                 const normalisation* recorded = nullptr);

/// The names of the classes of the dataset `config.data` names, by label: Fashion-MNIST's
/// garments ("T-shirt/top", "Trouser", ..., "Ankle boot"), the fortunes' languages ("en", "de",
/// "it", "es", "pl", "cs", "ru"). Empty where the labels are only numbers (npy, synthetic).
/// Reads no file.
std::vector<std::string> class_names(const config::run_config& config);

} // namespace herd::models
