// The group coordinator actor's class (spawn_group_coordinator in group_coordinator.hpp makes
// it). Its member functions are its handlers and the steps they take; they are defined in two
// files: group_coordinator.cpp (starting, rounds, losses, stopping, the summary) and
// coordinator_snapshots.cpp (what it does with the replicas' state as of a moment: evaluating
// it, writing it to a checkpoint, going on from one). Internal to herd::actors.
#pragma once

#include "actors/checkpoint_taker.hpp"
#include "actors/control_costs.hpp"
#include "actors/evaluation_requests.hpp"
#include "actors/evaluation_schedule.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/messages.hpp"
#include "actors/round_report.hpp"
#include "actors/run_counters.hpp"
#include "actors/run_phases.hpp"
#include "actors/step_book.hpp"
#include "models/lr_schedule.hpp"

#include <caf/event_based_actor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace herd::actors {

/// A round the coordinator started and has not heard the end of.
struct round_in_flight {
  std::size_t aggregator = 0;
  std::uint64_t expected_samples = 0;
  policy::group_decision planned;
};

class coordinator_actor : public caf::event_based_actor, public coordinator_port {
public:
  using group_decision = policy::group_decision;
  using action = run_phases::action;
  using clock_type = std::chrono::steady_clock;

  coordinator_actor(caf::actor_config& config, coordinator_setup setup);
  const char* name() const override { return "herd.group_coordinator"; }
  void on_exit() override;
  caf::behavior make_behavior() override;

  // -- coordinator_port: what a node joining the running job uses --------------------------------
  caf::event_based_actor& self() override { return *this; }
  bool running() const override { return phases_.running(); }
  std::size_t worker_count() const override { return workers_.size(); }
  std::vector<int> live_workers() const override { return counters_.live_workers(); }
  std::size_t rounds_in_flight() const override { return in_flight_.size(); }
  std::uint64_t rounds_finished() const override { return counters_.rounds; }
  const std::vector<caf::actor>& aggregators() const override { return aggregators_; }
  void notice(const std::string& text) override;
  void lose_worker(int index, const std::string& why) override;
  void retire_worker(int index, const std::string& why) override { drop_worker(index, why, false); }
  void admit_worker(int index, const caf::actor& handle, const std::string& node) override;
  void resume_rounds(bool live_changed) override;

private:
  /// Seconds of training so far; a resumed run's time before this process included.
  double elapsed() const;
  /// What times one of its handlers (into setup_.costs; nowhere when it is null).
  handler_timer timed() const;

  // -- the handlers ------------------------------------------------------------------------------
  void on_start(const run_start& start);
  void on_step_ready(const step_ready& ready);
  bool count_step(const step_ready& ready);
  /// The counters (and metrics) with every finished step so far booked: what reads them per step
  /// (progress, checkpoints, the summary, a worker's loss or arrival) takes them from here.
  run_counters& booked_counters();
  void on_group_done(const group_done& report);
  void on_stop() { begin_stop(stop_cause::interrupted); }
  void on_admission(node_admission admission);
  void on_rekey(const plane_rekey& step);
  caf::result<bool> on_departure(const node_departure& departure);
  void on_tick();
  void on_drain_timeout();
  void on_policy_time(double deadline);
  void on_down(const caf::down_msg& down);
  // The wait ledger's comparison against a barrier so far, to the metrics (set).
  void export_comparison();
  // The run's series leave the registry (where they are to), then its name is let go.
  void close_metrics();
  // lose_worker(), with a notice only when `say_so` (not when another notice covers the loss).
  void drop_worker(int index, const std::string& why, bool say_so);
  // The name of worker `index`'s node (coordinator_setup::worker_hosts), or "" in one process.
  std::string host_of(int index) const;

  // -- rounds ------------------------------------------------------------------------------------
  void consult(std::function<std::vector<group_decision>()> input);
  bool holding() const { return joins_ && joins_->holding(); }
  std::vector<group_decision> tell_policy(const policy_input& input);
  void hear(policy_input input);
  std::uint64_t sample_budget() const;
  void start_rounds(const std::vector<group_decision>& decisions);
  // train.lr-schedule's factor at the epochs committed so far (applied, and expected from the
  // rounds in flight): what the next round carries, and a worker that starts now.
  float lr_scale() const {
    const auto per_epoch = static_cast<double>(counters_.samples_per_epoch);
    return lr_schedule_.factor(per_epoch > 0.0 ? static_cast<double>(samples_committed_) / per_epoch
                                               : 0.0);
  }
  void schedule_policy_time();
  void lose_aggregator(std::size_t index, const std::string& why);

