// Datasets: pixel statistics, make_dataset's checks and normalisation, Fashion-MNIST from small
// files written here (and from the installed package when it is there), and the synthetic set.
#include "herd/dataset.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <iostream>
#include <limits>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include "idx_test_files.hpp"
#include "support/error_message.hpp"
#include "support/forked_call.hpp"

namespace herd::models {
namespace {

using test_files::idx_bytes;
using test_files::random_bytes;
using test_files::temp_directory;
using test_files::write_gzip;
using test_files::write_raw;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

idx_array make_array(std::vector<std::uint32_t> dims, std::vector<std::uint8_t> values) {
  idx_array array;
  array.dims = std::move(dims);
  array.values = std::move(values);
  return array;
}

struct moments {
  double mean = 0.0;
  double stddev = 0.0;
};

moments moments_of(const float* values, std::size_t count) {
  double sum = 0.0;
  for (std::size_t i = 0; i < count; ++i)
    sum += values[i];
  const double mean = sum / static_cast<double>(count);
  double squares = 0.0;
  for (std::size_t i = 0; i < count; ++i)
    squares += (values[i] - mean) * (values[i] - mean);
  return {mean, std::sqrt(squares / static_cast<double>(count))};
}

template <class Function>
std::string data_error_of(Function&& function) {
  return herd::testing::message_of<data_error>(std::forward<Function>(function));
}

// How one of the four Fashion-MNIST files is written into a test directory.
enum class file_form { gzip, raw, missing };

struct fashion_files {
  std::size_t train_count = 60;
  std::size_t test_count = 20;
  std::uint32_t side = 28;
  std::uint8_t bad_train_label = 0; // when non-zero, replaces train label 7
  file_form train_images = file_form::gzip;
  file_form train_labels = file_form::raw;
  file_form test_images = file_form::raw;
  file_form test_labels = file_form::gzip;
};

void write_idx_file(const temp_directory& dir, const std::string& stem, file_form form,
                    const std::vector<std::uint8_t>& bytes) {
  if (form == file_form::gzip)
    write_gzip(dir.file(stem + ".gz"), bytes);
  else if (form == file_form::raw)
    write_raw(dir.file(stem), bytes);
}

std::vector<std::uint8_t> cycling_labels(std::size_t count) {
  std::vector<std::uint8_t> labels(count);
  for (std::size_t i = 0; i < count; ++i)
    labels[i] = static_cast<std::uint8_t>(i % 10);
  return labels;
}

// Writes small Fashion-MNIST-shaped files; returns the training images' pixels.
std::vector<std::uint8_t> write_fashion_files(const temp_directory& dir,
                                              const fashion_files& spec) {
  const std::uint32_t pixels = spec.side * spec.side;
  auto train_pixels = random_bytes(spec.train_count * pixels, 11);
  auto train_labels = cycling_labels(spec.train_count);
  if (spec.bad_train_label != 0)
    train_labels[7] = spec.bad_train_label;
  const auto train_count = static_cast<std::uint32_t>(spec.train_count);
  const auto test_count = static_cast<std::uint32_t>(spec.test_count);
  write_idx_file(dir, "train-images-idx3-ubyte", spec.train_images,
                 idx_bytes({train_count, spec.side, spec.side}, train_pixels));
  write_idx_file(dir, "train-labels-idx1-ubyte", spec.train_labels,
                 idx_bytes({train_count}, train_labels));
  // Test pixels are dark only, so statistics taken from them could not pass for the train set's.
  auto test_pixels = random_bytes(spec.test_count * pixels, 12);
  for (std::uint8_t& value : test_pixels)
    value = static_cast<std::uint8_t>(value / 4);
  write_idx_file(dir, "t10k-images-idx3-ubyte", spec.test_images,
                 idx_bytes({test_count, spec.side, spec.side}, test_pixels));
  write_idx_file(dir, "t10k-labels-idx1-ubyte", spec.test_labels,
                 idx_bytes({test_count}, cycling_labels(spec.test_count)));
  return train_pixels;
}

TEST(pixel_statistics, match_a_direct_computation) {
  const auto pixels = random_bytes(5000, 21);
  double sum = 0.0;
  for (std::uint8_t value : pixels)
    sum += value / 255.0;
  const double mean = sum / 5000.0;
  double squares = 0.0;
  for (std::uint8_t value : pixels)
    squares += (value / 255.0 - mean) * (value / 255.0 - mean);
  const normalisation norm = pixel_statistics(make_array({50, 10, 10}, pixels));
  EXPECT_NEAR(norm.mean, mean, 1e-6);
  EXPECT_NEAR(norm.stddev, std::sqrt(squares / 5000.0), 1e-6);
}

TEST(pixel_statistics, constant_images_keep_a_unit_stddev) {
  const normalisation norm = pixel_statistics(make_array({2, 3}, std::vector<std::uint8_t>(6, 51)));
  EXPECT_NEAR(norm.mean, 0.2, 1e-6);
  EXPECT_EQ(norm.stddev, 1.0f);
}

TEST(make_dataset, flattens_images_and_normalises_each_pixel) {
  const auto images = make_array({2, 2, 3}, {0, 51, 102, 153, 204, 255, 255, 0, 0, 0, 0, 51});
  const auto labels = make_array({2}, {4, 1});
  const normalisation norm{0.5f, 0.25f};
  const dataset data = make_dataset(images, labels, 5, norm, "tiny", "img", "lbl");
  EXPECT_EQ(data.size(), 2u);
  EXPECT_EQ(data.features(), 6u);
  EXPECT_EQ(data.images.shape(), (std::vector<std::size_t>{2, 6}));
  EXPECT_EQ(data.labels, (std::vector<std::int32_t>{4, 1}));
  EXPECT_EQ(data.classes, 5);
  EXPECT_EQ(data.name, "tiny");
  for (std::size_t i = 0; i < images.values.size(); ++i)
    EXPECT_NEAR(data.images[i], (images.values[i] / 255.0 - 0.5) / 0.25, 1e-5) << i;
  // A model sees each image as one channel of rows x cols.
  EXPECT_EQ(data.sample_shape, (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_EQ(data.input_shape(), (std::vector<std::size_t>{1, 2, 3}));
}

TEST(make_dataset, flat_samples_have_a_flat_shape) {
  const dataset data = make_dataset(make_array({2, 3}, {0, 1, 2, 3, 4, 5}), make_array({2}, {0, 1}),
                                    2, normalisation{}, "flat", "img", "lbl");
  EXPECT_EQ(data.input_shape(), (std::vector<std::size_t>{3}));
  // A dataset built without a shape (the synthetic one) is flat.
  EXPECT_EQ(herd::models::make_synthetic_dataset(4, 7, 2, 1).input_shape(),
            (std::vector<std::size_t>{7}));
}

TEST(make_dataset, rejects_different_image_and_label_counts) {
  const auto images = make_array({3, 4}, random_bytes(12, 22));
  const auto labels = make_array({2}, {0, 1});
  EXPECT_THAT(data_error_of([&] {
                make_dataset(images, labels, 10, {}, "x", "/d/images-file", "/d/labels-file");
              }),
              HasSubstr("/d/images-file has 3 images but /d/labels-file has 2 labels"));
}

TEST(make_dataset, rejects_a_label_out_of_range_naming_index_and_value) {
  const auto images = make_array({4, 2}, random_bytes(8, 23));
  const auto labels = make_array({4}, {0, 9, 12, 3});
  EXPECT_THAT(data_error_of([&] {
                make_dataset(images, labels, 10, {}, "x", "/d/images-file", "/d/labels-file");
              }),
              AllOf(HasSubstr("/d/labels-file"), HasSubstr("label 12 at index 2"),
                    HasSubstr("10 classes")));
}

TEST(make_dataset, rejects_labels_with_more_than_one_dimension) {
  const auto images = make_array({2, 2}, random_bytes(4, 24));
  const auto labels = make_array({2, 1}, {0, 1});
  EXPECT_THAT(data_error_of([&] {
                make_dataset(images, labels, 10, {}, "x", "/d/images-file", "/d/labels-file");
              }),
              AllOf(HasSubstr("/d/labels-file"), HasSubstr("1-dimensional"), HasSubstr("2 x 1")));
}

TEST(make_dataset, rejects_images_with_one_dimension) {
  const auto images = make_array({4}, random_bytes(4, 25));
  const auto labels = make_array({4}, {0, 1, 2, 3});
  EXPECT_THAT(data_error_of([&] {
                make_dataset(images, labels, 10, {}, "x", "/d/images-file", "/d/labels-file");
              }),
              AllOf(HasSubstr("/d/images-file"), HasSubstr("at least 2 dimensions")));
}

TEST(make_dataset, rejects_no_classes_as_a_programming_error) {
  const auto images = make_array({1, 1}, {0});
  const auto labels = make_array({1}, {0});
  EXPECT_THROW(make_dataset(images, labels, 0, {}, "x", "i", "l"), std::invalid_argument);
}

TEST(load_fashion_mnist, empty_directory_says_how_to_install_it) {
  temp_directory dir;
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(dir.path().string()); }),
              AllOf(HasSubstr("Fashion-MNIST not found in " + dir.path().string()),
                    HasSubstr("train-images-idx3-ubyte"), HasSubstr("t10k-labels-idx1-ubyte"),
                    HasSubstr("apt-get install dataset-fashion-mnist"), HasSubstr("data.path")));
}

TEST(load_fashion_mnist, missing_directory_says_how_to_install_it) {
  temp_directory dir;
  const std::string missing = dir.file("nowhere");
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(missing); }),
              AllOf(HasSubstr("Fashion-MNIST not found in " + missing),
                    HasSubstr("no such directory"),
                    HasSubstr("apt-get install dataset-fashion-mnist")));
}

