// One simulated run: P workers, the configured algorithm's real grouping policy and every
// worker's real send-buffer state machine, driven on a virtual clock with the same messages the
// actors exchange (docs/simulation.md, "The model"):
//   worker      steps when its send buffer says one is due; a step takes simulate.step-ms (or a
//               draw from a measured run's step times) plus the [imbalance] extra; at its end it
//               reports step_ready and applies the results due;
//   coordinator hands fresh arrivals, finished rounds and deadlines to the policy and sends each
//               decision to an aggregator;
//   aggregator  asks every member for its contribution (answered at once or once the buffer is
//               released), then reduces for the ring model's time and sends the result to the
//               members and group_done to the coordinator.
// Every message takes simulate.message-us. Tensors are not modelled: writing the send buffer,
// applying a result and the optimizer step take no time.
#pragma once

#include "herd/run_config.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "sim/network.hpp"
#include "sim/step_trace.hpp"

namespace herd::sim {

struct settings {
  double step_seconds = 0.01; // a local step without imbalance
  /// Non-null: each step's time is drawn from it (herd simulate --step-trace) instead of
  /// step_seconds; [imbalance] still adds its extra on top.
  std::shared_ptr<const step_trace> trace;
  std::uint64_t trace_seed = 1;
  reduction_model reduction;     // a round's reduction
  double message_seconds = 0.0;  // one control-plane message
  double duration_seconds = 1.0; // simulated time
  int aggregators = 0;           // 0: rounds reduce independently; N: a pool of N, one round each
  /// Asked every 4,096 events: true ends the run (simulate() throws interrupted). May be empty.
  std::function<bool()> stopped;
};

/// A run that settings::stopped ended before its simulated time was up.
struct interrupted : std::runtime_error {
  interrupted() : std::runtime_error("the simulation was stopped") {}
};

/// The [simulate] section as settings (duration = simulate.steps undelayed steps).
settings settings_of(const config::simulate_section& simulate);

/// What one simulated run measured; names follow the run report (docs/report.md).
struct result {
  std::string algorithm;
  int workers = 0;
  double seconds = 0.0;    // simulated time
  std::uint64_t steps = 0; // local steps finished by all workers
  std::uint64_t late_steps = 0;
  std::uint64_t rounds = 0; // rounds finished
  std::uint64_t rounds_full_sync = 0;
  double steps_per_second = 0.0; // steps / seconds
  // The samples of the contributions finished rounds took (fresh and stale; as the run report's
  // `samples`): a late gradient that was discarded never gets here; one scaled down under
  // late-gradients = scale counts in full, as its samples do in a run.
  std::uint64_t samples_applied = 0;
  double applied_per_second = 0.0; // samples_applied / train.batch-size / seconds: steps' worth
  double idle_fraction = 0.0;    // idle time between steps / (workers * seconds)
  double waited_seconds = 0.0;   // the wait ledger's comparison (docs/report.md, `waiting`)
  double barrier_seconds = 0.0;
  double mean_group_size = 0.0; // members that answered, per round
  std::uint64_t max_group_size = 0;
  double mean_staleness = 0.0; // per contribution that gave something; see staleness_unit
  std::uint64_t max_staleness = 0;
  std::string staleness_unit;                   // "rounds" (gradients) or "steps" (models)
  std::uint64_t fresh = 0, stale = 0, none = 0; // contributions to finished rounds
  double reduce_seconds = 0.0;                  // all rounds' reductions together
  std::uint64_t events = 0;                     // events the virtual clock ran
};

/// Simulates `config`'s job: config.train.algorithm with config.train.workers workers, the
/// algorithms' sections and [imbalance] (used as the workers use them). Throws
/// std::invalid_argument when a setting does not fit the job (e.g. imbalance.k > workers), and
/// interrupted when how.stopped said so.
result simulate(const config::run_config& config, const settings& how);

/// `config` for a job of `workers` workers: train.workers set, imbalance.k capped at it, the
/// persistent kind's slow workers limited to those below it and wagma.group-size capped at it
/// rounded up to a power of two, so one configuration serves a sweep.
config::run_config for_workers(config::run_config config, int workers);

} // namespace herd::sim
