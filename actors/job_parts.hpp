// The run a job actor supervises: the messages between the job actor and the actors it spawned
// (in one process only), and spawn_parts, which spawns them. CAF in this header: for the job
// actor's files, never a widely included header.
#pragma once

#include "actors/messages.hpp"
#include "herd/run_summary.hpp"

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>

#include <memory>
#include <vector>

namespace herd::actors {

class job_plan;

/// launch_job -> the job actor: the run's actors, spawned; the job starts the run.
struct job_parts {
  caf::actor coordinator;
  run_start run;
};

/// The coordinator's summary (coordinator_setup::on_finished) -> the job actor.
struct run_ended {
  std::shared_ptr<const run_summary> summary;
  std::shared_ptr<const std::vector<float>> kept; // null: the run keeps the workers' last
};

/// Spawns the run's actors for `job` and hands them over to it (job_parts); on a failure
/// halfway, shuts down what was spawned (the job included) and rethrows.
void spawn_parts(caf::actor_system& system, const std::shared_ptr<job_plan>& plan,
                 const caf::actor& job);

} // namespace herd::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::actors::job_parts)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::actors::run_ended)
