// The group coordinator actor (coordinator_actor.hpp): starting, rounds, losses, stopping and the
// summary. Evaluations and checkpoints are in coordinator_snapshots.cpp, nodes that join and
// leave in coordinator_nodes.cpp.
#include "actors/coordinator_actor.hpp"
#include "actors/imbalance.hpp"
#include "actors/run_parts.hpp"
#include "actors/step_inbox.hpp"
#include "actors/unexpected_messages.hpp"
#include "monitoring/training_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace herd::actors {

namespace {

using policy::group_decision;

// Aborted rounds in a row (no round finishing between them) after which the run ends.

} // namespace

coordinator_actor::coordinator_actor(caf::actor_config& config, coordinator_setup setup)
    : caf::event_based_actor(config), setup_(std::move(setup)),
      policy_(policy::make_policy(setup_.config)),
      counters_(setup_.config.train.workers, setup_.samples_per_epoch),
      steps_(counters_, setup_.metrics.get()), phases_(setup_.config.train.max_seconds),
      evaluations_(evaluation_schedule::settings::of(
          setup_.config, std::chrono::duration<double>(setup_.snapshot_interval).count(),
          policy_->exchanges_models())),
      checkpoints_(setup_.checkpoints) {
  if (setup_.joins)
    joins_ = setup_.joins(*this);
  set_down_handler([this](caf::down_msg& down) { on_down(down); });
  // Nodes address it across processes: what no handler takes is dropped in a line, not printed.
  set_default_handler(
      drop_unexpected("the group coordinator", [this](const std::string& text) { notice(text); }));
}

handler_timer coordinator_actor::timed() const {
  return {setup_.costs.get(), &control_costs::coordinator};
}

void coordinator_actor::export_comparison() {
  const auto compared = booked_counters().ledger.compare();
  setup_.metrics->barrier_comparison(compared.waited_total, compared.barrier_total,
                                     compared.steps_compared);
}

void coordinator_actor::close_metrics() {
  if (setup_.metrics && setup_.close_metrics_at_end)
    setup_.metrics->close();
  setup_.claims.clear();
}

void coordinator_actor::on_exit() {
  close_metrics(); // a run ended by an exit message never reached finish()
  joins_.reset();
  workers_.clear();
  aggregators_.clear();
  evaluator_ = nullptr;
  parameter_server_ = nullptr;
}

caf::behavior coordinator_actor::make_behavior() {
  return {
      [this](const run_start& start) { on_start(start); },
      [this](const step_ready& ready) {
        const auto timer = timed();
        on_step_ready(ready);
      },
      [this](const step_batch& batch) { // across processes, a node's reports (its relay's)
        const auto timer = timed();
        for (const auto& ready : batch.reports)
          on_step_ready(ready);
      },
      [this](inbox_atom) { // in this process, the reports its workers posted
        if (!setup_.inbox)
          return; // not from a worker of this process: there is no inbox
        const auto timer = timed();
        setup_.inbox->take(inbox_reports_);
        for (const auto& ready : inbox_reports_)
          on_step_ready(ready);
      },
      [this](const group_done& report) {
        const auto timer = timed();
        on_group_done(report);
      },
      [this](stop_atom) { on_stop(); },
      [this](node_admission& admission) { on_admission(std::move(admission)); },
      [this](const plane_rekey& step) { on_rekey(step); },
      [this](const node_departure& departure) { return on_departure(departure); },
      [this](caf::tick_atom) { on_tick(); },
      [this](drain_timeout_atom) { on_drain_timeout(); },
      [this](policy_time_atom, double deadline) { on_policy_time(deadline); },
  };
}

// -- the handlers ------------------------------------------------------------------------------

double coordinator_actor::elapsed() const {
  if (!started_at_)
    return 0.0;
  return elapsed_offset_ + std::chrono::duration<double>(clock_type::now() - *started_at_).count();
}

