// What a training run reports while it runs (progress, evaluations) and when it ends (the run
// summary behind the CLI's summary and the JSON report). Plain data, no CAF.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace herd::actors {

/// Why a run ended: the field run_summary::stop_reason, written in reports and JSON by to_string.
enum class stop_cause {
  none,            // not ended yet
  epochs,          // train.epochs were trained
  target_accuracy, // an evaluation reached train.target-accuracy
  plateau,         // train.patience evaluations in a row without a better accuracy
  max_seconds,     // train.max-seconds passed
  interrupted,     // stopped on request (Ctrl-C, SIGTERM, job::stop or job::abort)
  error,           // failed: run_summary::error says why
};

/// The name reports and JSON use: "epochs", "target-accuracy", "plateau", "max-seconds",
/// "interrupted", "error"; "" for none.
constexpr const char* to_string(stop_cause cause) {
  switch (cause) {
  case stop_cause::none:
    return "";
  case stop_cause::epochs:
    return "epochs";
  case stop_cause::target_accuracy:
    return "target-accuracy";
  case stop_cause::plateau:
    return "plateau";
  case stop_cause::max_seconds:
    return "max-seconds";
  case stop_cause::interrupted:
    return "interrupted";
  case stop_cause::error:
    return "error";
  }
  return "";
}

/// Writes to_string(cause).
inline std::ostream& operator<<(std::ostream& out, stop_cause cause) {
  return out << to_string(cause);
}

/// The slowest worker now: its straggler score is its median step time over the median of all
/// live workers' medians, over metrics.window-seconds (docs/metrics.md).
struct straggler_report {
  int worker = 0;
  double score = 0.0;
};

struct progress {
  double elapsed_seconds = 0.0;
  double epoch = 0.0; // samples applied / samples in one epoch of all shards
  std::uint64_t rounds = 0;
  std::uint64_t steps = 0;             // local steps of all workers
  std::uint64_t samples = 0;           // samples whose gradients were applied
  double train_loss = 0.0;             // mean loss of recent steps
  std::optional<double> test_accuracy; // latest evaluation (of the evaluation set), if any
  double samples_per_second = 0.0;
  int live_workers = 0;
  std::optional<straggler_report> straggler; // unknown until workers have stepped
};

/// An evaluation while training. Its accuracy and loss are of the run's evaluation set: the
/// validation set where the run has one (run_summary::validation_samples), else the test set.
struct evaluation_point {
  std::uint64_t round = 0;
  double elapsed_seconds = 0.0; // when the evaluated parameters were taken
  double epoch = 0.0;
  double test_accuracy = 0.0; // of the evaluation set (above)
  double test_loss = 0.0;
};

struct duration_summary {
  double mean = 0.0;
  double median = 0.0;
  double p90 = 0.0;
  double max = 0.0;
  double cv = 0.0; // coefficient of variation: standard deviation / mean
};

/// One bar of a histogram of durations: how many fell in [lower_seconds, upper_seconds).
struct histogram_bar {
  double lower_seconds = 0.0;
  double upper_seconds = 0.0;
  std::uint64_t count = 0;
};

struct worker_summary {
  int worker = 0;
  /// Across processes: the name of the node that hosts the worker at the end (herd node
  /// --name); empty in one process.
  std::string node;
  std::uint64_t steps = 0;
  std::uint64_t samples = 0;
  std::uint64_t late_steps = 0; // steps whose round closed before they finished
  double compute_seconds = 0.0; // total local compute, injected imbalance included
  double wait_seconds = 0.0;    // total idle time between steps
  // Over the step numbers every worker completed (run_summary::waiting): the idle time that
  // really followed them, and what a barrier after each would have imposed.
  double waited_compared_seconds = 0.0;
  double barrier_wait_seconds = 0.0;
  duration_summary step_seconds;
  /// The step times in bars about 22% wide, from the shortest step's bar to the longest's.
  std::vector<histogram_bar> step_histogram;
  duration_summary wait_seconds_per_step;
  bool live = true;
};

/// A worker lost, or a node's worker that took a lost one's place (across processes).
struct worker_event {
  double seconds = 0.0; // since the run started
  int worker = 0;
  std::string node; // the node that hosted it (lost) or hosts it now (joined); empty in one process
  bool joined = false; // false: lost
  std::string why;     // why it was lost; empty for a join
};

/// Waiting that happened against waiting a synchronous barrier would have imposed on the same
/// steps (docs/report.md), over the step numbers every worker completed.
struct waiting_summary {
  std::uint64_t steps_compared = 0;
  double waited_seconds = 0.0;  // all workers together
  double barrier_seconds = 0.0; // all workers together
};

