// Reader for the IDX format of (Fashion-)MNIST: a big-endian magic number (two zero bytes, a type
// code, the number of dimensions), the dimensions as big-endian uint32, then the values.
// Files may be gzip-compressed or raw; the reader tells them apart by content, not by name.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace herd::models {

/// A data file that cannot be used. The message names the file and what is wrong with it, and
/// says what to do where there is something to do (e.g. which package to install).
class data_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// An IDX array of unsigned bytes (type code 0x08, the only type (Fashion-)MNIST uses).
struct idx_array {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> values; // product(dims) values, row-major
};

/// Reads and validates one IDX file. Throws data_error, naming `path`, when the file is missing
/// or unreadable, the gzip stream is corrupt, the magic number is wrong, the type is not unsigned
/// byte, there are no dimensions or a dimension is zero, the data is shorter than the dimensions
/// say (truncated), or there are bytes after the data.
idx_array read_idx(const std::string& path);

} // namespace herd::models
