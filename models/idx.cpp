// Reads and validates IDX files, raw or gzip-compressed. gzip goes through zlib's inflate() rather
// than its gz* API: gzread() passes a stream cut before its CRC-32/length trailer as a clean end
// when the last read fills the caller's buffer, and it opens whatever it is given (a FIFO blocks
// forever). Here every member must end at its trailer, the trailer must match, and only regular
// files are opened.
#include "herd/idx.hpp"

#include "models/data_files.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <iomanip>
#include <new>
#include <sstream>
#include <unistd.h>
#include <zlib.h>

namespace herd::models {

namespace {

constexpr std::uint8_t unsigned_byte_type = 0x08;
constexpr std::uint64_t magic_bytes = 4;

// Reads go straight into the destination in large pieces, so that inflate works on large
// stretches at a time (a 26 MB .gz in ~0.2 s).
constexpr std::size_t read_chunk_bytes = std::size_t{16} << 20;
constexpr std::size_t compressed_buffer_bytes = std::size_t{1} << 20;
// A gzip file's values arrive before they are known to exist: the array grows with them, by at
// least this much and at most by what it holds already, so memory follows the data rather than
// the header.
constexpr std::size_t min_growth_bytes = std::size_t{1} << 20;

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

// One open IDX file, raw or gzip: reads that report how much they got, and errors that name the
// file.
class idx_reader {
public:
  explicit idx_reader(const std::string& path)
      : path_(path), file_(open_data_file(path, "; data.path must hold the IDX files")) {
    file_bytes_ = file_.size();
    std::array<std::uint8_t, 2> start{};
    const ssize_t got = ::pread(file_.descriptor(), start.data(), start.size(), 0);
    gzip_ = got == 2 && start[0] == 0x1f && start[1] == 0x8b;
    if (gzip_) {
      input_.resize(compressed_buffer_bytes);
      if (inflateInit2(&stream_, 16 + MAX_WBITS) != Z_OK) // 16: a gzip wrapper, not zlib's
        fail("out of memory while starting to decompress");
      inflating_ = true;
      in_member_ = true;
    }
  }
  idx_reader(const idx_reader&) = delete;
  idx_reader& operator=(const idx_reader&) = delete;
  ~idx_reader() {
    if (inflating_)
      inflateEnd(&stream_);
  }

  [[noreturn]] void fail(const std::string& problem) const { throw data_error(path_, problem); }

  bool is_gzip() const { return gzip_; }
  std::uint64_t file_bytes() const { return file_bytes_; }

  // "the file" for raw input, "the gzip stream" otherwise.
  const char* input_name() const { return gzip_ ? "the gzip stream" : "the file"; }

  // Reads up to `count` bytes into `destination` and returns how many arrived; fewer means the
  // data ended, cleanly or (for gzip) in the middle of a member: see stream_cut(). Corrupt
  // streams and I/O errors throw.
  std::size_t read(std::uint8_t* destination, std::size_t count) {
    return gzip_ ? inflate_into(destination, count) : read_raw(destination, count);
  }

  // True when the input is gzip and its file ended inside a member: before the end of its
  // compressed data or before its CRC-32/length trailer.
  bool stream_cut() const { return cut_; }

  // Why a gzip stream ended early, for the end of a "truncated" message; empty for a clean end.
  std::string cut_note() const {
    return cut_ ? " (the compressed data is cut short: the file ends before the gzip stream's end "
                  "and its CRC-32/length trailer)"
                : "";
  }

private:
  std::size_t read_raw(std::uint8_t* destination, std::size_t count) {
    try {
      return file_.read(destination, count);
    } catch (const kernels::file_problem& problem) {
      fail(problem.what());
    }
  }

  // Makes at least `wanted` compressed bytes available unless the file ends first; returns how
  // many are.
  std::size_t fill_input(std::size_t wanted) {
    if (stream_.avail_in >= wanted || input_ended_)
      return stream_.avail_in;
    // Keep what is left at the front of the buffer and read behind it.
    if (stream_.avail_in > 0 && stream_.next_in != input_.data())
      std::memmove(input_.data(), stream_.next_in, stream_.avail_in);
    stream_.next_in = input_.data();
    if (stream_.avail_in < wanted) { // fills the buffer: fewer bytes mean the file ended
      const std::size_t room = input_.size() - stream_.avail_in;
      const std::size_t got = read_raw(input_.data() + stream_.avail_in, room);
      input_ended_ = got < room;
      stream_.avail_in += static_cast<uInt>(got);
      compressed_read_ += got;
    }
    return stream_.avail_in;
  }

