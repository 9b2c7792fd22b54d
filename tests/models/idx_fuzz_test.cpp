// Seeded fuzzing of the IDX reader: valid files mutated (truncated, header bits flipped, huge
// declared counts, bad magic numbers, broken gzip headers, bodies and trailers, bytes appended),
// random bytes, and small files declaring gigabytes, raw and gzip. Every file must be read or
// refused with a data_error that names it: never std::bad_alloc, another exception or a crash,
// and the process's peak memory must stay within tens of megabytes whatever a header declares.
#include "herd/idx.hpp"

#include <functional>
#include <gtest/gtest.h>
#include <iostream>
#include <numeric>
#include <random>
#include <typeinfo>

#include "idx_test_files.hpp"

namespace herd::models {
namespace {

using test_files::gzip_member;
using test_files::idx_bytes;
using test_files::peak_resident_bytes;
using test_files::temp_directory;
using test_files::write_raw;

// What reading all the fuzzed files may add to the process's peak memory: the reader's buffers
// (1 MiB of compressed input, values grown by at least 1 MiB at a time) and the largest valid file,
// never what a header declares. About 3 MiB is what it takes; reading in 16 MiB pieces whatever
// arrives, as the reader once did, would not pass.
constexpr std::uint64_t memory_growth_allowed = std::uint64_t{12} << 20;

class idx_mutator {
public:
  explicit idx_mutator(std::uint64_t seed) : rng_(seed) {}

  std::size_t below(std::size_t bound) {
    return bound == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, bound - 1)(rng_);
  }

  std::uint8_t byte() { return static_cast<std::uint8_t>(below(256)); }

  // A valid unsigned-byte IDX file of one to three small dimensions; values random or repetitive
  // (repetitive ones compress, as real images do).
  std::vector<std::uint8_t> valid_file() {
    std::vector<std::uint32_t> dims(1 + below(3));
    for (auto& extent : dims)
      extent = static_cast<std::uint32_t>(1 + below(dims.size() == 1 ? 5000 : 40));
    const std::size_t count =
        std::accumulate(dims.begin(), dims.end(), std::size_t{1}, std::multiplies<>{});
    std::vector<std::uint8_t> values(count);
    const bool repetitive = below(2) == 0;
    for (std::size_t i = 0; i < count; ++i)
      values[i] = repetitive ? static_cast<std::uint8_t>(i % 7) : byte();
    return idx_bytes(dims, values);
  }

  // Edits of an uncompressed IDX file, mostly in its header.
  std::vector<std::uint8_t> mutate_idx(std::vector<std::uint8_t> bytes) {
    const std::size_t header = std::min<std::size_t>(bytes.size(), 4 + 4 * 3);
    switch (below(8)) {
    case 0: // truncate
      bytes.resize(below(bytes.size() + 1));
      break;
    case 1: // flip a bit of the header
      if (header > 0)
        bytes[below(header)] ^= static_cast<std::uint8_t>(1u << below(8));
      break;
    case 2: { // a huge declared extent in the first dimension
      static const std::uint32_t huge[] = {5000000u, 65536u, 0x7FFFFFFFu, 0xFFFFFFFFu, 1u << 24};
      const std::uint32_t extent = huge[below(5)];
      if (bytes.size() >= 8)
        for (int i = 0; i < 4; ++i)
          bytes[4 + static_cast<std::size_t>(i)] =
              static_cast<std::uint8_t>(extent >> (24 - 8 * i));
      break;
    }
    case 3: // a bad magic number, type or dimension count
      if (bytes.size() >= 4)
        bytes[below(4)] = byte();
      break;
    case 4: // bytes appended
      for (std::size_t n = 1 + below(16); n > 0; --n)
        bytes.push_back(byte());
      break;
    case 5: // a zero dimension
      if (bytes.size() >= 8)
        bytes[4 + below(4)] = 0;
      break;
    case 6: // bytes flipped anywhere
      for (std::size_t n = 1 + below(4); n > 0 && !bytes.empty(); --n)
        bytes[below(bytes.size())] ^= static_cast<std::uint8_t>(1 + below(255));
      break;
    default: // unchanged: a valid file must stay readable
      break;
    }
    return bytes;
  }

