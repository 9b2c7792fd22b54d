// One training run in this process: the actor system, a group coordinator, a pool of
// aggregators, an evaluator and N workers over the local data plane. This is what `herd train`
// runs, and the entry point for C++ code that wants a run without writing actor code.
// No CAF in this header.
#pragma once

#include "actors/checkpoint_state.hpp"
#include "actors/checkpoint_writer.hpp"
#include "actors/run_observer.hpp"
#include "actors/run_parts.hpp"
#include "actors/worker_probe.hpp"
#include "herd/dataset.hpp"
#include "herd/metrics.hpp"
#include "herd/model.hpp"
#include "herd/ops.hpp"
#include "herd/run_config.hpp"
#include "herd/run_summary.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herd::actors {

struct session_options {
  run_observer* observer = nullptr; // progress and evaluations; may be null
  /// Where the workers compute with train.backend = cpu (tests pass doubles here): one object for
  /// every worker's threads and the reductions, so it must allow concurrent calls, as cpu_ops()
  /// does. The evaluator uses it too when its memory is the host's, else cpu_ops(). With
  /// train.backend = cuda the session makes its own CUDA ops (one stream per thread).
  const kernels::ops* ops = &kernels::cpu_ops();
  /// With train.backend = cuda: makes the ops of one stream (every worker's compute thread and
  /// actor, and the reductions, get their own; all must share one memory). Empty: CUDA ops on
  /// train.device. Set by embedders with ops for another device, and by tests that emulate
  /// streams on the CPU.
  std::function<std::unique_ptr<kernels::ops>()> stream_ops;
  std::chrono::milliseconds progress_interval{250};
  std::shared_ptr<worker_probe> probe; // every worker's; for tests and diagnostics
  /// When positive, parameter snapshots taken this often are evaluated after the run instead of
  /// evaluations during it (see coordinator_setup::snapshot_interval). For benchmarks.
  std::chrono::milliseconds snapshot_interval{0};
  /// The clock of the control plane's costs (run_summary::control): wall time, or the handler
  /// threads' CPU time, which leaves out the time the OS ran other threads on their core (where
  /// threads outnumber cores) but costs about 0.4 us a message. For benchmarks.
  bool control_costs_in_cpu_time = false;
  /// When set, the run's metrics (docs/metrics.md; labels job = metrics.job, node =
  /// `node_name`) are kept in this registry; serve it with monitoring::metrics_endpoint. They
  /// stay there after the run, at their final values (herd train serves them a while); a later
  /// session under the same name in the same registry continues them.
  std::shared_ptr<monitoring::registry> metrics;
  std::string node_name; // empty: this host's name
  /// Non-null: the run goes on from this checkpoint (load_checkpoint()) instead of starting.
  std::shared_ptr<const run_checkpoint> resume;
  /// Where `resume` was read from as the caller gave it (a file, or the directory whose newest it
  /// was), and what the caller calls that option: checkpoint.dir, once locked, is checked again
  /// for checkpoints this run would prune (lock_checkpoint_dir()); not where `resume` is set
  /// without its path.
  std::string resume_path;
  std::string resume_option = "--resume";
  /// Not empty: every worker replica (and under async the parameter server) starts from these
  /// parameters instead of the model's own initialisation (model::initial_parameters(train.seed)):
  /// a run's final_parameters(), a checkpoint's (model_parameters(load_checkpoint(...).state)),
  /// or a snapshot's. Only the parameters: the optimizer's momentum starts at zero and the run
  /// at round 0 (to go on with all of a run's state, use `resume`, which excludes this). The
  /// constructor throws config::invalid_config naming both sizes when they do not fit the model.
  std::vector<float> initial_parameters;
  /// With checkpoint.dir set: called on the checkpoint writer's thread after each checkpoint (not
  /// for a write the run gave up on at checkpoint_write_limit, should it return later).
  std::function<void(const checkpoint_report&)> on_checkpoint;
  /// How long the run's end waits for a checkpoint's write before it ends without it, and how
  /// often it says it is waiting (checkpoint_options::write_limit, write_notice_every).
  std::chrono::milliseconds checkpoint_write_limit = std::chrono::minutes(10);
  std::chrono::milliseconds checkpoint_write_notice_every = std::chrono::seconds(30);
  /// Non-null: the model the run trains, in place of the one [model] asks for (make_model), which
  /// is then ignored: an embedder's own class (docs/models.md, "Your own model"). Every worker,
  /// the evaluator and the checkpoints use this one object from their own threads, so its const
  /// methods must be safe to call concurrently (state of a pass belongs in its workspace). It
  /// must fit the data (check_model_fits).
  std::shared_ptr<const models::model> model;
  /// Set: the process's BLAS thread count (process-wide: every run and the host program see it)
  /// is set to this before the run starts; 0 means one per core. Unset: left as it is. `herd
  /// train` passes blas_threads_for(config, train.workers).
  std::optional<int> blas_threads;
};

