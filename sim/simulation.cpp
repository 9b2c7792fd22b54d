// One simulated run; see simulation.hpp. The handlers mirror the actors' (actors/worker.cpp,
// actors/group_coordinator.cpp, actors/aggregator.cpp) without their tensors, failures, joins or
// evaluations: what runs when, and who waits for whom, is decided by the same policy and
// send-buffer code.
#include "sim/simulation.hpp"

#include "kernels/check.hpp"
#include "monitoring/wait_ledger.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "policy/imbalance.hpp"
#include "policy/policy.hpp"
#include "policy/send_buffer.hpp"
#include "sim/event_queue.hpp"

namespace herd::sim {

namespace {

int padded_to_power_of_two(int workers) {
  int padded = 1;
  while (padded < workers)
    padded *= 2;
  return padded;
}

using policy::freshness;
using policy::group_decision;

struct worker_state {
  worker_state(policy::send_buffer_family family, std::uint64_t global_every)
      : buffer(family, global_every) {}

  policy::send_buffer buffer;
  std::set<std::uint64_t> results_here; // rounds whose result arrived, not applied yet
  double idle_since = 0.0;
  double last_wait = 0.0;
  double idle_total = 0.0; // between steps, finished waits only
  double step_started = 0.0;
};

struct round_state {
  group_decision planned;
  std::size_t aggregator = 0;
  std::size_t outstanding = 0;
  std::vector<std::optional<policy::loan>> answers; // by member position
};

class simulation {
public:
  simulation(const config::run_config& config, const settings& how)
      : how_(how), config_(config), policy_(policy::make_policy(config)),
        imbalance_(config.imbalance, config.train.workers), ledger_(config.train.workers),
        aggregator_free_(static_cast<std::size_t>(std::max(how.aggregators, 1)), 0.0) {
    HERD_CHECK(how.step_seconds > 0.0, "simulate.step-ms " << how.step_seconds * 1e3);
    const auto family = policy::send_buffer_family_of(
        policy_->exchanges_models(), policy_->blends_late_models(),
        policy::late_gradients_of(config), policy_->blends_on_time_models());
    const auto global_every = static_cast<std::uint64_t>(std::max(config.wagma.sync_every, 0));
    workers_.reserve(static_cast<std::size_t>(config.train.workers));
    for (int i = 0; i < config.train.workers; ++i)
      workers_.emplace_back(family, global_every);
    result_.algorithm = config.train.algorithm;
    result_.workers = config.train.workers;
    result_.staleness_unit = policy_->exchanges_models() ? "steps" : "rounds";
  }

  result run() {
    std::vector<int> live(workers_.size());
    for (std::size_t i = 0; i < live.size(); ++i)
      live[i] = static_cast<int>(i);
    start_rounds(policy_->set_live_workers(live));
    for (int worker : live)
      after_message([this, worker] { begin_step_when_due(worker); });
    for (std::uint64_t events = 1; clock_.run_next(how_.duration_seconds); ++events)
      if (events % 4096 == 0 && how_.stopped && how_.stopped())
        throw interrupted();
    return finish();
  }

private:
  worker_state& worker(int index) { return workers_[static_cast<std::size_t>(index)]; }
  double now() const { return clock_.now(); }
  void after_message(event_queue::action what) {
    clock_.at(now() + how_.message_seconds, std::move(what));
  }

  // -- the worker (actors/worker.cpp) ------------------------------------------------------------

  void begin_step_when_due(int index) {
    if (worker(index).buffer.step_due())
      begin_step(index);
  }

  void begin_step(int index) {
    auto& w = worker(index);
    w.last_wait = w.buffer.steps() == 0 ? 0.0 : now() - w.idle_since;
    w.idle_total += w.last_wait;
    w.step_started = now();
    w.buffer.begin_step();
    const std::uint64_t step = w.buffer.steps() + 1;
    const double base =
        how_.trace ? how_.trace->draw(index, step, how_.trace_seed) : how_.step_seconds;
    const double compute = base + imbalance_.extra_seconds(index, step, base);
    clock_.at(now() + compute, [this, index, compute] { on_step_done(index, compute); });
  }

  void on_step_done(int index, double compute) {
    auto& w = worker(index);
    w.idle_since = now();
    const auto end = w.buffer.end_step(static_cast<std::uint32_t>(config_.train.batch_size));
    const std::uint64_t step = w.buffer.steps();
    ++result_.steps;
    result_.late_steps += end.late ? 1 : 0;
    // As run_counters does with step_ready: the wait before a step is reported with the step.
    ledger_.step_finished(index, step, compute);
    if (step > 1)
      ledger_.waited_after(index, step - 1, w.last_wait);
    if (!end.late)
      after_message([this, index, step, compute] { on_step_ready(index, step, compute); });
    apply_ready_results(index);
  }

