// When a run evaluates what; see evaluation_schedule.hpp.
#include "actors/evaluation_schedule.hpp"

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

bool evaluation_schedule::record(const evaluation_point& point, parameters_ptr parameters) {
  evaluations_.push_back(point);
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
  if (saved.target_point_ && saved.target_point_->round == reached->round &&
      saved.target_point_->elapsed_seconds == reached->elapsed_seconds)
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