void coordinator_actor::on_start(const run_start& start) {
  if (!phases_.start())
    return;
  workers_ = start.workers;
  for (const auto& worker : workers_)
    monitor(worker);
  counters_.set_workers(workers_.size());
  arrivals_.resize(workers_.size());
  aggregators_ = start.aggregators;
  for (const auto& aggregator : aggregators_)
    monitor(aggregator);
  evaluator_ = start.evaluator;
  monitor(evaluator_);
  node_reducers_ = start.node_reducers;
  worker_nodes_ = start.worker_nodes;
  parameter_server_ = start.parameter_server;
  if (parameter_server_)
    monitor(parameter_server_);
  started_at_ = clock_type::now();
  if (setup_.resume)
    resume_from(*setup_.resume);
  else
    start_rounds(policy_->set_live_workers(live_workers()));
  checkpoints_.start_clock(elapsed(), counters_.rounds);
  if (setup_.metrics && checkpoints_.enabled())
    setup_.metrics->checkpoints_on(checkpoints_.options().every_seconds, elapsed());
  delayed_send(this, setup_.progress_interval, caf::tick_atom::value);
  if (in_flight_.empty() && samples_committed_ >= sample_budget())
    begin_stop(stop_cause::epochs); // resumed with no epoch left to train: no worker begins a step
  else
    stop_when_time_is_up(); // resumed past train.max-seconds: nor here
  if (phases_.running())
    for (const auto& worker : workers_)
      send(worker, start_atom::value, lr_scale());
}

void coordinator_actor::on_step_ready(const step_ready& ready) {
  if (ready.worker < 0 || static_cast<std::size_t>(ready.worker) >= workers_.size())
    return;
  // An announced step (gradient buckets) arrives when announced and is counted when it ends.
  if (ready.part != step_report::announcement && !count_step(ready))
    return;
  if (ready.part == step_report::after_announcement)
    return;
  // A late step's round has closed: it is no arrival for the policy.
  const auto index = static_cast<std::size_t>(ready.worker);
  if (!counters_.is_live(ready.worker) || ready.late || phases_.done())
    return;
  policy_input input;
  input.arrival.worker = ready.worker;
  input.arrival.step = ready.step;
  input.arrival.at_seconds = elapsed();
  input.arrival.compute_seconds = ready.compute_seconds;
  if (!phases_.running()) {
    checkpoints_.keep(std::move(input)); // for the final checkpoint
    return;
  }
  arrivals_[index] = {ready.step, elapsed()};
  hear(std::move(input));
}

// What a finished step measured, kept for booking (step_book.hpp); false if training diverged.
bool coordinator_actor::count_step(const step_ready& ready) {
  finished_step step;
  step.worker = ready.worker;
  step.step = ready.step;
  step.at_seconds = elapsed();
  step.compute_seconds = ready.compute_seconds;
  step.wait_seconds = ready.wait_seconds;
  step.loss = ready.loss;
  step.samples = ready.samples;
  step.late = ready.late;
  steps_.keep(step);
  if (std::isfinite(ready.loss) || !phases_.error().empty())
    return true;
  fail("training diverged: worker " + std::to_string(ready.worker) + "'s loss is " +
       (std::isnan(ready.loss) ? std::string("nan") : std::to_string(ready.loss)) + " at step " +
       std::to_string(ready.step) + "; try a smaller " +
       (setup_.config.train.algorithm == "async" ? "async.lr (the parameter server's rate)"
                                                 : "train.lr") +
       ", and check that the features are scaled (values within a few units of 0, not raw "
       "counts or sums)");
  return false;
}

