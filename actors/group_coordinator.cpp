// The group coordinator actor; see group_coordinator.hpp.
#include "actors/group_coordinator.hpp"

#include "actors/errors.hpp"
#include "actors/imbalance.hpp"
#include "actors/messages.hpp"
#include "actors/run_parts.hpp"
#include "monitoring/duration_stats.hpp"
#include "monitoring/training_metrics.hpp"
#include "monitoring/wait_ledger.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "policy/policy.hpp"

namespace herd::actors {

using policy::arrival;
using policy::group_decision;
using policy::group_outcome;
using policy::grouping_policy;

namespace {

using clock_type = std::chrono::steady_clock;

// Test evaluations of 10k samples take well under a minute even on one slow core.
constexpr std::chrono::minutes evaluation_timeout{10};
constexpr std::chrono::seconds snapshot_timeout{30};
using drain_timeout_atom = caf::atom_constant<caf::atom("draintime")>;
using policy_time_atom = caf::atom_constant<caf::atom("policytime")>;

// The training loss shown and reported is the mean over this many recent local steps.
constexpr std::size_t recent_loss_steps = 200;

// Aborted rounds in a row (no round finishing between them) after which the run ends.
constexpr std::uint64_t max_consecutive_aborted_rounds = 8;

// Data-plane tags of state transfers lie above every round number.
constexpr std::uint64_t transfer_tag_base = std::uint64_t{1} << 47;

struct worker_record {
  caf::actor handle;
  bool live = true;
  std::uint64_t steps = 0;
  std::uint64_t late_steps = 0;
  std::uint64_t samples = 0;
  std::uint64_t last_fresh_step = 0;       // the latest fresh arrival: its step
  double last_fresh_arrival_seconds = 0.0; // and when it reached the coordinator
  monitoring::duration_stats step_seconds;
  monitoring::duration_stats wait_seconds;
};

struct round_in_flight {
  std::size_t aggregator = 0;
  std::uint64_t expected_samples = 0;
  round_kind kind = round_kind::partial;
  std::vector<int> members;
  std::vector<std::uint64_t> staleness; // the policy's, per member; empty where it has none
  std::uint64_t step = 0;               // wagma: the local step the round averages
};

class coordinator_actor : public caf::event_based_actor {
public:
  coordinator_actor(caf::actor_config& config, coordinator_setup setup)
      : caf::event_based_actor(config), setup_(std::move(setup)),
        policy_(policy::make_policy(setup_.config)), ledger_(setup_.config.train.workers) {
    set_down_handler([this](caf::down_msg& down) { on_down(down); });
  }

  const char* name() const override { return "herd.group_coordinator"; }

  void on_exit() override {
    workers_.clear();
    aggregators_.clear();
    evaluator_ = nullptr;
  }

  caf::behavior make_behavior() override {
    return {
        [this](const run_start& start) { on_start(start); },
        [this](const step_ready& ready) { on_ready(ready); },
        [this](const group_done& report) { on_group_done(report); },
        [this](caf::tick_atom) { on_tick(); },
        [this](drain_timeout_atom) { on_drain_timeout(); },
        [this](policy_time_atom, double deadline) { on_policy_time(deadline); },
        [this](stop_atom) { begin_stop("interrupted"); },
        [this](node_admission& admission) { on_admission(std::move(admission)); },
    };
  }

private:
  enum class phase { waiting, running, draining, stopping_workers, final_evaluation, finished };

  double elapsed() const {
    if (phase_ == phase::waiting)
      return 0.0;
    return std::chrono::duration<double>(clock_type::now() - started_at_).count();
  }

  double epochs_done() const {
    return setup_.samples_per_epoch == 0 ? 0.0
                                         : static_cast<double>(samples_applied_) /
                                               static_cast<double>(setup_.samples_per_epoch);
  }

  std::vector<int> live_workers() const {
    std::vector<int> live;
    for (std::size_t i = 0; i < workers_.size(); ++i)
      if (workers_[i].live)
        live.push_back(static_cast<int>(i));
    return live;
  }

  void notice(const std::string& text) {
    if (setup_.observer != nullptr)
      setup_.observer->on_notice(text);
  }

  // -- the run ----------------------------------------------------------------------------------

  void on_start(const run_start& start) {
    if (phase_ != phase::waiting)
      return;
    for (const auto& handle : start.workers) {
      worker_record record;
      record.handle = handle;
      workers_.push_back(std::move(record));
      monitor(handle);
    }
    aggregators_ = start.aggregators;
    for (const auto& aggregator : aggregators_)
      monitor(aggregator);
    evaluator_ = start.evaluator;
    monitor(evaluator_);
    phase_ = phase::running;
    started_at_ = clock_type::now();
    start_rounds(policy_->set_live_workers(live_workers()));
    for (const auto& worker : workers_)
      send(worker.handle, start_atom::value);
    delayed_send(this, setup_.progress_interval, caf::tick_atom::value);
  }

