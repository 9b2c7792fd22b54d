// The group coordinator actor: membership, the round counter, the grouping policy, arrival
// timestamps, evaluation, and when to stop. The decisions live in the policy (policy.hpp); this
// actor feeds it arrivals and completions and carries out what it decides.
//
// Messages it answers:
//   run_start         the workers, aggregators and evaluator; starts the run
//   step_ready        a worker finished a local step
//   group_done        an aggregator finished a round
//   stop_atom         stop early (Ctrl-C): finish in-flight rounds, stop workers, evaluate
// It monitors every worker: a lost worker leaves the policy's groups.
#pragma once

#include "actors/run_summary.hpp"
#include "config/run_config.hpp"

#include <caf/fwd.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace herd::monitoring {
class training_metrics;
} // namespace herd::monitoring

namespace herd::actors {

struct coordinator_setup {
  config::run_config config;
  std::string backend_name;
  std::string compute = "cpu"; // where the workers compute: "cpu", "cuda:0 (NVIDIA H200)"
  /// Samples that make one epoch over all shards (workers x batches per epoch x batch size).
  std::size_t samples_per_epoch = 0;
  /// Receives progress and evaluations on the coordinator's thread; may be null.
  run_observer* observer = nullptr;
  /// Called once, on the coordinator's thread, with the summary when the run has ended.
  std::function<void(run_summary)> on_finished;
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
  /// Prometheus metrics, updated on the coordinator's thread; may be null (metrics off).
  std::shared_ptr<monitoring::training_metrics> metrics;
};

caf::actor spawn_group_coordinator(caf::actor_system& system, coordinator_setup setup);

} // namespace herd::actors
