// One node's part of a cluster's checkpoint (docs/checkpoints.md, "Across processes"): each node
// writes its workers' states to its own disk, and the coordinator's checkpoint (the manifest)
// lists the parts. Crosses processes in the node's answer (actors/messages.hpp has its inspect),
// and is archived in the manifest (checkpoint_state.cpp). Plain data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace herd::actors {

struct part_record {
  std::int32_t node = 0;             // its index in the run that wrote it
  std::vector<std::int32_t> workers; // the worker indices it holds, ascending
  std::string file;                  // the file's name in the node's checkpoint directory
  std::uint64_t bytes = 0;           // the file's size
  std::uint64_t payload_hash = 0;    // its header's payload hash: names this write of the part
};

} // namespace herd::actors