  void on_ready(const step_ready& ready) {
    if (ready.worker < 0 || static_cast<std::size_t>(ready.worker) >= workers_.size())
      return;
    auto& worker = workers_[static_cast<std::size_t>(ready.worker)];
    ++worker.steps;
    worker.samples += ready.samples;
    ++steps_;
    worker.step_seconds.add(ready.compute_seconds);
    ledger_.step_finished(ready.worker, ready.step, ready.compute_seconds);
    if (ready.step > 1) { // the first step had nothing to wait for
      worker.wait_seconds.add(ready.wait_seconds);
      ledger_.waited_after(ready.worker, ready.step - 1, ready.wait_seconds);
    }
    if (ready.late)
      ++worker.late_steps;
    if (setup_.metrics)
      setup_.metrics->step_finished(ready.worker, ready.step, elapsed(), ready.compute_seconds,
                                    ready.wait_seconds, ready.samples);
    recent_losses_.push_back(ready.loss);
    if (recent_losses_.size() > recent_loss_steps)
      recent_losses_.pop_front();
    if (!std::isfinite(ready.loss) && error_.empty()) {
      fail("training diverged: worker " + std::to_string(ready.worker) + "'s loss is " +
           std::to_string(ready.loss) + " at step " + std::to_string(ready.step) +
           "; try a smaller train.lr");
      return;
    }
    // A late step's round has closed: it is no arrival for the policy.
    if (phase_ != phase::running || !worker.live || ready.late)
      return;
    worker.last_fresh_step = ready.step;
    worker.last_fresh_arrival_seconds = elapsed();
    arrival event;
    event.worker = ready.worker;
    event.step = ready.step;
    event.at_seconds = elapsed();
    event.compute_seconds = ready.compute_seconds;
    consult([this, event] { return policy_->on_ready(event); });
  }

  // Samples of one epoch over all shards, times train.epochs: the run's sample budget.
  std::uint64_t sample_budget() const {
    return static_cast<std::uint64_t>(setup_.samples_per_epoch) *
           static_cast<std::uint64_t>(setup_.config.train.epochs);
  }

  void start_rounds(const std::vector<group_decision>& decisions) {
    for (const auto& decision : decisions) {
      // Every fresh arrival brings one batch. Workers may report their next step before the last
      // round's group_done reaches this actor (different senders), so without this check a round
      // past the epoch limit could start.
      const std::uint64_t expected_samples =
          decision.fresh_arrivals * static_cast<std::uint64_t>(setup_.config.train.batch_size);
      if (samples_committed_ >= sample_budget()) {
        // Its members now wait for the stop. The policy counts this round as in flight and never
        // hears of it again; that is safe only because the run stops here: a round is skipped
        // only once the applied samples reach the budget, and the stop follows in
        // on_group_done().
        budget_spent_ = true;
        continue;
      }
      samples_committed_ += expected_samples;
      group_plan plan;
      plan.round = next_round_++;
      plan.kind = decision.kind;
      plan.weights = decision.weights;
      plan.member_weights = decision.member_weights;
      plan.step = decision.step;
      if (decision.intervention) {
        ++isolation_interventions_;
        if (setup_.metrics)
          setup_.metrics->isolation_intervention();
      }
      for (int member : decision.members) {
        plan.members.push_back(member);
        plan.member_handles.push_back(workers_[static_cast<std::size_t>(member)].handle);
      }
      const std::size_t aggregator = next_aggregator_++ % aggregators_.size();
      in_flight_[plan.round] = {aggregator,       expected_samples,   decision.kind,
                                decision.members, decision.staleness, decision.step};
      send(aggregators_[aggregator], std::move(plan));
    }
    schedule_policy_time();
  }

  // A policy with deadlines (preduce's wait window) hears the time when one is due. One timer
  // is pending at a time, for the earliest deadline; a later deadline waits for it.
  void schedule_policy_time() {
    const auto deadline = policy_->next_deadline();
    if (!deadline || phase_ != phase::running || joining_ ||
        (policy_timer_at_ && *policy_timer_at_ <= *deadline))
      return;
    policy_timer_at_ = *deadline;
    const double delay = std::max(0.0, *deadline - elapsed());
    delayed_send(this,
                 std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::duration<double>(delay)) +
                     std::chrono::microseconds(1),
                 policy_time_atom::value, *deadline);
  }

  void on_policy_time(double deadline) {
    if (policy_timer_at_ && *policy_timer_at_ == deadline)
      policy_timer_at_.reset();
    if (phase_ == phase::running) { // the deadline has passed, whatever the clocks' rounding says
      const double now = std::max(elapsed(), deadline);
      consult([this, now] { return policy_->on_time(now); });
    }
  }