/// A checkpoint read for a run, and the file it came from.
struct loaded_checkpoint {
  std::string file;
  std::shared_ptr<const run_checkpoint> state;
};

/// The checkpoint at `path` (a file, or the newest in a directory) for a run of `config` on
/// `data` training `model` (null: make_model(config, data.train), as the session does without
/// session_options::model). Throws checkpoint::checkpoint_error naming the file and the problem:
/// damaged or truncated, or of another structure (each difference named, a model whose
/// describe() differs among them).
loaded_checkpoint load_checkpoint(const config::run_config& config,
                                  const models::train_test_split& data, const std::string& path,
                                  std::shared_ptr<const models::model> model = nullptr);

/// One run in an actor system of its own: the job actor of herd/job_actor.hpp in a system made
/// for it, shut down when the run has ended.
class train_session {
public:
  /// Checks the configuration against the data (throws config::invalid_config when, say, a batch
  /// is larger than a worker's shard) and prepares the run. Nothing runs before start().
  train_session(config::run_config config, std::shared_ptr<const models::train_test_split> data,
                session_options options = {});
  /// Stops a run that is still going (as request_stop()) and shuts the actors down.
  ~train_session();

  train_session(const train_session&) = delete;
  train_session& operator=(const train_session&) = delete;

  /// Spawns the run's actors and starts it. Throws (having shut down what was spawned) when an
  /// actor cannot be made, say a buffer cannot be allocated.
  void start();

  /// Asks the run to stop early: in-flight rounds finish, workers stop, the final evaluation
  /// runs. Thread-safe; returns at once.
  void request_stop();

  /// The summary, once the run has ended; nothing if `timeout` passed first.
  std::optional<run_summary> wait_for(std::chrono::milliseconds timeout);

  /// start(), then wait until the run ends.
  run_summary run();

  /// Every worker's parameters when the run ended (empty for a worker that was lost); available
  /// after wait_for() returned a summary.
  const std::vector<std::vector<float>>& final_parameters() const;
  /// async: the parameter server's final parameters (the model the run trained), collected as
  /// final_parameters() are; empty under every other algorithm.
  const std::vector<float>& final_server_parameters() const;

  /// Samples that make one epoch over all shards.
  std::size_t samples_per_epoch() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// The model [model] asks for (model.layers, or model.preset sized by model.hidden) over the
/// samples and classes of `data`. Throws config::invalid_config naming the key at fault: an
/// unknown preset, a malformed layer, or a shape that does not fit (naming the layer, its index
/// and the shapes on both sides).
std::shared_ptr<const models::model> make_model(const config::run_config& config,
                                                const models::dataset& data);

/// Whether `model` can train on `data`: one sample of the training and of the test set holds
/// elements(model.input_shape()) floats, and model.classes() covers the data's classes (it may
/// score more than the labels use, never fewer). Throws config::invalid_config (key `key`: the
/// caller's name for its model) naming the model, the dataset and both numbers.
void check_model_fits(const models::model& model, const models::train_test_split& data,
                      const std::string& key);

/// Which of a split's sets a check is given, for the key its message names.
enum class data_role { training, test, validation };

/// For a sequential model that takes tokens: every sample of `set` (the split's set `role`) is a
/// token sequence it can read (models::check_token_rows), checked once before the run rather than
/// failing a worker at the batch that holds a bad value. make_model() checks the training set it
/// is given. Throws config::invalid_config naming the file the set came from
/// (data.train-features, data.test-features, data.validation-features; a validation set held
/// out of the training features names those) or, for texts whose bytes the model's vocabulary
/// does not cover, `model_key`.
void check_token_input(const models::model& model, const models::dataset& set, data_role role,
                       const config::run_config& config, const std::string& model_key);

} // namespace herd::actors
