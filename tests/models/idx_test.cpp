// read_idx: valid raw and gzip files read alike, and every kind of broken file is a data_error that
// names the file and the problem.
#include "herd/idx.hpp"

#include <chrono>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "idx_test_files.hpp"
#include "support/forked_call.hpp"

namespace herd::models {
namespace {

using test_files::gzip_member;
using test_files::idx_bytes;
using test_files::peak_resident_bytes;
using test_files::random_bytes;
using test_files::read_bytes;
using test_files::temp_directory;
using test_files::write_gzip;
using test_files::write_raw;
using ::testing::AllOf;
using ::testing::HasSubstr;

// The message of the data_error that reading `path` throws; fails the test if it throws nothing.
std::string read_error(const std::string& path) {
  try {
    read_idx(path);
  } catch (const data_error& error) {
    return error.what();
  }
  ADD_FAILURE() << "read_idx(" << path << ") did not throw data_error";
  return {};
}

TEST(read_idx, raw_and_gzip_files_give_the_same_dims_and_values) {
  temp_directory dir;
  const std::vector<std::uint32_t> dims{7, 5, 3};
  const auto values = random_bytes(std::size_t{7} * 5 * 3, 1);
  write_raw(dir.file("images-idx3-ubyte"), idx_bytes(dims, values));
  write_gzip(dir.file("images-idx3-ubyte.gz"), idx_bytes(dims, values));
  // The .gz really is compressed: gzip's magic bytes, not IDX's.
  const auto gz_bytes = read_bytes(dir.file("images-idx3-ubyte.gz"));
  ASSERT_GE(gz_bytes.size(), 2u);
  EXPECT_EQ(gz_bytes[0], 0x1f);
  EXPECT_EQ(gz_bytes[1], 0x8b);

  for (const std::string name : {"images-idx3-ubyte", "images-idx3-ubyte.gz"}) {
    const idx_array array = read_idx(dir.file(name));
    EXPECT_EQ(array.dims, dims) << name;
    EXPECT_EQ(array.values, values) << name;
  }
}

TEST(read_idx, reads_a_one_dimensional_label_file) {
  temp_directory dir;
  const std::vector<std::uint8_t> labels{3, 1, 4, 1, 5, 9, 2, 6};
  write_gzip(dir.file("labels.gz"), idx_bytes({8}, labels));
  const idx_array array = read_idx(dir.file("labels.gz"));
  EXPECT_EQ(array.dims, std::vector<std::uint32_t>{8});
  EXPECT_EQ(array.values, labels);
}

TEST(read_idx, content_not_name_decides_whether_a_file_is_gzip) {
  temp_directory dir;
  const auto values = random_bytes(12, 2);
  write_raw(dir.file("raw-despite-name.gz"), idx_bytes({3, 4}, values));
  write_gzip(dir.file("gzip-despite-name"), idx_bytes({3, 4}, values));
  EXPECT_EQ(read_idx(dir.file("raw-despite-name.gz")).values, values);
  EXPECT_EQ(read_idx(dir.file("gzip-despite-name")).values, values);
}

TEST(read_idx, bad_magic_number_is_named_with_the_expected_form) {
  temp_directory dir;
  const std::string path = dir.file("bad-magic");
  write_raw(path, {0x12, 0x34, 0x56, 0x78, 0, 0, 0, 1, 0});
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("bad magic number 0x12345678"),
                                      HasSubstr("0x0000080N")));
}

TEST(read_idx, non_byte_type_is_unsupported) {
  temp_directory dir;
  const std::string path = dir.file("doubles.gz");
  write_gzip(path, idx_bytes({2}, std::vector<std::uint8_t>(16, 0), 0x0D));
  EXPECT_THAT(read_error(path),
              AllOf(HasSubstr(path), HasSubstr("unsupported IDX type 0x0D"), HasSubstr("0x08")));
}

TEST(read_idx, zero_dimension_is_named) {
  temp_directory dir;
  const std::string path = dir.file("zero-dim");
  write_raw(path, idx_bytes({3, 0, 4}, {}));
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("dimension 2 of 3 is zero"),
                                      HasSubstr("3 x 0 x 4")));
}

TEST(read_idx, no_dimensions_is_rejected) {
  temp_directory dir;
  const std::string path = dir.file("no-dims");
  write_raw(path, {0, 0, 0x08, 0});
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("no dimensions")));
}

