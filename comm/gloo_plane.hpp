// The `gloo` data plane: CPU processes connected by Facebook Gloo's TCP transport, built once as a
// full mesh, over which any subset of ranks reduces through Gloo's unbound buffers (point to point)
// without building a context per group. No Gloo header here: Gloo stays a private dependency.
#pragma once

#include "comm/rendezvous_store.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace herd::comm {

struct gloo_plane_options {
  std::string hostname = "127.0.0.1";       // the address this rank listens on and peers dial
  std::string prefix;                       // namespaces this job's keys in the store
  std::chrono::milliseconds timeout{30000}; // how long the rendezvous may take
};

/// One process's rank in a full mesh of TCP connections (Gloo's tcp transport), built once; any
/// subset of ranks then reduces through unbound buffers, without a new context per group.
///
/// Operations may run concurrently from several threads as long as their tags differ. A tag is
/// turned into Gloo slots, so it must be below 2^48; after an operation with a tag has failed,
/// that tag is refused on this plane (the failed operation's messages may still be in flight and
/// would be matched with the new one's). A lost peer stays lost: operations that include it fail
/// at once, operations among the other ranks go on working.
class gloo_plane {
public:
  /// Connects rank `rank` of `size` to every other rank through `store`; throws comm_error (naming
  /// the rank(s) that never appeared) when the rendezvous does not complete within options.timeout.
  gloo_plane(int rank, int size, std::shared_ptr<rendezvous_store> store,
             gloo_plane_options options);
  /// Closes every connection: peers' operations that include this rank fail. No operation may be
  /// running on this plane.
  ~gloo_plane();
  gloo_plane(const gloo_plane&) = delete;
  gloo_plane& operator=(const gloo_plane&) = delete;

  int rank() const;
  int size() const;

  /// Sums `count` floats of `data` in place over the ranks in `ranks` (sorted, unique, containing
  /// rank()); every rank in `ranks` calls this with the same ranks, count and tag. A group of one
  /// returns at once. Throws comm_error naming the peer and the tag when a peer fails or `timeout`
  /// passes; `data` is never written after this returns or throws.
  void group_allreduce(float* data, std::size_t count, const std::vector<int>& ranks,
                       std::uint64_t tag, std::chrono::milliseconds timeout);

  /// Copies root's `count` floats into every other rank of `ranks` (used when a node joins and
  /// takes the model from a live peer). Same contract as group_allreduce.
  void group_broadcast(float* data, std::size_t count, const std::vector<int>& ranks, int root,
                       std::uint64_t tag, std::chrono::milliseconds timeout);

private:
  class impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herd::comm
