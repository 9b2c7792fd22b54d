// The dataset a configuration names; see herd/data.hpp.
#include "herd/config.hpp"
#include "herd/data.hpp"
#include "models/fortunes.hpp"
#include "models/npy.hpp"

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace herd::models {

namespace {

// "fortunes: 9000 training and 1000 test texts in 7 languages, read from the cache ...; 12 texts
// longer than data.max-length = 4096 truncated": where the prepared texts come from, and what the
// cap cut.
std::string fortunes_note(const fortune_data& loaded, std::uint64_t max_length) {
  const std::string source = loaded.from_cache ? "read from the cache " + loaded.cache_path
                             : loaded.cache_path.empty()
                                 ? std::string("prepared (the cache could not be written)")
                                 : "prepared and cached in " + loaded.cache_path;
  return "fortunes: " + std::to_string(loaded.split.train.size()) + " training and " +
         std::to_string(loaded.split.test.size()) + " test texts in " +
         std::to_string(loaded.corpus.languages.size()) + " languages, " + source + "; " +
         std::to_string(loaded.truncated) +
         " texts longer than data.max-length = " + std::to_string(max_length) + " truncated";
}

// What validate() says of `config`'s `keys` (a run_config built in code may not have been
// through it): the key, the value and what is wrong, not the loader's bare "no such file".
std::vector<config::config_error> errors_of_keys(const config::run_config& config,
                                                 const std::set<std::string>& keys) {
  std::vector<config::config_error> found;
  for (auto& error : config::validate(config))
    if (keys.count(error.key) != 0)
      found.push_back(std::move(error));
  return found;
}

// The split data.dataset names, as its files or generator give it.
std::shared_ptr<train_test_split> load_split(const config::run_config& config,
                                             const data_notes& notes) {
  const auto& data = config.data;
  if (data.dataset == "synthetic") {
    // Same shape as Fashion-MNIST, a tenth of its size: for smoke tests without the package.
    auto split = std::make_shared<train_test_split>(
        make_synthetic_split(6000, 1000, 784, 10, config.train.seed));
    split->train.sample_shape = split->test.sample_shape = {1, 28, 28};
    return split;
  }
  if (data.dataset == "fortunes") {
    fortune_options options;
    options.cache_dir = data.cache_dir;
    options.max_length = static_cast<std::size_t>(data.max_length);
    options.max_texts = static_cast<std::size_t>(data.max_texts);
    auto loaded = load_fortunes(options);
    // The texts are read whole from their packages' files (a few MB) before their size is known.
    std::uint64_t bytes = 0;
    for (const dataset* set : {&loaded.split.train, &loaded.split.test})
      bytes += set->tokens.size() + set->offsets.size() * sizeof(std::size_t) +
               set->labels.size() * sizeof(std::int32_t);
    if (data.max_bytes != 0 && bytes > data.max_bytes)
      throw data_error("the fortunes' " + std::to_string(loaded.split.train.size()) + " + " +
                       std::to_string(loaded.split.test.size()) + " texts take " +
                       std::to_string(bytes) + " bytes of memory once loaded, more than "
                       "data.max-bytes = " + std::to_string(data.max_bytes) +
                       "; raise data.max-bytes, or take fewer texts with data.max-texts");
    if (notes)
      notes(fortunes_note(loaded, data.max_length));
    return std::make_shared<train_test_split>(std::move(loaded.split));
  }
  if (data.dataset == "npy") {
    if (data.train_features.empty() || data.train_labels.empty() || data.test_features.empty() ||
        data.test_labels.empty())
      if (auto unnamed = errors_of_keys(config, {"data.train-features", "data.train-labels",
                                                 "data.test-features", "data.test-labels"});
          !unnamed.empty())
        throw config::invalid_config(std::move(unnamed));
    return std::make_shared<train_test_split>(
        load_npy_dataset({data.train_features, data.train_labels, data.test_features,
                          data.test_labels, data.validation_features, data.validation_labels},
                         data.max_bytes));
  }
  if (data.dataset == "fashion-mnist") // normalised without the validation set's pixels
    return std::make_shared<train_test_split>(
        load_fashion_mnist(data.path, data.max_bytes, data.validation_fraction, config.train.seed));
  // validate() refuses any other name; a run_config built in code may not have been through it.
  auto unknown = errors_of_keys(config, {"data.dataset"});
  if (unknown.empty()) // a name known_datasets() lists and this function does not load
    unknown.push_back({"data.dataset", "data.dataset = \"" + data.dataset +
                                           "\": no loader for this dataset in this build"});
  throw config::invalid_config(std::move(unknown));
}

} // namespace

std::shared_ptr<const train_test_split> load_dataset(const config::run_config& config,
                                                     const data_notes& notes) {
  auto split = load_split(config, notes);
  if (const double fraction = config.data.validation_fraction; fraction > 0.0) {
    if (split->validation.size() == 0) // else held out as it was loaded
      hold_out_validation(*split, fraction, config.train.seed);
    if (notes)
      notes("validation: " + std::to_string(split->validation.size()) +
            " samples held out of the training set (data.validation-fraction), " +
            std::to_string(split->train.size()) + " left to train on; the test set's " +
            std::to_string(split->test.size()) + " are measured once, at the end");
  }
  return split;
}

std::shared_ptr<const dataset> load_test_dataset(const config::run_config& config,
                                                 const data_notes& notes,
                                                 const normalisation* recorded) {
  const auto& data = config.data;
  if (data.dataset == "npy")
    return std::make_shared<const dataset>(
        load_npy_test_set(data.test_features, data.test_labels, data.max_bytes));
  if (data.dataset == "fashion-mnist" && recorded != nullptr && recorded->scaled_bytes)
    return std::make_shared<const dataset>(
        load_fashion_mnist_test(data.path, data.max_bytes, *recorded));
  // Fashion-MNIST's test set is normalised as the run's was: without its validation set's pixels.
  auto split = load_split(config, notes);
  return {split, &split->test}; // shares the split's ownership: no copy of the samples
}

std::vector<std::string> class_names(const config::run_config& config) {
  if (config.data.dataset == "fashion-mnist") // the labels' meanings, as Zalando publishes them
    return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
            "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  std::vector<std::string> names;
  if (config.data.dataset == "fortunes") // labelled in the packages' order
    for (const auto& package : fortune_packages())
      names.push_back(package.language);
  return names;
}

} // namespace herd::models
