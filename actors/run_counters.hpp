// What the group coordinator counts while a run goes on, and the progress reports and run summary
// made of it. Plain data and arithmetic, no CAF: tests construct counters and read the summary.
#pragma once

#include "actors/evaluation_schedule.hpp"
#include "herd/run_summary.hpp"
#include "monitoring/duration_stats.hpp"
#include "monitoring/wait_ledger.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "policy/policy.hpp"

namespace herd::actors {

/// One worker's part of the run (about 18 KiB, most of it the duration summaries' buckets).
struct worker_counters {
  std::uint64_t steps = 0;
  std::uint64_t late_steps = 0;
  std::uint64_t samples = 0;
  monitoring::duration_stats step_seconds;
  monitoring::duration_stats wait_seconds;
};

struct run_counters {
  /// `worker_count` for the wait ledger; `workers` below fills when the run starts.
  run_counters(int worker_count = 1, std::size_t samples_in_epoch = 0)
      : samples_per_epoch(samples_in_epoch), ledger(worker_count) {}

  /// Counters for `count` workers (`workers` and `live`), the ones added live.
  void set_workers(std::size_t count);

  /// A worker finished a local step (step_ready's fields).
  void step_finished(int worker, std::uint64_t step, double compute_seconds, double wait_seconds,
                     double loss, std::uint32_t samples, bool late);
  /// A round was applied: what each member gave, and what the data plane did.
  void round_finished(policy::round_kind kind, const std::vector<policy::freshness>& given,
                      std::uint64_t samples, double seconds, std::uint64_t bytes);
  /// async: the parameter server applied gradients this stale (group_done.server_staleness).
  void server_applied(const std::vector<std::uint64_t>& staleness);
  void worker_lost(int worker);
  void worker_joined(int worker);

  bool is_live(int worker) const { return live[static_cast<std::size_t>(worker)] != 0; }
  std::vector<int> live_workers() const;
  double epochs() const; // samples applied / samples of one epoch over all shards
  double recent_loss() const;

  std::size_t samples_per_epoch;
  std::vector<worker_counters> workers;
  /// By worker, whether it is live: a lost worker is out of every group until a node takes its
  /// slot. Kept apart from `workers`, one byte each, because the coordinator checks it at every
  /// step report: in a worker's counters it cost a cache miss there (about 0.8 us a report at 256
  /// workers, whose computation keeps evicting the coordinator's state).
  std::vector<std::uint8_t> live;
  std::uint64_t steps = 0;
  std::uint64_t rounds = 0;
  std::uint64_t full_sync_rounds = 0;
  std::uint64_t partial_rounds = 0;
  std::uint64_t isolation_interventions = 0;
  // async's parameter server: gradients applied, and their staleness summed and at most. Not in
  // checkpoints: async takes none (the server's state is not in them).
  std::uint64_t server_updates = 0;
  std::uint64_t server_staleness_sum = 0;
  std::uint64_t server_staleness_max = 0;
  std::uint64_t aborted_rounds = 0;
  // Gradient buckets: rounds whose reduction began while a member's backward still ran. Not in
  // checkpoints: counted since this process began or resumed the run.
  std::uint64_t rounds_in_backward = 0;
  std::uint64_t workers_joined = 0;
  std::array<std::uint64_t, 3> contributions{}; // by freshness
  std::uint64_t samples_applied = 0;
  double reduce_seconds = 0.0;
  std::uint64_t reduce_bytes = 0;
  std::deque<double> recent_losses; // the training loss shown is their mean
  monitoring::wait_ledger ledger;
};

/// Progress at `elapsed_seconds` into the run.
progress progress_of(const run_counters& counters, double elapsed_seconds,
                     std::optional<double> test_accuracy);

/// The run's summary. `run` says what ran and how it ended (algorithm, data plane, compute,
/// imbalance, target_accuracy, stop_reason, error); the counts and rates come from `counters`,
/// over `wall_seconds` of training, and the accuracies from `evaluations`.
run_summary summarize(run_summary run, const run_counters& counters,
                      const evaluation_schedule& evaluations, double wall_seconds);

/// `run` as a failed run: stop_reason stop_cause::error, `error` saying why (a run that stopped
/// because a caller's callback threw, whatever its own stop reason was).
run_summary failed_with(run_summary run, std::string error);

} // namespace herd::actors