// A round ended: applied, failed, or aborted (its members skipped it, their contributions lost
// with it, and the run goes on with the live workers: a lost node costs the rounds it was
// reducing; a data plane that keeps failing while no node is lost ends the run).
void coordinator_actor::on_group_done(const group_done& report) {
  auto round = in_flight_.find(report.round);
  if (round == in_flight_.end())
    return; // abandoned when its aggregator was lost or the drain timed out
  // Replace the expectation with what the round really applied (nothing, if it failed).
  samples_committed_ -= round->second.expected_samples;
  const group_decision planned = std::move(round->second.planned);
  in_flight_.erase(round);
  const bool failed = !report.result.ok() && !report.aborted;
  const std::string prefix = "round " + std::to_string(report.round);
  if (report.aborted) {
    ++counters_.aborted_rounds;
    if (setup_.metrics)
      setup_.metrics->round_aborted();
    notice(prefix + " aborted: " + report.result.message());
  } else if (!failed) {
    aborts_.completed();
    samples_committed_ += report.samples;
    counters_.rounds_in_backward += report.in_backward > 0 ? 1 : 0;
    counters_.round_finished(planned.kind, report.kinds, report.samples, report.reduce_seconds,
                             report.bytes);
    counters_.server_applied(report.server_staleness);
    if (const auto missing = missing_members_notice(report, planned))
      notice(*missing); // the round's divisor is not the one planned, or says so
    if (setup_.metrics)
      setup_.metrics->round_finished(
          fill_round_record(round_record_, report, planned, arrivals_, elapsed()));
  }
  // After the round is counted: losing the last worker can end the run (and the summary) here.
  for (std::size_t i = 0; i < report.unanswered.size(); ++i)
    lose_worker(report.unanswered[i],
                "did not answer " + prefix + ": " + report.unanswered_reasons[i]);
  // A round none of whose members answered says nothing of the data plane: its members are lost
  // (a node with many workers takes as many rounds with it), and the run goes on without them.
  const bool plane_aborted = report.aborted && !report.members.empty();
  if (failed || (plane_aborted && aborts_.aborted())) {
    fail(failed ? prefix + ": " + report.result.message()
                : std::to_string(aborts_.in_a_row()) +
                      " rounds in a row aborted; the last: " + report.result.message());
    return;
  }
  policy_input outcome;
  outcome.is_arrival = false;
  outcome.outcome = outcome_of(report);
  outcome.outcome.at_seconds = elapsed();
  if (!phases_.running()) {
    checkpoints_.keep(std::move(outcome)); // for the final checkpoint
  } else {
    begin_checkpoint_if_due(); // before the policy starts the next round: it holds this one
    hear(std::move(outcome));
    if (!report.aborted &&
        (counters_.epochs() >= setup_.config.train.epochs || (budget_spent_ && in_flight_.empty())))
      begin_stop(stop_cause::epochs);
    // Not when the run just ended: the final evaluation measures these parameters anyway.
    if (!report.aborted && phases_.running() &&
        evaluations_.start_periodic(counters_.rounds, counters_.epochs()))
      evaluate_periodically();
  }
  rounds_changed(); // collects a checkpoint begun above once the evaluation is recorded
}

run_counters& coordinator_actor::booked_counters() {
  steps_.book();
  return counters_;
}

void coordinator_actor::on_tick() {
  if (phases_.done())
    return;
  {
    const auto timer = timed(); // booking the steps is the step reports' work, done later
    steps_.book();
  }
  if (setup_.metrics) {
    setup_.metrics->train_loss(counters_.recent_loss());
    // The rate updates use: under async the parameter server's.
    const double rate =
        policy_->applies_at_server() ? server_learning_rate(setup_.config) : setup_.config.train.lr;
    setup_.metrics->learning_rate(rate * lr_scale());
    export_comparison();
    setup_.metrics->refresh(elapsed());
  }
  report_progress(); // after the refresh: it names the straggler the refresh found
  if (phases_.running() && evaluations_.snapshot_due(elapsed()))
    take_snapshot();
  report_checkpoints();
  maybe_checkpoint();
  stop_when_time_is_up();
  delayed_send(this, setup_.progress_interval, caf::tick_atom::value);
}