  // After a member's trailer: another member follows, or the file ends. Anything else is refused,
  // where gzread would stop there silently.
  void after_member() {
    in_member_ = false;
    if (fill_input(2) == 0) {
      finished_ = true;
      return;
    }
    if (stream_.avail_in >= 2 && stream_.next_in[0] == 0x1f && stream_.next_in[1] == 0x8b) {
      inflateReset(&stream_);
      in_member_ = true;
      return;
    }
    const std::uint64_t consumed = compressed_read_ - stream_.avail_in;
    const std::uint64_t trailing = file_bytes_ > consumed ? file_bytes_ - consumed : 1;
    fail(std::to_string(trailing) + " unexpected " + plural(trailing, "byte", "bytes") +
         " after the end of the gzip stream (not another gzip member)");
  }

  std::size_t inflate_into(std::uint8_t* destination, std::size_t count) {
    std::size_t total = 0;
    while (total < count && !finished_) {
      if (fill_input(1) == 0) {
        // The file ended inside a member: before its compressed data or trailer was complete.
        cut_ = in_member_;
        finished_ = true;
        break;
      }
      const auto room = static_cast<uInt>(std::min(count - total, read_chunk_bytes));
      stream_.next_out = destination + total;
      stream_.avail_out = room;
      const uInt input_before = stream_.avail_in;
      const int code = inflate(&stream_, Z_NO_FLUSH);
      total += room - stream_.avail_out;
      switch (code) {
      case Z_OK:
        break;
      case Z_STREAM_END: // the member's trailer is there and matches (CRC-32 and length)
        after_member();
        break;
      case Z_BUF_ERROR:
        // No progress: legitimate only when input ran out (refilled above).
        if (stream_.avail_in == input_before && stream_.avail_out == room)
          fail("corrupt gzip stream (no progress decompressing)");
        break;
      case Z_MEM_ERROR:
        fail("out of memory while decompressing");
      case Z_NEED_DICT:
        fail("corrupt gzip stream (it asks for a preset dictionary)");
      default:
        fail(std::string("corrupt gzip stream (") +
             (stream_.msg != nullptr ? stream_.msg : "invalid data") + ")");
      }
    }
    return total;
  }

