// The aggregator actor: runs one group reduction at a time per round it is given (a pool of them
// runs groups in parallel). It asks every member for its contribution, weights them, drives the
// data plane, hands every member the result and reports the round to the coordinator.
//
// Messages it answers:
//   group_plan        run this round (DESIGN.md section 3, steps 3 and 4)
// Messages it sends: (contribute_atom, round) requests and round_result to the members,
// group_done to the coordinator.
#pragma once

#include "comm/backend.hpp"
#include "comm/buffer_pool.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <cstddef>
#include <memory>

namespace herd::actors {

struct aggregator_setup {
  std::shared_ptr<comm::backend> backend;
  std::shared_ptr<comm::buffer_pool> results; // buffers of the model's parameter count
  /// How long a member may take to answer a contribution request. Members answer from their
  /// actor thread while computing, so this only fires for a member that died or hangs.
  std::chrono::milliseconds contribution_timeout{30000};
};

caf::actor spawn_aggregator(caf::actor_system& system, aggregator_setup setup,
                            const caf::actor& coordinator);

} // namespace herd::actors
