// Reads and validates IDX files through zlib's gz* API, which passes raw files through unchanged,
// so one code path serves "train-images-idx3-ubyte" and "train-images-idx3-ubyte.gz".
#include "models/idx.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <iomanip>
#include <memory>
#include <sstream>
#include <zlib.h>

namespace herd::models {

namespace {

constexpr std::uint8_t unsigned_byte_type = 0x08;

// Far more than any (Fashion-)MNIST file (47 MB); a header claiming more is corrupt, and we say so
// before trying to allocate it.
constexpr std::uint64_t max_values = std::uint64_t{4} << 30;

// Reads go straight into the destination in large pieces, and zlib's input buffer grows from its
// default 8 KiB, so that inflate works on large stretches at a time (a 26 MB .gz in ~0.2 s).
constexpr std::size_t read_chunk_bytes = std::size_t{16} << 20;
constexpr unsigned gz_buffer_bytes = 1u << 20;

struct gz_closer {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using gz_handle = std::unique_ptr<gzFile_s, gz_closer>;

std::string hex(std::uint32_t value, int digits) {
  std::ostringstream out;
  out << "0x" << std::hex << std::uppercase << std::setw(digits) << std::setfill('0') << value;
  return out.str();
}

std::string dims_string(const std::vector<std::uint32_t>& dims) {
  std::ostringstream out;
  for (std::size_t i = 0; i < dims.size(); ++i)
    out << (i ? " x " : "") << dims[i];
  return out.str();
}

// "60000 x 28 x 28 = 47040000 values", or "60000 values" for one dimension.
std::string size_phrase(const std::vector<std::uint32_t>& dims, std::uint64_t count) {
  return dims_string(dims) + (dims.size() > 1 ? " = " + std::to_string(count) : "") +
         (count == 1 ? " value" : " values");
}

const char* plural(std::uint64_t count, const char* one, const char* many) {
  return count == 1 ? one : many;
}

// One open IDX file: reads that report how much they got, and errors that name the file.
class idx_reader {
public:
  explicit idx_reader(const std::string& path) : path_(path) {
    errno = 0;
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) {
      const int open_errno = errno;
      if (open_errno == ENOENT)
        fail("no such file");
      fail(std::string("cannot open (") +
           (open_errno != 0 ? std::strerror(open_errno) : "out of memory") + ")");
    }
    gzbuffer(file_.get(), gz_buffer_bytes);
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw data_error(path_ + ": " + problem);
  }

  // Reads up to `count` bytes into `destination` and returns how many arrived; fewer means the
  // data ended, cleanly or (for gzip) in the middle of the compressed stream: see stream_cut().
  // Corrupt streams and I/O errors throw.
  std::size_t read(std::uint8_t* destination, std::size_t count) {
    std::size_t total = 0;
    while (total < count) {
      const auto piece = static_cast<unsigned>(std::min(count - total, read_chunk_bytes));
      const int got = gzread(file_.get(), destination + total, piece);
      if (got < 0)
        fail_from_zlib();
      total += static_cast<std::size_t>(got);
      if (static_cast<unsigned>(got) < piece)
        break;
    }
    // gzread returns a short count, not -1, for some failures (a gzip stream cut short is
    // Z_BUF_ERROR, deliberately), so the error state is checked after every short read as well.
    if (total < count) {
      int code = Z_OK;
      gzerror(file_.get(), &code);
      if (code != Z_OK && code != Z_BUF_ERROR)
        fail_from_zlib();
    }
    return total;
  }

  // True when the input is gzip and its compressed stream ended before its end marker (the file
  // was cut short), as opposed to ending cleanly.
  bool stream_cut() const {
    int code = Z_OK;
    gzerror(file_.get(), &code);
    return code == Z_BUF_ERROR;
  }

  bool is_gzip() const { return gzdirect(file_.get()) == 0; }

  // "the file" for raw input, "the gzip stream" otherwise.
  const char* input_name() const { return is_gzip() ? "the gzip stream" : "the file"; }

  // Why a gzip stream ended early, for the end of a "truncated" message; empty for a clean end.
  std::string cut_note() const {
    return stream_cut() ? " (the compressed data is cut short: " + zlib_message() + ")" : "";
  }

private:
  // zlib prefixes its messages with the path it was given; we print the path once, in front.
  std::string zlib_message() const {
    int code = Z_OK;
    std::string message = gzerror(file_.get(), &code);
    const std::string prefix = path_ + ": ";
    if (message.compare(0, prefix.size(), prefix) == 0)
      message.erase(0, prefix.size());
    return message;
  }

  [[noreturn]] void fail_from_zlib() const {
    int code = Z_OK;
    gzerror(file_.get(), &code);
    if (code == Z_ERRNO)
      fail("read error (" + zlib_message() + ")");
    if (code == Z_MEM_ERROR)
      fail("out of memory while decompressing");
    fail("corrupt gzip stream (" + zlib_message() + ")");
  }

