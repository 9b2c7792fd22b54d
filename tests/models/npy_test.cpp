// The .npy reader and data.dataset = npy: every supported dtype read right, C-order shapes of 2
// and 4 dimensions, and each refusal a data_error naming the file and the problem. The files are
// written here from bytes (support/npy_file.hpp), so no Python is needed.
#include "models/npy.hpp"

#include <cstdint>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "support/npy_file.hpp"
#include "support/temp_directory.hpp"

namespace herd::models {
namespace {

using herd::testing::npy_bytes;
using herd::testing::npy_options;
using herd::testing::npy_values;
using herd::testing::write_bytes;
using herd::testing::write_npy;
using ::testing::AllOf;
using ::testing::HasSubstr;

class npy_test : public ::testing::Test {
protected:
  std::string path(const std::string& name) const { return dir_.file(name); }

  // Valid files for a small problem: 4 training samples of 2 x 3 floats, 2 test samples.
  npy_files valid_files() {
    npy_files files{
        path("train_x.npy"), path("train_y.npy"), path("test_x.npy"), path("test_y.npy"), "", ""};
    write_npy<float>(files.train_features, "<f4", {4, 6}, std::vector<float>(24, 0.5f));
    write_npy<std::int32_t>(files.train_labels, "<i4", {4}, {0, 1, 2, 1});
    write_npy<float>(files.test_features, "<f4", {2, 6}, std::vector<float>(12, 0.25f));
    write_npy<std::int32_t>(files.test_labels, "<i4", {2}, {1, 0});
    return files;
  }

  // The message load_npy_dataset throws, or "" when it loads.
  std::string load_error(const npy_files& files, std::uint64_t max_bytes = 0) {
    try {
      load_npy_dataset(files, max_bytes);
    } catch (const data_error& error) {
      return error.what();
    }
    return "";
  }

  std::string header_error(const std::string& file) {
    try {
      read_npy_header(file);
    } catch (const data_error& error) {
      return error.what();
    }
    return "";
  }

