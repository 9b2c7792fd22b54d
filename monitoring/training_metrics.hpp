// Herd's straggler metrics (docs/metrics.md) on a metric registry: the names, types, labels
// and buckets in one place, fed by the group coordinator from arrival timestamps, the workers'
// step timings and finished rounds. A plain class (no actors): one thread updates it (the
// coordinator's), any thread may collect the registry meanwhile.
#pragma once

#include "herd/metrics.hpp"
#include "monitoring/straggler_stats.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herd::monitoring {

class training_metrics {
public:
  struct identity {
    std::string job = "herd";
    std::string node = "local"; // the process's host
    /// The `node` label of each worker where they differ (a cluster: the node that hosts it);
    /// empty: `node` for every worker.
    std::vector<std::string> worker_nodes;
    std::string algorithm = "sync";
    int workers = 1;
    double window_seconds = 30.0; // of the straggler score and imbalance ratio
  };

  /// Registers every family in `metrics` (kept alive as long as this object) and sets every
  /// worker up. Throws std::invalid_argument when `metrics` holds a family of one of Herd's names
  /// with another type or labels, and then leaves none of this job's series there.
  training_metrics(std::shared_ptr<registry> metrics, identity who);

  /// A worker finished its step number `step` (1-based) at `now_seconds` after `compute_seconds`;
  /// it had been idle `idle_seconds` before the step began.
  /// `late`: its round had closed (it goes on with its next step at once).
  void step_finished(int worker, std::uint64_t step, double now_seconds, double compute_seconds,
                     double idle_seconds, std::uint32_t samples, bool late = false);

  /// What a finished round tells the metrics.
  struct round_record {
    bool full_sync = false;
    std::size_t members = 0;
    std::size_t fresh = 0;
    std::size_t stale = 0;
    std::size_t none = 0;
    /// Planned members that did not answer (timed out or lost): the round completed without them.
    std::size_t missing = 0;
    /// For each member that gave something: its staleness. Gradient algorithms: rounds applied
    /// since the parameters its (oldest) gradient was computed on, before this round (0 =
    /// computed on the latest parameters). Model averaging (preduce): local steps behind the
    /// group's freshest member, in model versions.
    std::vector<std::uint64_t> staleness_rounds;
    std::vector<double> fresh_arrival_seconds; // when the fresh contributors arrived
    double reduce_seconds = 0.0;
    std::uint64_t reduce_bytes = 0;
    std::uint64_t samples = 0; // the samples whose gradients (or models) the round applied
    /// The members the result went to, and when (for the straggler scores: a worker waiting for
    /// it begins its next step then).
    std::vector<std::int32_t> answered;
    double finished_seconds = 0.0;
  };
  void round_finished(const round_record& round);

  /// preduce's isolation guard built a group across components.
  void isolation_intervention();

  /// A round was aborted: its members skipped it (a node lost while reducing, a data plane that
  /// failed, a refused peer).
  void round_aborted();
  /// The data plane is being re-keyed: a node refused a peer's messages (one count per attempt).
  void data_plane_rekeyed();

  /// Worker `worker` was lost (counted in herd_worker_losses_total).
  void worker_lost(int worker);
  /// A lost worker's slot is live again: a node named `node` joined the running job in its
  /// place. Its series carry `node` from now on; those under the node it left end.
  void worker_joined(int worker, const std::string& node);
  /// A resumed run: `worker` goes on from its step number `steps` (its lag counts from there,
  /// not from 0 until its first step is reported).
  void resumed_steps(int worker, std::uint64_t steps);
  /// What waiting cost against a synchronous barrier on the same steps (wait_ledger): the run's
  /// totals so far, over the step numbers every live worker has finished (all workers
  /// together). The counters grow by the increase since the last call, or since
  /// resumed_comparison(): a run resumed from a checkpoint starts from its totals there.
  void barrier_comparison(double waited_seconds, double barrier_seconds,
                          std::uint64_t steps_compared);
  /// The comparison's totals when a run resumed: the counters count only what is added later.
  void resumed_comparison(double waited_seconds, double barrier_seconds,
                          std::uint64_t steps_compared);
  /// The job's recent training loss; ignored before the first step_finished (no loss yet). This,
  /// the test accuracy and the imbalance ratio have no series until their first value.
  void train_loss(double loss);
  void test_accuracy(double accuracy);
  /// With a validation set (data.validation-fraction) the evaluations while training measure it,
  /// and the test accuracy is set once, at the end.
  void validation_accuracy(double accuracy);
  /// The learning rate the latest round was given (train.lr times the schedule's factor).
  void learning_rate(double rate);