// Rounds that a stop is waiting for get stop_timeout to finish; then the run stops without
// them (their members are idle, waiting for a result that will not come).
void coordinator_actor::on_drain_timeout() {
  const auto next = phases_.drain_timed_out(in_flight_.size());
  if (next == action::none)
    return;
  rounds_abandoned_ = true; // the replicas' states are no longer one a checkpoint can hold
  notice(std::to_string(in_flight_.size()) + " round(s) did not finish within " +
         std::to_string(setup_.stop_timeout.count()) + " ms of the stop; stopping without them");
  in_flight_.clear();
  carry_out(next);
}

void coordinator_actor::on_policy_time(double deadline) {
  if (policy_timer_at_ && *policy_timer_at_ == deadline)
    policy_timer_at_.reset();
  // While a checkpoint holds the policy's inputs the deadline waits; release sets it again.
  if (phases_.running() && !checkpoints_.holding()) { // the deadline has passed, whatever the
                                                      // clocks' rounding says
    const double now = std::max(elapsed(), deadline);
    consult([this, now] { return policy_->on_time(now); });
  }
}

void coordinator_actor::on_down(const caf::down_msg& down) {
  if (phases_.done())
    return; // the session is shutting the actors down
  // A worker of another process that ended with it (the node left, or cannot be reached): the
  // registry says so once, naming the node and every worker it hosted. A worker that failed on
  // its own (an exception, a kill) is named here with the reason.
  const bool with_its_process = down.source.node() != node() &&
                                (down.reason == caf::exit_reason::remote_link_unreachable ||
                                 down.reason == caf::exit_reason::user_shutdown);
  for (std::size_t i = 0; i < workers_.size(); ++i)
    if (workers_[i].address() == down.source)
      drop_worker(static_cast<int>(i), system().render(down.reason), !with_its_process);
  for (std::size_t i = 0; i < aggregators_.size(); ++i)
    if (aggregators_[i].address() == down.source)
      lose_aggregator(i, system().render(down.reason));
  if (evaluator_ && evaluator_.address() == down.source)
    notice("the evaluator stopped: " + system().render(down.reason));
  if (parameter_server_ && parameter_server_.address() == down.source)
    fail("the parameter server stopped: " + system().render(down.reason));
  if (joins_)
    joins_->actor_down(down);
}

// -- rounds ------------------------------------------------------------------------------------

// The policy hears nothing while a node joins (its inputs wait in held_), so no round starts:
// the rounds in flight drain, a live worker's state is then exactly the state after every
// round so far, and the new workers adopt it before any later round can include them.
void coordinator_actor::consult(std::function<std::vector<group_decision>()> input) {
  if (holding())
    held_.push_back(std::move(input));
  else
    start_rounds(input());
}

std::vector<group_decision> coordinator_actor::tell_policy(const policy_input& input) {
  return input.is_arrival ? policy_->on_ready(input.arrival)
                          : policy_->on_group_done(input.outcome);
}

// A policy input while running: kept while a checkpoint is being taken, else consulted.
void coordinator_actor::hear(policy_input input) {
  if (checkpoints_.holding())
    checkpoints_.keep(std::move(input));
  else if (!holding())
    start_rounds(tell_policy(input)); // the common case: no closure to allocate per report
  else
    consult([this, input = std::move(input)] { return tell_policy(input); });
}

// Samples of one epoch over all shards, times train.epochs: the run's sample budget.
std::uint64_t coordinator_actor::sample_budget() const {
  return static_cast<std::uint64_t>(setup_.samples_per_epoch) *
         static_cast<std::uint64_t>(setup_.config.train.epochs);
}

