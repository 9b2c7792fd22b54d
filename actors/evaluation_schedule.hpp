// When a run evaluates, which workers' parameters it evaluates, and what the evaluations found. A
// plain class, no CAF: the group coordinator asks it and carries out the requests; tests drive it.
//
// While training, every train.eval-every rounds (one evaluation at a time: a round that comes due
// while one runs is skipped). With a snapshot interval instead, a snapshot is taken that often and
// every one is evaluated after the workers stopped (for benchmarks: evaluating competes with
// training for cores). At the end always, on the final parameters. With train.patience it keeps
// the best evaluation's parameters, and says when that many evaluations in a row did not beat it.
#pragma once

#include "herd/run_summary.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herd::config {
struct run_config;
} // namespace herd::config

namespace herd::actors {

class evaluation_schedule {
public:
  struct settings {
    std::uint64_t every_rounds = 1;         // train.eval-every
    double every_epochs = 0.0;              // train.eval-every-epochs; > 0: instead of rounds
    double target_accuracy = 0.0;           // train.target-accuracy; 0: none
    double snapshot_interval_seconds = 0.0; // > 0: snapshots now, evaluations after training
    bool mean_of_replicas = false;          // the replicas differ between global averages
    /// The kept snapshots' parameters stay within this many bytes: past it every second one is
    /// dropped and the interval doubles (a long run's curve gets coarser, not the machine's
    /// memory exhausted: a 1.7 MB model every 100 ms is 1 GB a minute).
    std::size_t max_kept_bytes = std::size_t{512} << 20;
    /// train.patience: evaluations in a row without a higher accuracy than the best before the
    /// run stops ("plateau"); the run then keeps the best one's parameters. 0: none.
    std::uint64_t patience = 0;

    /// `config`'s train.eval-every, eval-every-epochs, target-accuracy and patience.
    static settings of(const config::run_config& config, double snapshot_interval_seconds,
                       bool mean_of_replicas);
  };

  using parameters_ptr = std::shared_ptr<const std::vector<float>>;

  /// A snapshot taken to evaluate after training.
  struct kept_snapshot {
    evaluation_point point;
    parameters_ptr parameters;
  };

  explicit evaluation_schedule(settings chosen)
      : settings_(chosen), snapshot_interval_seconds_(chosen.snapshot_interval_seconds) {}

  bool deferred() const { return settings_.snapshot_interval_seconds > 0.0; }

  /// `rounds` rounds have finished, `epochs` epochs of training so far: whether to evaluate now.
  /// Every every_rounds rounds (one that comes due while an evaluation runs is skipped), or with
  /// every_epochs once the epochs pass each multiple of it (one that passes while an evaluation
  /// runs comes when it has ended). True marks one outstanding until periodic_ended().
  bool start_periodic(std::uint64_t rounds, double epochs);
  void periodic_ended() { periodic_outstanding_ = false; }
  /// A periodic evaluation is under way (start_periodic() said so, periodic_ended() not yet).
  bool periodic_outstanding() const { return periodic_outstanding_; }

  /// At `elapsed_seconds` into the run: whether to take a snapshot for later. True sets the next
  /// one an interval later.
  bool snapshot_due(double elapsed_seconds);

  /// The workers whose parameters make the model: the first live one (every replica goes through
  /// the same states), or every live one, to average (model averaging).
  std::vector<int> sources(const std::vector<int>& live_workers) const;

  /// Keeps a snapshot for later; true when that thinned the kept ones (settings::max_kept_bytes).
  bool keep(kept_snapshot snapshot);
  const std::vector<kept_snapshot>& kept() const { return kept_; }
  void drop_kept() {
    kept_.clear();
    kept_bytes_ = 0;
  }
  /// The interval between snapshots now: the setting's, doubled at each thinning.
  double snapshot_interval_seconds() const { return snapshot_interval_seconds_; }

  /// Records an evaluation of `parameters`; true when it is the first to reach the target
  /// accuracy, and then those parameters are kept (target_parameters()). `final`: the evaluation
  /// of the final parameters, which the patience's best does not count (the run's final
  /// checkpoint, written before it, could not serve them as the best).
  bool record(const evaluation_point& point, parameters_ptr parameters = nullptr,
              bool final = false);
  /// The evaluation of the final parameters (recorded with record() too).
  void set_final(const evaluation_point& point) { final_ = point; }
  /// With patience: the last `patience` evaluations recorded did not beat the best before them.
  bool plateaued() const {
    return settings_.patience > 0 && best_point_ && since_best_ >= settings_.patience;
  }