// data.path naming a file (a config file given by mistake) is not "no such directory".
TEST(load_fashion_mnist, a_file_for_the_directory_is_said_to_be_a_file) {
  temp_directory dir;
  const std::string file = dir.file("run.ini");
  std::ofstream(file) << "[train]\n";
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(file); }),
              AllOf(HasSubstr("Fashion-MNIST not found in " + file),
                    HasSubstr("it is a file, not a directory"),
                    Not(HasSubstr("no such directory"))));
}

TEST(load_fashion_mnist, one_missing_file_is_named) {
  temp_directory dir;
  fashion_files spec;
  spec.test_labels = file_form::missing;
  write_fashion_files(dir, spec);
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(dir.path().string()); }),
              AllOf(HasSubstr("missing t10k-labels-idx1-ubyte[.gz]"),
                    ::testing::Not(HasSubstr("missing train")),
                    HasSubstr("apt-get install dataset-fashion-mnist")));
}

TEST(load_fashion_mnist, reads_gzip_and_uncompressed_files) {
  for (const file_form form : {file_form::gzip, file_form::raw}) {
    temp_directory dir;
    fashion_files spec;
    // One run with every file compressed, one with none; the default spec mixes the two.
    spec.train_images = spec.train_labels = spec.test_images = spec.test_labels = form;
    const auto train_pixels = write_fashion_files(dir, spec);
    const train_test_split split = load_fashion_mnist(dir.path().string());
    EXPECT_EQ(split.train.size(), 60u);
    EXPECT_EQ(split.test.size(), 20u);
    EXPECT_EQ(split.train.features(), 784u);
    EXPECT_EQ(split.test.features(), 784u);
    EXPECT_EQ(split.train.classes, 10);
    EXPECT_EQ(split.test.classes, 10);
    EXPECT_EQ(split.train.name, "fashion-mnist/train");
    EXPECT_EQ(split.test.name, "fashion-mnist/test");
    EXPECT_EQ(split.train.labels[13], 3);
    EXPECT_EQ(split.test.labels[19], 9);
    const normalisation norm = pixel_statistics(make_array({60, 28, 28}, train_pixels));
    EXPECT_NEAR(split.train.images[1000], (train_pixels[1000] / 255.0 - norm.mean) / norm.stddev,
                1e-5);
  }
  temp_directory mixed;
  write_fashion_files(mixed, fashion_files{});
  EXPECT_EQ(load_fashion_mnist(mixed.path().string()).train.size(), 60u);
}

