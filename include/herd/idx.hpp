// Reader for the IDX format of (Fashion-)MNIST: a big-endian magic number (two zero bytes, a type
// code, the number of dimensions), the dimensions as big-endian uint32, then the values.
// Files may be gzip-compressed or raw; the reader tells them apart by content, not by name.
// Nothing a header declares is trusted: it is checked against the file's size before anything is
// allocated for it.
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
  /// A problem of one file: the message is "<file>: <problem>", and file() names it.
  data_error(const std::string& file, const std::string& problem)
      : std::runtime_error(file + ": " + problem), file_(file) {}

  /// The file the problem is of, as its path was given; empty for a problem of several.
  const std::string& file() const { return file_; }

private:
  std::string file_;
};

/// The most values one IDX file may declare, whatever else allows: far more than any
/// (Fashion-)MNIST file (47 MB).
inline constexpr std::uint64_t idx_max_values = std::uint64_t{4} << 30;

/// Deflate's largest expansion: one compressed byte never becomes more than this many. A gzip file
/// whose header declares more than its size times this is corrupt.
inline constexpr std::uint64_t deflate_max_ratio = 1032;

/// What an IDX file's header declares, checked against the file.
struct idx_header {
  std::vector<std::uint32_t> dims;
  std::uint64_t values = 0;     // product(dims)
  std::uint64_t file_bytes = 0; // the file's size on disk (compressed, for gzip)
  bool gzip = false;
};

/// An IDX array of unsigned bytes (type code 0x08, the only type (Fashion-)MNIST uses).
struct idx_array {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> values; // product(dims) values, row-major
};

/// Reads and checks the header of one IDX file, reading a few bytes whatever it declares: the
/// magic number, the dimensions, and the declared size against the file's: a raw file must hold
/// exactly the declared values after its header, a gzip file must be large enough to expand to
/// them (deflate_max_ratio). Throws data_error naming `path`, also for a file that is not a regular
/// file (a FIFO, a directory, a device): those are refused before anything is read from them.
idx_header read_idx_header(const std::string& path);

/// Reads and validates one IDX file. Throws data_error, naming `path`, for everything
/// read_idx_header refuses, a header declaring more than `max_values`, a corrupt gzip stream
/// (a wrong or missing CRC-32/length trailer included), data shorter than the dimensions say
/// (truncated), bytes after the data, and memory running out.
idx_array read_idx(const std::string& path, std::uint64_t max_values = idx_max_values);

} // namespace herd::models