  herd::testing::temp_directory dir_;
};

TEST_F(npy_test, a_validation_pair_is_read_as_the_validation_set_and_checked_like_the_others) {
  npy_files files = valid_files();
  files.validation_features = path("val_x.npy");
  files.validation_labels = path("val_y.npy");
  write_npy<float>(files.validation_features, "<f4", {3, 6}, std::vector<float>(18, 0.75f));
  write_npy<std::int32_t>(files.validation_labels, "<i4", {3}, {4, 0, 1}); // class 4: only here
  auto split = load_npy_dataset(files);
  ASSERT_EQ(split.validation.size(), 3u);
  EXPECT_EQ(split.validation.labels, (std::vector<std::int32_t>{4, 0, 1}));
  EXPECT_EQ(split.validation.images.data()[17], 0.75f);
  EXPECT_EQ(split.validation.name, "npy/validation");
  EXPECT_EQ(split.train.classes, 5);
  EXPECT_EQ(split.validation.classes, 5);
  EXPECT_EQ(split.train.size(), 4u); // the training set stays whole

  write_npy<float>(files.validation_features, "<f4", {3, 5}, std::vector<float>(15, 0.75f));
  EXPECT_THAT(load_error(files), AllOf(HasSubstr("val_x.npy: samples of 5, but"),
                                       HasSubstr("train and validation samples must match")));
  write_npy<float>(files.validation_features, "<f4", {2, 6}, std::vector<float>(12, 0.75f));
  EXPECT_THAT(load_error(files), AllOf(HasSubstr("val_x.npy"), HasSubstr("val_y.npy")));
  // Counted against the memory limit after the others: 24 + 4 + 12 + 2 values, then 18 + 3.
  write_npy<float>(files.validation_features, "<f4", {3, 6}, std::vector<float>(18, 0.75f));
  EXPECT_EQ(load_error(files, 4 * 63), "");
  EXPECT_THAT(load_error(files, 4 * 50),
              AllOf(HasSubstr("val_x.npy"), HasSubstr("with the files before it")));
}

TEST_F(npy_test, reads_every_feature_dtype) {
  npy_files files = valid_files();
  const std::vector<float> expected{0.0f, 1.5f, -2.0f, 0.25f, 3.0f, -0.5f};
  write_npy<float>(files.train_features, "<f4", {2, 3}, expected);
  write_npy<std::int32_t>(files.train_labels, "<i4", {2}, {0, 1});
  write_npy<float>(files.test_features, "<f4", {1, 3}, {1.0f, 2.0f, 3.0f});
  write_npy<std::int32_t>(files.test_labels, "<i4", {1}, {1});
  auto split = load_npy_dataset(files);
  ASSERT_EQ(split.train.size(), 2u);
  ASSERT_EQ(split.train.features(), 3u);
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(split.train.images.data()[i], expected[i]) << i;

  write_npy<double>(files.train_features, "<f8", {2, 3}, {0.0, 1.5, -2.0, 0.25, 3.0, -0.5});
  split = load_npy_dataset(files);
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(split.train.images.data()[i], expected[i]) << i;

  write_npy<std::uint8_t>(files.train_features, "|u1", {2, 3}, {0, 255, 51, 102, 1, 204});
  split = load_npy_dataset(files);
  const std::vector<float> scaled{0.0f, 1.0f, 0.2f, 0.4f, 1.0f / 255.0f, 0.8f};
  for (std::size_t i = 0; i < scaled.size(); ++i)
    EXPECT_FLOAT_EQ(split.train.images.data()[i], scaled[i]) << i;
}

TEST_F(npy_test, reads_every_label_dtype_and_counts_classes_over_both_sets) {
  npy_files files = valid_files();
  write_npy<std::int64_t>(files.train_labels, "<i8", {4}, {3, 0, 1, 2});
  write_npy<std::uint8_t>(files.test_labels, "|u1", {2}, {6, 0}); // a class only the test set has
  auto split = load_npy_dataset(files);
  EXPECT_EQ(split.train.labels, (std::vector<std::int32_t>{3, 0, 1, 2}));
  EXPECT_EQ(split.test.labels, (std::vector<std::int32_t>{6, 0}));
  EXPECT_EQ(split.train.classes, 7);
  EXPECT_EQ(split.test.classes, 7);
  write_npy<std::int32_t>(files.train_labels, "<i4", {4}, {0, 1, 9, 1});
  EXPECT_EQ(load_npy_dataset(files).train.classes, 10);
}

TEST_F(npy_test, c_order_shapes_of_two_three_and_four_dimensions) {
  npy_files files = valid_files();
  // n x c x h x w = 2 x 2 x 2 x 3: value i at flat index i, the sample shape c x h x w.
  std::vector<float> values(24);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i);
  write_npy<float>(files.train_features, "<f4", {2, 2, 2, 3}, values);
  write_npy<std::int32_t>(files.train_labels, "<i4", {2}, {0, 1});
  write_npy<float>(files.test_features, "<f4", {1, 2, 2, 3}, std::vector<float>(12, 1.0f));
  write_npy<std::int32_t>(files.test_labels, "<i4", {1}, {0});
  auto split = load_npy_dataset(files);
  EXPECT_EQ(split.train.sample_shape, (std::vector<std::size_t>{2, 2, 3}));
  EXPECT_EQ(split.train.features(), 12u);
  EXPECT_EQ(split.test.sample_shape, (std::vector<std::size_t>{2, 2, 3}));
  // C order: sample 1, channel 0, row 1, column 2 is flat index 12 + 0 + 3 + 2.
  EXPECT_EQ(split.train.images.data()[12 + 5], 17.0f);

  // n x h x w: one channel.
  write_npy<float>(files.train_features, "<f4", {2, 2, 3}, std::vector<float>(12, 0.0f));
  write_npy<float>(files.test_features, "<f4", {1, 2, 3}, std::vector<float>(6, 0.0f));
  EXPECT_EQ(load_npy_dataset(files).train.sample_shape, (std::vector<std::size_t>{1, 2, 3}));
  // ... the same samples as n x 1 x h x w, in either file.
  write_npy<float>(files.test_features, "<f4", {1, 1, 2, 3}, std::vector<float>(6, 0.0f));
  EXPECT_EQ(load_npy_dataset(files).test.sample_shape, (std::vector<std::size_t>{1, 2, 3}));
  write_npy<float>(files.test_features, "<f4", {1, 2, 2, 3}, std::vector<float>(12, 0.0f));
  EXPECT_THAT(load_error(files), HasSubstr("test_x.npy: samples of 2 x 2 x 3, but " +
                                           files.train_features + " holds samples of 1 x 2 x 3"));

