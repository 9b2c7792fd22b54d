// Finished steps booked in batches (step_book.hpp).
#include "actors/step_book.hpp"

#include "monitoring/training_metrics.hpp"

namespace herd::actors {

step_book::step_book(run_counters& counters, monitoring::training_metrics* metrics)
    : counters_(counters), metrics_(metrics) {
  kept_.reserve(capacity);
}

void step_book::keep(const finished_step& step) {
  kept_.push_back(step);
  if (kept_.size() >= capacity)
    book();
}

void step_book::book() {
  for (const auto& step : kept_) {
    counters_.step_finished(step.worker, step.step, step.compute_seconds, step.wait_seconds,
                            step.loss, step.samples, step.late);
    if (metrics_ != nullptr)
      metrics_->step_finished(step.worker, step.step, step.at_seconds, step.compute_seconds,
                              step.wait_seconds, step.samples, step.late);
  }
  kept_.clear();
}

} // namespace herd::actors
