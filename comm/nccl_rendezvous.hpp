// How the ranks of one NCCL communicator agree on its unique id without a service of their own:
// through the same rendezvous store the Gloo plane's ranks exchange their addresses in (in a
// cluster, the coordinator's registry), under the data-plane generation's prefix, so every
// generation gets a fresh communicator. Rank 0 makes the id (and with it NCCL's bootstrap root,
// which lives in its process) and sets it; the others wait for it.
#pragma once

#include "comm/nccl_plane.hpp"
#include "comm/rendezvous_store.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace herd::comm {

/// The store key of the id of the plane whose keys start with `prefix` ("<prefix>/nccl-id").
std::string nccl_id_key(const std::string& prefix);

/// Rank 0 calls `make` once and sets its id under nccl_id_key(prefix); every other rank reads it,
/// waiting up to `timeout`. Throws comm_error: `timeout` naming the key when it is not set in
/// time, `invalid_argument` when the value stored is not an id, or whatever `make` throws.
nccl_unique_id
exchange_nccl_unique_id(int rank, rendezvous_store& store, const std::string& prefix,
                        std::chrono::milliseconds timeout,
                        const std::function<nccl_unique_id()>& make = make_nccl_unique_id);

/// This process's rank of a new NCCL communicator of `size` ranks, its id exchanged through
/// `store` (above) within options.timeout. Throws comm_error (also "built without NCCL").
std::unique_ptr<nccl_plane> connect_nccl_plane(int rank, int size, rendezvous_store& store,
                                               const std::string& prefix,
                                               const nccl_plane_options& options);

} // namespace herd::comm
