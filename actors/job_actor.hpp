// The job actor: one training run's supervisor inside an actor system (the caller's, through
// herd::spawn_job, or train_session's own). It spawns the run's actors, hears the coordinator's
// events and hands them on (the run_observer, job_options' callbacks, subscribers), answers
// status, stop and subscribe, collects the final parameters when the run ends, shuts the run's
// actors down and then exits. Internal to herd::actors: the public side is herd/job_actor.hpp.
//
// Messages it answers (besides those of herd/job_actor.hpp):
//   job_parts                    the run's actors, spawned by launch_job; starts the run
//   job_progress, job_evaluation, job_notice   the coordinator's events (forwarding_observer)
//   run_ended                    the coordinator's summary
//   down_msg                     a subscriber left, the coordinator died, a part of the run ended
#pragma once

#include "actors/train_session.hpp"
#include "herd/job_actor.hpp"

#include <caf/actor_addr.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace herd {

/// Between a job actor and its facades: what status(), wait() and the results read. The actor
/// writes, anyone reads, under `mutex`.
struct job::shared_state {
  std::mutex mutex;
  std::condition_variable ended_signal;
  std::string name;
  std::shared_ptr<const models::model> model;
  job_status status;
  std::optional<actors::run_summary> summary;
  std::vector<std::vector<float>> worker_parameters; // by worker; empty for a lost one
  std::vector<float> server_parameters;              // async only
  std::vector<float> final_parameters;
  std::vector<float> kept_parameters; // empty where the run keeps the workers' last
  bool results_in = false; // summary and final parameters set, before on_finished is called
  bool ended = false;      // after on_finished returned: wait() may return
  caf::actor_addr actor; // weak: the job actor does not keep itself alive through this
  /// The thread running one of the job's callbacks, while it does (a facade destroyed there
  /// must not wait for the job, which waits for the callback).
  std::atomic<std::thread::id> calling{};
  /// Set when spawning the run failed halfway: start() or spawn_job() throws, so no callback
  /// may tell the caller of a job it never got.
  std::atomic<bool> abandoned{false};
};

} // namespace herd

namespace herd::actors {

/// Everything a job runs with: job_options, and what train_session's callers may set on top
/// (session_options: ops, a worker probe, snapshots, a node name, checkpoint reports).
struct job_setup {
  session_options session;
  std::string name; // empty: config.metrics.job
  std::optional<int> blas_threads;
  /// blas_threads is Herd's own choice (job_options::blas_threads unset, train.blas-threads 0):
  /// it never raises the count while another job of this process runs (its workers' GEMMs would
  /// fight for the cores).
  bool blas_threads_chosen = false;
  std::function<void(const progress&)> on_progress;
  std::function<void(const evaluation_point&)> on_evaluation;
  std::function<void(const std::string&)> on_notice;
  std::function<void(const run_summary&)> on_finished;
  /// What errors call the starting parameters (session.initial_parameters), the checkpoint to
  /// resume from (session.resume) and an own model (session.model): the caller's names for them.
  std::string initial_parameters_key = "session_options.initial_parameters";
  std::string resume_key = "session_options.resume";
  std::string model_key = "session_options.model"; // the caller's own model (session.model)
  /// Whether the facades keep every replica's final parameters (shared_state::worker_parameters,
  /// server_parameters): train_session's callers read them; a job's facade, which a service may
  /// keep long after the job ended, keeps only the trained model. The job actor lets go of them
  /// either way (a service's caf::actor handle keeps the actor's object alive).
  bool keep_replicas = false;
  /// Whether the run's series stay in session.metrics once it has ended: a train_session's
  /// caller serves the final values (herd train, for metrics.linger-seconds), and its process
  /// ends soon after. A job's leave, since a service's registry outlives the job.
  bool keep_metrics = false;
};

/// A run checked and made ready to spawn: its model, where it computes, its data plane, its
/// metrics name. Opaque; made by prepare_job, consumed by launch_job.
class job_plan;

/// Checks `config` against `data` and the model, places the compute, claims the metrics name and
/// sets the BLAS threads when setup.blas_threads asks (a count Herd chose only when no other job
/// of this process runs or it is no more than the count now). Throws as herd::job::start
/// documents.
std::shared_ptr<job_plan> prepare_job(config::run_config config,
                                      std::shared_ptr<const models::train_test_split> data,
                                      job_setup setup);

/// Samples that make one epoch over all shards of a prepared run.
std::size_t samples_per_epoch(const job_plan& plan);

/// Throws std::logic_error, saying what to call, when `system` was made without
/// herd::add_message_types.
void require_message_types(caf::actor_system& system);

/// Spawns the prepared run in `system` and starts it, `subscribers` subscribed before its first
/// event. `plan` is used up (launch it once). Throws as require_message_types does; the actors of
/// a spawn that fails halfway are shut down before the exception leaves.
job_handle launch_job(caf::actor_system& system, std::shared_ptr<job_plan> plan,
                      std::vector<caf::actor> subscribers = {});

/// What the run's facades will read (train_session reads the per-worker parameters there).
std::shared_ptr<job::shared_state> shared_state_of(const job_plan& plan);

} // namespace herd::actors