void coordinator_actor::start_rounds(const std::vector<group_decision>& decisions) {
  for (const auto& decision : decisions) {
    // Every fresh arrival brings one batch. Workers may report their next step before the last
    // round's group_done reaches this actor (different senders), so without this check a round
    // past the epoch limit could start.
    const std::uint64_t expected_samples =
        decision.fresh_arrivals * static_cast<std::uint64_t>(setup_.config.train.batch_size);
    if (samples_committed_ >= sample_budget()) {
      checkpoints_.keep_unstarted(decision); // a resumed run with more epochs starts it
      // Its members now wait for the stop. The policy counts this round as in flight and never
      // hears of it again; safe only because the run stops here: a round is skipped only once
      // the applied samples reach the budget, and the stop follows in on_group_done().
      budget_spent_ = true;
      continue;
    }
    // The rate factor at the epochs before this round's samples.
    auto plan = plan_of(decision, next_round_++, lr_scale(), workers_);
    samples_committed_ += expected_samples;
    if (decision.intervention) {
      ++counters_.isolation_interventions;
      if (setup_.metrics)
        setup_.metrics->isolation_intervention();
    }
    const std::size_t aggregator = next_aggregator_++ % aggregators_.size();
    in_flight_[plan.round] = {aggregator, expected_samples, decision};
    send(aggregators_[aggregator], std::move(plan));
  }
  schedule_policy_time();
}

// A policy with deadlines (preduce's wait window) hears the time when one is due. One timer
// is pending at a time, for the earliest deadline; a later deadline waits for it.
void coordinator_actor::schedule_policy_time() {
  const auto deadline = policy_->next_deadline();
  if (!deadline || !phases_.running() || holding() || checkpoints_.holding() ||
      (policy_timer_at_ && *policy_timer_at_ <= *deadline))
    return;
  policy_timer_at_ = *deadline;
  const double delay = std::max(0.0, *deadline - elapsed());
  delayed_send(
      this,
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(delay)) +
          std::chrono::microseconds(1),
      policy_time_atom::value, *deadline);
}

// Its rounds will never be reported: the run cannot go on correctly, so it ends with an error.
void coordinator_actor::lose_aggregator(std::size_t index, const std::string& why) {
  for (auto round = in_flight_.begin(); round != in_flight_.end();)
    round = round->second.aggregator == index ? in_flight_.erase(round) : std::next(round);
  fail("aggregator " + std::to_string(index) + " stopped: " + why);
}

// -- stopping (run_phases decides, these carry it out) ----------------------------------------

void coordinator_actor::begin_stop(stop_cause reason) {
  if (checkpoints_.holding() && phases_.running())
    checkpoints_.abandon(); // the final checkpoint takes its place; what it kept stays kept
  carry_out(phases_.stop(reason));
}

// At train.max-seconds, as any stop: a checkpoint waiting to be collected (begun by this tick, or
// waiting for an evaluation) gives way to the final one, which would otherwise copy it.
void coordinator_actor::stop_when_time_is_up() {
  if (phases_.time_is_up(elapsed()))
    begin_stop(stop_cause::max_seconds);
}

// Ends the run with an error: in-flight rounds finish, workers stop, the summary says why.
void coordinator_actor::fail(const std::string& error) {
  notice("error: " + error);
  if (checkpoints_.holding())
    checkpoints_.abandon(); // no checkpoint of a failing run
  const auto next = phases_.fail(error);
  if (next == action::none)
    rounds_changed(); // stopping already: that may have been the last round in flight
  else
    carry_out(next);
}

// Stopping goes on once no round is in flight, and so does a node's join.
void coordinator_actor::rounds_changed() {
  carry_out(phases_.rounds_changed(in_flight_.size()));
  if (joins_)
    joins_->rounds_changed();
  collect_when_ready();
}

