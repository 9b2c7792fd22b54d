// Tables of text for a terminal (text_table.hpp).
#include "cli/text_table.hpp"

#include <algorithm>
#include <stdexcept>

namespace herd::cli {

namespace {

constexpr std::size_t gap = 2; // spaces between two columns

} // namespace

text_table::text_table(std::size_t key_columns) : key_columns_(key_columns) {}

void text_table::add_column(std::string header, align how) {
  if (!rows_.empty())
    throw std::logic_error("text_table: a column added after the rows");
  const auto width = header.size();
  columns_.push_back({std::move(header), how, width});
}

void text_table::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw std::invalid_argument("text_table: a row of " + std::to_string(cells.size()) +
                                " entries in a table of " + std::to_string(columns_.size()) +
                                " columns");
  for (std::size_t i = 0; i < cells.size(); ++i)
    columns_[i].width = std::max(columns_[i].width, cells[i].size());
  rows_.push_back(std::move(cells));
}

std::string text_table::render_part(const std::vector<std::size_t>& which) const {
  std::string text;
  const auto line = [&](const auto& entry_of) {
    std::string out;
    for (std::size_t n = 0; n < which.size(); ++n) {
      const auto& c = columns_[which[n]];
      const std::string& entry = entry_of(which[n]);
      const std::string padding(c.width - entry.size(), ' ');
      if (n > 0)
        out += std::string(gap, ' ');
      out += c.how == align::left ? entry + padding : padding + entry;
    }
    // A left-aligned last column leaves no spaces at the end of a line.
    out.erase(out.find_last_not_of(' ') + 1);
    text += out + '\n';
  };
  line([this](std::size_t i) -> const std::string& { return columns_[i].header; });
  for (const auto& row : rows_)
    line([&row](std::size_t i) -> const std::string& { return row[i]; });
  return text;
}

std::string text_table::render(std::size_t columns) const {
  const std::size_t keys = std::min(key_columns_, columns_.size());
  std::vector<std::size_t> part;
  std::size_t key_width = 0;
  for (std::size_t i = 0; i < keys; ++i) {
    part.push_back(i);
    key_width += (i > 0 ? gap : 0) + columns_[i].width;
  }
  std::string text;
  std::size_t width = key_width;
  for (std::size_t i = keys; i < columns_.size(); ++i) {
    const std::size_t wider = width + (part.empty() ? 0 : gap) + columns_[i].width;
    // Shorter than `columns`; a part holds at least one column besides the keys.
    if (wider >= columns && part.size() > keys) {
      text += render_part(part) + '\n';
      part.resize(keys);
      width = key_width;
    }
    width += (part.empty() ? 0 : gap) + columns_[i].width;
    part.push_back(i);
  }
  return text + render_part(part);
}

} // namespace herd::cli