TEST(read_idx, empty_file_is_rejected) {
  temp_directory dir;
  const std::string path = dir.file("empty");
  write_raw(path, {});
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("empty file")));
}

TEST(read_idx, header_cut_inside_the_dimensions_is_truncated) {
  temp_directory dir;
  const std::string path = dir.file("short-header");
  auto bytes = idx_bytes({10, 28, 28}, {});
  bytes.resize(4 + 6);
  write_raw(path, bytes);
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("truncated"),
                                      HasSubstr("3 dimensions"), HasSubstr("after 6 of them")));
}

TEST(read_idx, raw_file_shorter_than_its_header_says_is_truncated) {
  temp_directory dir;
  const std::string path = dir.file("short-idx3-ubyte");
  auto bytes = idx_bytes({10, 4, 5}, random_bytes(200, 4));
  bytes.resize(bytes.size() - 50);
  write_raw(path, bytes);
  EXPECT_THAT(read_error(path),
              AllOf(HasSubstr(path), HasSubstr("truncated"), HasSubstr("10 x 4 x 5 = 200 values"),
                    HasSubstr("the file ends after 150")));
}

TEST(read_idx, gzip_cut_in_half_is_truncated_not_short) {
  temp_directory dir;
  const std::string whole = dir.file("whole.gz");
  const std::string path = dir.file("half.gz");
  // Random bytes do not compress, so half the .gz is about half the values.
  write_gzip(whole, idx_bytes({100, 28, 28}, random_bytes(std::size_t{100} * 28 * 28, 5)));
  auto compressed = read_bytes(whole);
  compressed.resize(compressed.size() / 2);
  write_raw(path, compressed);
  EXPECT_THAT(read_error(path),
              AllOf(HasSubstr(path), HasSubstr("truncated"), HasSubstr("= 78400 values"),
                    HasSubstr("gzip stream ends after"), HasSubstr("cut short")));
}

TEST(read_idx, gzip_cut_after_the_data_but_before_its_trailer_is_truncated) {
  temp_directory dir;
  const std::string whole = dir.file("whole.gz");
  const std::string path = dir.file("no-trailer.gz");
  write_gzip(whole, idx_bytes({4, 4}, random_bytes(16, 6)));
  auto compressed = read_bytes(whole);
  // gzip ends with CRC-32 and length, 4 bytes each; the deflate data before them is complete.
  compressed.resize(compressed.size() - 8);
  write_raw(path, compressed);
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("truncated")));
}

TEST(read_idx, gzip_with_a_wrong_checksum_is_corrupt) {
  temp_directory dir;
  const std::string path = dir.file("bad-crc.gz");
  write_gzip(path, idx_bytes({4, 4}, random_bytes(16, 7)));
  auto compressed = read_bytes(path);
  compressed[compressed.size() - 8] ^= 0xFF; // first byte of the CRC-32 trailer
  write_raw(path, compressed);
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("corrupt gzip stream"),
                                      HasSubstr("incorrect data check")));
}

TEST(read_idx, gzip_with_a_broken_header_is_corrupt) {
  temp_directory dir;
  const std::string path = dir.file("bad-method.gz");
  write_gzip(path, idx_bytes({4}, random_bytes(4, 8)));
  auto compressed = read_bytes(path);
  compressed[2] = 7; // compression method: only 8 (deflate) exists
  write_raw(path, compressed);
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("corrupt gzip stream")));
}

TEST(read_idx, bytes_after_the_data_are_counted) {
  temp_directory dir;
  auto bytes = idx_bytes({2, 3}, random_bytes(6, 9));
  bytes.insert(bytes.end(), {1, 2, 3});
  write_raw(dir.file("trailing"), bytes);
  write_gzip(dir.file("trailing.gz"), bytes);
  for (const std::string name : {"trailing", "trailing.gz"}) {
    const std::string path = dir.file(name);
    EXPECT_THAT(read_error(path),
                AllOf(HasSubstr(path), HasSubstr("3 unexpected bytes after the data")));
  }
}

