// Herd's error codes between actors (caf::error with category "herd"), rendered as readable text
// by the renderer that add_message_types() registers.
#pragma once

#include <cstdint>
#include <string>

namespace caf {
class error;
class actor_system_config;
} // namespace caf

namespace herd::actors {

// A round's own failures travel in group_done (a data-plane error is data, not an actor's exit);
// these codes are for actors that end or refuse a request.
enum class herd_errc : std::uint8_t {
  compute_failed = 1, // a worker's local step threw; the worker exits with this
  evaluation_failed,  // the evaluator could not evaluate a snapshot
  join_refused,       // the coordinator refused a node (version, a full cluster, bad settings)
};

const char* to_string(herd_errc code);

/// A caf::error in Herd's category with a sentence of context.
caf::error make_error(herd_errc code, std::string context);

/// Registers the renderer of Herd's error category (add_message_types() calls it).
void add_error_category(caf::actor_system_config& config);

} // namespace herd::actors