  std::string path_;
  gz_handle file_;
};

std::uint32_t big_endian_u32(const std::uint8_t* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

// Type codes the IDX format defines; any other third byte means this is not an IDX file at all.
bool is_idx_type(std::uint8_t type) {
  return type == 0x08 || type == 0x09 || type == 0x0B || type == 0x0C || type == 0x0D ||
         type == 0x0E;
}

std::uint8_t read_magic_dimension_count(idx_reader& reader) {
  std::array<std::uint8_t, 4> magic{};
  const std::size_t got = reader.read(magic.data(), magic.size());
  if (got == 0)
    reader.fail("empty file (an IDX file starts with a 4-byte magic number)");
  if (got < magic.size())
    reader.fail(std::string("truncated: ") + reader.input_name() + " ends after " +
                std::to_string(got) + " of the 4 bytes of the magic number" + reader.cut_note());
  const std::uint32_t value = big_endian_u32(magic.data());
  const std::uint8_t type = magic[2];
  if (magic[0] != 0 || magic[1] != 0 || !is_idx_type(type))
    reader.fail("bad magic number " + hex(value, 8) +
                " (expected 0x0000080N for unsigned-byte IDX with N dimensions)");
  if (type != unsigned_byte_type)
    reader.fail("unsupported IDX type " + hex(type, 2) + " (only unsigned byte 0x08 is supported)");
  if (magic[3] == 0)
    reader.fail("no dimensions (magic number " + hex(value, 8) + " says 0)");
  return magic[3];
}

std::vector<std::uint32_t> read_dims(idx_reader& reader, std::uint8_t dimension_count) {
  std::vector<std::uint8_t> bytes(std::size_t{4} * dimension_count);
  const std::size_t got = reader.read(bytes.data(), bytes.size());
  if (got < bytes.size())
    reader.fail("truncated: the magic number announces " + std::to_string(dimension_count) + " " +
                plural(dimension_count, "dimension", "dimensions") + " (" +
                std::to_string(bytes.size()) + " header bytes) but " + reader.input_name() +
                " ends after " + std::to_string(got) + " of them" + reader.cut_note());
  std::vector<std::uint32_t> dims(dimension_count);
  for (std::size_t i = 0; i < dims.size(); ++i)
    dims[i] = big_endian_u32(bytes.data() + 4 * i);
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 0)
      reader.fail("dimension " + std::to_string(i + 1) + " of " + std::to_string(dims.size()) +
                  " is zero (the header says " + dims_string(dims) + ")");
  return dims;
}

std::uint64_t value_count(idx_reader& reader, const std::vector<std::uint32_t>& dims) {
  std::uint64_t count = 1;
  for (std::uint32_t extent : dims) {
    if (count > max_values / extent)
      reader.fail("the header says " + dims_string(dims) + " values, more than the " +
                  std::to_string(max_values) + " this reader accepts (a corrupt header?)");
    count *= extent;
  }
  return count;
}

// Counts what follows the data; for gzip, reading to the end also checks the stream's CRC.
std::uint64_t count_trailing_bytes(idx_reader& reader) {
  std::vector<std::uint8_t> scratch(std::size_t{1} << 16);
  std::uint64_t trailing = 0;
  for (;;) {
    const std::size_t got = reader.read(scratch.data(), scratch.size());
    trailing += got;
    if (got < scratch.size())
      return trailing;
  }
}

} // namespace

idx_array read_idx(const std::string& path) {
  idx_reader reader(path);
  idx_array result;
  result.dims = read_dims(reader, read_magic_dimension_count(reader));
  const std::uint64_t expected = value_count(reader, result.dims);

  // Grows with the data rather than trusting the header with one big allocation up front.
  const auto total = static_cast<std::size_t>(expected);
  result.values.reserve(std::min(total, std::size_t{256} << 20));
  std::size_t filled = 0;
  while (filled < total) {
    const std::size_t wanted = std::min(total - filled, read_chunk_bytes);
    result.values.resize(filled + wanted);
    const std::size_t got = reader.read(result.values.data() + filled, wanted);
    filled += got;
    if (got < wanted) {
      reader.fail("truncated: the header says " + size_phrase(result.dims, expected) + " but " +
                  reader.input_name() + " ends after " + std::to_string(filled) + " of them" +
                  reader.cut_note());
    }
  }

  const std::uint64_t trailing = count_trailing_bytes(reader);
  if (reader.stream_cut())
    reader.fail("truncated: the gzip stream is cut short after all " + std::to_string(expected) +
                " values, before its end marker");
  if (trailing > 0)
    reader.fail(std::to_string(trailing) + " unexpected " + plural(trailing, "byte", "bytes") +
                " after the data (the header says " + size_phrase(result.dims, expected) + ")");
  return result;
}

} // namespace herd::models
