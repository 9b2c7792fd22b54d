// The NCCL id through the rendezvous store; see nccl_rendezvous.hpp. Built with or without NCCL:
// only make_nccl_unique_id and make_nccl_plane differ.
#include "comm/nccl_rendezvous.hpp"

#include <stdexcept>

namespace herd::comm {

std::string nccl_id_key(const std::string& prefix) {
  return prefix + "/nccl-id";
}

nccl_unique_id exchange_nccl_unique_id(int rank, rendezvous_store& store, const std::string& prefix,
                                       std::chrono::milliseconds timeout,
                                       const std::function<nccl_unique_id()>& make) {
  const auto key = nccl_id_key(prefix);
  if (rank == 0) {
    auto id = make();
    const auto bytes = id.to_bytes();
    store.set(key, std::vector<char>(bytes.begin(), bytes.end()));
    return id;
  }
  const auto value = store.get(key, timeout);
  try {
    return nccl_unique_id::from_bytes(std::string_view(value.data(), value.size()));
  } catch (const std::invalid_argument& bad) {
    throw comm_error(outcome::invalid_argument, "rendezvous key " + key + ": " + bad.what());
  }
}

std::unique_ptr<nccl_plane> connect_nccl_plane(int rank, int size, rendezvous_store& store,
                                               const std::string& prefix,
                                               const nccl_plane_options& options) {
  const auto id = exchange_nccl_unique_id(rank, store, prefix, options.timeout);
  return make_nccl_plane(rank, size, id, options);
}

} // namespace herd::comm