  void on_group_done(const group_done& report) {
    auto round = in_flight_.find(report.round);
    if (round == in_flight_.end())
      return; // abandoned when its aggregator was lost or the drain timed out
    // Replace the expectation with what the round really applied (nothing, if it failed).
    samples_committed_ -= round->second.expected_samples;
    const round_in_flight planned = round->second;
    in_flight_.erase(round);
    if (!report.error.empty() && !report.aborted) {
      lose_unanswered(report);
      fail("round " + std::to_string(report.round) + ": " + report.error);
      return;
    }
    if (report.aborted) {
      on_round_aborted(report);
      return;
    }
    consecutive_aborted_rounds_ = 0;
    samples_committed_ += report.samples;
    ++rounds_;
    ++(planned.kind == round_kind::full_sync ? full_sync_rounds_ : partial_rounds_);
    for (freshness given : report.kinds)
      ++contributions_[static_cast<std::size_t>(given)];
    samples_applied_ += report.samples;
    if (setup_.metrics)
      setup_.metrics->round_finished(metrics_record(report, planned));
    reduce_seconds_ += report.reduce_seconds;
    reduce_bytes_ += report.bytes;
    // After the round is counted: losing the last worker can end the run (and send the summary)
    // right here.
    lose_unanswered(report);
    if (phase_ == phase::running) {
      consult([this, outcome = outcome_of(report)] { return policy_->on_group_done(outcome); });
      if (epochs_done() >= setup_.config.train.epochs || (budget_spent_ && in_flight_.empty()))
        begin_stop("epochs");
      // Not when the run just ended: the final evaluation measures these parameters anyway.
      if (phase_ == phase::running && !deferred_evaluation() &&
          rounds_ % static_cast<std::uint64_t>(setup_.config.train.eval_every) == 0)
        evaluate_periodically();
    }
    stop_workers_once_drained();
  }

  // Its members skipped it (their contributions are lost with it) and the run goes on with the
  // live workers: a lost node costs the rounds it was reducing. A data plane that keeps failing
  // while no node is lost ends the run.
  void on_round_aborted(const group_done& report) {
    ++aborted_rounds_;
    notice("round " + std::to_string(report.round) + " aborted: " + report.error);
    lose_unanswered(report);
    if (++consecutive_aborted_rounds_ > max_consecutive_aborted_rounds) {
      fail(std::to_string(consecutive_aborted_rounds_) +
           " rounds in a row aborted; the last: " + report.error);
      return;
    }
    if (phase_ == phase::running)
      consult([this, outcome = outcome_of(report)] { return policy_->on_group_done(outcome); });
    stop_workers_once_drained();
  }

  void lose_unanswered(const group_done& report) {
    for (std::size_t i = 0; i < report.unanswered.size(); ++i)
      lose_worker(report.unanswered[i], "did not answer round " + std::to_string(report.round) +
                                            ": " + report.unanswered_reasons[i]);
  }

  monitoring::training_metrics::round_record metrics_record(const group_done& report,
                                                            const round_in_flight& planned) const {
    monitoring::training_metrics::round_record round;
    round.full_sync = planned.kind == round_kind::full_sync;
    round.members = report.members.size();
    round.reduce_seconds = report.reduce_seconds;
    round.reduce_bytes = report.bytes;
    for (std::size_t i = 0; i < report.members.size() && i < report.kinds.size(); ++i) {
      const std::uint64_t step = i < report.steps.size() ? report.steps[i] : 0;
      if (report.kinds[i] != freshness::none)
        if (auto staleness = staleness_of(report, i, planned))
          round.staleness_rounds.push_back(*staleness);
      switch (report.kinds[i]) {
      case freshness::fresh: {
        ++round.fresh;
        const auto& worker = workers_[static_cast<std::size_t>(report.members[i])];
        // Its arrival may still be on the way (it gave before the coordinator heard of it).
        if (worker.last_fresh_step == step)
          round.fresh_arrival_seconds.push_back(worker.last_fresh_arrival_seconds);
        break;
      }
      case freshness::stale:
        ++round.stale;
        break;
      case freshness::none:
        ++round.none;
        break;
      }
    }
    return round;
  }

  // The policy's staleness of the member where it defines one (preduce); under wagma the steps the
  // member had still to finish of the round's step; else the rounds between the parameters its
  // gradient was computed on and this round.
  static std::optional<std::uint64_t> staleness_of(const group_done& report, std::size_t i,
                                                   const round_in_flight& planned) {
    if (!planned.staleness.empty()) {
      const auto member =
          std::find(planned.members.begin(), planned.members.end(), report.members[i]);
      if (member == planned.members.end())
        return std::nullopt;
      return planned.staleness[static_cast<std::size_t>(member - planned.members.begin())];
    }
    if (planned.step > 0)
      return i < report.steps.size() ? planned.step - std::min(planned.step, report.steps[i]) : 0;
    if (i >= report.versions.size())
      return std::nullopt;
    return report.round - std::min(report.round, report.versions[i]);
  }

  static group_outcome outcome_of(const group_done& report) {
    group_outcome outcome;
    outcome.members.assign(report.members.begin(), report.members.end());
    for (std::size_t i = 0; i < report.members.size() && i < report.kinds.size(); ++i)
      outcome.contributions.push_back(
          {report.members[i], report.kinds[i], i < report.steps.size() ? report.steps[i] : 0});
    return outcome;
  }