  // n x d: flat.
  split = load_npy_dataset(valid_files());
  EXPECT_TRUE(split.train.sample_shape.empty());
  EXPECT_EQ(split.train.input_shape(), (std::vector<std::size_t>{6}));
  EXPECT_EQ(split.train.images.rows(), 4u);
}

TEST_F(npy_test, reads_format_versions_2_and_3) {
  npy_files files = valid_files();
  for (int major : {2, 3}) {
    npy_options options;
    options.major = major;
    write_npy<float>(files.train_features, "<f4", {4, 6}, std::vector<float>(24, 0.5f), options);
    EXPECT_EQ(load_npy_dataset(files).train.size(), 4u) << "version " << major;
  }
}

// Integer features (token ids as tokenizers give them) load as the same floats; a whole number a
// float32 cannot hold exactly is refused by place.
TEST_F(npy_test, integer_features_load_as_whole_floats_within_2_to_the_24) {
  npy_files files = valid_files();
  const std::vector<std::int64_t> ids{3, -1, 16777216, 0, 7, 2, 1, 1, 1, 1, 1, 1,
                                      5, 4,  3,        2, 1, 0, 9, 9, 9, 9, 9, 9};
  write_npy<std::int64_t>(files.train_features, "<i8", {4, 6}, ids);
  write_npy<std::int32_t>(files.test_features, "<i4", {2, 6}, std::vector<std::int32_t>(12, -4));
  const auto split = load_npy_dataset(files);
  for (std::size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(split.train.images.data()[i], static_cast<float>(ids[i])) << i;
  EXPECT_EQ(split.test.images.data()[11], -4.0f);
  auto beyond = ids;
  beyond[13] = -16777217;
  write_npy<std::int64_t>(files.train_features, "<i8", {4, 6}, beyond);
  EXPECT_THAT(load_error(files),
              AllOf(HasSubstr(files.train_features),
                    HasSubstr("value -16777217 at sample 2, position 1 (flat index 13) is beyond 16777216")));
}

TEST_F(npy_test, refuses_a_wrong_dtype_naming_the_file) {
  npy_files files = valid_files();
  write_npy<std::int16_t>(files.train_features, "<i2", {4, 6}, std::vector<std::int16_t>(24, 1));
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.train_features), HasSubstr("'<i2'")));
  files = valid_files();
  write_npy<float>(files.test_labels, "<f4", {2}, {0.0f, 1.0f});
  EXPECT_THAT(load_error(files),
              AllOf(HasSubstr(files.test_labels), HasSubstr("labels of dtype '<f4'")));
  files = valid_files();
  write_npy<std::int16_t>(files.train_labels, "<i2", {4}, {0, 1, 2, 1});
  EXPECT_THAT(load_error(files),
              AllOf(HasSubstr(files.train_labels), HasSubstr("unsupported dtype '<i2'"),
                    HasSubstr("features '<f4' float32, '<f8' float64, '<i4' int32, '<i8' int64 or "
                              "'|u1' uint8; labels")));
  write_npy<float>(files.train_labels, ">f4", {4}, {0, 1, 2, 1});
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.train_labels), HasSubstr("big-endian")));
  // Class names saved as strings: how to number them.
  write_npy<std::uint32_t>(files.train_labels, "<U1", {4}, {'a', 'b', 'a', 'c'});
  EXPECT_THAT(load_error(files),
              AllOf(HasSubstr("unsupported dtype '<U1'"),
                    HasSubstr("these are text: number the class names (or tokens) first, e.g. "
                              "np.unique(y, return_inverse=True)[1]")));
}

TEST_F(npy_test, refuses_a_wrong_rank_naming_the_file) {
  npy_files files = valid_files();
  write_npy<float>(files.train_features, "<f4", {24}, std::vector<float>(24, 0.5f));
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.train_features),
                                       HasSubstr("at least 2 dimensions"), HasSubstr("24")));
  files = valid_files();
  write_npy<std::int32_t>(files.test_labels, "<i4", {2, 1}, {1, 0});
  EXPECT_THAT(load_error(files),
              AllOf(HasSubstr(files.test_labels), HasSubstr("labels must be 1-dimensional"),
                    HasSubstr("2 x 1")));
}

TEST_F(npy_test, refuses_a_truncated_file_naming_it) {
  npy_files files = valid_files();
  std::string bytes = npy_bytes("<f4", {4, 6}, npy_values(std::vector<float>(24, 0.5f)));
  write_bytes(files.train_features, bytes.substr(0, bytes.size() - 1));
  EXPECT_THAT(load_error(files),
              AllOf(HasSubstr(files.train_features), HasSubstr("truncated"), HasSubstr("4 x 6")));
  // Inside the header, and inside the magic.
  write_bytes(files.train_features, bytes.substr(0, 40));
  EXPECT_THAT(header_error(files.train_features), HasSubstr("truncated"));
  write_bytes(files.train_features, bytes.substr(0, 5));
  EXPECT_THAT(header_error(files.train_features), HasSubstr("truncated"));
  // Bytes after the data are refused too.
  write_bytes(files.train_features, bytes + "x");
  EXPECT_THAT(header_error(files.train_features), HasSubstr("1 unexpected byte after the data"));
}

TEST_F(npy_test, refuses_fortran_order) {
  npy_files files = valid_files();
  npy_options options;
  options.fortran = true;
  write_npy<float>(files.test_features, "<f4", {2, 6}, std::vector<float>(12, 0.5f), options);
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.test_features), HasSubstr("fortran_order")));
}

