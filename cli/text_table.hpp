// Tables of text for a terminal: each column as wide as its widest entry, and a table too wide
// for the terminal split into parts that each repeat the columns naming a row.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace herd::cli {

class text_table {
public:
  enum class align { left, right };

  /// The first `key_columns` columns name a row (algorithm, P): every part of a split table
  /// starts with them.
  explicit text_table(std::size_t key_columns = 1);

  void add_column(std::string header, align how = align::right);

  /// One entry per column, in the columns' order; std::invalid_argument otherwise.
  void add_row(std::vector<std::string> cells);

  /// The table in lines shorter than `columns` (a terminal's last column stays free): columns
  /// two spaces apart; where every column does not fit on one line, the columns after the key
  /// ones are split, in order, into parts of as many as fit, one blank line between parts. A
  /// column too wide to fit beside the key columns by itself takes a part of its own and
  /// overflows it.
  std::string render(std::size_t columns) const;

private:
  struct column {
    std::string header;
    align how;
    std::size_t width;
  };
  std::string render_part(const std::vector<std::size_t>& which) const;

  std::size_t key_columns_;
  std::vector<column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

} // namespace herd::cli