  void on_contribute(int index, std::uint64_t round, std::uint64_t step) {
    if (auto loan = worker(index).buffer.on_request(round, step))
      after_message([this, index, loan = *loan] { on_answer(loan.round, index, loan); });
  }

  void on_round_result(int index, std::uint64_t round) {
    auto& w = worker(index);
    w.results_here.insert(round);
    w.buffer.on_result(round);
    while (auto loan = w.buffer.answer_waiting())
      after_message([this, index, loan = *loan] { on_answer(loan.round, index, loan); });
    apply_ready_results(index);
  }

  // In round order, between steps only (the buffer says which and when).
  void apply_ready_results(int index) {
    auto& w = worker(index);
    while (const auto next = w.buffer.next_application()) {
      if (w.results_here.erase(next->round) == 0)
        break;
      w.buffer.applied(next->round);
    }
    begin_step_when_due(index);
  }

  // -- the coordinator (actors/group_coordinator.cpp) --------------------------------------------

  void on_step_ready(int index, std::uint64_t step, double compute) {
    policy::arrival ready;
    ready.worker = index;
    ready.step = step;
    ready.at_seconds = now();
    ready.compute_seconds = compute;
    start_rounds(policy_->on_ready(ready));
  }

  void start_rounds(const std::vector<group_decision>& decisions) {
    for (const auto& decision : decisions) {
      const std::uint64_t round = next_round_++;
      auto& state = rounds_[round];
      state.planned = decision;
      state.aggregator = next_aggregator_++ % aggregator_free_.size();
      state.outstanding = decision.members.size();
      state.answers.assign(decision.members.size(), std::nullopt);
      after_message([this, round] { on_plan(round); });
    }
    schedule_policy_time();
  }

  // One timer at a time, for the earliest deadline, as the coordinator keeps it.
  void schedule_policy_time() {
    const auto deadline = policy_->next_deadline();
    if (!deadline || (policy_timer_at_ && *policy_timer_at_ <= *deadline))
      return;
    policy_timer_at_ = *deadline;
    clock_.at(std::max(now(), *deadline) + 1e-6, [this, at = *deadline] { on_policy_time(at); });
  }

  void on_policy_time(double deadline) {
    if (policy_timer_at_ && *policy_timer_at_ == deadline)
      policy_timer_at_.reset();
    start_rounds(policy_->on_time(std::max(now(), deadline)));
  }

  void on_group_done(std::uint64_t round) {
    auto found = rounds_.find(round);
    policy::group_outcome outcome;
    outcome.members = found->second.planned.members;
    outcome.at_seconds = now();
    const auto& answers = found->second.answers;
    for (std::size_t position = 0; position < answers.size(); ++position) {
      outcome.contributions.push_back(
          {outcome.members[position], answers[position]->kind, answers[position]->step});
      // Applied once the round finishes, as the run report counts `samples`.
      if (answers[position]->kind != freshness::none)
        result_.samples_applied += answers[position]->samples;
    }
    ++result_.rounds;
    result_.rounds_full_sync += found->second.planned.kind == policy::round_kind::full_sync;
    rounds_.erase(found);
    start_rounds(policy_->on_group_done(outcome));
  }

  // -- the aggregator (actors/aggregator.cpp) ----------------------------------------------------

  void on_plan(std::uint64_t round) {
    const auto& planned = rounds_.at(round).planned;
    for (int member : planned.members)
      after_message(
          [this, member, round, step = planned.step] { on_contribute(member, round, step); });
  }

  void on_answer(std::uint64_t round, int index, const policy::loan& loan) {
    auto& state = rounds_.at(round);
    const auto& members = state.planned.members;
    const auto position = static_cast<std::size_t>(
        std::lower_bound(members.begin(), members.end(), index) - members.begin());
    state.answers[position] = loan;
    if (--state.outstanding == 0)
      reduce(round, state);
  }

  // The ring among the members that gave something, after the aggregator's earlier rounds when
  // a pool of aggregators reduces one round at a time each (the local data plane in one process).
  void reduce(std::uint64_t round, round_state& state) {
    std::size_t inputs = 0;
    for (const auto& answer : state.answers)
      inputs += answer->kind != freshness::none;
    const double seconds = inputs > 0 ? how_.reduction.reduce_seconds(inputs) : 0.0;
    double start = now();
    if (how_.aggregators > 0) {
      auto& free_at = aggregator_free_[state.aggregator];
      start = std::max(start, free_at);
      free_at = start + seconds;
    }
    const double done = start + seconds + how_.message_seconds;
    record(round, state, seconds);
    for (int member : state.planned.members)
      clock_.at(done, [this, member, round] { on_round_result(member, round); });
    clock_.at(done, [this, round] { on_group_done(round); });
  }

