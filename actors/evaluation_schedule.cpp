// When a run evaluates what; see evaluation_schedule.hpp.
#include "actors/evaluation_schedule.hpp"

#include "herd/run_config.hpp"

#include <algorithm>
#include <cmath>

namespace herd::actors {

bool evaluation_schedule::start_periodic(std::uint64_t rounds, double epochs) {
  if (deferred() || periodic_outstanding_)
    return false;
  if (settings_.every_epochs > 0.0) {
    const auto marks = marks_at(epochs);
    if (marks <= epoch_marks_)
      return false;
    epoch_marks_ = marks;
  } else if (rounds % settings_.every_rounds != 0) {
    return false;
  }
  periodic_outstanding_ = true;
  return true;
}

bool evaluation_schedule::snapshot_due(double elapsed_seconds) {
  if (!deferred() || elapsed_seconds < next_snapshot_seconds_)
    return false;
  next_snapshot_seconds_ = elapsed_seconds + snapshot_interval_seconds_;
  return true;
}

bool evaluation_schedule::keep(kept_snapshot snapshot) {
  const auto bytes_of = [](const kept_snapshot& kept) {
    return kept.parameters ? kept.parameters->size() * sizeof(float) : 0;
  };
  kept_bytes_ += bytes_of(snapshot);
  kept_.push_back(std::move(snapshot));
  bool thinned = false;
  while (kept_bytes_ > settings_.max_kept_bytes && kept_.size() >= 2) {
    // Every second one goes, the first stays: the curve keeps its start and an even spacing.
    std::vector<kept_snapshot> halved;
    kept_bytes_ = 0;
    for (std::size_t i = 0; i < kept_.size(); i += 2) {
      kept_bytes_ += bytes_of(kept_[i]);
      halved.push_back(std::move(kept_[i]));
    }
    kept_ = std::move(halved);
    next_snapshot_seconds_ += snapshot_interval_seconds_; // the next one as far on as the new gap
    snapshot_interval_seconds_ *= 2.0;
    thinned = true;
  }
  return thinned;
}

std::vector<int> evaluation_schedule::sources(const std::vector<int>& live_workers) const {
  if (settings_.mean_of_replicas || live_workers.empty())
    return live_workers;
  return {live_workers.front()};
}

evaluation_schedule::settings evaluation_schedule::settings::of(const config::run_config& config,
                                                                double snapshot_interval_seconds,
                                                                bool mean_of_replicas) {
  settings chosen;
  chosen.every_rounds = static_cast<std::uint64_t>(config.train.eval_every);
  chosen.every_epochs = config.train.eval_every_epochs;
  chosen.target_accuracy = config.train.target_accuracy;
  chosen.snapshot_interval_seconds = snapshot_interval_seconds;
  chosen.mean_of_replicas = mean_of_replicas;
  chosen.patience = config.train.patience;
  return chosen;
}

bool evaluation_schedule::track_best(const evaluation_point& point, parameters_ptr parameters) {
  if (settings_.patience == 0)
    return false;
  // NaN is never the best; an equal accuracy is no improvement.
  if (!std::isnan(point.test_accuracy) &&
      (!best_point_ || point.test_accuracy > best_point_->test_accuracy)) {
    best_point_ = point;
    best_parameters_ = std::move(parameters);
    since_best_ = 0;
    return true;
  }
  ++since_best_;
  return false;
}

const std::optional<evaluation_point>&
evaluation_schedule::kept_point(stop_cause stop_reason) const {
  if (stop_reason == stop_cause::target_accuracy && target_point_)
    return target_point_;
  return keeps_best() ? best_point_ : final_;
}

evaluation_schedule::parameters_ptr
evaluation_schedule::kept_parameters(stop_cause stop_reason,
                                     parameters_ptr final_parameters) const {
  if (stop_reason == stop_cause::target_accuracy && target_point_)
    return target_parameters_ ? target_parameters_ : final_parameters;
  return keeps_best() ? best_parameters_ : final_parameters;
}

bool evaluation_schedule::record(const evaluation_point& point, parameters_ptr parameters,
                                 bool final) {
  evaluations_.push_back(point);
  if (!final)
    track_best(point, parameters);
  const double target = settings_.target_accuracy;
  if (target <= 0.0 || !(point.test_accuracy >= target) || time_to_target_) // NaN: none
    return false;
  time_to_target_ = point.elapsed_seconds;
  target_point_ = point;
  target_parameters_ = std::move(parameters);
  return true;
}

std::uint64_t evaluation_schedule::marks_at(double epochs) const {
  // The tolerance keeps an exact multiple (samples / samples per epoch) from falling short.
  return settings_.every_epochs > 0.0
             ? static_cast<std::uint64_t>(std::floor(epochs / settings_.every_epochs + 1e-9))
             : 0;
}

void evaluation_schedule::resume_from(const evaluation_schedule& saved, double epochs) {
  next_snapshot_seconds_ = saved.next_snapshot_seconds_;
  epoch_marks_ = marks_at(epochs);
  evaluations_ = saved.evaluations_;
  time_to_target_.reset();
  target_point_.reset();
  target_parameters_.reset();
  // The best so far, from the evaluations; its parameters where the checkpoint kept the same one's.
  best_point_.reset();
  best_parameters_.reset();
  since_best_ = 0;
  for (const auto& point : evaluations_)
    track_best(point, nullptr);
  const auto same = [](const std::optional<evaluation_point>& a,
                       const std::optional<evaluation_point>& b) {
    return a && b && a->round == b->round && a->elapsed_seconds == b->elapsed_seconds;
  };
  if (same(best_point_, saved.best_point_)) {
    best_parameters_ = saved.best_parameters_;
  } else { // without its parameters that best could not be kept: the patience starts afresh
    best_point_.reset();
    since_best_ = 0;
  }
  const double target = settings_.target_accuracy;
  if (target <= 0.0)
    return;
  const auto reached = std::find_if(evaluations_.begin(), evaluations_.end(),
                                    [target](const auto& point) {
                                      return point.test_accuracy >= target;
                                    });
  if (reached == evaluations_.end())
    return;
  time_to_target_ = reached->elapsed_seconds;
  target_point_ = *reached;
  if (same(saved.target_point_, *reached))
    target_parameters_ = saved.target_parameters_;
}

std::optional<double> evaluation_schedule::latest_accuracy() const {
  if (evaluations_.empty())
    return std::nullopt;
  return evaluations_.back().test_accuracy;
}

bool replica_mean::add(const std::vector<float>& parameters) {
  if (sum_.empty())
    sum_.assign(parameters.size(), 0.0);
  for (std::size_t i = 0; i < parameters.size() && i < sum_.size(); ++i)
    sum_[i] += parameters[i];
  ++received_;
  return --outstanding_ == 0;
}

bool replica_mean::fail(std::string reason) {
  failure_ = std::move(reason);
  return --outstanding_ == 0;
}

std::shared_ptr<const std::vector<float>> replica_mean::mean() const {
  auto mean = std::make_shared<std::vector<float>>(sum_.size());
  for (std::size_t i = 0; i < mean->size(); ++i)
    (*mean)[i] = static_cast<float>(sum_[i] / static_cast<double>(received_));
  return mean;
}

std::vector<float> trained_model(const std::vector<std::vector<float>>& replicas,
                                 const std::vector<float>& server) {
  if (!server.empty())
    return server;
  std::vector<const std::vector<float>*> live;
  for (const auto& replica : replicas)
    if (!replica.empty())
      live.push_back(&replica);
  if (live.empty())
    return {};
  const auto& first = *live.front();
  if (std::all_of(live.begin(), live.end(), [&first](const auto* replica) {
        return replica->size() == first.size() &&
               std::equal(replica->begin(), replica->end(), first.begin());
      }))
    return first;
  replica_mean mean(live.size());
  for (const auto* replica : live)
    mean.add(*replica);
  return *mean.mean();
}

} // namespace herd::actors
