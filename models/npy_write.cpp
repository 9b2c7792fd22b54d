// The .npy writer: float32 arrays as np.save lays them out (herd predict's output, herd export's
// tensors). The reader is npy.cpp.
#include "models/npy.hpp"

#include "herd/model.hpp"
#include "kernels/check.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace herd::models {

std::string npy_bytes(const float* values, const std::vector<std::size_t>& dims) {
  std::string extents;
  for (const std::size_t extent : dims)
    extents += std::to_string(extent) + ", ";
  if (dims.size() > 1)
    extents.resize(extents.size() - 2); // (n,) for one dimension, (a, b) for more
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + extents + "), }";
  // Magic (6), version (2), header length (2), then the dict padded with spaces and ended by a
  // newline so that the values start at a multiple of 64 bytes, as np.save writes it.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>(dict.size() >> 8);
  bytes += dict;
  const std::size_t count = elements(dims);
  bytes.reserve(bytes.size() + count * 4);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, values + i, 4);
    for (int shift = 0; shift < 32; shift += 8)
      bytes += static_cast<char>((bits >> shift) & 0xff);
  }
  return bytes;
}

std::string npy_bytes(const tensor& values) {
  HERD_CHECK_EQ(values.rank(), 2u);
  HERD_CHECK(values.where().host_accessible(), "npy_bytes of a tensor in device memory");
  return npy_bytes(values.data(), {values.rows(), values.cols()});
}

} // namespace herd::models
