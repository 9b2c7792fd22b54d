// The build without NCCL (HERD_WITH_NCCL off, or no CUDA): every entry point of the nccl data plane
// says so clearly rather than pretending to work, as kernels/cuda/cuda_unavailable.cpp does for
// CUDA. Compiled only when HERD_WITH_NCCL is off.
#include "comm/nccl_plane.hpp"

#include <string>

namespace herd::comm {

namespace {

[[noreturn]] void built_without_nccl(const char* what) {
  throw comm_error(outcome::unsupported,
                   std::string(what) +
                       ": built without NCCL (configure with -DHERD_WITH_NCCL=ON where the CUDA "
                       "toolkit and NCCL are installed)");
}

} // namespace

std::string nccl_description() {
  return "built without NCCL";
}

nccl_unique_id make_nccl_unique_id() {
  built_without_nccl("make_nccl_unique_id");
}

std::unique_ptr<nccl_plane> make_nccl_plane(int /*rank*/, int /*size*/,
                                            const nccl_unique_id& /*id*/,
                                            nccl_plane_options /*options*/) {
  built_without_nccl("nccl_plane");
}

} // namespace herd::comm
