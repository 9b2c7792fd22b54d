// A training job as code that does not speak CAF sees it: start one in an actor system of its own
// (job::start), or take the facade spawn_job (herd/job_actor.hpp) returns for a job in yours; then
// status(), stop(), wait(). No CAF in this header.
#pragma once

#include "herd/dataset.hpp"
#include "herd/metrics.hpp"
#include "herd/model.hpp"
#include "herd/run_config.hpp"
#include "herd/run_summary.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herd {

/// How a job runs, beyond its run_config. Every field is optional.
struct job_options {
  /// Non-null: the model the job trains, in place of the one [model] asks for (which is then
  /// ignored). Every worker, the evaluator and the checkpoints call its const methods from their
  /// own threads at once, so they must be safe to call concurrently. It must fit the data: a
  /// model that does not is refused (config::invalid_config, key job_options.model).
  std::shared_ptr<const models::model> model;

  /// Events, each called on the job actor's thread (a thread of the actor system's scheduler),
  /// one call at a time and in the order the run produced them. Keep them short; never call the
  /// job's wait() from one (the job cannot end while its own thread waits for it). A callback
  /// that throws fails the job (status failed, the summary's error naming it); after that only
  /// on_finished is called. A job destroyed from one of its callbacks may still make the calls
  /// under way (on_finished among them) after its destructor returned: what they capture must
  /// outlive the job object.
  std::function<void(const actors::progress&)> on_progress;
  std::function<void(const actors::evaluation_point&)> on_evaluation;
  /// A notable event in words ("worker 2 lost: ...").
  std::function<void(const std::string&)> on_notice;
  /// Once, when the job has ended (however it ended), with its summary; final_parameters(),
  /// kept_parameters() and summary() are set before it is called (and status() says finished or
  /// failed), and wait() returns only after it returned. If it throws, the run is not failed, but
  /// the summary wait() returns names the exception in its error (status() does not; after an
  /// earlier callback failed the job, that first failure is the one reported).
  std::function<void(const actors::run_summary&)> on_finished;

  /// Non-null: the job's metrics (docs/metrics.md) are kept in this registry with the label
  /// job = name (below). Serve it with monitoring::expose (herd/metrics.hpp). Several jobs may
  /// share one registry, each under its own name: a second job under a name a running job holds in
  /// the same registry is refused (config::invalid_config, key job_options.name); the name is free
  /// again once that job ended.
  std::shared_ptr<monitoring::registry> metrics;
  /// The job's name: its metrics' `job` label and the name its events carry. Empty: the
  /// configuration's metrics.job.
  std::string name;

  /// The process's BLAS thread count (OpenBLAS, process-wide: every job and the host program
  /// see it), set before the job starts. Unset: as `herd train` sets it, from train.blas-threads,
  /// whose 0 means one thread per GEMM when the job has several workers (each worker's GEMMs on
  /// a pool of every core would fight the others' for the cores: 25 to 100 times slower on 2
  /// cores) and every core for one; but never higher than it is while another job of this
  /// process runs (a one-worker job beside a job of several leaves it at one). 0: one per core
  /// (not train.blas-threads' 0, which is Herd's choice: leave this unset for that). Negative:
  /// Herd leaves it as it is (a host that sets OpenBLAS's threads itself).
  std::optional<int> blas_threads;

  /// Non-null: every worker replica (and under async the parameter server) starts from these
  /// parameters (model.parameter_count() floats, in the model's order: a job's
  /// final_parameters(), a checkpoint's) instead of the model's own initialisation. Only the
  /// parameters: momentum starts at zero and the run at round 0. Not together with resume_from.
  std::shared_ptr<const std::vector<float>> initial_parameters;

  /// Non-empty: the run goes on from the checkpoint at this path (a file, or the newest in a
  /// directory) instead of starting; the configuration must describe the same run (workers,
  /// model, data). An unusable one is refused when the job starts (checkpoint::checkpoint_error
  /// naming the file and the problem).
  std::string resume_from;

  /// How often on_progress (and progress events) come, and how fresh status()'s counters are;
  /// must be positive (invalid_config).
  std::chrono::milliseconds progress_interval{250};

  /// job::start only: the scheduler threads of the job's own actor system (they run message
  /// handlers; each worker computes on a thread of its own besides). 0: one per core, from 2 to
  /// 8. At most 256 (invalid_config, key job_options.scheduler_threads); refused by spawn_job,
  /// whose job runs on your system's scheduler.
  std::size_t scheduler_threads = 0;
};

enum class job_state {
  starting, // spawned, its run's actors not started yet (a moment)
  running,  // training
  stopping, // asked to stop (in-flight rounds finish, the final evaluation runs), or ended by
            // itself and gathering its results (the final parameters: a few moments)
  finished, // ended: epochs done, target reached, max-seconds, or stopped
  failed,   // ended with an error (job_status::error says which)
};

/// "starting", "running", "stopping", "finished", "failed".
const char* to_string(job_state state);

/// Where a job stands. A copy: it does not change after it was taken. The state is current; the
/// counters (rounds, steps, epochs_done, elapsed_seconds, straggler) are those of the latest
/// progress event, at most one job_options::progress_interval old, and test_accuracy is the
/// latest evaluation's.
struct job_status {
  std::string name;
  job_state state = job_state::starting;
  std::uint64_t rounds = 0;
  std::uint64_t steps = 0; // local steps of all workers
  double epochs_done = 0.0;
  double epochs_total = 0.0; // train.epochs
  double elapsed_seconds = 0.0;
  /// The latest evaluation's, if any: of the validation set where the job holds one
  /// (data.validation-fraction), until the end brings the test set's (run_summary).
  std::optional<double> test_accuracy;
  /// The slowest worker now, by its straggler score (its median step time over the median of all
  /// workers' medians over metrics.window-seconds); unknown until workers have stepped.
  std::optional<actors::straggler_report> straggler;
  std::string error; // why, when failed; when finished, what failed without failing the run
                     // (the final evaluation), as run_summary::error
};

