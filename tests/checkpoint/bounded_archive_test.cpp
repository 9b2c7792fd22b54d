// The bounded archive reads what cereal's binary output archive writes, and refuses a count above
// the bytes left before any container is sized to it: 8 bytes of a crafted file claimed gigabytes.
#include <cereal/archives/binary.hpp>
#include <cereal/types/deque.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cstdint>
#include <cstring>
#include <deque>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/bounded_archive.hpp"

namespace {

using herd::checkpoint::bounded_input_archive;
using testing::HasSubstr;

template <class... Fields>
std::string written(const Fields&... fields) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(out);
    archive(fields...);
  }
  return out.str();
}

// What reading `bytes` as Fields throws ("" when it reads them all).
template <class... Fields>
std::string refusal(const std::string& bytes, Fields&... fields) {
  std::istringstream in(bytes, std::ios::binary);
  try {
    bounded_input_archive archive(in, bytes.size());
    archive(fields...);
  } catch (const cereal::Exception& refused) {
    return refused.what();
  }
  return "";
}

TEST(bounded_archive, reads_what_the_binary_archive_writes) {
  const std::vector<float> floats{1.5f, -2.0f, 3.25f};
  const std::deque<std::uint64_t> counts{7, 8};
  const std::string text = "solo";
  std::vector<float> floats_read;
  std::deque<std::uint64_t> counts_read;
  std::string text_read;
  int number = 0;
  EXPECT_EQ(refusal(written(floats, counts, text, 42), floats_read, counts_read, text_read, number),
            "");
  EXPECT_EQ(floats_read, floats);
  EXPECT_EQ(counts_read, counts);
  EXPECT_EQ(text_read, text);
  EXPECT_EQ(number, 42);
}

TEST(bounded_archive, a_count_above_the_bytes_left_is_refused_before_sizing) {
  auto bytes = written(std::vector<float>{1.0f, 2.0f, 3.0f}, std::string("tail"));
  const std::uint64_t claimed = std::uint64_t{1} << 40; // 4 TiB of floats
  std::memcpy(bytes.data(), &claimed, sizeof claimed);  // the vector's size tag comes first
  std::vector<float> floats;
  std::string text;
  EXPECT_THAT(refusal(bytes, floats, text),
              HasSubstr("a count of 1099511627776 (of 4 bytes each) is more than the 24 bytes "
                        "left to read"));
  EXPECT_LT(floats.capacity(), 1000u);
  // Numbers wider than a byte: the count is checked against the bytes they take (6 floats are
  // not in 24 bytes less the size tag's 8).
  auto four = written(std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f});
  const std::uint64_t six = 6;
  std::memcpy(four.data(), &six, sizeof six);
  EXPECT_THAT(refusal(four, floats), HasSubstr("a count of 6 (of 4 bytes each) is more than the "
                                               "16 bytes left to read"));
  std::deque<std::uint64_t> counts;
  EXPECT_THAT(refusal(bytes, counts), HasSubstr("a count of 1099511627776"));
  // A string's length is a count too; a read past the end names the bytes left.
  std::string one;
  EXPECT_THAT(refusal(bytes, one), HasSubstr("a count of 1099511627776"));
  int numbers[2] = {0, 0};
  EXPECT_THAT(refusal(std::string(6, '\0'), numbers[0], numbers[1]),
              HasSubstr("Failed to read 4 bytes: 2 are left"));
}

// A record (a worker's state) takes far more memory than its fewest bytes on disk: a count of
// them within the bytes left is still not sized up front, but grown as records are read. cereal's
// own vector would take 100,000 records' memory (40 MB here; gigabytes for a crafted checkpoint)
// before the first failed read.
struct wide_record {
  std::vector<float> values;
  std::string name;
  std::uint64_t padding[50] = {};
  template <class Archive>
  void serialize(Archive& archive) {
    archive(values, name);
    for (auto& word : padding)
      archive(word);
  }
};

TEST(bounded_archive, records_are_grown_as_they_are_read_not_sized_to_the_count) {
  auto bytes = written(std::vector<wide_record>(2));
  bytes.append(100000, '\0'); // zeros read as empty records, 416 bytes each
  const std::uint64_t claimed = 100000;
  std::memcpy(bytes.data(), &claimed, sizeof claimed);
  std::vector<wide_record> records;
  EXPECT_THAT(refusal(bytes, records), HasSubstr("Failed to read 8 bytes"));
  EXPECT_LT(records.capacity(), 1000u) << "sized to the count before the records were read";
  EXPECT_GT(records.size(), 200u) << "the records that were there were read";
}

} // namespace
