// The aggregator actor; see aggregator.hpp.
#include "actors/aggregator.hpp"

#include "actors/messages.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

namespace herd::actors {

namespace {

using clock_type = std::chrono::steady_clock;

class aggregator_actor : public caf::event_based_actor {
public:
  aggregator_actor(caf::actor_config& config, aggregator_setup setup, caf::actor coordinator)
      : caf::event_based_actor(config), setup_(std::move(setup)),
        coordinator_(std::move(coordinator)) {}

  const char* name() const override { return "herd.aggregator"; }

  void on_exit() override { coordinator_ = nullptr; }

  caf::behavior make_behavior() override {
    return {
        [this](const group_plan& plan) { begin(plan); },
    };
  }

private:
  struct round_state {
    group_plan plan;
    std::vector<std::optional<contribution>> answers; // by member position
    std::size_t outstanding = 0;
    clock_type::time_point started;
    struct {
      std::vector<std::int32_t> unanswered;
      std::vector<std::string> reasons;
    } plan_failures;
  };

  void begin(const group_plan& plan) {
    auto& state = rounds_[plan.round];
    state.plan = plan;
    state.answers.assign(plan.members.size(), std::nullopt);
    state.outstanding = plan.members.size();
    state.started = clock_type::now();
    const std::uint64_t round = plan.round;
    for (std::size_t position = 0; position < plan.members.size(); ++position) {
      request(plan.member_handles[position], setup_.contribution_timeout, contribute_atom::value,
              round, plan.step)
          .then([this, round,
                 position](const contribution& answer) { answered(round, position, answer, {}); },
                [this, round, position](caf::error& failure) {
                  answered(round, position, std::nullopt, system().render(failure));
                });
    }
  }

  void answered(std::uint64_t round, std::size_t position,
                const std::optional<contribution>& answer, std::string failure) {
    auto found = rounds_.find(round);
    if (found == rounds_.end())
      return;
    auto& state = found->second;
    state.answers[position] = answer;
    if (!failure.empty()) {
      state.plan_failures.unanswered.push_back(state.plan.members[position]);
      state.plan_failures.reasons.push_back(std::move(failure));
    }
    if (--state.outstanding == 0) {
      finish(state);
      rounds_.erase(found);
    }
  }

  // Always reports the round, so the coordinator never waits for it; no exception escapes (it
  // would kill the actor with the round unreported).
  void finish(round_state& state) {
    group_done report;
    report.round = state.plan.round;
    report.unanswered = state.plan_failures.unanswered;
    report.unanswered_reasons = state.plan_failures.reasons;
    try {
      reduce_and_deliver(state, report);
    } catch (const std::exception& failure) {
      report.error = std::string("aggregator failed: ") + failure.what();
    }
    report.seconds = std::chrono::duration<double>(clock_type::now() - state.started).count();
    send(coordinator_, std::move(report));
  }

  void reduce_and_deliver(const round_state& state, group_done& report) {
    // Members that answered take part, with the plan's weights renormalised over them (uniform:
    // the mean under sync, sum / P under the partial algorithms, where a member with nothing
    // still counts).
    std::vector<bool> answered(state.answers.size());
    for (std::size_t position = 0; position < state.answers.size(); ++position)
      answered[position] = state.answers[position].has_value();
    const auto weights = member_weights(state.plan.weights, state.plan.member_weights, answered);
    std::vector<std::size_t> answered_positions;
    std::vector<comm::weighted_input> inputs;
    for (std::size_t position = 0; position < state.answers.size(); ++position) {
      if (!answered[position])
        continue;
      answered_positions.push_back(position);
      const auto& answer = *state.answers[position];
      report.members.push_back(answer.worker);
      report.kinds.push_back(answer.kind);
      report.steps.push_back(answer.step);
      report.versions.push_back(answer.version);
      if (answer.kind == freshness::none)
        continue;
      if (answer.kind == freshness::fresh)
        ++report.fresh;
      else
        ++report.stale;
      report.samples += answer.samples;
      inputs.push_back({answer.worker, weights[position]});
    }
    auto result = setup_.results->acquire();
    const auto reduce_start = clock_type::now();
    if (inputs.empty()) {
      std::fill(result->begin(), result->end(), 0.0f); // nobody had anything: a zero update
    } else {
      auto work = setup_.backend->group_reduce(inputs, result->data(), result->size());
      report.error = work->wait(setup_.contribution_timeout) ? work->error()
                                                             : "data-plane reduction timed out";
    }
    report.reduce_seconds = std::chrono::duration<double>(clock_type::now() - reduce_start).count();
    report.bytes = (inputs.size() + 1) * result->size() * sizeof(float);
    // A failed reduction leaves garbage: nobody gets it, and the coordinator ends the run.
    if (report.error.empty()) {
      const round_result delivered{state.plan.round, result,
                                   static_cast<std::uint32_t>(report.members.size())};
      for (std::size_t position : answered_positions)
        send(state.plan.member_handles[position], delivered);
    }
  }

  aggregator_setup setup_;
  caf::actor coordinator_;
  std::map<std::uint64_t, round_state> rounds_;
};

} // namespace

caf::actor spawn_aggregator(caf::actor_system& system, aggregator_setup setup,
                            const caf::actor& coordinator) {
  return system.spawn<aggregator_actor>(std::move(setup), coordinator);
}

} // namespace herd::actors