  void stop_workers_once_drained() {
    if (phase_ == phase::draining && in_flight_.empty())
      stop_workers();
    transfer_when_drained();
  }

  // -- a node joining the running job -----------------------------------------------------------

  // The policy hears nothing while a node joins (its inputs wait in held_), so no round starts:
  // the rounds in flight drain, a live worker's state is then exactly the state after every
  // round so far, and the new workers adopt it before any later round can include them.
  void consult(std::function<std::vector<group_decision>()> input) {
    if (joining_) {
      held_.push_back(std::move(input));
      return;
    }
    start_rounds(input());
  }

  void on_admission(node_admission admission) {
    auto registry = caf::actor_cast<caf::actor>(current_sender());
    std::string refusal;
    if (phase_ != phase::running)
      refusal = "the run is ending";
    else if (joining_)
      refusal = "another node is joining";
    else if (admission.workers.size() != admission.handles.size() || admission.workers.empty())
      refusal = "the admission names " + std::to_string(admission.workers.size()) + " slots for " +
                std::to_string(admission.handles.size()) + " workers";
    for (std::int32_t slot : admission.workers)
      if (refusal.empty() && (slot < 0 || static_cast<std::size_t>(slot) >= workers_.size()))
        refusal = "worker " + std::to_string(slot) + " is not a worker of this run";
    const auto& topology = admission.topology;
    const auto nodes = static_cast<std::int32_t>(topology.node_reducers.size());
    if (refusal.empty() &&
        (topology.worker_nodes.size() != workers_.size() || admission.node < 0 ||
         admission.node >= nodes ||
         std::any_of(topology.worker_nodes.begin(), topology.worker_nodes.end(),
                     [nodes](std::int32_t node) { return node < 0 || node >= nodes; })))
      refusal = "the admission's topology does not cover the run's " +
                std::to_string(workers_.size()) + " workers";
    if (!refusal.empty()) {
      send(registry, join_done_atom::value, admission.node, refusal);
      return;
    }
    // The registry saw the node of these slots lost; its workers' down messages may still be on
    // their way here.
    for (std::int32_t slot : admission.workers)
      lose_worker(slot, "its node was lost");
    if (phase_ != phase::running) { // that was the last worker
      send(registry, join_done_atom::value, admission.node, std::string("the run is ending"));
      return;
    }
    // Watched from now on: losing the new node ends the join at once, not at the transfer's
    // timeout.
    monitor(topology.node_reducers[static_cast<std::size_t>(admission.node)]);
    for (const auto& handle : admission.handles)
      monitor(handle);
    // Before any plan that includes the new workers: each aggregator hears this from this actor
    // first, and messages from one sender arrive in order.
    for (const auto& aggregator : aggregators_)
      send(aggregator, admission.topology);
    notice("node " + std::to_string(admission.node) + " joins: rounds pause while " +
           std::to_string(in_flight_.size()) + " in flight finish, then its workers take a live " +
           "worker's model");
    joining_ = join_state{std::move(admission), registry, false};
    transfer_when_drained();
  }

  void transfer_when_drained() {
    if (!joining_ || joining_->transferring || !in_flight_.empty())
      return;
    if (phase_ != phase::running) {
      end_join("the run is ending");
      return;
    }
    const auto live = live_workers();
    if (live.empty()) {
      end_join("no live worker to take the model from");
      return;
    }
    const auto& admission = joining_->admission;
    const auto& topology = admission.topology;
    const int source = live.front();
    state_transfer order;
    order.tag = transfer_tag_base + ++transfers_;
    order.generation = topology.generation;
    order.from = topology.worker_nodes.at(static_cast<std::size_t>(source));
    order.to = admission.node;
    order.source = source;
    order.targets = admission.workers;
    joining_->transferring = true;
    joining_->source = source;
    joining_->rounds = rounds_;
    // The source waits for its step to end before it exports, then both sides move the state.
    const auto timeout = std::chrono::milliseconds(2 * setup_.config.cluster.data_timeout_ms) +
                         std::chrono::seconds(5);
    struct parts {
      int outstanding = 2;
      std::string error;
    };
    auto state = std::make_shared<parts>();
    for (int node : {order.from, order.to}) {
      auto one_done = [this, state, node, tag = order.tag](const std::string& error) {
        if (!error.empty() && state->error.empty())
          state->error = "node " + std::to_string(node) + ": " + error;
        if (--state->outstanding == 0 && joining_ && joining_->tag == tag)
          end_join(state->error);
      };
      request(topology.node_reducers.at(static_cast<std::size_t>(node)), timeout, order)
          .then([one_done](const reduce_done& answer) { one_done(answer.error); },
                [this, one_done](caf::error& failure) { one_done(system().render(failure)); });
    }
    joining_->tag = order.tag;
  }