// A gzip file whose data is followed by a gigabyte of zeros (a megabyte compressed) is refused
// once a megabyte of them has been inflated, not after all of it: here the stream's end (whose
// checksum is wrong, which a read to the end would report instead) is never reached.
TEST(read_idx, a_long_trail_after_gzip_data_is_refused_without_inflating_it_all) {
  temp_directory dir;
  auto bytes = idx_bytes({2, 3}, random_bytes(6, 9));
  bytes.resize(bytes.size() + (std::size_t{64} << 20), 0); // 64 MiB of zeros: 64 KB compressed
  auto compressed = gzip_member(bytes);
  compressed[compressed.size() - 8] ^= 0xff; // the trailer's CRC-32
  write_raw(dir.file("trail.gz"), compressed);
  EXPECT_THAT(read_error(dir.file("trail.gz")),
              HasSubstr("more than 1048576 unexpected bytes after the data"));
}

TEST(read_idx, missing_file_says_so) {
  temp_directory dir;
  const std::string path = dir.file("not-there.gz");
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("no such file")));
}

TEST(read_idx, absurd_dimensions_are_refused_before_allocating) {
  temp_directory dir;
  const std::string huge = dir.file("huge");
  const std::string overflowing = dir.file("overflowing");
  write_raw(huge, idx_bytes({65536, 65536, 4}, {}));
  write_raw(overflowing, idx_bytes({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {}));
  EXPECT_THAT(read_error(huge), AllOf(HasSubstr(huge), HasSubstr("65536 x 65536 x 4"),
                                      HasSubstr("more than the 4294967296")));
  EXPECT_THAT(read_error(overflowing),
              AllOf(HasSubstr(overflowing), HasSubstr("more than the 4294967296")));
}

// -- what a header declares is checked before anything is allocated for it ----------------------

// Memory the tests below allow reading a refused file to take: the reader's own buffers, never the
// gigabytes the header declares (the reader of old zero-filled a 16 MiB chunk before it found out).
constexpr std::uint64_t refusal_memory_bytes = std::uint64_t{8} << 20;

TEST(read_idx, a_small_gzip_file_claiming_five_million_images_is_refused_before_allocating) {
  temp_directory dir;
  const std::string path = dir.file("bomb-idx3-ubyte.gz");
  write_raw(path, gzip_member(idx_bytes({5000000, 28, 28}, std::vector<std::uint8_t>(65536, 0))));
  const auto file_bytes = std::to_string(read_bytes(path).size());
  const std::uint64_t before = peak_resident_bytes();
  EXPECT_THAT(read_error(path),
              AllOf(HasSubstr(path), HasSubstr("5000000 x 28 x 28 = 3920000000 values"),
                    HasSubstr("a gzip file of " + file_bytes + " bytes expands to at most"),
                    HasSubstr("1032:1")));
  EXPECT_LT(peak_resident_bytes() - before, refusal_memory_bytes);
}

TEST(read_idx, a_small_raw_file_claiming_five_million_images_is_refused_before_allocating) {
  temp_directory dir;
  const std::string path = dir.file("short-idx3-ubyte");
  write_raw(path, idx_bytes({5000000, 28, 28}, random_bytes(1000, 30)));
  const std::uint64_t before = peak_resident_bytes();
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("truncated"),
                                      HasSubstr("5000000 x 28 x 28 = 3920000000 values"),
                                      HasSubstr("the file ends after 1000 of them")));
  EXPECT_LT(peak_resident_bytes() - before, refusal_memory_bytes);
}

TEST(read_idx, header_reports_the_declared_shape_checked_against_the_file) {
  temp_directory dir;
  write_gzip(dir.file("images.gz"), idx_bytes({3, 28, 28}, random_bytes(3 * 784, 31)));
  const idx_header header = read_idx_header(dir.file("images.gz"));
  EXPECT_EQ(header.dims, (std::vector<std::uint32_t>{3, 28, 28}));
  EXPECT_EQ(header.values, 3u * 784u);
  EXPECT_TRUE(header.gzip);
  write_raw(dir.file("raw"), idx_bytes({5000000, 28, 28}, {}));
  EXPECT_THROW(read_idx_header(dir.file("raw")), data_error);
}

TEST(read_idx, a_limit_below_the_declared_values_refuses_the_file) {
  temp_directory dir;
  const std::string path = dir.file("labels");
  write_raw(path, idx_bytes({100}, random_bytes(100, 32)));
  EXPECT_EQ(read_idx(path, 100).values.size(), 100u);
  EXPECT_THROW(read_idx(path, 99), data_error);
}