  const std::vector<evaluation_point>& evaluations() const { return evaluations_; }
  std::optional<double> latest_accuracy() const;
  /// When the parameters of the first evaluation that reached the target were taken.
  std::optional<double> time_to_target() const { return time_to_target_; }
  /// That evaluation.
  const std::optional<evaluation_point>& target_point() const { return target_point_; }
  /// The parameters it evaluated (null where no evaluation reached the target, or where it was
  /// recorded without them): what a run that stops at its target keeps, in its final checkpoint
  /// too.
  const parameters_ptr& target_parameters() const { return target_parameters_; }
  const std::optional<evaluation_point>& final_point() const { return final_; }
  /// The evaluation of the parameters the run ends with: the target's where it stopped there
  /// (`stop_reason`) and reached it, else with patience the best one, else the final one.
  const std::optional<evaluation_point>& kept_point(stop_cause stop_reason) const;
  /// Those parameters: the target's or the best one's (kept with their evaluations), else
  /// `final_parameters`.
  parameters_ptr kept_parameters(stop_cause stop_reason, parameters_ptr final_parameters) const;
  /// With patience: the evaluation of the highest accuracy so far (the first of equals; the final
  /// evaluation aside), and its parameters where they were recorded.
  const std::optional<evaluation_point>& best_point() const { return best_point_; }
  const parameters_ptr& best_parameters() const { return best_parameters_; }
  /// A checkpoint's best evaluation and parameters, kept apart from the rest of the schedule.
  void restore_best(const evaluation_point& point, parameters_ptr parameters) {
    best_point_ = point;
    best_parameters_ = std::move(parameters);
  }
  /// With a validation set: the test set's measurement of the parameters the run ends with,
  /// taken once, after the final evaluation.
  void set_tested(const evaluation_point& point) { tested_ = point; }
  const std::optional<evaluation_point>& tested_point() const { return tested_; }

  /// Goes on from a checkpoint's schedule (its evaluations and the target's evaluation and
  /// parameters; these settings). The target in force may not be the checkpoint's: the first
  /// evaluation so far that reached this one counts, and the parameters the checkpoint kept
  /// only when they are that evaluation's.
  /// `epochs`: the epochs of training the checkpoint holds (train.eval-every-epochs counts the
  /// multiples passed after them).
  void resume_from(const evaluation_schedule& saved, double epochs);

  /// What a run resumed from a checkpoint goes on with: the evaluations so far, when the target
  /// was reached and the parameters that reached it (not the settings, kept snapshots or an
  /// evaluation under way). A cereal archive; the caller includes cereal's types (vector,
  /// optional) and serialises evaluation_point.
  template <class Archive>
  void serialize(Archive& archive) {
    std::vector<float> target_parameters;
    if (target_parameters_ && !Archive::is_loading::value)
      target_parameters = *target_parameters_;
    archive(next_snapshot_seconds_, evaluations_, time_to_target_, target_point_,
            target_parameters);
    if (Archive::is_loading::value && !target_parameters.empty())
      target_parameters_ = std::make_shared<const std::vector<float>>(std::move(target_parameters));
  }

private:
  settings settings_;
  bool periodic_outstanding_ = false;
  /// With every_epochs: the multiples of it passed when the last evaluation started (or the run
  /// resumed).
  std::uint64_t epoch_marks_ = 0;
  std::uint64_t marks_at(double epochs) const;
  double next_snapshot_seconds_ = 0.0;
  double snapshot_interval_seconds_;
  std::vector<kept_snapshot> kept_;
  std::size_t kept_bytes_ = 0;
  std::vector<evaluation_point> evaluations_;
  std::optional<double> time_to_target_;
  std::optional<evaluation_point> target_point_;
  parameters_ptr target_parameters_;
  std::optional<evaluation_point> final_;
  std::optional<evaluation_point> tested_;
  std::optional<evaluation_point> best_point_;
  parameters_ptr best_parameters_;
  std::uint64_t since_best_ = 0; // evaluations recorded after the best one
  /// Whether `point` beats the best so far: then it is the best, with `parameters`.
  bool track_best(const evaluation_point& point, parameters_ptr parameters);
  bool keeps_best() const { return settings_.patience > 0 && best_point_ && best_parameters_; }
};

/// The mean of the parameters of the replicas asked for a snapshot, as their answers come.
class replica_mean {
public:
  explicit replica_mean(std::size_t replicas) : outstanding_(replicas) {}

  /// A replica's parameters; true when it was the last answer.
  bool add(const std::vector<float>& parameters);
  /// A replica that did not answer, and why; true when it was the last answer.
  bool fail(std::string reason);

  /// Whether any replica answered.
  bool any() const { return received_ > 0; }
  /// Why the last replica that failed did.
  const std::string& failure() const { return failure_; }
  /// The element-wise mean over the answers (of the first answer's length).
  std::shared_ptr<const std::vector<float>> mean() const;

private:
  std::size_t outstanding_;
  std::size_t received_ = 0;
  std::vector<double> sum_;
  std::string failure_;
};

/// The model as training left it: `server`'s parameters where there is a parameter server
/// (async); else the replicas' (empty ones, of lost workers, left out), averaged where they differ
/// (model averaging leaves replicas apart) and as they are, bit for bit, where they do not.
std::vector<float> trained_model(const std::vector<std::vector<float>>& replicas,
                                 const std::vector<float>& server);

} // namespace herd::actors
