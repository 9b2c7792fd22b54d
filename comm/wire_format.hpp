// How the gloo data plane puts a reduction's floats on the wire: as they are (fp32), or rounded
// to 16 bits (fp16, bf16), which halves the bytes each reduction sends. No CAF, no Gloo.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace herd::comm {

enum class wire_format {
  fp32, // the floats themselves: results bit for bit as without compression
  fp16, // IEEE half: 11 significant bits; magnitudes above 65504 are saturated to it
  bf16, // bfloat16: 8 significant bits, float's range
};

/// The format a comm.compression value names ("none", "fp16", "bf16"); throws
/// std::invalid_argument for any other text.
wire_format wire_format_of(std::string_view name);
std::string_view name_of(wire_format format);
/// Bytes one float takes on the wire.
std::size_t wire_bytes(wire_format format);

/// Rounds `n` floats to 16 bits, to nearest (ties to even). fp16 saturates a finite magnitude
/// above 65504 to 65504 (a gradient too large for fp16 stays large, not infinite); infinities
/// and NaN pass as such in both formats. Only for fp16 and bf16.
void narrow(wire_format format, const float* from, std::uint16_t* to, std::size_t n);
/// The floats of `n` 16-bit values (exact: every fp16 and bf16 value is a float).
void widen(wire_format format, const std::uint16_t* from, float* to, std::size_t n);

/// The same as narrow() and widen(), in plain C++ on any CPU: what the vector code is tested
/// against, and what it falls back to on a CPU without F16C.
void narrow_portable(wire_format format, const float* from, std::uint16_t* to, std::size_t n);
void widen_portable(wire_format format, const std::uint16_t* from, float* to, std::size_t n);

} // namespace herd::comm
