// The coordinator's counters, its progress reports and the run summary; see run_counters.hpp.
#include "actors/run_counters.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace herd::actors {

namespace {

// The training loss shown and reported is the mean over this many recent local steps.
constexpr std::size_t recent_loss_steps = 200;

duration_summary summary_of(const monitoring::duration_stats& durations) {
  return {durations.mean(), durations.median(), durations.quantile(0.9), durations.max(),
          durations.coefficient_of_variation()};
}

} // namespace

void run_counters::step_finished(int worker, std::uint64_t step, double compute_seconds,
                                 double wait_seconds, double loss, std::uint32_t samples,
                                 bool late) {
  auto& counted = workers[static_cast<std::size_t>(worker)];
  ++counted.steps;
  counted.samples += samples;
  ++steps;
  counted.step_seconds.add(compute_seconds);
  ledger.step_finished(worker, step, compute_seconds);
  if (step > 1) { // the first step had nothing to wait for
    counted.wait_seconds.add(wait_seconds);
    ledger.waited_after(worker, step - 1, wait_seconds);
  }
  if (late)
    ++counted.late_steps;
  recent_losses.push_back(loss);
  if (recent_losses.size() > recent_loss_steps)
    recent_losses.pop_front();
}

void run_counters::round_finished(policy::round_kind kind,
                                  const std::vector<policy::freshness>& given,
                                  std::uint64_t samples, double seconds, std::uint64_t bytes) {
  ++rounds;
  ++(kind == policy::round_kind::full_sync ? full_sync_rounds : partial_rounds);
  for (policy::freshness one : given)
    ++contributions[static_cast<std::size_t>(one)];
  samples_applied += samples;
  reduce_seconds += seconds;
  reduce_bytes += bytes;
}

void run_counters::set_workers(std::size_t count) {
  workers.resize(count);
  live.resize(count, 1);
}

void run_counters::worker_lost(int worker) {
  live[static_cast<std::size_t>(worker)] = 0;
  ledger.worker_lost(worker);
}

void run_counters::worker_joined(int worker) {
  live[static_cast<std::size_t>(worker)] = 1;
  ledger.worker_joined(worker);
  ++workers_joined;
}

std::vector<int> run_counters::live_workers() const {
  std::vector<int> live_ones;
  for (std::size_t i = 0; i < live.size(); ++i)
    if (live[i] != 0)
      live_ones.push_back(static_cast<int>(i));
  return live_ones;
}

double run_counters::epochs() const {
  return samples_per_epoch == 0
             ? 0.0
             : static_cast<double>(samples_applied) / static_cast<double>(samples_per_epoch);
}

double run_counters::recent_loss() const {
  if (recent_losses.empty())
    return 0.0;
  return std::accumulate(recent_losses.begin(), recent_losses.end(), 0.0) /
         static_cast<double>(recent_losses.size());
}

progress progress_of(const run_counters& counters, double elapsed_seconds,
                     std::optional<double> test_accuracy) {
  progress now;
  now.elapsed_seconds = elapsed_seconds;
  now.epoch = counters.epochs();
  now.rounds = counters.rounds;
  now.steps = counters.steps;
  now.samples = counters.samples_applied;
  now.train_loss = counters.recent_loss();
  now.test_accuracy = test_accuracy;
  now.samples_per_second =
      elapsed_seconds > 0.0 ? static_cast<double>(counters.samples_applied) / elapsed_seconds : 0.0;
  now.live_workers = static_cast<int>(counters.live_workers().size());
  return now;
}

void run_counters::server_applied(const std::vector<std::uint64_t>& staleness) {
  for (const std::uint64_t gradient : staleness) {
    ++server_updates;
    server_staleness_sum += gradient;
    server_staleness_max = std::max(server_staleness_max, gradient);
  }
}

run_summary failed_with(run_summary run, std::string error) {
  run.stop_reason = stop_cause::error;
  run.error = std::move(error);
  return run;
}

