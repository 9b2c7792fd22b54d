// The parser of a .npy header's dict literal; see npy_dict.hpp.
#include "models/npy_dict.hpp"

#include <cctype>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace herd::models {

namespace {

// A parser of the dict literal np.save writes: {'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), } padded with spaces and a newline. Strings in single or double quotes without
// escapes, True/False, tuples of non-negative integers; nothing else.
class dict_parser {
public:
  dict_parser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  void parse(npy_header& header) {
    skip_space();
    if (!take('{'))
      fail("the header is not a dict (it should start with '{')");
    bool have_descr = false;
    bool have_order = false;
    bool have_shape = false;
    bool fortran = false;
    std::string descr;
    for (;;) {
      skip_space();
      if (take('}'))
        break;
      const std::string key = string_literal("a key");
      skip_space();
      if (!take(':'))
        fail("expected ':' after the key '" + key + "'");
      skip_space();
      bool* seen = nullptr;
      if (key == "descr") {
        seen = &have_descr;
        if (peek() == '[')
          fail("structured dtype (descr is a list); save a plain numeric array");
        descr = string_literal("the descr value");
      } else if (key == "fortran_order") {
        seen = &have_order;
        fortran = boolean();
      } else if (key == "shape") {
        seen = &have_shape;
        header.shape = tuple();
      } else {
        fail("unexpected key '" + key + "' in the header (expected descr, fortran_order, shape)");
      }
      if (*seen)
        fail("the key '" + key + "' appears twice in the header");
      *seen = true;
      skip_space();
      if (take('}'))
        break;
      if (!take(','))
        fail("expected ',' or '}' after the value of '" + key + "'");
    }
    skip_space();
    if (position_ != text_.size())
      fail("unexpected text after the header's dict");
    for (auto [present, key] :
         {std::pair{have_descr, "descr"}, std::pair{have_order, "fortran_order"},
          std::pair{have_shape, "shape"}})
      if (!present)
        fail(std::string("the header has no '") + key + "' key");
    if (fortran)
      fail("fortran_order is True (column-major); save the array in C order, e.g. "
           "np.save(path, np.ascontiguousarray(a))");
    header.dtype = dtype(descr);
  }

private:
  [[noreturn]] void fail(const std::string& problem) const { throw data_error(path_, problem); }

  char peek() const { return position_ < text_.size() ? text_[position_] : '\0'; }
  bool take(char c) {
    if (peek() != c)
      return false;
    ++position_;
    return true;
  }
  void skip_space() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_])))
      ++position_;
  }

  std::string string_literal(const std::string& what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"')
      fail("expected a quoted string as " + what + " in the header");
    ++position_;
    const std::size_t end = text_.find(quote, position_);
    if (end == std::string::npos)
      fail("unterminated string in the header");
    std::string value = text_.substr(position_, end - position_);
    if (value.find('\\') != std::string::npos)
      fail("escaped string in the header");
    position_ = end + 1;
    return value;
  }

  bool boolean() {
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (text_.compare(position_, std::strlen(word), word) == 0) {
        position_ += std::strlen(word);
        return value;
      }
    fail("fortran_order must be True or False");
  }

  std::vector<std::uint64_t> tuple() {
    if (!take('('))
      fail("shape must be a tuple of integers");
    std::vector<std::uint64_t> shape;
    for (;;) {
      skip_space();
      if (take(')'))
        return shape;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        fail("shape must be a tuple of non-negative integers");
      std::uint64_t extent = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const auto digit = static_cast<std::uint64_t>(text_[position_++] - '0');
        if (extent > (std::numeric_limits<std::uint64_t>::max() - digit) / 10)
          fail("a shape extent does not fit in 64 bits");
        extent = extent * 10 + digit;
      }
      take('L'); // Python 2's long suffix, in files written long ago
      shape.push_back(extent);
      if (shape.size() > 32)
        fail("more than 32 dimensions (NumPy's own limit)");
      skip_space();
      if (take(')'))
        return shape;
      if (!take(','))
        fail("expected ',' or ')' in the shape");
    }
  }

  npy_dtype dtype(const std::string& descr) const {
    if (descr == "<f4")
      return npy_dtype::float32;
    if (descr == "<f8")
      return npy_dtype::float64;
    if (descr == "|u1" || descr == "<u1" || descr == ">u1")
      return npy_dtype::uint8;
    if (descr == "<i4")
      return npy_dtype::int32;
    if (descr == "<i8")
      return npy_dtype::int64;
    if (!descr.empty() && descr[0] == '>')
      fail("big-endian dtype '" + descr + "'; save it little-endian, e.g. a.astype('<" +
           descr.substr(1) + "')");
    // Text (NumPy's unicode, bytes and object arrays): class names or words, not numbers yet.
    const bool text = descr.size() > 1 && (descr[1] == 'U' || descr[1] == 'S' || descr[1] == 'O');
    fail("unsupported dtype '" + descr +
         "' (supported: features '<f4' float32, '<f8' float64, '<i4' int32, '<i8' int64 or "
         "'|u1' uint8; labels '<i4' int32, '<i8' int64 or '|u1' uint8)" +
         (text ? std::string("; these are text: number the class names (or tokens) first, e.g. "
                             "np.unique(y, return_inverse=True)[1] for labels 0..C-1")
               : std::string()));
  }

  const std::string& path_;
  const std::string& text_;
  std::size_t position_ = 0;
};

} // namespace

void parse_npy_dict(const std::string& path, const std::string& text, npy_header& header) {
  dict_parser(path, text).parse(header);
}

} // namespace herd::models
