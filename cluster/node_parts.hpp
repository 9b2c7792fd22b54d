// A node's side of a cluster's checkpoints (docs/checkpoints.md, "Across processes"): it writes
// its workers' states as its part of a checkpoint to its own disk when the coordinator asks, lists
// the parts it holds when it joins, and reads the one a resumed run names. No CAF.
#pragma once

#include "actors/checkpoint_state.hpp"

#include <string>
#include <vector>

#include "checkpoint/format.hpp"

namespace herd::cluster {

/// Where a node keeps its parts, and what their headers say about the run.
struct part_store {
  std::string directory; // empty: the run takes no checkpoints
  checkpoint::structure shape;
  std::string herd_version;
};

/// Writes `workers` (at rest, in index order) as node `node`'s part of checkpoint `stem`, so that
/// a crash at any moment leaves the whole file or none, then deletes the parts of checkpoints
/// older than `keep_from`. Throws std::runtime_error naming the file.
actors::part_record write_part(const part_store& store, const std::string& stem,
                               const std::string& keep_from, int node,
                               const std::vector<actors::worker_record>& workers);

} // namespace herd::cluster