TEST(load_fashion_mnist, prefers_the_gzip_file_when_both_exist) {
  temp_directory dir;
  write_fashion_files(dir, fashion_files{});
  // A broken uncompressed twin next to the good train-images .gz must not be read.
  write_raw(dir.file("train-images-idx3-ubyte"), {1, 2, 3});
  EXPECT_EQ(load_fashion_mnist(dir.path().string()).train.size(), 60u);
}

TEST(load_fashion_mnist, normalises_both_sets_with_train_statistics) {
  temp_directory dir;
  write_fashion_files(dir, fashion_files{});
  const train_test_split split = load_fashion_mnist(dir.path().string());
  const moments train = moments_of(split.train.images.data(), split.train.images.size());
  EXPECT_NEAR(train.mean, 0.0, 1e-4);
  EXPECT_NEAR(train.stddev, 1.0, 1e-4);
  // The test pixels are a quarter as bright: normalised with the train statistics they sit well
  // below zero, which they would not with their own.
  const moments test = moments_of(split.test.images.data(), split.test.images.size());
  EXPECT_LT(test.mean, -0.8);
  // Both sets say what was done to them, so that new samples (herd predict) get the same: the
  // test set's bytes made into its features by input_normalisation, bit for bit.
  EXPECT_EQ(split.test.input_normalisation.mean, split.train.input_normalisation.mean);
  EXPECT_EQ(split.test.input_normalisation.stddev, split.train.input_normalisation.stddev);
  EXPECT_FALSE(split.train.input_normalisation.identity());
  const auto raw = read_idx(dir.file("t10k-images-idx3-ubyte"));
  ASSERT_EQ(raw.values.size(), split.test.images.size());
  for (std::size_t i = 0; i < raw.values.size(); ++i)
    ASSERT_EQ(split.test.input_normalisation.apply(raw.values[i] / 255.0f), split.test.images[i])
        << i;
}