TEST_F(npy_test, refuses_a_bad_magic_and_an_unknown_version) {
  npy_files files = valid_files();
  npy_options options;
  options.magic = "\x93NUMPZ";
  write_npy<float>(files.train_features, "<f4", {4, 6}, std::vector<float>(24, 0.5f), options);
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.train_features), HasSubstr("bad magic")));
  options = {};
  options.major = 4;
  write_npy<float>(files.train_features, "<f4", {4, 6}, std::vector<float>(24, 0.5f), options);
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.train_features), HasSubstr("version 4.0")));
}

TEST_F(npy_test, refuses_a_header_too_long_before_reading_it) {
  const auto file = path("long.npy");
  // Version 2 declares a 4 GiB header in a small file: refused on the length alone.
  std::string bytes = "\x93NUMPY";
  bytes += std::string("\x02\x00", 2);
  bytes += std::string("\xff\xff\xff\xff", 4);
  write_bytes(file, bytes + std::string(100, ' '));
  EXPECT_THAT(header_error(file), AllOf(HasSubstr(file), HasSubstr("header too long")));
  // A real header padded past the limit.
  npy_options options;
  options.major = 2;
  options.dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }" +
                 std::string(npy_max_header_bytes, ' ');
  write_bytes(file, npy_bytes("<f4", {1, 1}, npy_values(std::vector<float>{1.0f}), options));
  EXPECT_THAT(header_error(file), HasSubstr("header too long"));
}

TEST_F(npy_test, refuses_headers_that_are_not_the_dict_np_save_writes) {
  const auto file = path("odd.npy");
  const auto data = npy_values(std::vector<float>{1.0f, 2.0f});
  const std::vector<std::pair<std::string, std::string>> cases{
      {"['descr', '<f4']", "not a dict"},
      {"{'descr': '<f4', 'shape': (1, 2), }", "no 'fortran_order' key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), 'x': 1}", "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1, 2)}", "twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1, 2]}", "tuple"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1, 2)}", "structured"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1, 2)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2)} trailing", "after the header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, "
       "99999999999)}",
       "64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2)}", "is zero"},
  };
  for (const auto& [dict, problem] : cases) {
    npy_options options;
    options.dict = dict;
    write_bytes(file, npy_bytes("<f4", {1, 2}, data, options));
    EXPECT_THAT(header_error(file), AllOf(HasSubstr(file), HasSubstr(problem))) << dict;
  }
}

TEST_F(npy_test, refuses_a_count_mismatch_naming_both_files) {
  npy_files files = valid_files();
  write_npy<std::int32_t>(files.train_labels, "<i4", {3}, {0, 1, 2});
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.train_features), HasSubstr("4 samples"),
                                       HasSubstr(files.train_labels), HasSubstr("3 labels")));
  files = valid_files();
  write_npy<float>(files.test_features, "<f4", {2, 5}, std::vector<float>(10, 0.5f));
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.test_features),
                                       HasSubstr(files.train_features), HasSubstr("must match")));
}

TEST_F(npy_test, refuses_negative_or_huge_labels_and_non_finite_features) {
  npy_files files = valid_files();
  write_npy<std::int32_t>(files.train_labels, "<i4", {4}, {0, -1, 2, 1});
  EXPECT_THAT(load_error(files),
              AllOf(HasSubstr(files.train_labels), HasSubstr("label -1 at index 1")));
  write_npy<std::int64_t>(files.train_labels, "<i8", {4}, {0, 1, std::int64_t{1} << 40, 1});
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.train_labels), HasSubstr("out of range")));
  files = valid_files();
  std::vector<double> values(24, 0.5);
  values[7] = 1e300; // finite as float64, not as float32
  write_npy<double>(files.train_features, "<f8", {4, 6}, values);
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.train_features), HasSubstr("at sample 1, position 1 (flat index 7)"),
                                       HasSubstr("finite")));
}

TEST_F(npy_test, refuses_a_dataset_over_max_bytes_before_reading_values) {
  npy_files files = valid_files();
  // 24 + 4 + 12 + 2 values of 4 bytes: 96, 112, 160, 168. The test features cross 150.
  EXPECT_EQ(load_error(files, 168), "");
  EXPECT_THAT(load_error(files, 150),
              AllOf(HasSubstr(files.test_features), HasSubstr("160 with the files before it"),
                    HasSubstr("data.max-bytes = 150")));
}

TEST_F(npy_test, refuses_missing_files_and_directories) {
  npy_files files = valid_files();
  files.test_labels = path("absent.npy");
  EXPECT_THAT(load_error(files), AllOf(HasSubstr(files.test_labels), HasSubstr("no such file")));
  files.test_labels = dir_.file("");
  EXPECT_THAT(load_error(files), HasSubstr("not a regular file"));
}

} // namespace
} // namespace herd::models
