// The group coordinator actor: membership, the round counter, the grouping policy, arrival
// timestamps, evaluation, and when to stop. Its handlers carry out what plain classes decide: the
// policy (policy.hpp) which rounds start, run_phases when the run stops and what stopping does
// next, evaluation_schedule when to evaluate what, run_counters what the summary says.
//
// Messages it answers:
//   run_start                 the workers, aggregators and evaluator; starts the run
//   step_ready                a worker finished a local step
//   step_batch                across processes: the step_ready of a node's workers, in order
//   group_done                an aggregator finished a round
//   stop_atom                 stop early (Ctrl-C): finish in-flight rounds, stop workers, evaluate
//   node_admission            a node joins the running job (handed to the join_hook; answers
//                             (join_done_atom, node, error) to the sender)
//   plane_rekey               the registry re-keys the data plane (handed to the join_hook)
//   node_departure            a node leaves once the rounds in flight end (handed to the
//                             join_hook; answers true, to the node the registry delegated)
//   tick_atom                 its own timer: progress, train.max-seconds, deferred snapshots
//   drain_timeout_atom        its own timer: rounds a stop waits for took stop_timeout
//   (policy_time_atom, t)     its own timer: a policy deadline (preduce's wait window) is due
// With checkpoints on (coordinator_setup::checkpoints) it takes one every so often and when the run
// stops (checkpoint_taker.hpp), and with coordinator_setup::resume it goes on from one.
// It monitors every worker, aggregator and the evaluator: a lost worker leaves the policy's groups,
// a lost aggregator ends the run.
#pragma once

#include "actors/run_observer.hpp"
#include "herd/run_config.hpp"
#include "herd/run_summary.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herd::monitoring {
class training_metrics;
} // namespace herd::monitoring

namespace herd::comm {
class status;
} // namespace herd::comm