// A validation set held out as the files are loaded takes no part in the pixel statistics: every
// set is normalised with those of the images left to train on.
TEST(load_fashion_mnist, a_validation_set_takes_no_part_in_the_normalisation) {
  temp_directory dir;
  fashion_files spec;
  spec.train_images = file_form::raw;
  write_fashion_files(dir, spec);
  const auto images = read_idx(dir.file("train-images-idx3-ubyte"));
  const auto labels = read_idx(dir.file("train-labels-idx1-ubyte"));
  const auto held = validation_choice(
      std::vector<std::int32_t>(labels.values.begin(), labels.values.end()), 10, 0.2, 5);
  const auto kept_statistics = pixel_statistics(images, &held);
  const auto whole_statistics = pixel_statistics(images);
  ASSERT_NE(kept_statistics.mean, whole_statistics.mean);

  const auto split = load_fashion_mnist(dir.path().string(), 0, 0.2, 5);
  EXPECT_EQ(split.validation.size(), 10u); // round(6 x 0.2) of each class
  EXPECT_EQ(split.train.size(), 50u);
  for (const dataset* set : {&split.train, &split.validation, &split.test}) {
    EXPECT_EQ(set->input_normalisation.mean, kept_statistics.mean) << set->name;
    EXPECT_EQ(set->input_normalisation.stddev, kept_statistics.stddev) << set->name;
  }
  // The samples held out are those hold_out_validation chooses, their pixels normalised so.
  const std::size_t pixels = 28 * 28;
  std::size_t first_held = 0;
  while (!held[first_held])
    ++first_held;
  for (std::size_t i = 0; i < pixels; ++i)
    ASSERT_EQ(split.validation.images[i],
              kept_statistics.apply(images.values[first_held * pixels + i] / 255.0f))
        << i;
  auto whole = load_fashion_mnist(dir.path().string());
  EXPECT_EQ(whole.train.input_normalisation.mean, whole_statistics.mean);
  // A set loaded with other statistics, renormalised to these (herd evaluate on a checkpoint that
  // recorded them), is bit for bit the set loaded with them.
  const auto test_as_run = renormalised(whole.test, split.test.input_normalisation);
  EXPECT_EQ(test_as_run.images.to_host(), split.test.images.to_host());
  EXPECT_EQ(test_as_run.input_normalisation.mean, kept_statistics.mean);
  EXPECT_TRUE(test_as_run.input_normalisation.scaled_bytes);
  auto not_bytes = whole.test;
  not_bytes.input_normalisation.scaled_bytes = false;
  EXPECT_THROW(renormalised(not_bytes, kept_statistics), std::invalid_argument);
  auto not_normalised_bytes = whole.test;
  not_normalised_bytes.images.data()[3] += 0.5f;
  EXPECT_THROW(renormalised(not_normalised_bytes, kept_statistics), std::invalid_argument);
  hold_out_validation(whole, 0.2, 5);
  EXPECT_EQ(whole.validation.labels, split.validation.labels);
  EXPECT_EQ(whole.train.labels, split.train.labels);
  // A share that would hold every image out is refused as hold_out_validation refuses it.
  temp_directory tiny;
  fashion_files one_of_each;
  one_of_each.train_count = 10;
  write_fashion_files(tiny, one_of_each);
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(tiny.path().string(), 0, 0.5, 5); }),
              HasSubstr("holds out every sample"));
  // A fraction of 0 holds nothing out and is the plain load.
  const auto none = load_fashion_mnist(dir.path().string(), 0, 0.0, 5);
  EXPECT_EQ(none.validation.size(), 0u);
  EXPECT_EQ(none.train.input_normalisation.mean, whole_statistics.mean);
}