/// A running or ended job. Every member function may be called from any thread at any time; from
/// the job's own callbacks, every one but wait() (the job cannot end while its callback waits)
/// and a wait_for() longer than a moment (the job waits as long).
class job {
public:
  /// Starts a job in an actor system of its own (made here, with its own scheduler threads, and
  /// shut down when the job object is destroyed): what `herd train` runs. Checks the
  /// configuration against the data before anything starts. Throws config::invalid_config (each
  /// problem naming its key: a batch larger than a worker's shard, a model that does not fit the
  /// data or this machine's memory, a metrics name another running job holds),
  /// checkpoint::checkpoint_error (options.resume_from unusable); initial parameters of the
  /// wrong size, or set with resume_from, are config::invalid_config (key
  /// job_options.initial_parameters); a null `data` is config::invalid_config (key data), and
  /// so is a checkpoint.dir that cannot be written or holds another run's checkpoints (key
  /// checkpoint.dir), as is a model whose initial_parameters() does not give parameter_count()
  /// floats (key job_options.model); options.metrics holding one of Herd's metric names with
  /// another type or labels is std::invalid_argument. What the model's own initial_parameters()
  /// or make_workspace() throw passes through as it is (both are called once here, before
  /// anything starts).
  [[nodiscard]] static std::unique_ptr<job>
  start(config::run_config config, std::shared_ptr<const models::train_test_split> data,
        job_options options = {});

  /// A job start() made is stopped (as stop()) if it is still running, and waited for up to 60 s
  /// (then aborted, as abort()), before its actor system shuts down; that shutdown waits for the
  /// workers' steps under way, so a step of the model's that never returns holds the destructor for
  /// as long. Destroyed from one of its own callbacks (on_finished dropping it from a service's
  /// table), it returns at once: the job is stopped, and a thread of its own shuts its actor system
  /// down once it has ended. The facade of a spawned job (herd::spawn_job) leaves the job alone: it
  /// runs on in the caller's system.
  ~job();

  /// Waits up to `timeout` for the threads that shut down the systems of jobs destroyed from their
  /// own callbacks (above) to finish that: true once none is left (at once when there was none).
  /// For a service before it returns from main(), so that no such shutdown still runs while the
  /// process's static objects are destroyed. Never throws.
  [[nodiscard]] static bool await_detached_shutdowns(std::chrono::milliseconds timeout);

  job(const job&) = delete;
  job& operator=(const job&) = delete;

  /// Where the job stands now. Never blocks on the job and never throws.
  job_status status() const;

  /// Asks the job to stop early: the rounds in flight finish, the workers stop, the final
  /// evaluation runs, then the job ends (stop_reason stop_cause::interrupted). Returns at once,
  /// status() saying stopping; nothing happens to a job that has ended. Never throws.
  void stop();

  /// Ends the job at once, as an exit message to its actor does: its actors are told to exit, the
  /// rounds in flight are dropped and no final evaluation runs (stop_reason
  /// stop_cause::interrupted, the summary's counters as last heard, final_parameters() empty). For
  /// a service with a deadline: stop(), wait_for(what it can spare), then abort(). Returns at once;
  /// nothing happens to a job that has ended. Never throws.
  void abort();

  /// Blocks until the job has ended and returns its summary. A failed run is a summary too
  /// (stop_reason stop_cause::error, error saying why): wait() does not throw for it. Called from
  /// one of the job's own callbacks, which would wait forever, it throws std::logic_error.
  actors::run_summary wait();
  /// The summary, once the job has ended; nothing if `timeout` passed first. Never throws.
  std::optional<actors::run_summary> wait_for(std::chrono::milliseconds timeout);

  /// The summary of an ended job; nothing while it runs.
  [[nodiscard]] std::optional<actors::run_summary> summary() const;

  /// The model's parameters as training left them (model().parameter_count() floats): under
  /// async the parameter server's, else the live workers' (their element-wise mean where model
  /// averaging left them different). Empty until the job has ended, and when no worker's
  /// parameters could be collected.
  [[nodiscard]] std::vector<float> final_parameters() const;

  /// The parameters the run keeps, those the summary's final_test_accuracy measured: where it
  /// stopped at train.target-accuracy the parameters that reached it, else with train.patience
  /// those of the best evaluation while training (as the final checkpoint serves them), else
  /// final_parameters(). Empty until the job has ended, and where those are.
  [[nodiscard]] std::vector<float> kept_parameters() const;

  /// The model the job trains (options.model, or the one [model] asked for).
  std::shared_ptr<const models::model> model() const;

  /// The job's name (job_options::name or metrics.job).
  const std::string& name() const;

  struct shared_state; // between the job actor and its facades
  /// For spawn_job; not for callers: without a state (null) it throws std::invalid_argument.
  explicit job(std::shared_ptr<shared_state> state);

private:
  struct own_system; // start()'s actor system
  std::shared_ptr<shared_state> state_;
  std::unique_ptr<own_system> own_;
};

} // namespace herd