run_summary summarize(run_summary run, const run_counters& counters,
                      const evaluation_schedule& evaluations, double wall_seconds) {
  using policy::freshness;
  run.workers = static_cast<int>(counters.workers.size());
  run.steps = counters.steps;
  run.rounds = counters.rounds;
  run.full_sync_rounds = counters.full_sync_rounds;
  run.partial_rounds = counters.partial_rounds;
  run.isolation_interventions = counters.isolation_interventions;
  run.server_updates = counters.server_updates;
  run.server_staleness_mean =
      counters.server_updates == 0 ? 0.0
                                   : static_cast<double>(counters.server_staleness_sum) /
                                         static_cast<double>(counters.server_updates);
  run.server_staleness_max = counters.server_staleness_max;
  run.aborted_rounds = counters.aborted_rounds;
  run.rounds_in_backward = counters.rounds_in_backward;
  run.workers_joined = counters.workers_joined;
  run.fresh_contributions = counters.contributions[static_cast<std::size_t>(freshness::fresh)];
  run.stale_contributions = counters.contributions[static_cast<std::size_t>(freshness::stale)];
  run.empty_contributions = counters.contributions[static_cast<std::size_t>(freshness::none)];
  run.samples = counters.samples_applied;
  run.epochs = counters.epochs();
  run.wall_seconds = wall_seconds;
  run.time_to_target_seconds = evaluations.time_to_target();
  // A run that stopped at its target keeps the parameters that reached it (the rounds in flight
  // then changed the workers' parameters after that evaluation); with train.patience a run keeps
  // its best evaluation's.
  const auto& last = evaluations.final_point();
  const auto& kept = evaluations.kept_point(run.stop_reason);
  // A NaN loss is of parameters that are not numbers (a diverged run): their "accuracy" is the
  // share of one class, not a measurement.
  const auto measured = [](const std::optional<evaluation_point>& point) {
    return point && !std::isnan(point->test_loss);
  };
  const bool validating = run.validation_samples > 0;
  if (measured(kept)) {
    (validating ? run.final_validation_accuracy : run.final_test_accuracy) = kept->test_accuracy;
    (validating ? run.final_validation_loss : run.final_test_loss) = kept->test_loss;
  }
  if (const auto& tested = evaluations.tested_point(); validating && measured(tested)) {
    run.final_test_accuracy = tested->test_accuracy;
    run.final_test_loss = tested->test_loss;
  }
  if (last && &kept != &last) // a target's or (train.patience) the best evaluation's
    run.after_stop_test_accuracy = last->test_accuracy;
  run.final_train_loss = counters.recent_loss();
  run.samples_per_second =
      wall_seconds > 0.0 ? static_cast<double>(counters.samples_applied) / wall_seconds : 0.0;
  run.reduce_seconds = counters.reduce_seconds;
  run.reduce_bytes = counters.reduce_bytes;
  const auto waiting = counters.ledger.compare();
  run.waiting = {waiting.steps_compared, waiting.waited_total, waiting.barrier_total};
  for (std::size_t i = 0; i < counters.workers.size(); ++i) {
    const auto& counted = counters.workers[i];
    worker_summary worker;
    worker.worker = static_cast<int>(i);
    worker.steps = counted.steps;
    worker.samples = counted.samples;
    worker.late_steps = counted.late_steps;
    worker.compute_seconds = counted.step_seconds.total();
    worker.wait_seconds = counted.wait_seconds.total();
    worker.waited_compared_seconds = waiting.waited[i];
    worker.barrier_wait_seconds = waiting.barrier[i];
    worker.step_seconds = summary_of(counted.step_seconds);
    for (const auto& bar : counted.step_seconds.histogram())
      worker.step_histogram.push_back({bar.lower_seconds, bar.upper_seconds, bar.count});
    worker.wait_seconds_per_step = summary_of(counted.wait_seconds);
    worker.live = counters.live[i] != 0;
    run.per_worker.push_back(worker);
  }
  run.evaluations = evaluations.evaluations();
  return run;
}

} // namespace herd::actors