TEST(pixel_statistics, leave_out_the_images_flagged) {
  const auto array = make_array({3, 2}, {0, 255, 51, 51, 255, 255});
  const std::vector<bool> first_and_last{true, false, true};
  const normalisation middle = pixel_statistics(array, &first_and_last);
  EXPECT_NEAR(middle.mean, 0.2, 1e-6);
  EXPECT_EQ(middle.stddev, 1.0f); // one value: no spread
  const std::vector<bool> wrong_count{true};
  EXPECT_THROW(pixel_statistics(array, &wrong_count), std::invalid_argument);
}

TEST(load_fashion_mnist, rejects_images_that_are_not_28_by_28) {
  temp_directory dir;
  fashion_files spec;
  spec.side = 20;
  write_fashion_files(dir, spec);
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(dir.path().string()); }),
              AllOf(HasSubstr(dir.file("train-images-idx3-ubyte.gz")), HasSubstr("28 x 28"),
                    HasSubstr("60 x 20 x 20")));
}

TEST(load_fashion_mnist, rejects_a_label_beyond_the_ten_classes) {
  temp_directory dir;
  fashion_files spec;
  spec.bad_train_label = 10;
  write_fashion_files(dir, spec);
  EXPECT_THAT(
      data_error_of([&] { load_fashion_mnist(dir.path().string()); }),
      AllOf(HasSubstr(dir.file("train-labels-idx1-ubyte")), HasSubstr("label 10 at index 7")));
}

TEST(load_fashion_mnist, reports_a_corrupt_file_by_its_path) {
  temp_directory dir;
  write_fashion_files(dir, fashion_files{});
  write_raw(dir.file("t10k-images-idx3-ubyte"), idx_bytes({20, 28, 28}, random_bytes(100, 26)));
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(dir.path().string()); }),
              AllOf(HasSubstr(dir.file("t10k-images-idx3-ubyte")), HasSubstr("truncated")));
}

// The default spec's files: 60 + 20 images of 784 pixels and their labels, 5 bytes each in memory.
constexpr std::uint64_t default_spec_memory_bytes = (60 * 784 + 60 + 20 * 784 + 20) * 5;

TEST(load_fashion_mnist,
     a_dataset_over_data_max_bytes_is_refused_naming_the_file_and_both_numbers) {
  temp_directory dir;
  write_fashion_files(dir, fashion_files{});
  ASSERT_EQ(default_spec_memory_bytes, 314000u);
  EXPECT_EQ(load_fashion_mnist(dir.path().string(), 314000).train.size(), 60u);
  // The training images alone cross 100000 bytes: they are named, with their declared size.
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(dir.path().string(), 100000); }),
              AllOf(HasSubstr(dir.file("train-images-idx3-ubyte.gz")),
                    HasSubstr("60 x 28 x 28 = 47040 values, 235200 bytes of memory once loaded"),
                    HasSubstr("more than data.max-bytes = 100000"),
                    ::testing::Not(HasSubstr("physical memory"))));
  // One byte short: the last file crosses the limit, with the total.
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(dir.path().string(), 313999); }),
              AllOf(HasSubstr(dir.file("t10k-labels-idx1-ubyte.gz")),
                    HasSubstr("the header says 20 values, 100 bytes of memory once loaded (314000 "
                              "with the files before it), more than data.max-bytes = 313999")));
}

