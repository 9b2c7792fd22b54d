// The messages of checkpoints in one process (docs/checkpoints.md), apart from messages.hpp: they
// never cross a process boundary. Includes CAF: actor implementation files and tests only.
#pragma once

#include <caf/all.hpp>

#include <memory>

namespace herd::actors {

struct worker_record;

/// (checkpoint_atom) -> worker_checkpoint: a worker's whole state, answered once it is at rest
/// (no step running, every round it answered applied, no step due or it was stopped).
using checkpoint_atom = caf::atom_constant<caf::atom("checkpnt")>;

struct worker_checkpoint {
  std::shared_ptr<const worker_record> record;
};

} // namespace herd::actors

// A pointer into this process's memory: never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::actors::worker_checkpoint)
