// The dataset a configuration names, as every command and an embedding service load it: each
// data.dataset, the files of data.path and the .npy keys, and errors that name the key and file.
#include "herd/config.hpp"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <utility>

#include "herd/data.hpp"
#include "idx_test_files.hpp"
#include "support/error_message.hpp"
#include "support/npy_file.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::config::run_config;
using herd::models::data_error;
using herd::models::load_dataset;
using herd::testing::temp_directory;
using testing::AllOf;
using testing::HasSubstr;

template <class Function>
std::string data_error_of(Function&& function) {
  return herd::testing::message_of<data_error>(std::forward<Function>(function));
}

TEST(load_dataset, synthetic_is_fashion_mnist_shaped_and_drawn_from_train_seed) {
  run_config config;
  config.data.dataset = "synthetic";
  config.train.seed = 5;
  std::vector<std::string> notes;
  const auto split = load_dataset(config, [&](const std::string& note) { notes.push_back(note); });
  EXPECT_EQ(split->train.size(), 6000u);
  EXPECT_EQ(split->test.size(), 1000u);
  EXPECT_EQ(split->train.input_shape(), (std::vector<std::size_t>{1, 28, 28}));
  EXPECT_EQ(split->train.classes, 10);
  EXPECT_TRUE(notes.empty());
  // Another seed, other data.
  config.train.seed = 6;
  EXPECT_NE(load_dataset(config)->train.images[17], split->train.images[17]);
}

TEST(load_dataset, a_validation_fraction_holds_out_that_share_of_the_training_set) {
  run_config config;
  config.data.dataset = "synthetic";
  config.data.validation_fraction = 0.1;
  std::vector<std::string> notes;
  const auto split = load_dataset(config, [&](const std::string& note) { notes.push_back(note); });
  EXPECT_EQ(split->train.size(), 5400u);
  EXPECT_EQ(split->validation.size(), 600u);
  EXPECT_EQ(split->test.size(), 1000u);
  EXPECT_EQ(split->validation.input_shape(), (std::vector<std::size_t>{1, 28, 28}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], AllOf(HasSubstr("600 samples held out of the training set"),
                              HasSubstr("5400 left to train on")));
  // Without it, none; and the test set alone (herd evaluate) is the same either way.
  EXPECT_EQ(herd::models::load_test_dataset(config)->size(), 1000u);
  config.data.validation_fraction = 0.0;
  EXPECT_EQ(load_dataset(config)->validation.size(), 0u);
}

TEST(load_dataset, npy_reads_the_four_files_the_keys_name) {
  temp_directory dir;
  run_config config;
  config.data.dataset = "npy";
  config.data.train_features = dir.file("train_x.npy");
  config.data.train_labels = dir.file("train_y.npy");
  config.data.test_features = dir.file("test_x.npy");
  config.data.test_labels = dir.file("test_y.npy");
  std::vector<float> train_values(4 * 6);
  for (std::size_t i = 0; i < train_values.size(); ++i)
    train_values[i] = 0.25f * static_cast<float>(i);
  herd::testing::write_npy<float>(config.data.train_features, "<f4", {4, 6}, train_values);
  herd::testing::write_npy<std::int32_t>(config.data.train_labels, "<i4", {4}, {0, 1, 2, 1});
  herd::testing::write_npy<float>(config.data.test_features, "<f4", {2, 6},
                                  std::vector<float>(12, 0.5f));
  herd::testing::write_npy<std::int32_t>(config.data.test_labels, "<i4", {2}, {2, 0});
  ASSERT_TRUE(herd::config::validate(config).empty());

  const auto split = load_dataset(config);
  ASSERT_EQ(split->train.size(), 4u);
  ASSERT_EQ(split->test.size(), 2u);
  EXPECT_EQ(split->train.features(), 6u);
  EXPECT_EQ(split->train.classes, 3);
  EXPECT_EQ(split->train.labels, (std::vector<std::int32_t>{0, 1, 2, 1}));
  EXPECT_EQ(split->test.labels, (std::vector<std::int32_t>{2, 0}));
  EXPECT_FLOAT_EQ(split->train.images[23], 5.75f);

  // A file that is not there is named.
  config.data.test_labels = dir.file("missing_y.npy");
  EXPECT_THAT(data_error_of([&] { load_dataset(config); }), HasSubstr(dir.file("missing_y.npy")));
}