  // Edits of a gzip member: its header, compressed body and CRC-32/length trailer.
  std::vector<std::uint8_t> mutate_gzip(std::vector<std::uint8_t> bytes) {
    if (bytes.size() < 18)
      return bytes;
    switch (below(8)) {
    case 0: // cut the trailer, or part of it
      bytes.resize(bytes.size() - 1 - below(8));
      break;
    case 1: // cut the body
      bytes.resize(10 + below(bytes.size() - 18));
      break;
    case 2: // flip a byte of the gzip header
      bytes[below(10)] ^= static_cast<std::uint8_t>(1 + below(255));
      break;
    case 3: // flip a byte of the body
      bytes[10 + below(bytes.size() - 18)] ^= static_cast<std::uint8_t>(1 + below(255));
      break;
    case 4: // flip a byte of the trailer
      bytes[bytes.size() - 1 - below(8)] ^= static_cast<std::uint8_t>(1 + below(255));
      break;
    case 5: // garbage after the member
      for (std::size_t n = 1 + below(16); n > 0; --n)
        bytes.push_back(byte());
      break;
    case 6: { // another member after it (valid only if it is empty)
      const auto another = gzip_member(below(2) == 0 ? std::vector<std::uint8_t>{}
                                                     : std::vector<std::uint8_t>{1, 2, 3});
      bytes.insert(bytes.end(), another.begin(), another.end());
      break;
    }
    default:
      break;
    }
    return bytes;
  }

private:
  std::mt19937_64 rng_;
};

// Reads one fuzzed file both ways; counts the outcomes and fails on anything but a consistent
// array or a data_error that names the file.
class verdicts {
public:
  void check(const std::string& path, const std::string& what) {
    bool header_read = false;
    try {
      const idx_header header = read_idx_header(path);
      header_read = true;
      EXPECT_EQ(header.values, std::accumulate(header.dims.begin(), header.dims.end(),
                                               std::uint64_t{1}, std::multiplies<>{}))
          << what;
    } catch (const data_error& error) {
      expect_names(error, path, what);
    } catch (const std::exception& other) {
      ADD_FAILURE() << what << ": read_idx_header threw " << typeid(other).name() << ": "
                    << other.what();
    }
    try {
      const idx_array array = read_idx(path);
      ++read;
      EXPECT_TRUE(header_read) << what << ": read_idx accepts what read_idx_header refuses";
      EXPECT_EQ(array.values.size(), std::accumulate(array.dims.begin(), array.dims.end(),
                                                     std::size_t{1}, std::multiplies<>{}))
          << what;
    } catch (const data_error& error) {
      ++refused;
      expect_names(error, path, what);
    } catch (const std::exception& other) {
      ADD_FAILURE() << what << ": read_idx threw " << typeid(other).name() << ": " << other.what();
    }
  }

  int read = 0;
  int refused = 0;

private:
  static void expect_names(const data_error& error, const std::string& path,
                           const std::string& what) {
    EXPECT_EQ(std::string(error.what()).rfind(path + ": ", 0), 0u)
        << what << ": the message does not start with the file: " << error.what();
  }
};

TEST(idx_fuzz, mutated_files_are_read_or_refused_naming_the_file) {
  temp_directory dir;
  idx_mutator mutate(1989);
  verdicts outcome;
  const std::uint64_t before = peak_resident_bytes();
  for (int i = 0; i < 3000; ++i) {
    const bool gzip = i % 2 == 1;
    auto bytes = mutate.mutate_idx(mutate.valid_file());
    if (gzip)
      bytes = mutate.mutate_gzip(gzip_member(bytes));
    const std::string path = dir.file(gzip ? "fuzz.gz" : "fuzz");
    write_raw(path, bytes);
    outcome.check(path, (gzip ? "gzip mutation " : "mutation ") + std::to_string(i));
  }
  const std::uint64_t growth = peak_resident_bytes() - before;
  std::cout << "read " << outcome.read << ", refused " << outcome.refused << ", peak memory grew "
            << (growth >> 20) << " MiB\n";
  EXPECT_GT(outcome.read, 500); // unchanged files and harmless edits still read
  EXPECT_GT(outcome.refused, 1500);
  EXPECT_LT(growth, memory_growth_allowed);
}

TEST(idx_fuzz, random_bytes_are_refused_naming_the_file) {
  temp_directory dir;
  idx_mutator random(4);
  verdicts outcome;
  const std::string path = dir.file("random");
  for (int i = 0; i < 1500; ++i) {
    std::vector<std::uint8_t> bytes(random.below(4096));
    for (auto& value : bytes)
      value = random.byte();
    // A third look like gzip, a third like unsigned-byte IDX, to get past the first check.
    const std::size_t kind = i % 3;
    if (kind == 0 && bytes.size() >= 2) {
      bytes[0] = 0x1f;
      bytes[1] = 0x8b;
      if (bytes.size() >= 3)
        bytes[2] = 8; // deflate
    } else if (kind == 1 && bytes.size() >= 4) {
      bytes[0] = bytes[1] = 0;
      bytes[2] = 0x08;
      bytes[3] = static_cast<std::uint8_t>(1 + random.below(3));
    }
    write_raw(path, bytes);
    outcome.check(path, "random bytes " + std::to_string(i));
  }
  EXPECT_GT(outcome.refused, 1400);
}

TEST(idx_fuzz, small_files_declaring_up_to_gigabytes_are_refused_in_bounded_memory) {
  temp_directory dir;
  idx_mutator random(2718);
  verdicts outcome;
  const std::uint64_t before = peak_resident_bytes();
  for (int i = 0; i < 600; ++i) {
    // 784 thousand to 4 billion values declared, up to 64 KiB of them present: a raw file is
    // refused by its size, a gzip file by deflate's ratio or, where the ratio allows the
    // declaration, when its data ends; memory follows the data, not the header.
    const auto images = static_cast<std::uint32_t>(1000 + random.below(5000000));
    std::vector<std::uint8_t> values(random.below(65536));
    const bool zeros = random.below(2) == 0; // zeros compress 1000:1, random bytes not at all
    for (auto& value : values)
      value = zeros ? 0 : random.byte();
    auto bytes = idx_bytes({images, 28, 28}, values);
    const bool gzip = i % 2 == 0;
    if (gzip)
      bytes = random.mutate_gzip(gzip_member(bytes));
    const std::string path = dir.file(gzip ? "huge.gz" : "huge");
    write_raw(path, bytes);
    outcome.check(path, "declares " + std::to_string(std::uint64_t{images} * 784) + " values");
  }
  const std::uint64_t growth = peak_resident_bytes() - before;
  std::cout << "peak memory grew " << (growth >> 20) << " MiB\n";
  EXPECT_EQ(outcome.read, 0);
  EXPECT_LT(growth, memory_growth_allowed);
}

} // namespace
} // namespace herd::models