  // -- evaluation --------------------------------------------------------------------------------
  void request_snapshot(snapshot_taken then, snapshot_failed failed);
  void evaluate_now(evaluated on_result);
  void evaluate_periodically();
  void take_snapshot();
  void evaluate_kept(std::size_t index);
  void evaluate_final();
  void test_kept(parameters_ptr final_parameters, std::string earlier_failure);
  void record_evaluation(const evaluation_point& point, parameters_ptr parameters,
                         bool final = false);

  // -- checkpoints (checkpoint_taker decides when, these carry it out) ---------------------------
  void resume_from(const run_checkpoint& saved);
  bool begin_checkpoint_if_due();
  void maybe_checkpoint();
  void collect_when_ready();
  void after_periodic_evaluation(std::function<void()> then);
  void collect_checkpoint(std::function<void()> then = {});
  void write_checkpoint(const worker_records& records, std::vector<part_record> parts,
                        const std::string& name, bool final);
  std::string parts_to_keep_from() const;
  void release_checkpoint();
  void drop_checkpoint(const std::string& why, bool final = false);
  bool final_checkpoint_wanted();
  void report_checkpoints();
  // The run's end waits for checkpoint writes: what it says while it waits, and when it gives up.
  void still_writing(double seconds);
  std::string write_hung_text() const;

  // -- stopping (run_phases decides, these carry it out) ----------------------------------------
  void begin_stop(stop_cause reason);
  void stop_when_time_is_up();
  void fail(const std::string& error);
  void rounds_changed();
  void carry_out(action next);
  void stop_workers();
  void report_progress();
  void finish();

  // -- state -------------------------------------------------------------------------------------
  coordinator_setup setup_;
  models::lr_schedule lr_schedule_{models::lr_schedule::of(setup_.config.train)};
  std::unique_ptr<policy::grouping_policy> policy_;
  run_counters counters_; // per-step fields only through booked_counters()
  step_book steps_;       // finished steps waiting to be booked into counters_ and the metrics
  std::vector<step_ready> inbox_reports_; // the last take from setup_.inbox (its memory reused)
  monitoring::training_metrics::round_record round_record_; // the last round's metrics (reused)
  run_phases phases_;
  evaluation_schedule evaluations_;
  std::unique_ptr<join_hook> joins_;
  std::vector<std::function<std::vector<group_decision>()>> held_; // policy inputs, in order
  std::vector<caf::actor> workers_;                                // by index
  std::vector<fresh_arrival> arrivals_; // by worker: the latest fresh one
  std::vector<caf::actor> aggregators_;
  caf::actor evaluator_;
  caf::actor parameter_server_; // async: the model evaluations read; otherwise none
  // Across processes: each node's reducer and each worker's node (run_start, then admissions);
  // a checkpoint asks the nodes for parts. Empty in one process.
  std::vector<caf::actor> node_reducers_;
  std::vector<std::int32_t> worker_nodes_;
  std::vector<worker_event> worker_events_; // workers lost and joined, for the summary
  std::optional<clock_type::time_point> started_at_;
  double wall_seconds_ = 0.0; // until the workers stopped
  std::uint64_t next_round_ = 0;
  std::size_t next_aggregator_ = 0;
  std::optional<double> policy_timer_at_; // the earliest policy deadline a timer is set for
  abort_streak aborts_;
  std::map<std::uint64_t, round_in_flight> in_flight_;
  std::uint64_t samples_committed_ = 0; // applied, plus expected from the rounds in flight
  bool budget_spent_ = false;           // a round was not started because of the epoch limit
  checkpoint_taker checkpoints_;
  std::string final_checkpoint_error_; // why the final checkpoint could not be written
  std::string final_checkpoint_;       // the file that holds the state at the end
  double elapsed_offset_ = 0.0;        // a resumed run's training time before this process
  bool rounds_abandoned_ = false;      // the drain timed out
  int failed_evaluations_ = 0;         // periodic evaluations failed in a row
  // What waits for the periodic evaluation under way (the final checkpoint, which must count it).
  std::function<void()> after_periodic_;
};

} // namespace herd::actors
