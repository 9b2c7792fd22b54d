// What an actor a remote peer can address does with a message none of its handlers takes: drops
// it and says so in one short line, at most once a minute. CAF's own default printed the whole
// message to stderr: a 20 MB message from a peer cost a 60 MB log line and 200 MB of memory, and a
// 100 MB one killed the coordinator's registry (std::bad_alloc). CAF in this header: for the
// actors' own files, never a widely included header.
#pragma once

#include <caf/scheduled_actor.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace herd::actors {

/// A default handler (scheduled_actor::set_default_handler) for the actor named `actor` ("the
/// group coordinator"): it answers a request with sec::unexpected_message, as CAF's does, and
/// tells `notice` how many messages it dropped and the size of the latest, never their contents,
/// once per `interval` at most.
caf::scheduled_actor::default_handler
drop_unexpected(std::string actor, std::function<void(const std::string&)> notice,
                std::chrono::steady_clock::duration interval = std::chrono::minutes(1));

} // namespace herd::actors