  /// Checkpoints are on (checkpoint.dir), one due every `every_seconds` of training (0: by rounds
  /// only). The checkpoint series appear; the training not yet saved counts from `now_seconds`
  /// (the run's start, or the checkpoint it resumed from, holds the state until then).
  void checkpoints_on(double every_seconds, double now_seconds);
  /// A checkpoint holding the run's state as of `state_seconds` of training is on disk; training
  /// was held `pause_seconds` for it.
  void checkpoint_written(double state_seconds, double pause_seconds);
  /// A checkpoint was not taken (a worker lost, a node that did not answer) or not written.
  void checkpoint_failed();

  /// Recomputes the straggler scores, the imbalance ratio, the lags and the training not yet
  /// saved at `now_seconds`.
  void refresh(double now_seconds);

  /// The live worker with the highest straggler score at the last refresh(); none before any
  /// worker had a score.
  struct slowest_worker {
    int worker = 0;
    double score = 0.0;
  };
  std::optional<slowest_worker> straggler() const { return straggler_; }

  /// The run ended: every series of its job leaves the registry (a service's registry outlives
  /// its jobs: an ended job's workers would read as up forever, and each job's series would stay),
  /// and every call from here on does nothing. On the thread that updates the metrics, before
  /// the job's name is free for another job.
  void close();

private:
  struct per_worker;
  // The job's families and series, each noted by kept() as it is added.
  void add_series();
  // `series` of `family` for this job, added the first time.
  gauge& first_set(family<gauge>& family, gauge*& series);
  // `worker`'s straggler score, added the first time.
  gauge& score_of(int worker);
  per_worker series_for(int worker, const std::string& node);
  // The most steps a live worker has reported (or started from).
  std::uint64_t front_steps() const;
  // Notes `family` as one whose series of this job close() removes.
  template <class Family>
  Family& kept(Family& family) {
    families_.push_back(&family);
    return family;
  }

  struct per_worker {
    histogram* step_seconds = nullptr;
    histogram* wait_seconds = nullptr;
    gauge* lag_steps = nullptr;
    gauge* straggler_score = nullptr;
    counter* samples = nullptr;
    counter* late_steps = nullptr;
    gauge* up = nullptr;
    std::string node; // the label its series carry
    std::uint64_t steps = 0;
    bool live = true;
  };

  std::shared_ptr<registry> registry_;
  identity who_;
  straggler_stats stragglers_;
  std::optional<slowest_worker> straggler_;
  std::vector<per_worker> workers_;
  std::vector<family_base*> families_; // every family this job has series in
  bool closed_ = false;
  family<histogram>* step_seconds_family_ = nullptr;
  family<histogram>* wait_seconds_family_ = nullptr;
  family<gauge>* lag_family_ = nullptr;
  family<gauge>* score_family_ = nullptr;
  family<counter>* samples_family_ = nullptr;
  family<counter>* late_steps_family_ = nullptr;
  family<gauge>* up_family_ = nullptr;
  histogram* arrival_skew_ = nullptr;
  // Added at their first value (first_set): before it a dashboard shows no data, not a 0 that
  // reads as a perfect loss, an accuracy of 0 or a ratio under the balanced 1.
  family<gauge>* imbalance_family_ = nullptr;
  family<gauge>* train_loss_family_ = nullptr;
  family<gauge>* test_accuracy_family_ = nullptr;
  family<gauge>* validation_accuracy_family_ = nullptr;
  family<gauge>* learning_rate_family_ = nullptr;
  gauge* imbalance_ratio_ = nullptr;
  counter* fresh_ = nullptr;
  counter* stale_ = nullptr;
  counter* none_ = nullptr;
  counter* isolation_interventions_ = nullptr;
  counter* rounds_missing_members_ = nullptr;
  counter* rounds_aborted_ = nullptr;
  counter* rekeys_ = nullptr;
  counter* worker_losses_ = nullptr;
  counter* worker_joins_ = nullptr;
  counter* compared_waited_ = nullptr;
  counter* compared_barrier_ = nullptr;
  counter* compared_steps_ = nullptr;
  struct compared_totals {
    double waited = 0.0;
    double barrier = 0.0;
    std::uint64_t steps = 0;
  } compared_; // what the counters above hold
  histogram* staleness_ = nullptr;
  histogram* group_size_ = nullptr;
  counter* partial_rounds_ = nullptr;
  counter* full_sync_rounds_ = nullptr;
  histogram* reduce_seconds_ = nullptr;
  counter* reduce_bytes_ = nullptr;
  counter* samples_applied_ = nullptr;
  gauge* train_loss_ = nullptr;
  gauge* test_accuracy_ = nullptr;
  gauge* validation_accuracy_ = nullptr;
  gauge* learning_rate_ = nullptr;
  // With checkpoints on (checkpoints_on()); null without.
  counter* checkpoints_written_ = nullptr;
  counter* checkpoint_failures_ = nullptr;
  gauge* unsaved_seconds_ = nullptr;
  gauge* checkpoint_pause_ = nullptr;
  double saved_at_ = 0.0; // training seconds the newest checkpoint holds
  bool stepped_ = false; // a step was booked: the coordinator's recent loss is one
};

} // namespace herd::monitoring