  // The transfer ended (or could not start): the new workers count as live from here on, or the
  // node is turned away; either way the policy hears what it was held from.
  void end_join(const std::string& error) {
    if (!joining_)
      return;
    const join_state join = std::move(*joining_);
    joining_.reset();
    const auto& admission = join.admission;
    std::string outcome = error;
    if (outcome.empty() && phase_ != phase::running)
      outcome = "the run is ending";
    if (outcome.empty()) {
      for (std::size_t i = 0; i < admission.workers.size(); ++i)
        revive(admission.workers[i], admission.handles[i], admission.name);
      workers_joined_ += admission.workers.size();
      notice("node " + std::to_string(admission.node) + " (" + admission.name +
             ") joined the running job: worker" + (admission.workers.size() == 1 ? " " : "s ") +
             index_list(admission.workers) + " took worker " + std::to_string(join.source) +
             "'s model after round " + std::to_string(join.rounds));
    } else {
      notice("node " + std::to_string(admission.node) + " could not join: " + outcome);
    }
    send(join.registry, join_done_atom::value, admission.node, outcome);
    auto held = std::move(held_);
    held_.clear();
    if (phase_ != phase::running)
      return;
    if (outcome.empty())
      start_rounds(policy_->set_live_workers(live_workers()));
    for (auto& input : held)
      if (phase_ == phase::running)
        start_rounds(input());
    schedule_policy_time();
  }

  void revive(int index, const caf::actor& handle, const std::string& node) {
    auto& worker = workers_[static_cast<std::size_t>(index)];
    worker.handle = handle; // monitored since the admission
    worker.live = true;
    ledger_.worker_joined(index);
    if (setup_.metrics)
      setup_.metrics->worker_joined(index, node);
    send(handle, start_atom::value);
  }

  // Rounds that a stop is waiting for get stop_timeout to finish; then the run stops without
  // them (their members are idle, waiting for a result that will not come).
  void on_drain_timeout() {
    if (phase_ != phase::draining || in_flight_.empty())
      return;
    notice(std::to_string(in_flight_.size()) + " round(s) did not finish within " +
           std::to_string(setup_.stop_timeout.count()) + " ms of the stop; stopping without them");
    in_flight_.clear();
    stop_workers();
  }

  void on_tick() {
    if (phase_ == phase::finished)
      return;
    report_progress();
    if (setup_.metrics) {
      setup_.metrics->train_loss(recent_loss());
      setup_.metrics->refresh(elapsed());
    }
    if (phase_ == phase::running && deferred_evaluation() && elapsed() >= next_snapshot_at_) {
      next_snapshot_at_ =
          elapsed() + std::chrono::duration<double>(setup_.snapshot_interval).count();
      take_snapshot();
    }
    if (phase_ == phase::running && setup_.config.train.max_seconds > 0.0 &&
        elapsed() >= setup_.config.train.max_seconds)
      begin_stop("max-seconds");
    delayed_send(this, setup_.progress_interval, caf::tick_atom::value);
  }

  void on_down(const caf::down_msg& down) {
    if (phase_ == phase::finished)
      return; // the session is shutting the actors down
    for (std::size_t i = 0; i < workers_.size(); ++i)
      if (workers_[i].handle.address() == down.source)
        lose_worker(static_cast<int>(i), system().render(down.reason));
    for (std::size_t i = 0; i < aggregators_.size(); ++i)
      if (aggregators_[i].address() == down.source)
        lose_aggregator(i, system().render(down.reason));
    if (evaluator_ && evaluator_.address() == down.source)
      notice("the evaluator stopped: " + system().render(down.reason));
    if (joining_) {
      const auto& admission = joining_->admission;
      const auto& reducer =
          admission.topology.node_reducers[static_cast<std::size_t>(admission.node)];
      const bool joiner =
          reducer.address() == down.source ||
          std::any_of(admission.handles.begin(), admission.handles.end(),
                      [&](const caf::actor& handle) { return handle.address() == down.source; });
      if (joiner)
        end_join("it was lost while joining: " + system().render(down.reason));
    }
  }

  // Its rounds will never be reported: the run cannot go on correctly, so it ends with an error.
  void lose_aggregator(std::size_t index, const std::string& why) {
    for (auto round = in_flight_.begin(); round != in_flight_.end();)
      round = round->second.aggregator == index ? in_flight_.erase(round) : std::next(round);
    fail("aggregator " + std::to_string(index) + " stopped: " + why);
  }

  void lose_worker(int index, const std::string& why) {
    auto& worker = workers_[static_cast<std::size_t>(index)];
    if (!worker.live || phase_ == phase::finished)
      return;
    worker.live = false;
    ledger_.worker_lost(index);
    if (setup_.metrics)
      setup_.metrics->worker_lost(index);
    notice("worker " + std::to_string(index) + " lost: " + why);
    if (joining_ && joining_->transferring && joining_->source == index)
      end_join("worker " + std::to_string(index) +
               ", whose state the new workers were taking, was lost: " + why);
    if (phase_ == phase::stopping_workers) {
      acknowledge_stop(index); // a lost worker has nothing left to stop
      return;
    }
    auto live = live_workers();
    if (live.empty()) {
      fail("every worker was lost");
      return;
    }
    if (phase_ == phase::running)
      consult([this] { return policy_->set_live_workers(live_workers()); });
    else
      policy_->set_live_workers(std::move(live));
  }