TEST(load_fashion_mnist, a_header_over_the_limit_is_refused_before_anything_is_read) {
  temp_directory dir;
  write_fashion_files(dir, fashion_files{});
  // A raw file whose size matches its header: plausible, but over any limit set.
  const std::uint32_t count = 2000;
  write_raw(dir.file("t10k-images-idx3-ubyte"),
            idx_bytes({count, 28, 28}, std::vector<std::uint8_t>(std::size_t{count} * 784, 1)));
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(dir.path().string(), 1000000); }),
              AllOf(HasSubstr(dir.file("t10k-images-idx3-ubyte")),
                    HasSubstr("2000 x 28 x 28 = 1568000 values"),
                    HasSubstr("data.max-bytes = 1000000")));
  // A gzip file claiming five million images refuses itself, whatever the limit.
  write_gzip(dir.file("train-images-idx3-ubyte.gz"),
             idx_bytes({5000000, 28, 28}, std::vector<std::uint8_t>(4096, 0)));
  EXPECT_THAT(data_error_of([&] { load_fashion_mnist(dir.path().string()); }),
              AllOf(HasSubstr(dir.file("train-images-idx3-ubyte.gz")),
                    HasSubstr("5000000 x 28 x 28 = 3920000000 values"),
                    HasSubstr("expands to at most")));
}

TEST(load_fashion_mnist, zero_means_half_the_physical_memory) {
  const std::uint64_t physical = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) *
                                 static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_GT(default_max_data_bytes(), 0u);
  EXPECT_LE(default_max_data_bytes(), physical / 2);
  temp_directory dir;
  write_fashion_files(dir, fashion_files{});
  EXPECT_EQ(load_fashion_mnist(dir.path().string(), 0).train.size(), 60u);
}

TEST(load_fashion_mnist, a_fifo_among_the_files_is_refused_without_blocking) {
  temp_directory dir;
  fashion_files spec;
  spec.test_labels = file_form::missing;
  write_fashion_files(dir, spec);
  const std::string fifo = dir.file("t10k-labels-idx1-ubyte");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto outcome = herd::testing::run_forked(
      [&] {
        try {
          load_fashion_mnist(dir.path().string());
          return std::string("accepted");
        } catch (const data_error& error) {
          return std::string(error.what());
        }
      },
      std::chrono::seconds(20));
  EXPECT_TRUE(outcome.finished) << "load_fashion_mnist blocked on a FIFO";
  EXPECT_THAT(outcome.report, AllOf(HasSubstr(fifo), HasSubstr("a FIFO")));
}

// Needs Debian's dataset-fashion-mnist package; skipped where it is not installed.
TEST(load_fashion_mnist, installed_dataset_has_the_published_shape) {
  if (!std::filesystem::is_directory(default_fashion_mnist_dir)) {
    if (std::getenv("HERD_REQUIRE_DATA") != nullptr) // scripts/test.sh: the dataset must be there
      FAIL() << default_fashion_mnist_dir << " is missing: apt-get install dataset-fashion-mnist";
    GTEST_SKIP() << default_fashion_mnist_dir
                 << " not found (apt-get install dataset-fashion-mnist)";
  }
  const auto start = std::chrono::steady_clock::now();
  const train_test_split split = load_fashion_mnist();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::cout << "loaded Fashion-MNIST in " << took.count() << " s\n";
  RecordProperty("load_seconds", std::to_string(took.count()));

  EXPECT_EQ(split.train.size(), 60000u);
  EXPECT_EQ(split.test.size(), 10000u);
  EXPECT_EQ(split.train.features(), 784u);
  EXPECT_EQ(split.test.features(), 784u);
  EXPECT_EQ(split.train.classes, 10);
  std::vector<int> train_per_class(10), test_per_class(10);
  for (std::int32_t label : split.train.labels)
    ++train_per_class.at(static_cast<std::size_t>(label));
  for (std::int32_t label : split.test.labels)
    ++test_per_class.at(static_cast<std::size_t>(label));
  EXPECT_EQ(train_per_class, std::vector<int>(10, 6000));
  EXPECT_EQ(test_per_class, std::vector<int>(10, 1000));
  const moments train = moments_of(split.train.images.data(), split.train.images.size());
  EXPECT_NEAR(train.mean, 0.0, 1e-3);
  EXPECT_NEAR(train.stddev, 1.0, 1e-3);
}

TEST(make_synthetic_dataset, has_the_requested_shape_and_cycling_labels) {
  const dataset data = make_synthetic_dataset(103, 12, 4, 7);
  EXPECT_EQ(data.size(), 103u);
  EXPECT_EQ(data.features(), 12u);
  EXPECT_EQ(data.classes, 4);
  EXPECT_EQ(data.name, "synthetic");
  for (std::size_t i = 0; i < data.size(); ++i)
    EXPECT_EQ(data.labels[i], static_cast<std::int32_t>(i % 4));
}