  // Group size, contributions and staleness: for gradients the rounds between the parameters a
  // gradient was computed on and the round that applies it; for models the steps a member is
  // behind (preduce: behind its group's freshest member; wagma: behind the step averaged).
  void record(std::uint64_t round, const round_state& state, double seconds) {
    const auto& planned = state.planned;
    const std::size_t size = state.answers.size();
    group_sizes_ += static_cast<double>(size);
    ++rounds_reduced_;
    result_.max_group_size = std::max<std::uint64_t>(result_.max_group_size, size);
    result_.reduce_seconds += seconds;
    for (std::size_t position = 0; position < size; ++position) {
      const auto& answer = *state.answers[position];
      if (answer.kind == freshness::none) {
        ++result_.none;
        continue;
      }
      ++(answer.kind == freshness::fresh ? result_.fresh : result_.stale);
      std::uint64_t staleness = 0;
      if (!policy_->exchanges_models())
        staleness = round >= answer.version ? round - answer.version : 0;
      else if (!planned.staleness.empty())
        staleness = planned.staleness[position];
      else if (planned.step > answer.step)
        staleness = planned.step - answer.step;
      staleness_total_ += static_cast<double>(staleness);
      result_.max_staleness = std::max(result_.max_staleness, staleness);
      ++staleness_count_;
    }
  }

  result finish() {
    const double seconds = how_.duration_seconds;
    double idle = 0.0;
    for (const auto& w : workers_) {
      idle += w.idle_total;
      if (!w.buffer.computing()) // still waiting at the end
        idle += seconds - w.idle_since;
    }
    const auto waiting = ledger_.compare();
    result_.seconds = seconds;
    result_.steps_per_second = static_cast<double>(result_.steps) / seconds;
    result_.applied_per_second = static_cast<double>(result_.samples_applied) /
                                 static_cast<double>(config_.train.batch_size) / seconds;
    result_.idle_fraction = idle / (static_cast<double>(workers_.size()) * seconds);
    result_.waited_seconds = waiting.waited_total;
    result_.barrier_seconds = waiting.barrier_total;
    if (rounds_reduced_ > 0)
      result_.mean_group_size = group_sizes_ / static_cast<double>(rounds_reduced_);
    if (staleness_count_ > 0)
      result_.mean_staleness = staleness_total_ / static_cast<double>(staleness_count_);
    result_.events = clock_.events_run();
    return result_;
  }

  settings how_;
  const config::run_config& config_;
  std::unique_ptr<policy::grouping_policy> policy_;
  policy::imbalance_model imbalance_;
  monitoring::wait_ledger ledger_;
  event_queue clock_;
  std::vector<worker_state> workers_;
  std::map<std::uint64_t, round_state> rounds_; // decided, not finished
  std::vector<double> aggregator_free_;         // when each aggregator has reduced its rounds
  std::uint64_t next_round_ = 0;
  std::size_t next_aggregator_ = 0;
  std::optional<double> policy_timer_at_;
  double group_sizes_ = 0.0; // over the rounds that began reducing
  std::uint64_t rounds_reduced_ = 0;
  double staleness_total_ = 0.0;
  std::uint64_t staleness_count_ = 0;
  result result_;
};

} // namespace

settings settings_of(const config::simulate_section& simulate) {
  settings how;
  how.step_seconds = simulate.step_ms * 1e-3;
  how.reduction = reduction_model_of(simulate);
  how.message_seconds = simulate.message_us * 1e-6;
  how.duration_seconds = simulate.steps * how.step_seconds;
  how.aggregators = simulate.aggregators;
  return how;
}

config::run_config for_workers(config::run_config config, int workers) {
  config.train.workers = workers;
  // The sweep's group fits its largest P; a smaller one takes groups of P rounded up to a power
  // of two at most (preduce's policy takes at most P members by itself).
  config.wagma.group_size = std::min(config.wagma.group_size, padded_to_power_of_two(workers));
  auto& imbalance = config.imbalance;
  imbalance.k = std::min(imbalance.k, workers);
  auto& slow = imbalance.workers;
  slow.erase(std::remove_if(slow.begin(), slow.end(), [workers](int i) { return i >= workers; }),
             slow.end());
  return config;
}

result simulate(const config::run_config& config, const settings& how) {
  return simulation(config, how).run();
}

} // namespace herd::sim
