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

enum class herd_errc : std::uint8_t {
  compute_failed = 1, // a worker's local step threw
  reduce_failed,      // the data plane could not reduce a group
  evaluation_failed,  // the evaluator could not evaluate a snapshot
  worker_lost,        // a worker died or stopped answering
};

const char* to_string(herd_errc code);

/// A caf::error in Herd's category with a sentence of context.
caf::error make_error(herd_errc code, std::string context);

/// Registers the renderer of Herd's error category (add_message_types() calls it).
void add_error_category(caf::actor_system_config& config);

} // namespace herd::actors
