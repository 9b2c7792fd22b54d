// A run's summary from what its job heard; see run_so_far.hpp.
#include "actors/run_so_far.hpp"

namespace herd::actors {

run_summary run_so_far::summary(run_summary ended) const {
  if (latest_) {
    ended.rounds = latest_->rounds;
    ended.steps = latest_->steps;
    ended.samples = latest_->samples;
    ended.epochs = latest_->epoch;
    ended.wall_seconds = latest_->elapsed_seconds;
  }
  ended.evaluations = evaluations_;
  return ended;
}

} // namespace herd::actors