  std::string path_;
  std::uint64_t file_bytes_ = 0;
  kernels::regular_file file_;
  bool gzip_ = false;
  z_stream stream_{};
  bool inflating_ = false;
  std::vector<std::uint8_t> input_;
  std::uint64_t compressed_read_ = 0;
  bool input_ended_ = false;
  bool in_member_ = false;
  bool finished_ = false;
  bool cut_ = false;
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
  std::array<std::uint8_t, magic_bytes> magic{};
  const std::size_t got = reader.read(magic.data(), magic.size());
  if (got == 0 && !reader.stream_cut())
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

std::uint64_t value_count(idx_reader& reader, const std::vector<std::uint32_t>& dims,
                          std::uint64_t max_values) {
  std::uint64_t count = 1;
  for (std::uint32_t extent : dims) {
    if (count > max_values / extent)
      reader.fail("the header says " + dims_string(dims) + " values, more than the " +
                  std::to_string(max_values) + " this reader accepts (a corrupt header?)");
    count *= extent;
  }
  return count;
}

// The declared size against the file's, before anything is allocated for it: raw, the values fill
// the rest of the file exactly; gzip, deflate cannot expand the file to more than 1032 times its
// size.
void check_declared_size(const idx_reader& reader, const idx_header& header) {
  const std::uint64_t header_bytes = magic_bytes + 4 * header.dims.size();
  const std::uint64_t file_bytes = reader.file_bytes();
  if (!reader.is_gzip()) {
    const std::uint64_t data_bytes = file_bytes - std::min(file_bytes, header_bytes);
    if (data_bytes < header.values)
      reader.fail("truncated: the header says " + size_phrase(header.dims, header.values) +
                  " but the file ends after " + std::to_string(data_bytes) + " of them");
    if (data_bytes > header.values) {
      const std::uint64_t trailing = data_bytes - header.values;
      reader.fail(std::to_string(trailing) + " unexpected " + plural(trailing, "byte", "bytes") +
                  " after the data (the header says " + size_phrase(header.dims, header.values) +
                  ")");
    }
    return;
  }
  const std::uint64_t expandable = file_bytes * deflate_max_ratio;
  if (header_bytes + header.values > expandable)
    reader.fail("the header says " + size_phrase(header.dims, header.values) +
                ", but a gzip file of " + std::to_string(file_bytes) +
                " bytes expands to at most " + std::to_string(expandable) +
                " (deflate expands at most 1032:1): the header is corrupt or the file truncated");
}

idx_header read_header(idx_reader& reader, std::uint64_t max_values) {
  idx_header header;
  header.dims = read_dims(reader, read_magic_dimension_count(reader));
  header.values = value_count(reader, header.dims, max_values);
  header.file_bytes = reader.file_bytes();
  header.gzip = reader.is_gzip();
  check_declared_size(reader, header);
  return header;
}

// Trailing bytes counted before a file is refused for them: a gigabyte of zeros after the data
// compresses to a megabyte, and inflating it all to count it took seconds.
constexpr std::uint64_t trailing_bytes_counted = std::uint64_t{1} << 20;

// Counts what follows the data, up to just past trailing_bytes_counted; for gzip, reading to the
// end also checks every member's trailer.
std::uint64_t count_trailing_bytes(idx_reader& reader) {
  std::vector<std::uint8_t> scratch(std::size_t{1} << 16);
  std::uint64_t trailing = 0;
  while (trailing <= trailing_bytes_counted) {
    const std::size_t got = reader.read(scratch.data(), scratch.size());
    trailing += got;
    if (got < scratch.size())
      return trailing;
  }
  return trailing;
}

void read_values(idx_reader& reader, idx_array& result, std::uint64_t expected) {
  const auto total = static_cast<std::size_t>(expected);
  std::size_t filled = 0;
  if (!reader.is_gzip())
    result.values.resize(total); // the file's size says the values are all there
  else                           // address space only: pages are touched as the values arrive
    result.values.reserve(std::min(total, std::size_t{256} << 20));
  while (filled < total) {
    std::size_t wanted = std::min(total - filled, read_chunk_bytes);
    if (reader.is_gzip()) {
      wanted = std::min(wanted, std::max(filled, min_growth_bytes));
      result.values.resize(filled + wanted);
    }
    const std::size_t got = reader.read(result.values.data() + filled, wanted);
    filled += got;
    if (got < wanted) {
      reader.fail("truncated: the header says " + size_phrase(result.dims, expected) + " but " +
                  reader.input_name() + " ends after " + std::to_string(filled) + " of them" +
                  reader.cut_note());
    }
  }
}

} // namespace

idx_header read_idx_header(const std::string& path) {
  idx_reader reader(path);
  return read_header(reader, idx_max_values);
}

idx_array read_idx(const std::string& path, std::uint64_t max_values) {
  idx_reader reader(path);
  idx_array result;
  const idx_header header = read_header(reader, std::min(max_values, idx_max_values));
  result.dims = header.dims;
  const std::uint64_t expected = header.values;
  try {
    read_values(reader, result, expected);
  } catch (const std::bad_alloc&) {
    reader.fail("out of memory for " + size_phrase(result.dims, expected) +
                "; free memory or lower data.max-bytes to refuse such files up front");
  }

  const std::uint64_t trailing = count_trailing_bytes(reader);
  if (trailing > trailing_bytes_counted)
    reader.fail("more than " + std::to_string(trailing_bytes_counted) +
                " unexpected bytes after the data (the header says " +
                size_phrase(result.dims, expected) + ")");
  if (reader.stream_cut())
    reader.fail("truncated: the gzip stream is cut short after all " + std::to_string(expected) +
                " values, before its end marker (the CRC-32/length trailer)");
  if (trailing > 0)
    reader.fail(std::to_string(trailing) + " unexpected " + plural(trailing, "byte", "bytes") +
                " after the data (the header says " + size_phrase(result.dims, expected) + ")");
  return result;
}

} // namespace herd::models
