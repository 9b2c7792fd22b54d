// Rounding floats to 16 bits and back on a CUDA device: what the nccl data plane puts on the wire
// when it compresses (comm.compression). Each element is rounded to the same bits as the CPU's
// rounding for the Gloo plane (comm/wire_format.hpp), so the two planes agree on what a value
// becomes. No CUDA headers here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace herd::kernels::cuda {

enum class half_format {
  fp16, // IEEE half; finite magnitudes above 65504 are saturated to it
  bf16, // bfloat16
};

/// Queues on `stream` (a cudaStream_t of the current device): x = weight * from[i], plus
/// residual[i] when `residual` is not null, each step rounded once (no fused multiply-add), then
/// to[i] = x rounded to nearest, ties to even. Infinities and NaN stay such. With a residual,
/// residual[i] then becomes what the rounding took from x (error feedback), or 0 where x was
/// saturated or that difference is not finite. Device memory throughout; `to` overlaps neither
/// input. Returns once queued; throws std::runtime_error when the launch fails.
void narrow_on_device(void* stream, half_format format, const float* from, float weight,
                      float* residual, std::uint16_t* to, std::size_t n);

/// Queues on `stream`: to[i] = the float of from[i] (exact).
void widen_on_device(void* stream, half_format format, const std::uint16_t* from, float* to,
                     std::size_t n);

/// Loads both kernels on `device` now, as load_weighted_sum_kernels does for the weighted sum (a
/// kernel's first launch may otherwise wait for every stream of the device).
void load_wire_kernels(int device);

} // namespace herd::kernels::cuda
