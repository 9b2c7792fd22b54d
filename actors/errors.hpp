// Herd's error codes between actors (caf::error with category "herd"), rendered as readable text
// by the renderer that add_message_types() registers.
#pragma once

#include "comm/errors.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace caf {
class error;
class actor_system_config;
} // namespace caf

namespace herd::actors {

// Two kinds of failure, each with a kind for code and words for people; no decision reads words.
// A round's own failures are data (comm::status in group_done and reduce_done, the data plane's
// vocabulary); these codes are for actors that end or refuse a request (caf::error).
enum class herd_errc : std::uint8_t {
  compute_failed = 1, // a worker's local step threw; the worker exits with this
  evaluation_failed,  // the evaluator could not evaluate a snapshot
  join_refused,       // the coordinator refused a node (version, a full cluster, bad settings)
  checkpoint_failed,  // a node could not write its part of a checkpoint
  run_stopped,        // the coordinator was stopped before its run started (a node's answer)
};

const char* to_string(herd_errc code);

/// A caf::error in Herd's category with a sentence of context.
caf::error make_error(herd_errc code, std::string context);

/// The sentence of context of `error` when it is Herd's `code` (make_error's); else nullopt.
std::optional<std::string> context_of(const caf::error& error, herd_errc code);

/// A failed request between actors as a round's result: `timeout` when the answer did not come
/// in time, `peer_lost` when the other actor (or its process) is gone; `message` says it.
comm::status status_of(const caf::error& failure, std::string message);

/// Registers the renderer of Herd's error category (add_message_types() calls it).
void add_error_category(caf::actor_system_config& config);

} // namespace herd::actors
