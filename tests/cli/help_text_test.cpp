// Help texts re-wrapped to the terminal's 80 columns: paragraphs joined and wrapped, an entry's
// description wrapped under its own column, a usage line continued under its first argument.
#include "cli/command_support.hpp"

#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

namespace {

using herd::cli::fit_help;

std::size_t widest_line(const std::string& text) {
  std::size_t widest = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    widest = std::max(widest, line.size());
  return widest;
}

TEST(fit_help, paragraphs_are_joined_and_wrapped_and_blank_lines_kept) {
  const std::string text = "one two three four five\nsix seven\n\neight nine\n";
  EXPECT_EQ(fit_help(text, 14), "one two three\nfour five six\nseven\n\neight nine\n");
}

TEST(fit_help, an_entry_wraps_under_its_description_and_takes_its_deeper_lines) {
  const std::string text = "Options:\n"
                           "  --alpha N  first second\n"
                           "             third fourth fifth\n"
                           "  --b        short\n";
  EXPECT_EQ(fit_help(text, 26), "Options:\n"
                                "  --alpha N  first second\n"
                                "             third fourth\n"
                                "             fifth\n"
                                "  --b        short\n");
}

TEST(fit_help, a_usage_line_goes_on_under_its_first_argument_and_keeps_brackets_whole) {
  const std::string text = "usage: herd x [--aa A] [--bb B] [--cc C]\n";
  EXPECT_EQ(fit_help(text, 30), "usage: herd x [--aa A]\n"
                                "              [--bb B]\n"
                                "              [--cc C]\n");
}

TEST(fit_help, a_name_alone_has_its_description_below_it_and_a_long_word_overflows) {
  const std::string text = "  --a-very-long-option-name\n      what it does\n"
                           "  --x  averyveryverylongword\n";
  EXPECT_EQ(fit_help(text, 20), "  --a-very-long-option-name\n      what it does\n"
                                "  --x  averyveryverylongword\n");
  EXPECT_EQ(fit_help(fit_help(text, 20), 20), fit_help(text, 20)) << "fitting twice changes it";
}

TEST(fit_help, text_that_fits_comes_back_as_it_was) {
  const std::string text = "usage: herd y\n\nDoes y.\n\n  --help, -h  show this help\n";
  EXPECT_EQ(fit_help(text), text);
  EXPECT_LE(widest_line(fit_help(std::string(200, 'a') + " b\n")), 200u);
}

} // namespace

// An option's list ("--algorithms=sync, solo", as a shell user may quote it): the spaces around a
// name are not part of it, and empty items are dropped.
TEST(split_list, items_are_trimmed_and_empty_ones_dropped) {
  using herd::cli::split_list;
  EXPECT_EQ(split_list("sync,solo"), (std::vector<std::string>{"sync", "solo"}));
  EXPECT_EQ(split_list(" sync, solo ,"), (std::vector<std::string>{"sync", "solo"}));
  EXPECT_EQ(split_list("a,,\tb\t, ,"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(split_list(" , ").empty());
}