/// The control plane's work in one process: time in the handlers of the group
/// coordinator and of the aggregators (without their data-plane reductions), and messages handled.
/// Zero across processes, where it is not gathered.
struct control_summary {
  double coordinator_seconds = 0.0;
  std::uint64_t coordinator_messages = 0;
  double aggregator_seconds = 0.0;
  std::uint64_t aggregator_messages = 0;
};

struct run_summary {
  std::string algorithm;
  int workers = 0;
  std::string data_plane; // what moved tensors: "local", "gloo"
  std::string compute = "cpu"; // where the workers compute: "cpu", "cuda:0 (NVIDIA H200)"
  std::string imbalance = "none";
  stop_cause stop_reason = stop_cause::none;
  // What went wrong: why the run failed when stop_reason is error; otherwise what failed at
  // its end without failing it (the final evaluation, a callback of job_options), or empty.
  std::string error;
  /// Why the checkpoint the run ended with could not be written ("" when it was, or none was
  /// due): the state at the end is lost, though the run itself did not fail.
  std::string final_checkpoint_error;
  /// The checkpoint that holds the state the run ended with: the final one it wrote, or the newest
  /// periodic one where that held this state already; "" where there is none.
  std::string final_checkpoint;
  std::uint64_t steps = 0;
  std::uint64_t rounds = 0;
  std::uint64_t full_sync_rounds = 0; // rounds every live worker gave a fresh gradient to
  std::uint64_t partial_rounds = 0;
  std::uint64_t isolation_interventions = 0; // preduce: groups its isolation guard built
  std::uint64_t server_updates = 0;          // async: gradients the parameter server applied
  double server_staleness_mean = 0.0; // async: server versions between the parameters a gradient
  std::uint64_t server_staleness_max = 0; // was computed on and those it was applied to
  bool started = true; // false: it ended before its first step (a cluster that never formed)
  /// Rounds every member skipped: a node was lost while they reduced, or (comm.bucket-mb) a
  /// worker's backward pass failed while its round read the gradient.
  std::uint64_t aborted_rounds = 0;
  /// comm.bucket-mb: rounds whose reduction began while a member's backward pass still ran (since
  /// the run began, or since it resumed from a checkpoint).
  std::uint64_t rounds_in_backward = 0;
  std::uint64_t workers_joined = 0; // lost workers' slots taken over by a node joining the run
  std::uint64_t fresh_contributions = 0;
  std::uint64_t stale_contributions = 0; // accumulated late gradients
  std::uint64_t empty_contributions = 0; // members that had nothing to give
  std::uint64_t samples = 0;
  double epochs = 0.0;
  double wall_seconds = 0.0;
  /// Samples held out of the training set that every evaluation while training measured
  /// (data.validation-fraction, or a train_test_split given with a validation set); 0: they
  /// measured the test set. With a validation set, train.target-accuracy and the evaluations'
  /// accuracies are the validation set's, and the test set is measured once, at the end.
  std::uint64_t validation_samples = 0;
  double target_accuracy = 0.0; // 0 = none was set
  std::optional<double> time_to_target_seconds;
  /// The test accuracy of the parameters the run ends with: those that reached
  /// train.target-accuracy when it stopped there, else with train.patience those of the best
  /// evaluation while training, else the last. None when that evaluation failed,
  /// or gave a NaN loss (parameters that are not numbers: a diverged run).
  std::optional<double> final_test_accuracy;
  std::optional<double> final_test_loss;
  /// With a validation set: the same parameters' validation accuracy and loss (as above).
  std::optional<double> final_validation_accuracy;
  std::optional<double> final_validation_loss;
  /// Where the run kept other parameters than the workers' last (stopped at the target, or the
  /// best evaluation's with train.patience): the accuracy on the evaluation set of the workers'
  /// last (after the rounds in flight at a stop), which may differ from the kept ones.
  std::optional<double> after_stop_test_accuracy;
  double final_train_loss = 0.0;
  double samples_per_second = 0.0;
  double reduce_seconds = 0.0;    // data-plane time of all rounds together
  std::uint64_t reduce_bytes = 0; // bytes the data plane read and wrote
  waiting_summary waiting;
  control_summary control;
  std::vector<worker_summary> per_worker;
  /// Workers lost and joined during the run, in order.
  std::vector<worker_event> worker_events;
  std::vector<evaluation_point> evaluations;
};

} // namespace herd::actors