// data.path is where Fashion-MNIST is read from, not the package's directory: four small IDX
// files in a directory of the test's own load from there.
TEST(load_dataset, fashion_mnist_is_read_from_data_path) {
  using namespace herd::models::test_files;
  temp_directory dir;
  const std::uint32_t train_count = 20;
  const std::uint32_t test_count = 10;
  std::vector<std::uint8_t> train_labels(train_count);
  for (std::uint32_t i = 0; i < train_count; ++i)
    train_labels[i] = static_cast<std::uint8_t>(i % 10);
  write_raw(dir.file("train-images-idx3-ubyte"),
            idx_bytes({train_count, 28, 28}, random_bytes(train_count * 28 * 28, 3)));
  write_raw(dir.file("train-labels-idx1-ubyte"), idx_bytes({train_count}, train_labels));
  write_gzip(dir.file("t10k-images-idx3-ubyte.gz"),
             idx_bytes({test_count, 28, 28}, random_bytes(test_count * 28 * 28, 4)));
  write_gzip(dir.file("t10k-labels-idx1-ubyte.gz"),
             idx_bytes({test_count},
                       std::vector<std::uint8_t>(train_labels.begin(), train_labels.begin() + 10)));
  run_config config;
  config.data.path = dir.path().string();
  const auto split = load_dataset(config);
  EXPECT_EQ(split->train.size(), train_count);
  EXPECT_EQ(split->test.size(), test_count);
  EXPECT_EQ(split->train.labels[13], 3);
  EXPECT_EQ(split->train.name, "fashion-mnist/train");

  // data.validation-fraction: the held-out images take no part in the normalisation, and the
  // test set herd evaluate reads (load_test_dataset) is normalised as the run's was.
  config.data.validation_fraction = 0.5;
  config.train.seed = 3;
  const auto held = load_dataset(config);
  const auto expected = herd::models::load_fashion_mnist(config.data.path, 0, 0.5, 3);
  EXPECT_EQ(held->validation.size(), 10u);
  EXPECT_EQ(held->train.input_normalisation.mean, expected.train.input_normalisation.mean);
  EXPECT_NE(held->train.input_normalisation.mean, split->train.input_normalisation.mean);
  EXPECT_EQ(held->validation.labels, expected.validation.labels);
  EXPECT_EQ(herd::models::load_test_dataset(config)->input_normalisation.mean,
            expected.test.input_normalisation.mean);
}

TEST(load_dataset, a_fashion_mnist_path_without_the_files_is_named_with_its_key) {
  temp_directory dir;
  run_config config;
  config.data.path = dir.file("not-here");
  EXPECT_THAT(data_error_of([&] { load_dataset(config); }),
              AllOf(HasSubstr("Fashion-MNIST not found in " + dir.file("not-here")),
                    HasSubstr("set data.path")));
}

// data.max-bytes bounds the texts as it bounds the other datasets (it used to be ignored there).
TEST(load_dataset, the_fortunes_texts_are_held_to_data_max_bytes) {
  if (!std::filesystem::exists("/var/lib/dpkg/info/fortunes.list"))
    GTEST_SKIP() << "the fortunes packages are not installed (scripts/install-deps.sh)";
  temp_directory dir;
  run_config config;
  config.data.dataset = "fortunes";
  config.data.cache_dir = dir.file("cache");
  config.data.max_bytes = 100000;
  EXPECT_THAT(data_error_of([&] { load_dataset(config); }),
              AllOf(HasSubstr("bytes of memory once loaded, more than data.max-bytes = 100000"),
                    HasSubstr("data.max-texts")));
  config.data.max_bytes = 0;
  EXPECT_GT(load_dataset(config)->train.size(), 1000u);
}

TEST(load_dataset, an_unknown_dataset_built_in_code_is_refused_as_validate_refuses_it) {
  run_config config;
  config.data.dataset = "imagenet";
  try {
    load_dataset(config);
    FAIL() << "load_dataset loaded data.dataset = imagenet";
  } catch (const herd::config::invalid_config& invalid) {
    ASSERT_EQ(invalid.errors().size(), 1u);
    EXPECT_EQ(invalid.errors()[0].key, "data.dataset");
    EXPECT_THAT(invalid.errors()[0].message,
                HasSubstr("data.dataset = \"imagenet\": unknown dataset; allowed: fashion-mnist"));
  }
}

// An npy configuration built in code that names no files said ": no such file", naming neither.
TEST(load_dataset, npy_files_left_unnamed_in_code_are_refused_naming_their_keys) {
  run_config config;
  config.data.dataset = "npy";
  config.data.train_features = "x.npy";
  try {
    load_dataset(config);
    FAIL() << "load_dataset loaded .npy files it was not given";
  } catch (const herd::config::invalid_config& invalid) {
    std::vector<std::string> keys;
    for (const auto& error : invalid.errors())
      keys.push_back(error.key);
    EXPECT_EQ(keys, (std::vector<std::string>{"data.train-labels", "data.test-features",
                                              "data.test-labels"}));
    EXPECT_THAT(invalid.errors()[0].message, HasSubstr("data.train-labels = \"\""));
  }
}

// The public header's functions for the caller's own data come with it.
TEST(load_dataset, the_public_header_also_gives_datasets_from_memory) {
  const auto data = herd::models::dataset_from_memory({0.5f, 1.0f, 1.5f, 2.0f}, {0, 1}, {2}, 2);
  EXPECT_EQ(data.size(), 2u);
}

// The names herd evaluate and herd predict print beside class numbers: Fashion-MNIST's garments
// and the fortunes' languages in label order; none for numbered labels.
TEST(class_names, name_the_labels_of_the_datasets_that_have_names) {
  run_config config;
  config.data.dataset = "fashion-mnist";
  const auto garments = herd::models::class_names(config);
  ASSERT_EQ(garments.size(), 10u);
  EXPECT_EQ(garments.front(), "T-shirt/top");
  EXPECT_EQ(garments[5], "Sandal");
  EXPECT_EQ(garments.back(), "Ankle boot");
  config.data.dataset = "fortunes";
  EXPECT_EQ(herd::models::class_names(config),
            (std::vector<std::string>{"en", "de", "it", "es", "pl", "cs", "ru"}));
  for (const char* numbered : {"synthetic", "npy"}) {
    config.data.dataset = numbered;
    EXPECT_TRUE(herd::models::class_names(config).empty()) << numbered;
  }
}

} // namespace
