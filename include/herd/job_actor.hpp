// Herd's jobs inside a CAF actor system the caller owns: register Herd's messages with the
// system's config, spawn a job there, and talk to it by message (status, stop, subscribe to its
// events) or through its facade (herd/job.hpp). For CAF services; includes CAF.
#pragma once

#include "herd/job.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>

#include <memory>
#include <string>
#include <vector>

namespace herd {

/// Registers every message type Herd's actors exchange, and Herd's error category, with
/// `config` (the job messages below stay in the process and need none). Call it once, before the
/// actor_system is constructed from `config`; spawn_job refuses a system made without it
/// (std::logic_error): a job's actors in such a system would not get through a run. It also
/// registers a renderer for CAF's exit reasons (category "exit"), so that the system renders
/// them in words ("it was shut down", not "exit_reason(user_shutdown)") in your logs too; it
/// replaces one your own code registered for that category before.
void add_message_types(caf::actor_system_config& config);

/// Optional: makes the actor system built from `config` run on the scheduler of Herd's own
/// systems (`herd train`, job::start, the cluster's processes) rather than the one that
/// "scheduler.policy" names, with `threads` scheduler threads (0: one per core, from 2 to 8).
/// It is CAF's work sharing, except that a handler sending to many actors (an aggregator's
/// members) wakes the sleeping scheduler threads once at the end of its sends, not once per
/// message: at 256 workers the aggregator then takes a quarter to nearly half less CPU per round. A
/// job runs on any CAF scheduler; on another one it simply does not save those wakes. Call it
/// before the actor_system is constructed; it applies to every actor of the system.
void use_herd_scheduler(caf::actor_system_config& config, std::size_t threads = 0);

// -- what a service sends a job actor (atoms: at most 10 characters in CAF 0.17) ----------------

/// (status_atom) -> job_status: where the job stands.
using status_atom = caf::atom_constant<caf::atom("hstatus")>;
/// (stop_job_atom): stop early, as job::stop(); no reply. The job then ends as usual (a finished
/// event, then the actor exits).
using stop_job_atom = caf::atom_constant<caf::atom("hstop")>;
/// (subscribe_atom, caf::actor subscriber) -> job_status: `subscriber` receives the job's events
/// (job_progress, job_evaluation, job_notice, job_finished) as messages from now on, until it
/// exits or unsubscribes; for every event from the first, pass it to spawn_job instead.
/// Subscribing twice changes nothing.
using subscribe_atom = caf::atom_constant<caf::atom("hsubscribe")>;
/// (unsubscribe_atom, caf::actor subscriber): no more events for `subscriber`; no reply.
using unsubscribe_atom = caf::atom_constant<caf::atom("hunsub")>;

// -- what a job sends its subscribers ------------------------------------------------------------
// In-process messages: they are not serialized, so a subscriber must live in the job's process.

/// Progress, every job_options::progress_interval.
struct job_progress {
  std::string job; // the job's name
  actors::progress progress;
};

/// An evaluation of the model on the test set.
struct job_evaluation {
  std::string job;
  actors::evaluation_point evaluation;
};

/// A notable event in words ("worker 2 lost: ...").
struct job_notice {
  std::string job;
  std::string text;
};

/// The job ended; the last event. `status.state` is finished or failed. The job actor exits
/// right after (exit reason normal): monitor it to supervise the job.
struct job_finished {
  std::string job;
  job_status status;
  std::shared_ptr<const actors::run_summary> summary;
};

/// A spawned job: the actor to message, and a facade over the same job for code that does not
/// speak CAF (status(), stop(), wait(), summary(), final_parameters(), kept_parameters()).
struct job_handle {
  caf::actor actor;
  std::shared_ptr<job> facade;
};

/// Spawns a job's actors (the job actor, its group coordinator, aggregators, evaluator, workers)
/// in `system` and starts the run. The job actor lives until the run has ended and its
/// subscribers have heard job_finished, whether or not anyone holds its handle: a caller may keep
/// only the facade, and the run goes on to its end. (Dropping both, the run still goes on, but
/// nothing can stop it then, and the actor system's destructor waits for its end.) An exit message
/// to it (caf::exit_reason::user_shutdown, say) ends the job at once, without a final evaluation.
/// The actor system must not be destroyed while a job runs in it: stop the job and wait for it (or
/// monitor its actor) first.
///
/// Throws, before anything is spawned: std::logic_error when `system` was made without
/// herd::add_message_types; config::invalid_config as job::start (each problem naming its key,
/// a metrics name that a running job holds in the same registry among them);
/// checkpoint::checkpoint_error for an unusable options.resume_from; what job::start throws
/// besides (a metric name clash, what the model's initial_parameters() or make_workspace()
/// throw). No series of the job stays in options.metrics then.
[[nodiscard]] job_handle spawn_job(caf::actor_system& system, config::run_config config,
                                   std::shared_ptr<const models::train_test_split> data,
                                   job_options options = {});

/// As above, with `subscribers` subscribed from the job actor's first moment: they hear every
/// event of the job (its first notices, and job_finished of a job that ends at once), which a
/// subscribe_atom sent once spawn_job has returned may miss. No job_status reply comes for them.
/// Null handles among them are skipped.
[[nodiscard]] job_handle spawn_job(caf::actor_system& system, config::run_config config,
                                   std::shared_ptr<const models::train_test_split> data,
                                   job_options options, std::vector<caf::actor> subscribers);

} // namespace herd

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::job_status)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::job_progress)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::job_evaluation)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::job_notice)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::job_finished)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::job_handle) // to hand a job to an actor of your own
