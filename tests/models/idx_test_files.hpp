// Test helpers for the data layer: a temporary directory that removes itself, and writers for IDX
// files (raw and gzip) whose headers the tests may break on purpose.
#pragma once

#include "herd/idx.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <vector>
#include <zlib.h>

#include "support/temp_directory.hpp"

namespace herd::models::test_files {

using herd::testing::temp_directory;

/// The bytes of an IDX file: magic (0, 0, type, dimension count), big-endian dims, then values.
inline std::vector<std::uint8_t> idx_bytes(const std::vector<std::uint32_t>& dims,
                                           const std::vector<std::uint8_t>& values,
                                           std::uint8_t type = 0x08) {
  std::vector<std::uint8_t> bytes{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t extent : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<std::uint8_t>(extent >> shift));
  bytes.insert(bytes.end(), values.begin(), values.end());
  return bytes;
}

inline void write_raw(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

inline void write_gzip(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr)
    throw std::runtime_error("cannot create " + path);
  const int written = gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  const int closed = gzclose(file);
  if (written != static_cast<int>(bytes.size()) || closed != Z_OK)
    throw std::runtime_error("cannot write gzip " + path);
}

/// `bytes` as one gzip member, in memory (members concatenate into one gzip stream).
inline std::vector<std::uint8_t> gzip_member(const std::vector<std::uint8_t>& bytes) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::vector<std::uint8_t> out(deflateBound(&stream, bytes.size()) + 32);
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  const int code = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (code != Z_STREAM_END)
    throw std::runtime_error("deflate did not finish");
  return out;
}

/// The process's peak resident memory so far, in bytes.
inline std::uint64_t peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024; // Linux reports kilobytes
}

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in),
                                   std::istreambuf_iterator<char>());
}

/// `count` random bytes from a fixed seed.
inline std::vector<std::uint8_t> random_bytes(std::size_t count, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::vector<std::uint8_t> values(count);
  for (std::uint8_t& value : values)
    value = static_cast<std::uint8_t>(engine() >> 24);
  return values;
}

} // namespace herd::models::test_files
