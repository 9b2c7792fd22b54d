// The 16-bit wire kernels (wire_kernels.hpp). The rounding is written out bit by bit for bf16, as
// the CPU does it, and saturated before CUDA's own conversion for fp16, so each element gets the
// CPU's bits. The arithmetic uses the _rn intrinsics: nvcc would otherwise fuse weight * from +
// residual into one multiply-add, which rounds once where the CPU rounds twice.
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/wire_kernels.hpp"

#include <algorithm>
#include <cfloat>
#include <cuda_fp16.h>

namespace herd::kernels::cuda {

namespace {

constexpr int threads_per_block = 256;
// A grid-stride loop covers the rest: this is a few waves of resident blocks on any current GPU.
constexpr std::size_t most_blocks = 1024;

constexpr float fp16_max = 65504.0f;

template <half_format format>
__device__ std::uint16_t narrowed(float x) {
  if constexpr (format == half_format::bf16) {
    const unsigned u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: kept a quiet NaN, not rounded into an infinity
      return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  } else {
    // Comparisons, not fminf/fmaxf, which would turn a NaN into the bound.
    if (!isinf(x))
      x = x > fp16_max ? fp16_max : (x < -fp16_max ? -fp16_max : x);
    return __half_as_ushort(__float2half_rn(x));
  }
}

template <half_format format>
__device__ float widened(std::uint16_t h) {
  if constexpr (format == half_format::bf16)
    return __uint_as_float(static_cast<unsigned>(h) << 16);
  else
    return __half2float(__ushort_as_half(h));
}

template <half_format format>
__global__ void narrow_kernel(const float* from, float weight, float* residual, std::uint16_t* to,
                              std::size_t n) {
  const float largest = format == half_format::fp16 ? fp16_max : FLT_MAX;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    float x = __fmul_rn(weight, from[i]);
    if (residual != nullptr)
      x = __fadd_rn(x, residual[i]);
    const std::uint16_t h = narrowed<format>(x);
    to[i] = h;
    if (residual != nullptr) {
      const float lost = __fsub_rn(x, widened<format>(h));
      residual[i] = fabsf(x) <= largest && isfinite(lost) ? lost : 0.0f;
    }
  }
}

template <half_format format>
__global__ void widen_kernel(const std::uint16_t* from, float* to, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride)
    to[i] = widened<format>(from[i]);
}

unsigned blocks_for(std::size_t n) {
  const std::size_t wanted = (n + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(wanted, most_blocks)));
}

} // namespace

void narrow_on_device(void* stream, half_format format, const float* from, float weight,
                      float* residual, std::uint16_t* to, std::size_t n) {
  if (n == 0)
    return;
  auto* on = static_cast<cudaStream_t>(stream);
  if (format == half_format::bf16)
    narrow_kernel<half_format::bf16>
        <<<blocks_for(n), threads_per_block, 0, on>>>(from, weight, residual, to, n);
  else
    narrow_kernel<half_format::fp16>
        <<<blocks_for(n), threads_per_block, 0, on>>>(from, weight, residual, to, n);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void widen_on_device(void* stream, half_format format, const std::uint16_t* from, float* to,
                     std::size_t n) {
  if (n == 0)
    return;
  auto* on = static_cast<cudaStream_t>(stream);
  if (format == half_format::bf16)
    widen_kernel<half_format::bf16><<<blocks_for(n), threads_per_block, 0, on>>>(from, to, n);
  else
    widen_kernel<half_format::fp16><<<blocks_for(n), threads_per_block, 0, on>>>(from, to, n);
  HERD_CUDA_CHECK(cudaGetLastError());
}

void load_wire_kernels(int device) {
  const device_scope scope(device);
  cudaFuncAttributes attributes{}; // asking for them loads the kernel
  HERD_CUDA_CHECK(cudaFuncGetAttributes(&attributes, narrow_kernel<half_format::bf16>));
  HERD_CUDA_CHECK(cudaFuncGetAttributes(&attributes, narrow_kernel<half_format::fp16>));
  HERD_CUDA_CHECK(cudaFuncGetAttributes(&attributes, widen_kernel<half_format::bf16>));
  HERD_CUDA_CHECK(cudaFuncGetAttributes(&attributes, widen_kernel<half_format::fp16>));
}

} // namespace herd::kernels::cuda
