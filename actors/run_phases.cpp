// The phases of a run; see run_phases.hpp.
#include "actors/run_phases.hpp"

namespace herd::actors {

using action = run_phases::action;

bool run_phases::start() {
  const bool starting = phase_ == run_phase::starting;
  if (starting)
    phase_ = run_phase::running;
  return starting;
}

action run_phases::enter(run_phase next, action then) {
  phase_ = next;
  return then;
}

action run_phases::stop(stop_cause reason) {
  if (phase_ != run_phase::starting && phase_ != run_phase::running)
    return action::none;
  stop_reason_ = reason;
  return phase_ == run_phase::starting ? enter(run_phase::done, action::finish)
                                       : enter(run_phase::draining, action::drain);
}

action run_phases::fail(const std::string& error) {
  if (phase_ == run_phase::done) // the summary went out with what it had
    return action::none;
  if (error_.empty())
    error_ = error;
  const auto next = stop(stop_cause::error);
  stop_reason_ = stop_cause::error;
  return next;
}

bool run_phases::time_is_up(double elapsed_seconds) const {
  return max_seconds_ > 0.0 && elapsed_seconds >= max_seconds_ && phase_ == run_phase::running;
}

action run_phases::rounds_changed(std::size_t rounds_in_flight) {
  if (phase_ != run_phase::draining || rounds_in_flight > 0)
    return action::none;
  return enter(run_phase::stopping_workers, action::stop_workers);
}

action run_phases::drain_timed_out(std::size_t rounds_in_flight) {
  if (phase_ != run_phase::draining || rounds_in_flight == 0)
    return action::none;
  return enter(run_phase::stopping_workers, action::stop_workers);
}

action run_phases::stopping(const std::vector<int>& live_workers) {
  if (phase_ != run_phase::stopping_workers)
    return action::none;
  awaiting_stop_.insert(live_workers.begin(), live_workers.end());
  return awaiting_stop_.empty() ? enter(run_phase::final_evaluation, action::evaluate_final)
                                : action::none;
}

action run_phases::worker_stopped(int worker) {
  if (phase_ != run_phase::stopping_workers || awaiting_stop_.erase(worker) == 0 ||
      !awaiting_stop_.empty())
    return action::none;
  return enter(run_phase::final_evaluation, action::evaluate_final);
}

action run_phases::final_evaluation_ended(const std::string& failure) {
  if (phase_ != run_phase::final_evaluation)
    return action::none;
  if (error_.empty())
    error_ = failure;
  return enter(run_phase::done, action::finish);
}

} // namespace herd::actors
