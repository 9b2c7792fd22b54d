// Tables for a terminal: columns as wide as their widest entry, and a table wider than the
// terminal split into parts that each repeat the columns naming a row.
#include "cli/text_table.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sstream>

namespace {

using herd::cli::text_table;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

TEST(text_table, columns_are_as_wide_as_their_widest_entry_and_aligned_as_asked) {
  text_table table;
  table.add_column("algorithm", text_table::align::left);
  table.add_column("P");
  table.add_column("steps/s");
  table.add_row({"sync", "4", "245.5"});
  table.add_row({"majority", "4096", "1234567.8"});
  EXPECT_EQ(table.render(80), "algorithm     P    steps/s\n"
                              "sync          4      245.5\n"
                              "majority   4096  1234567.8\n");
}

TEST(text_table, a_left_aligned_last_column_leaves_no_trailing_spaces) {
  text_table table;
  table.add_column("n");
  table.add_column("name", text_table::align::left);
  table.add_row({"1", "a"});
  EXPECT_EQ(table.render(80), "n  name\n1  a\n");
}

// Twelve columns of 8 do not fit in 80: each part repeats the two key columns and keeps every
// line shorter than the terminal, and every column appears once, in order.
TEST(text_table, a_table_wider_than_the_terminal_is_split_into_parts_that_repeat_the_keys) {
  text_table table(2);
  std::vector<std::string> row;
  for (int c = 0; c < 12; ++c) {
    table.add_column("column" + std::to_string(10 + c), text_table::align::right);
    row.push_back(std::to_string(c * 1000));
  }
  table.add_row(row);
  const auto one_line = table.render(200);
  EXPECT_EQ(lines_of(one_line).size(), 2u) << one_line;

  const auto split = table.render(50);
  const auto lines = lines_of(split);
  std::vector<std::string> headers;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_LT(lines[i].size(), 50u) << lines[i];
    if (i % 3 == 0) { // a header, its row, a blank line
      EXPECT_THAT(lines[i], testing::StartsWith("column10  column11  ")) << split;
      std::istringstream words(lines[i]);
      for (std::string word; words >> word;)
        if (word != "column10" && word != "column11")
          headers.push_back(word);
    } else if (i % 3 == 2) {
      EXPECT_EQ(lines[i], "") << split;
    }
  }
  // 18 columns for the keys, then 10 per column: 3 more fit under 50 (48), not 4 (58); the
  // 10 columns take parts of 3, 3, 3 and 1.
  EXPECT_EQ(lines.size(), 4u * 3u - 1u) << split;
  ASSERT_EQ(headers.size(), 10u) << split;
  for (std::size_t i = 0; i < headers.size(); ++i)
    EXPECT_EQ(headers[i], "column" + std::to_string(12 + i));
}

TEST(text_table, a_column_wider_than_the_terminal_takes_a_part_of_its_own) {
  text_table table(1);
  table.add_column("key", text_table::align::left);
  table.add_column("a");
  table.add_column(std::string(30, 'w'));
  table.add_column("b");
  table.add_row({"k", "1", "2", "3"});
  const auto lines = lines_of(table.render(20));
  ASSERT_EQ(lines.size(), 8u) << table.render(20);
  EXPECT_EQ(lines[0], "key  a");
  EXPECT_EQ(lines[3], "key  " + std::string(30, 'w'));
  EXPECT_EQ(lines[6], "key  b");
}

TEST(text_table, a_row_of_the_wrong_length_is_refused) {
  text_table table;
  table.add_column("a");
  table.add_column("b");
  EXPECT_THROW(table.add_row({"1"}), std::invalid_argument);
  table.add_row({"1", "2"});
  EXPECT_THROW(table.add_column("c"), std::logic_error);
}

} // namespace