  // -- evaluation -------------------------------------------------------------------------------

  // Asks the first live worker for its parameters: `then(point, snapshot)`, where the point says
  // when they were taken, or `failed(reason)`. Every worker applies every result in round order,
  // so any live replica shows the training's state (a round or two behind at most).
  template <class Then, class Failed>
  void request_snapshot(Then then, Failed failed) {
    auto live = live_workers();
    if (live.empty()) {
      failed(std::string("no live worker to evaluate"));
      return;
    }
    evaluation_point point;
    point.round = rounds_;
    point.elapsed_seconds = elapsed();
    point.epoch = epochs_done();
    if (policy_->exchanges_models()) {
      request_mean_snapshot(live, point, then, failed);
      return;
    }
    request(workers_[static_cast<std::size_t>(live.front())].handle, snapshot_timeout,
            snapshot_atom::value)
        .then([point, then](const parameter_snapshot& snapshot) mutable { then(point, snapshot); },
              [this, failed](caf::error& failure) mutable { failed(system().render(failure)); });
  }

  // Model averaging leaves the replicas different between global averages: the model of the run
  // is their mean, over the live workers that answer.
  template <class Then, class Failed>
  void request_mean_snapshot(const std::vector<int>& live, const evaluation_point& point, Then then,
                             Failed failed) {
    struct gathering {
      std::vector<double> sum;
      std::size_t outstanding = 0;
      std::size_t received = 0;
      std::uint64_t step = 0;
      std::string failure;
    };
    auto state = std::make_shared<gathering>();
    state->outstanding = live.size();
    auto one_more = [state, point, then, failed]() mutable {
      if (--state->outstanding > 0)
        return;
      if (state->received == 0) {
        failed(state->failure);
        return;
      }
      auto mean = std::make_shared<std::vector<float>>(state->sum.size());
      for (std::size_t i = 0; i < mean->size(); ++i)
        (*mean)[i] = static_cast<float>(state->sum[i] / static_cast<double>(state->received));
      then(point, parameter_snapshot{-1, state->step, std::move(mean)});
    };
    for (int index : live)
      request(workers_[static_cast<std::size_t>(index)].handle, snapshot_timeout,
              snapshot_atom::value)
          .then(
              [state, one_more](const parameter_snapshot& snapshot) mutable {
                const auto& parameters = *snapshot.parameters;
                if (state->sum.empty())
                  state->sum.assign(parameters.size(), 0.0);
                for (std::size_t i = 0; i < parameters.size() && i < state->sum.size(); ++i)
                  state->sum[i] += parameters[i];
                ++state->received;
                state->step = std::max(state->step, snapshot.step);
                one_more();
              },
              [this, state, one_more](caf::error& failure) mutable {
                state->failure = system().render(failure);
                one_more();
              });
  }

  // Evaluates a snapshot of the first live worker's parameters now.
  template <class OnResult>
  void evaluate_snapshot(OnResult on_result) {
    auto failed = [on_result](const std::string& reason) {
      on_result(std::optional<evaluation_point>{}, reason);
    };
    request_snapshot(
        [this, on_result, failed](evaluation_point point, const parameter_snapshot& snapshot) {
          request(evaluator_, evaluation_timeout, evaluate_atom::value, snapshot)
              .then(
                  [point, on_result](const evaluation_result& result) mutable {
                    point.test_accuracy = result.test_accuracy;
                    point.test_loss = result.test_loss;
                    on_result(std::optional<evaluation_point>{point}, std::string{});
                  },
                  [this, failed](caf::error& failure) { failed(system().render(failure)); });
        },
        failed);
  }

  bool deferred_evaluation() const { return setup_.snapshot_interval.count() > 0; }

  void take_snapshot() {
    request_snapshot(
        [this](const evaluation_point& point, const parameter_snapshot& snapshot) {
          snapshots_.emplace_back(point, snapshot);
        },
        [this](const std::string& reason) { notice("snapshot failed: " + reason); });
  }

  // Evaluates the snapshots one after another, then `then`.
  template <class Then>
  void evaluate_snapshots(std::size_t index, Then then) {
    if (index >= snapshots_.size()) {
      snapshots_.clear();
      then();
      return;
    }
    request(evaluator_, evaluation_timeout, evaluate_atom::value, snapshots_[index].second)
        .then(
            [this, index, then](const evaluation_result& result) {
              auto point = snapshots_[index].first;
              point.test_accuracy = result.test_accuracy;
              point.test_loss = result.test_loss;
              record_evaluation(point);
              evaluate_snapshots(index + 1, then);
            },
            [this, index, then](caf::error& failure) {
              notice("evaluation of a snapshot failed: " + system().render(failure));
              evaluate_snapshots(index + 1, then);
            });
  }

