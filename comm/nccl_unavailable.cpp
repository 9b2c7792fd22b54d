// The build without NCCL (HERD_WITH_NCCL off, or no CUDA): every entry point of the nccl data plane
// says so clearly rather than pretending to work, as kernels/cuda/cuda_unavailable.cpp does for
// CUDA. Compiled only when HERD_WITH_NCCL is off.
#include "comm/nccl_plane.hpp"

#include <string>

namespace herd::comm {

namespace {

[[noreturn]] void built_without_nccl(const char* what) {
  throw comm_error(std::string(what) +
                   ": built without NCCL (configure with -DHERD_WITH_NCCL=ON where the CUDA "
                   "toolkit and NCCL are installed)");
}

} // namespace

// Never made: the constructor throws first.
class nccl_plane::impl {};

nccl_unique_id make_nccl_unique_id() {
  built_without_nccl("make_nccl_unique_id");
}

nccl_plane::nccl_plane(int /*rank*/, int /*size*/, const nccl_unique_id& /*id*/,
                       nccl_plane_options /*options*/) {
  built_without_nccl("nccl_plane");
}

nccl_plane::~nccl_plane() = default;

int nccl_plane::rank() const {
  built_without_nccl("nccl_plane::rank");
}
int nccl_plane::size() const {
  built_without_nccl("nccl_plane::size");
}
int nccl_plane::device() const {
  built_without_nccl("nccl_plane::device");
}
void* nccl_plane::stream() const {
  built_without_nccl("nccl_plane::stream");
}

std::shared_ptr<work> nccl_plane::group_reduce(const std::vector<weighted_input>& /*inputs*/,
                                               const float* /*send*/, float* /*out*/,
                                               std::size_t /*count*/) {
  built_without_nccl("nccl_plane::group_reduce");
}

bool nccl_plane::aborted() const {
  built_without_nccl("nccl_plane::aborted");
}
std::string nccl_plane::abort_reason() const {
  built_without_nccl("nccl_plane::abort_reason");
}

} // namespace herd::comm