// -- gzip trailers and members --------------------------------------------------------------------

TEST(read_idx, gzip_missing_its_trailer_is_refused_where_the_data_fills_a_read) {
  // 16 MiB - 8 values and an 8-byte header: the data ends exactly where a 16 MiB read does, which
  // is where zlib's gzread took a missing trailer for a clean end.
  temp_directory dir;
  const std::uint32_t count = (std::uint32_t{1} << 24) - 8;
  std::vector<std::uint8_t> values(count);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<std::uint8_t>(i % 251);
  const auto whole = gzip_member(idx_bytes({count}, values));
  for (const std::size_t cut : {8u, 4u, 1u}) {
    const std::string path = dir.file("cut-" + std::to_string(cut) + ".gz");
    write_raw(path, std::vector<std::uint8_t>(whole.begin(), whole.end() - static_cast<long>(cut)));
    EXPECT_THAT(read_error(path),
                AllOf(HasSubstr(path), HasSubstr("truncated"), HasSubstr("CRC-32/length trailer")))
        << cut;
  }
  write_raw(dir.file("whole.gz"), whole);
  EXPECT_EQ(read_idx(dir.file("whole.gz")).values, values);
}

TEST(read_idx, gzip_with_a_wrong_length_in_its_trailer_is_corrupt) {
  temp_directory dir;
  const std::string path = dir.file("bad-length.gz");
  auto compressed = gzip_member(idx_bytes({4, 4}, random_bytes(16, 33)));
  compressed.back() ^= 0x01; // the top byte of ISIZE, the length modulo 2^32
  write_raw(path, compressed);
  EXPECT_THAT(read_error(path), AllOf(HasSubstr(path), HasSubstr("corrupt gzip stream"),
                                      HasSubstr("incorrect length check")));
}

TEST(read_idx, concatenated_gzip_members_read_as_one_stream) {
  temp_directory dir;
  const auto bytes = idx_bytes({6, 5}, random_bytes(30, 34));
  auto joined = gzip_member({bytes.begin(), bytes.begin() + 11});
  const auto rest = gzip_member({bytes.begin() + 11, bytes.end()});
  joined.insert(joined.end(), rest.begin(), rest.end());
  write_raw(dir.file("two-members.gz"), joined);
  EXPECT_EQ(read_idx(dir.file("two-members.gz")).values,
            std::vector<std::uint8_t>(bytes.begin() + 12, bytes.end()));
}

TEST(read_idx, bytes_after_the_gzip_stream_are_refused) {
  temp_directory dir;
  const std::string path = dir.file("garbage-after.gz");
  auto compressed = gzip_member(idx_bytes({4}, random_bytes(4, 35)));
  compressed.insert(compressed.end(), {'j', 'u', 'n', 'k', '!'});
  write_raw(path, compressed);
  EXPECT_THAT(read_error(path),
              AllOf(HasSubstr(path), HasSubstr("5 unexpected bytes after the end of the gzip "
                                               "stream")));
}

// -- files that are not regular files -------------------------------------------------------------

TEST(read_idx, a_fifo_is_refused_without_blocking) {
  temp_directory dir;
  const std::string fifo = dir.file("train-images-idx3-ubyte");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto outcome = herd::testing::run_forked(
      [&] {
        try {
          read_idx(fifo);
          return std::string("accepted");
        } catch (const data_error& error) {
          return std::string(error.what());
        }
      },
      std::chrono::seconds(20));
  EXPECT_TRUE(outcome.finished) << "read_idx blocked on a FIFO (killed at the deadline)";
  EXPECT_THAT(outcome.report,
              AllOf(HasSubstr(fifo), HasSubstr("a FIFO"), HasSubstr("not a regular file")));
}

TEST(read_idx, a_directory_and_a_device_are_refused) {
  temp_directory dir;
  EXPECT_THAT(read_error(dir.path().string()),
              AllOf(HasSubstr(dir.path().string()), HasSubstr("is a directory")));
  EXPECT_THAT(read_error("/dev/zero"),
              AllOf(HasSubstr("/dev/zero"), HasSubstr("is a character device")));
}

} // namespace
} // namespace herd::models