  void evaluate_periodically() {
    if (evaluating_)
      return; // the previous evaluation is still running: skip this one
    evaluating_ = true;
    evaluate_snapshot([this](std::optional<evaluation_point> point, const std::string& failure) {
      evaluating_ = false;
      if (!point) {
        notice("evaluation failed: " + failure);
        return;
      }
      record_evaluation(*point);
    });
  }

  void record_evaluation(const evaluation_point& point) {
    if (phase_ == phase::finished)
      return;
    evaluations_.push_back(point);
    if (setup_.metrics)
      setup_.metrics->test_accuracy(point.test_accuracy);
    if (setup_.observer != nullptr)
      setup_.observer->on_evaluation(point);
    const double target = setup_.config.train.target_accuracy;
    if (target > 0.0 && point.test_accuracy >= target && !time_to_target_) {
      time_to_target_ = point.elapsed_seconds;
      begin_stop("target-accuracy");
    }
  }

  // -- stopping ---------------------------------------------------------------------------------

  void begin_stop(const std::string& reason) {
    if (phase_ == phase::waiting) { // stopped before it started: nothing to wait for
      stop_reason_ = reason;
      finish();
      return;
    }
    if (phase_ != phase::running)
      return;
    stop_reason_ = reason;
    drain();
  }

  void drain() {
    phase_ = phase::draining;
    if (!in_flight_.empty())
      delayed_send(this, setup_.stop_timeout, drain_timeout_atom::value);
    stop_workers_once_drained();
  }

  // Ends the run with an error: in-flight rounds finish, workers stop, the summary says why.
  void fail(const std::string& error) {
    if (error_.empty())
      error_ = error;
    notice("error: " + error);
    stop_reason_ = "error";
    if (phase_ == phase::waiting)
      finish();
    else if (phase_ == phase::running)
      drain();
    else
      stop_workers_once_drained();
  }

  void stop_workers() {
    phase_ = phase::stopping_workers;
    for (int index : live_workers())
      awaiting_stop_.insert(index);
    for (int index : live_workers()) {
      request(workers_[static_cast<std::size_t>(index)].handle, setup_.stop_timeout,
              stop_atom::value)
          .then([this, index](const worker_stopped&) { acknowledge_stop(index); },
                [this, index](caf::error& failure) {
                  lose_worker(index, "no answer to stop: " + system().render(failure));
                });
    }
    if (awaiting_stop_.empty())
      final_evaluation();
  }

  // Counts each worker once, whether it answered or was lost (or both, in either order).
  void acknowledge_stop(int index) {
    if (phase_ != phase::stopping_workers || awaiting_stop_.erase(index) == 0)
      return;
    if (awaiting_stop_.empty())
      final_evaluation();
  }

  void final_evaluation() {
    phase_ = phase::final_evaluation;
    wall_seconds_ = elapsed();
    evaluate_snapshots(0, [this] { evaluate_final(); });
  }

  void evaluate_final() {
    evaluate_snapshot([this](std::optional<evaluation_point> point, const std::string& failure) {
      if (point) {
        final_ = *point;
        record_evaluation(*point);
      } else {
        // No stand-in from an earlier evaluation: the summary says the final one is missing.
        notice("final evaluation failed: " + failure);
        if (error_.empty())
          error_ = "final evaluation failed: " + failure;
      }
      finish();
    });
  }

  double recent_loss() const {
    if (recent_losses_.empty())
      return 0.0;
    return std::accumulate(recent_losses_.begin(), recent_losses_.end(), 0.0) /
           static_cast<double>(recent_losses_.size());
  }

  void report_progress() {
    if (setup_.observer == nullptr)
      return;
    progress now;
    now.elapsed_seconds = elapsed();
    now.epoch = epochs_done();
    now.rounds = rounds_;
    now.steps = steps_;
    now.samples = samples_applied_;
    now.train_loss = recent_loss();
    if (!evaluations_.empty())
      now.test_accuracy = evaluations_.back().test_accuracy;
    now.samples_per_second = now.elapsed_seconds > 0.0
                                 ? static_cast<double>(samples_applied_) / now.elapsed_seconds
                                 : 0.0;
    now.live_workers = static_cast<int>(live_workers().size());
    setup_.observer->on_progress(now);
  }