TEST(make_synthetic_dataset, same_seed_same_data_other_seed_other_data) {
  const dataset first = make_synthetic_dataset(200, 8, 3, 42);
  const dataset again = make_synthetic_dataset(200, 8, 3, 42);
  const dataset other = make_synthetic_dataset(200, 8, 3, 43);
  ASSERT_EQ(first.images.size(), other.images.size());
  EXPECT_EQ(relative_difference(first.images.data(), again.images.data(), first.images.size()),
            0.0);
  EXPECT_GT(relative_difference(first.images.data(), other.images.data(), first.images.size()),
            0.1);
}

TEST(make_synthetic_dataset, features_are_roughly_standardised) {
  const dataset data = make_synthetic_dataset(4000, 32, 10, 5);
  const moments all = moments_of(data.images.data(), data.images.size());
  // Ten centres make the per-feature mean itself random (sd about 0.3 over ten classes), so the
  // bounds are loose; they still catch a forgotten scale or offset.
  EXPECT_NEAR(all.mean, 0.0, 0.25);
  EXPECT_NEAR(all.stddev, 1.0, 0.25);
}

// Classify each sample by the nearest class mean (estimated on the first half, scored on the
// second): a weak stand-in for a small MLP that must still score highly.
TEST(make_synthetic_dataset, classes_are_separable_by_nearest_class_mean) {
  const std::size_t samples = 2000;
  const std::size_t features = 16;
  const int classes = 10;
  const dataset data = make_synthetic_dataset(samples, static_cast<int>(features), classes, 3);
  std::vector<double> means(classes * features, 0.0);
  std::vector<int> counts(classes, 0);
  for (std::size_t i = 0; i < samples / 2; ++i) {
    const auto label = static_cast<std::size_t>(data.labels[i]);
    ++counts[label];
    for (std::size_t feature = 0; feature < features; ++feature)
      means[label * features + feature] += data.images.row(i)[feature];
  }
  for (std::size_t label = 0; label < static_cast<std::size_t>(classes); ++label)
    for (std::size_t feature = 0; feature < features; ++feature)
      means[label * features + feature] /= counts[label];
  std::size_t correct = 0;
  for (std::size_t i = samples / 2; i < samples; ++i) {
    double best_distance = std::numeric_limits<double>::max();
    std::int32_t best_label = -1;
    for (int label = 0; label < classes; ++label) {
      double distance = 0.0;
      for (std::size_t feature = 0; feature < features; ++feature) {
        const double difference = data.images.row(i)[feature] -
                                  means[static_cast<std::size_t>(label) * features + feature];
        distance += difference * difference;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best_label = label;
      }
    }
    correct += best_label == data.labels[i] ? 1 : 0;
  }
  const std::size_t scored = samples - samples / 2;
  EXPECT_GT(static_cast<double>(correct) / static_cast<double>(scored), 0.95);
}

TEST(make_synthetic_dataset, rejects_empty_shapes) {
  EXPECT_THROW(make_synthetic_dataset(0, 4, 2, 1), std::invalid_argument);
  EXPECT_THROW(make_synthetic_dataset(10, 0, 2, 1), std::invalid_argument);
  EXPECT_THROW(make_synthetic_dataset(10, 4, 0, 1), std::invalid_argument);
}

// -- hold_out_validation -------------------------------------------------------------------------

// Each sample's label and first feature, which tell the synthetic samples apart.
std::multiset<std::pair<std::int32_t, float>> samples_of(const dataset& data) {
  std::multiset<std::pair<std::int32_t, float>> samples;
  for (std::size_t i = 0; i < data.size(); ++i)
    samples.emplace(data.labels[i], data.images.row(i)[0]);
  return samples;
}

std::vector<std::size_t> class_counts(const dataset& data) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(data.classes));
  for (auto label : data.labels)
    ++counts[static_cast<std::size_t>(label)];
  return counts;
}

