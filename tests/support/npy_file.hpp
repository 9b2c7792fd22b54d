// Writes .npy files from bytes, as np.save lays them out (magic, version, little-endian header
// length, the dict padded with spaces to a multiple of 64 and a newline, then the values), so that
// tests need no Python. Options break one part at a time for the reader's refusals.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace herd::testing {

struct npy_options {
  int major = 1;        // format version 1, 2 or 3
  bool fortran = false; // fortran_order: True
  std::string dict;     // when set, the header's text instead of the generated dict
  std::string magic = "\x93NUMPY";
};

inline std::string npy_shape(const std::vector<std::uint64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// The bytes of a .npy file holding `data` (already in the dtype's little-endian layout).
inline std::string npy_bytes(const std::string& descr, const std::vector<std::uint64_t>& shape,
                             const std::string& data, const npy_options& options = {}) {
  std::string dict = options.dict;
  if (dict.empty())
    dict = "{'descr': '" + descr + "', 'fortran_order': " + (options.fortran ? "True" : "False") +
           ", 'shape': " + npy_shape(shape) + ", }";
  const std::size_t length_bytes = options.major == 1 ? 2 : 4;
  const std::size_t prefix = 8 + length_bytes;
  while ((prefix + dict.size() + 1) % 64 != 0)
    dict += ' ';
  dict += '\n';
  std::string out = options.magic;
  out += static_cast<char>(options.major);
  out += '\0';
  const auto length = static_cast<std::uint32_t>(dict.size());
  for (std::size_t i = 0; i < length_bytes; ++i)
    out += static_cast<char>((length >> (8 * i)) & 0xff);
  return out + dict + data;
}

/// The raw bytes of `values` (the host is little-endian, as .npy's '<' dtypes are).
template <typename T>
std::string npy_values(const std::vector<T>& values) {
  std::string data(values.size() * sizeof(T), '\0');
  if (!values.empty())
    std::memcpy(data.data(), values.data(), data.size());
  return data;
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
void write_npy(const std::string& path, const std::string& descr,
               const std::vector<std::uint64_t>& shape, const std::vector<T>& values,
               const npy_options& options = {}) {
  write_bytes(path, npy_bytes(descr, shape, npy_values(values), options));
}

} // namespace herd::testing
