// The phases of a run, as the group coordinator goes through them: when it stops, and what stopping
// does next. A plain class: the coordinator reports events and carries out the action each returns;
// tests drive every transition directly.
//
//   starting -> running -> draining -> stopping_workers -> final_evaluation -> done
//   starting -> done (stopped or failed before the start: nothing to wait for)
#pragma once

#include "herd/run_summary.hpp"

#include <cstddef>
#include <set>
#include <string>
#include <vector>

namespace herd::actors {

enum class run_phase {
  starting,         // waiting for run_start
  running,          // rounds start
  draining,         // no round starts; the rounds in flight finish (or time out)
  stopping_workers, // each live worker is asked to stop and answers once its step ended
  final_evaluation, // the deferred snapshots, then the final parameters, are evaluated
  done,             // the summary went out
};

class run_phases {
public:
  /// What the coordinator does after an event.
  enum class action {
    none,
    drain,          // draining began: give the rounds in flight the stop timeout, check drained
    stop_workers,   // stopping_workers began: ask the live workers to stop, then stopping()
    evaluate_final, // final_evaluation began
    finish,         // done: send the summary
  };

  /// `max_seconds` (train.max-seconds) > 0 stops the run once that much time has passed.
  explicit run_phases(double max_seconds = 0.0) : max_seconds_(max_seconds) {}

  run_phase phase() const { return phase_; }
  bool running() const { return phase_ == run_phase::running; }
  bool done() const { return phase_ == run_phase::done; }
  /// Why the run stopped; none while running.
  stop_cause stop_reason() const { return stop_reason_; }
  /// The first error; the run goes on stopping as it would have.
  const std::string& error() const { return error_; }

  /// run_start arrived; false (and nothing changes) unless starting.
  bool start();
  /// A reason to stop: before the start the run is done at once; while running it drains;
  /// later reasons are ignored (the first one is the run's).
  action stop(stop_cause reason);
  /// `error` ends the run like a stop, with reason stop_cause::error, in any phase before done.
  action fail(const std::string& error);
  /// Whether a running run's train.max-seconds has passed at `elapsed_seconds` since its start
  /// (the coordinator then stops it, as any stop, with stop_cause::max_seconds).
  bool time_is_up(double elapsed_seconds) const;
  /// The rounds in flight changed: draining ends once none is left.
  action rounds_changed(std::size_t rounds_in_flight);
  /// The stop timeout of draining passed: the coordinator abandons the rounds still in flight.
  action drain_timed_out(std::size_t rounds_in_flight);
  /// The workers asked to stop; with none, the final evaluation begins at once.
  action stopping(const std::vector<int>& live_workers);
  /// A worker answered the stop or was lost (each counted once); the last begins the final
  /// evaluation.
  action worker_stopped(int worker);
  /// The final evaluation ended, with `failure` empty or saying why it has no result.
  action final_evaluation_ended(const std::string& failure);

private:
  action enter(run_phase next, action then);

  double max_seconds_;
  run_phase phase_ = run_phase::starting;
  stop_cause stop_reason_ = stop_cause::none;
  std::string error_;
  std::set<int> awaiting_stop_;
};

} // namespace herd::actors
