// The scheduler Herd's actor systems run on: CAF's work sharing (one queue of ready actors for all
// scheduler threads, which suits handlers that only pass messages on, the compute being on the
// workers' own threads), with wakes that cost less where one handler sends to many actors.
//
// Under CAF's own sharing policy every actor made ready wakes a sleeping scheduler thread, inside
// the queue's lock. At 256 workers on 2 cores the aggregator's asks and results (a message per
// member each) thus paid, per message, a system call to wake the other scheduler thread, which
// took one actor, ran it and slept again before the next, and a second one when that thread woke
// into the lock still held. Here:
//   - a wake happens after the lock is released, and only for a sleeping thread that no earlier
//     wake is on its way to;
//   - while a send_batch lives on a thread, the actors its sends make ready wake no one; when the
//     last one goes, the scheduler wakes as many sleeping threads as actors became ready (at most
//     all of them), once. The sending thread takes its share of the batch when its handler ends.
// The queue is a deque: an allocation per 64 actors, where CAF's list allocated a node per actor.
//
// No CAF here: include it anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace caf {
class actor_system;
class actor_system_config;
} // namespace caf

namespace herd::actors {

/// Makes the actor system built from `config` run on Herd's scheduler, with `threads` scheduler
/// threads (0: as many as the machine has cores, from 2 to 8).
void use_herd_scheduler(caf::actor_system_config& config, std::size_t threads = 0);

/// While one lives on a thread, the actors that the thread's sends make ready wake no sleeping
/// scheduler thread until the outermost batch ends; then they are woken at once. Send loops to
/// many actors open one. Harmless on a thread that sends to a system on another scheduler (its
/// sends wake as that scheduler does) and on a thread outside any actor system.
class send_batch {
public:
  send_batch();
  ~send_batch();
  send_batch(const send_batch&) = delete;
  send_batch& operator=(const send_batch&) = delete;
};

/// How often `system`'s scheduler has woken a sleeping thread so far; 0 when it is not Herd's.
std::uint64_t scheduler_wakes(caf::actor_system& system);
/// How many of `system`'s scheduler threads sleep now, for want of ready actors; 0 when it is not
/// Herd's scheduler.
std::size_t scheduler_sleeping(caf::actor_system& system);

} // namespace herd::actors
