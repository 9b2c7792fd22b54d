// The CPU-only build's make_cuda_ops() and device memory: each says clearly that the build has no
// CUDA, rather than pretending to work. Compiled only when HERD_WITH_CUDA is off.
#include "kernels/cuda/cuda_ops.hpp"
#include "kernels/cuda/device_buffer.hpp"

#include <stdexcept>
#include <string>

namespace herd::kernels::cuda {

namespace {

[[noreturn]] void built_without_cuda(const char* what) {
  throw std::runtime_error(std::string(what) +
                           ": built without CUDA (configure with -DHERD_WITH_CUDA=ON where nvcc "
                           "is installed)");
}

} // namespace

std::unique_ptr<ops> make_cuda_ops(int /*device*/, void* /*stream*/) {
  built_without_cuda("make_cuda_ops");
}

const memory& device_memory(int /*device*/) {
  built_without_cuda("device_memory");
}

void load_weighted_sum_kernels(int /*device*/) {
  built_without_cuda("load_weighted_sum_kernels");
}

namespace detail {

void* device_allocate(std::size_t /*bytes*/) {
  built_without_cuda("device_buffer");
}

void device_release(void* /*pointer*/) noexcept {}

void copy_host_to_device(void* /*device_destination*/, const void* /*host_source*/,
                         std::size_t /*bytes*/) {
  built_without_cuda("device_buffer");
}

void copy_device_to_host(void* /*host_destination*/, const void* /*device_source*/,
                         std::size_t /*bytes*/) {
  built_without_cuda("device_buffer");
}

} // namespace detail

} // namespace herd::kernels::cuda