namespace herd::actors {

struct node_admission;
struct node_departure;
struct plane_rekey;
struct control_costs;
class step_inbox;
struct checkpoint_options;
struct run_checkpoint;

/// What the coordinator lets a join (join_hook) see and do; called on the coordinator's thread.
class coordinator_port {
public:
  virtual ~coordinator_port() = default;
  /// The coordinator itself, to send, request and monitor from.
  virtual caf::event_based_actor& self() = 0;
  virtual bool running() const = 0;
  virtual std::size_t worker_count() const = 0;
  virtual std::vector<int> live_workers() const = 0;
  virtual std::size_t rounds_in_flight() const = 0;
  virtual std::uint64_t rounds_finished() const = 0;
  virtual const std::vector<caf::actor>& aggregators() const = 0;
  virtual void lose_worker(int worker, const std::string& why) = 0;
  /// As lose_worker(), without the notice: the caller's notice covers it.
  virtual void retire_worker(int worker, const std::string& why) = 0;
  /// `handle` (monitored already) takes slot `worker`, live from now on; `node` names its host.
  virtual void admit_worker(int worker, const caf::actor& handle, const std::string& node) = 0;
  /// The join (or a departure) is over: the policy hears the inputs it was held from, after the
  /// new live set when `live_changed` (workers admitted or retired).
  virtual void resume_rounds(bool live_changed) = 0;
  virtual void notice(const std::string& text) = 0;
};

/// A node joining the running job (cluster/node_join.hpp): while holding(), the coordinator keeps
/// the policy's inputs, so no round starts; the join asks for the rest through coordinator_port.
class join_hook {
public:
  virtual ~join_hook() = default;
  /// `registry` sent `admission` and hears (join_done_atom, node, error).
  virtual void admit(node_admission admission, const caf::actor& registry) = 0;
  /// The registry re-keys the data plane (plane_rekey's stages); once it uses the new generation
  /// the coordinator answers `registry` (join_done_atom, -1, error).
  virtual void rekey(const plane_rekey& step, const caf::actor& registry) = 0;
  /// A node leaves: once no round is in flight its workers are lost, and `done` hears the
  /// outcome (at once, not ok, when it cannot wait: a join or re-key under way, the run ending).
  virtual void depart(const node_departure& departure,
                      std::function<void(const comm::status&)> done) = 0;
  virtual bool holding() const = 0;
  /// A round ended, or the run began to stop.
  virtual void rounds_changed() = 0;
  virtual void worker_lost(int worker, const std::string& why) = 0;
  virtual void actor_down(const caf::down_msg& down) = 0;
};

struct coordinator_setup {
  config::run_config config;
  std::string data_plane;
  std::string compute = "cpu"; // where the workers compute: "cpu", "cuda:0 (NVIDIA H200)"
  /// Samples that make one epoch over all shards (workers x batches per epoch x batch size).
  std::size_t samples_per_epoch = 0;
  /// The evaluator's evaluations measure a validation set of this many samples; the test set is
  /// then measured once, after the final evaluation, on the parameters the run ends with. 0: the
  /// evaluations measure the test set.
  std::size_t validation_samples = 0;
  /// Receives progress and evaluations on the coordinator's thread; may be null.
  run_observer* observer = nullptr;
  /// Called once, on the coordinator's thread, with the summary when the run has ended, and the
  /// parameters the run keeps where they are not the workers' last (those that reached
  /// train.target-accuracy, or with train.patience the best evaluation's; else null).
  std::function<void(run_summary, std::shared_ptr<const std::vector<float>> kept)> on_finished;
  /// Progress reports, and the checks of train.max-seconds, come this often.
  std::chrono::milliseconds progress_interval{250};
  /// When stopping: how long in-flight rounds may take to finish, and how long each worker may
  /// take to answer the stop (it finishes its current step first), before the run goes on
  /// without them. Evaluations have their own bounds (30 s for a snapshot, 10 min to evaluate).
  std::chrono::milliseconds stop_timeout{60000};
  /// When positive: instead of evaluating every train.eval-every rounds while training (which
  /// competes with training for cores), take a parameter snapshot this often (checked at each
  /// progress report) and evaluate all of them after the workers stopped. The run cannot stop at
  /// train.target-accuracy then, but reports when it was reached. For benchmarks.
  std::chrono::milliseconds snapshot_interval{0};
  /// Across processes: the name of each worker's node, which the summary and the workers' events
  /// name; empty in one process.
  std::vector<std::string> worker_hosts;
  /// Prometheus metrics, updated on the coordinator's thread; may be null (metrics off).
  std::shared_ptr<monitoring::training_metrics> metrics;
  /// The run's series leave the registry when it ends (a job's: its registry may be a service's,
  /// which outlives it). Off, they stay until the process ends.
  bool close_metrics_at_end = false;
  /// The job's holds on its name in the registry and its checkpoint directory (opaque here), let
  /// go once the series are gone: at the end of the run, after its last checkpoint, or when the
  /// coordinator exits first (its job ended by a message).
  std::vector<std::shared_ptr<void>> claims;
  /// Makes the coordinator's join_hook; empty where no node can join (one process): an admission
  /// is refused.
  std::function<std::unique_ptr<join_hook>(coordinator_port&)> joins;
  /// Where and how often checkpoints are written (docs/checkpoints.md); null: none. In one
  /// process only: a cluster does not take them yet.
  std::shared_ptr<const checkpoint_options> checkpoints;
  /// Non-null: the run goes on from this checkpoint (its workers were made from it too).
  std::shared_ptr<const run_checkpoint> resume;
  /// Non-null: the coordinator adds its handlers' time to it and reads it into the summary.
  std::shared_ptr<control_costs> costs;
  /// Non-null: the workers of this process post their step reports here (step_inbox.hpp) and
  /// wake the coordinator with (inbox_atom) when it was empty; their worker_setup::inbox is the
  /// same. Step reports sent as messages (a node's step relay, tests) are handled either way.
  std::shared_ptr<step_inbox> inbox;
};

caf::actor spawn_group_coordinator(caf::actor_system& system, coordinator_setup setup);

} // namespace herd::actors