TEST(hold_out_validation, moves_each_classs_share_and_keeps_every_sample_once) {
  auto split = make_synthetic_split(1000, 50, 6, 4, 3); // 250 of each class
  const auto before = samples_of(split.train);
  const auto test_before = samples_of(split.test);
  hold_out_validation(split, 0.1, 7);
  EXPECT_EQ(class_counts(split.validation), (std::vector<std::size_t>{25, 25, 25, 25}));
  EXPECT_EQ(class_counts(split.train), (std::vector<std::size_t>{225, 225, 225, 225}));
  auto together = samples_of(split.train);
  const auto held = samples_of(split.validation);
  together.insert(held.begin(), held.end());
  EXPECT_EQ(together, before);                    // nothing lost, nothing twice
  EXPECT_EQ(samples_of(split.test), test_before); // the test set is not touched
  EXPECT_EQ(split.validation.input_shape(), split.train.input_shape());
  EXPECT_EQ(split.validation.classes, 4);
  // Drawn at random, not the first samples of each class.
  const auto original = make_synthetic_split(1000, 50, 6, 4, 3).train;
  std::vector<std::size_t> firsts;
  std::vector<std::size_t> taken(4);
  for (std::size_t row = 0; row < original.size(); ++row)
    if (taken[static_cast<std::size_t>(original.labels[row])]++ < 25)
      firsts.push_back(row);
  EXPECT_NE(held, samples_of(subset(original, firsts)));
}

TEST(hold_out_validation, the_same_seed_holds_out_the_same_samples_another_seed_others) {
  const auto split = make_synthetic_split(400, 20, 5, 4, 2);
  auto a = split;
  auto b = split;
  auto c = split;
  hold_out_validation(a, 0.2, 11);
  hold_out_validation(b, 0.2, 11);
  hold_out_validation(c, 0.2, 12);
  EXPECT_EQ(a.validation.images.to_host(), b.validation.images.to_host());
  EXPECT_EQ(a.train.images.to_host(), b.train.images.to_host());
  EXPECT_NE(a.validation.images.to_host(), c.validation.images.to_host());
}

TEST(hold_out_validation, refuses_a_share_that_leaves_either_part_empty) {
  auto tiny = make_synthetic_split(4, 4, 3, 4, 1); // one sample of each class
  EXPECT_THAT(herd::testing::message_of<data_error>([&] { hold_out_validation(tiny, 0.2, 1); }),
              AllOf(HasSubstr("data.validation-fraction = 0.2 of the 4 training samples"),
                    HasSubstr("holds out no sample"), HasSubstr("raise it")));
  EXPECT_EQ(tiny.train.size(), 4u); // left as it was
  EXPECT_THAT(herd::testing::message_of<data_error>([&] { hold_out_validation(tiny, 0.9, 1); }),
              AllOf(HasSubstr("holds out every sample"), HasSubstr("lower it")));
  EXPECT_THAT(
      herd::testing::message_of<std::invalid_argument>([&] { hold_out_validation(tiny, 1.0, 1); }),
      HasSubstr("between 0 and 1"));
  auto split = make_synthetic_split(40, 4, 3, 4, 1);
  hold_out_validation(split, 0.5, 1);
  EXPECT_THAT(
      herd::testing::message_of<std::invalid_argument>([&] { hold_out_validation(split, 0.5, 1); }),
      HasSubstr("already has a validation set"));
}

} // namespace
} // namespace herd::models

namespace {

TEST(make_synthetic_split, train_and_test_share_the_clusters_but_not_the_samples) {
  const auto split = herd::models::make_synthetic_split(400, 200, 12, 4, 9);
  EXPECT_EQ(split.train.size(), 400u);
  EXPECT_EQ(split.test.size(), 200u);
  EXPECT_EQ(split.train.features(), 12u);
  EXPECT_EQ(split.test.classes, 4);
  // Class means estimated on the training set classify the test set: same clusters.
  std::vector<double> means(std::size_t{4} * 12, 0.0);
  for (std::size_t i = 0; i < split.train.size(); ++i)
    for (std::size_t f = 0; f < 12; ++f)
      means[static_cast<std::size_t>(split.train.labels[i]) * 12 + f] +=
          split.train.images.row(i)[f] / 100.0;
  std::size_t correct = 0;
  for (std::size_t i = 0; i < split.test.size(); ++i) {
    int best = 0;
    double best_distance = 1e300;
    for (int c = 0; c < 4; ++c) {
      double distance = 0.0;
      for (std::size_t f = 0; f < 12; ++f) {
        const double d = split.test.images.row(i)[f] - means[static_cast<std::size_t>(c) * 12 + f];
        distance += d * d;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best = c;
      }
    }
    correct += best == split.test.labels[i] ? 1 : 0;
  }
  EXPECT_GT(correct, 190u);
  // Different noise: the first test sample is not the first training sample.
  EXPECT_NE(split.train.images.row(0)[0], split.test.images.row(0)[0]);
}

} // namespace