  void finish() {
    if (phase_ == phase::finished)
      return;
    report_progress();
    phase_ = phase::finished;
    run_summary summary;
    summary.algorithm = setup_.config.train.algorithm;
    summary.workers = static_cast<int>(workers_.size());
    summary.backend = setup_.backend_name;
    summary.compute = setup_.compute;
    summary.imbalance =
        imbalance_model(setup_.config.imbalance, setup_.config.train.workers).describe();
    summary.stop_reason = stop_reason_;
    summary.error = error_;
    summary.steps = steps_;
    summary.rounds = rounds_;
    summary.full_sync_rounds = full_sync_rounds_;
    summary.partial_rounds = partial_rounds_;
    summary.isolation_interventions = isolation_interventions_;
    summary.aborted_rounds = aborted_rounds_;
    summary.workers_joined = workers_joined_;
    summary.fresh_contributions = contributions_[static_cast<std::size_t>(freshness::fresh)];
    summary.stale_contributions = contributions_[static_cast<std::size_t>(freshness::stale)];
    summary.empty_contributions = contributions_[static_cast<std::size_t>(freshness::none)];
    summary.samples = samples_applied_;
    summary.epochs = epochs_done();
    summary.wall_seconds = wall_seconds_;
    summary.target_accuracy = setup_.config.train.target_accuracy;
    summary.time_to_target_seconds = time_to_target_;
    if (final_) {
      summary.final_test_accuracy = final_->test_accuracy;
      summary.final_test_loss = final_->test_loss;
    }
    summary.final_train_loss = recent_loss();
    summary.samples_per_second =
        wall_seconds_ > 0.0 ? static_cast<double>(samples_applied_) / wall_seconds_ : 0.0;
    summary.reduce_seconds = reduce_seconds_;
    summary.reduce_bytes = reduce_bytes_;
    const auto waiting = ledger_.compare();
    summary.waiting.steps_compared = waiting.steps_compared;
    summary.waiting.waited_seconds = waiting.waited_total;
    summary.waiting.barrier_seconds = waiting.barrier_total;
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      const auto& record = workers_[i];
      worker_summary worker;
      worker.worker = static_cast<int>(i);
      worker.steps = record.steps;
      worker.late_steps = record.late_steps;
      worker.waited_compared_seconds = waiting.waited[i];
      worker.barrier_wait_seconds = waiting.barrier[i];
      worker.samples = record.samples;
      worker.live = record.live;
      worker.compute_seconds = record.step_seconds.total();
      worker.wait_seconds = record.wait_seconds.total();
      worker.step_seconds = {record.step_seconds.mean(), record.step_seconds.median(),
                             record.step_seconds.quantile(0.9), record.step_seconds.max()};
      worker.wait_seconds_per_step = {record.wait_seconds.mean(), record.wait_seconds.median(),
                                      record.wait_seconds.quantile(0.9), record.wait_seconds.max()};
      summary.per_worker.push_back(worker);
    }
    summary.evaluations = evaluations_;
    if (setup_.on_finished)
      setup_.on_finished(std::move(summary));
  }

  struct join_state {
    node_admission admission;
    caf::actor registry; // hears (join_done_atom, node, error)
    bool transferring = false;
    std::uint64_t tag = 0;    // the transfer's
    int source = -1;          // the live worker whose state the new workers adopt
    std::uint64_t rounds = 0; // rounds finished when it was taken
  };

  coordinator_setup setup_;
  std::unique_ptr<grouping_policy> policy_;
  std::optional<join_state> joining_;
  std::vector<std::function<std::vector<group_decision>()>> held_; // policy inputs, in order
  std::uint64_t transfers_ = 0;
  std::uint64_t workers_joined_ = 0;
  std::vector<worker_record> workers_;
  std::vector<caf::actor> aggregators_;
  caf::actor evaluator_;
  phase phase_ = phase::waiting;
  clock_type::time_point started_at_;
  std::uint64_t next_round_ = 0;
  std::size_t next_aggregator_ = 0;
  std::optional<double> policy_timer_at_; // the earliest policy deadline a timer is set for
  std::uint64_t isolation_interventions_ = 0;
  std::uint64_t aborted_rounds_ = 0;
  std::uint64_t consecutive_aborted_rounds_ = 0;
  std::map<std::uint64_t, round_in_flight> in_flight_;
  std::uint64_t samples_committed_ = 0; // applied, plus expected from the rounds in flight
  bool budget_spent_ = false;           // a round was not started because of the epoch limit
  std::uint64_t rounds_ = 0;
  std::uint64_t full_sync_rounds_ = 0;
  std::uint64_t partial_rounds_ = 0;
  std::array<std::uint64_t, 3> contributions_{}; // by freshness
  monitoring::wait_ledger ledger_;
  std::uint64_t steps_ = 0;
  std::uint64_t samples_applied_ = 0;
  double reduce_seconds_ = 0.0;
  std::uint64_t reduce_bytes_ = 0;
  std::deque<double> recent_losses_;
  bool evaluating_ = false;
  std::vector<evaluation_point> evaluations_;
  std::vector<std::pair<evaluation_point, parameter_snapshot>> snapshots_; // deferred evaluation
  double next_snapshot_at_ = 0.0;
  std::optional<double> time_to_target_;
  std::optional<evaluation_point> final_;
  std::string stop_reason_;
  std::string error_;
  std::set<int> awaiting_stop_;
  double wall_seconds_ = 0.0;
};

} // namespace

caf::actor spawn_group_coordinator(caf::actor_system& system, coordinator_setup setup) {
  return system.spawn<coordinator_actor>(std::move(setup));
}

} // namespace herd::actors
