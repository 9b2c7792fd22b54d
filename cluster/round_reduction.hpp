// One round's reduction on a node, as the node reducer's thread runs it (no CAF): this node's
// members' weighted sum, which the local plane reads from their send buffers, then the plain sum of
// the round's nodes' partial sums through the data plane, in place. With gradient buckets
// (comm.bucket-mb) on a plane that matches operations by tag (Gloo), both go bucket by bucket from
// the end of the buffer: each bucket crosses the wire as soon as this node's members have it final
// (comm::gradient_marks), while backward still finishes the rest; a part reduced this way has the
// bits of the whole (operation_options::part_offset). A plane that matches in issue order (NCCL)
// reduces the round at once: its members compute on a GPU, whose steps are never announced.
#pragma once

#include "comm/data_plane.hpp"
#include "comm/sequencer.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace herd::cluster {

/// A reduction's place in this node's issue order (sequence 0: none).
struct issue_place {
  std::uint32_t generation = 0;
  std::uint64_t sequence = 0;
};

struct round_reduction {
  std::uint64_t round = 0;
  std::shared_ptr<comm::data_plane> local;  // this node's workers' send buffers, by worker index
  std::shared_ptr<comm::data_plane> plane;  // between the round's nodes; null: this node alone
  std::vector<comm::weighted_input> inputs; // this node's members, with the round's weights
  std::vector<int> ranks;                   // the round's nodes' ranks in `plane`, sorted
  float* result = nullptr;                  // `count` floats
  std::size_t count = 0;
  std::chrono::milliseconds timeout{30000}; // each operation's
  comm::bucket_layout buckets;              // none: no buckets
};

/// Runs `job`. Calls `prereduced` exactly once, as soon as this node's send buffers are no longer
/// read (on every path), and gives `place` back on every path. Never throws: a failure is the
/// status.
comm::status reduce_round(const round_reduction& job, comm::issue_gate& gate, issue_place place,
                          const std::function<void()>& prereduced);

/// Whether a reduction across the nodes on `plane` goes bucket by bucket.
bool reduces_in_buckets(const comm::data_plane* plane, const comm::bucket_layout& buckets);

/// The data-plane tags of the operations of a round, in the order they are issued: the round
/// number alone, or bucket by bucket one per bucket of `buckets` (round x buckets + bucket, below
/// the tags of state transfers, 2^47). Throws std::invalid_argument past that.
std::vector<std::uint64_t> round_tags(std::uint64_t round, const comm::bucket_layout& buckets,
                                      bool bucket_by_bucket);

} // namespace herd::cluster