void coordinator_actor::carry_out(action next) {
  switch (next) {
  case action::none:
    break;
  case action::drain:
    if (!in_flight_.empty())
      delayed_send(this, setup_.stop_timeout, drain_timeout_atom::value);
    rounds_changed();
    break;
  case action::stop_workers:
    stop_workers();
    break;
  case action::evaluate_final: {
    wall_seconds_ = elapsed();
    // The final evaluation (and checkpoint) can take seconds with nothing else to show.
    std::ostringstream ended;
    ended << std::fixed << std::setprecision(1) << "training ended at " << wall_seconds_ << " s ("
          << to_string(phases_.stop_reason()) << "); the final evaluation runs";
    notice(ended.str());
    after_periodic_evaluation([this] {
      if (final_checkpoint_wanted())
        collect_checkpoint([this] { evaluate_kept(0); });
      else
        evaluate_kept(0);
    });
    break;
  }
  case action::finish:
    finish();
    break;
  }
}

void coordinator_actor::stop_workers() {
  const auto live = live_workers();
  const auto next = phases_.stopping(live);
  // A worker waits for the results of the rounds it answered (across processes the stop can
  // overtake one), but not where some may never come: rounds abandoned at the stop's deadline,
  // or a failed run (a reduction that failed in this process delivers nothing).
  const bool settle = !rounds_abandoned_ && phases_.error().empty();
  for (int index : live)
    request(workers_[static_cast<std::size_t>(index)], setup_.stop_timeout, stop_atom::value,
            settle)
        .then([this, index](const worker_stopped&) { carry_out(phases_.worker_stopped(index)); },
              [this, index](caf::error& failure) {
                lose_worker(index, "no answer to stop: " + system().render(failure));
              });
  carry_out(next);
}

void coordinator_actor::report_progress() {
  if (setup_.observer == nullptr)
    return;
  // Once training ended its clock stops: the final evaluation's seconds are no training time.
  auto now = progress_of(booked_counters(), wall_seconds_ > 0.0 ? wall_seconds_ : elapsed(),
                         evaluations_.latest_accuracy());
  if (setup_.metrics)
    if (const auto slowest = setup_.metrics->straggler())
      now.straggler = straggler_report{slowest->worker, slowest->score};
  setup_.observer->on_progress(now);
}

void coordinator_actor::finish() {
  // The final checkpoint on disk, the directory free for a resumed run; or, past the writes'
  // limit, the run ends without it and says so.
  if (!checkpoints_.close([this](double seconds) { still_writing(seconds); }) &&
      final_checkpoint_error_.empty()) {
    final_checkpoint_error_ = write_hung_text();
    notice(final_checkpoint_error_);
  }
  report_checkpoints();
  report_progress();
  run_summary run;
  run.algorithm = setup_.config.train.algorithm;
  run.data_plane = setup_.data_plane;
  run.compute = setup_.compute;
  run.imbalance = imbalance_model(setup_.config.imbalance, setup_.config.train.workers).describe();
  run.target_accuracy = setup_.config.train.target_accuracy;
  run.stop_reason = phases_.stop_reason();
  run.error = phases_.error();
  run.final_checkpoint_error = final_checkpoint_error_;
  run.final_checkpoint = final_checkpoint_;
  run.validation_samples = setup_.validation_samples;
  if (setup_.costs)
    run.control = setup_.costs->summary();
  if (setup_.metrics)
    export_comparison(); // the steps settled since the last tick
  // Before the summary goes out: once it has, the job's name is free for another job.
  close_metrics();
  if (auto kept = evaluations_.kept_parameters(run.stop_reason, nullptr); setup_.on_finished) {
    auto summary = summarize(std::move(run), booked_counters(), evaluations_, wall_seconds_);
    for (auto& worker : summary.per_worker)
      worker.node = host_of(worker.worker);
    summary.worker_events = std::move(worker_events_);
    setup_.on_finished(std::move(summary), std::move(kept));
  }
}
caf::actor spawn_group_coordinator(caf::actor_system& system, coordinator_setup setup) {
  return system.spawn<coordinator_actor>(std::move(setup));
}

} // namespace herd::actors
