// The aggregator actor; see aggregator.hpp.
#include "actors/aggregator.hpp"

#include "actors/aggregator_rounds.hpp"
#include "actors/control_costs.hpp"
#include "actors/errors.hpp"
#include "actors/messages.hpp"
#include "actors/round_report.hpp"
#include "actors/scheduling.hpp"
#include "actors/unexpected_messages.hpp"
#include "kernels/check.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>

namespace herd::actors {

namespace {

using clock_type = std::chrono::steady_clock;

class aggregator_actor : public caf::event_based_actor {
public:
  aggregator_actor(caf::actor_config& config, aggregator_setup setup, caf::actor coordinator)
      : caf::event_based_actor(config), setup_(std::move(setup)),
        coordinator_(std::move(coordinator)) {
    set_down_handler([this](caf::down_msg& down) { on_down(down); });
    // Nodes address it: what no handler takes is dropped, never printed whole (it has no log of
    // its own; the coordinator's and the registry's say when a peer sends such messages).
    set_default_handler(drop_unexpected("an aggregator", nullptr));
    // A member's answer is a plain message: an error in its place comes here, not to a request.
    set_error_handler([this](caf::error& failure) {
      member_failed(caf::actor_cast<caf::actor_addr>(current_sender()),
                    "failed: " + system().render(failure));
    });
    for (const auto& reducer : setup_.node_reducers)
      watch(reducer);
  }

  const char* name() const override { return "herd.aggregator"; }

  // A round's answer timeout, a message to itself, keeps this object until it fires (30 s by
  // default) after the run ended: what it refers to goes now, the rounds' members (the workers,
  // and through them the job's data) and its buffers among them.
  void on_exit() override {
    coordinator_ = nullptr;
    setup_.node_reducers.clear();
    setup_.parameter_server = nullptr;
    rounds_ = aggregator_rounds{};
    member_addresses_.clear();
    setup_.results.reset();
    setup_.plane.reset();
  }

  caf::behavior make_behavior() override {
    return {
        [this](group_plan& plan) { // taken, not copied: the coordinator sent it to us alone
          const auto timer = timed();
          begin(std::move(plan));
        },
        [this](const contribution& answer) {
          const auto timer = timed();
          member_answered(answer);
        },
        [this](const cluster_topology& topology) { update(topology); },
        [this](answer_timeout_atom, std::uint64_t round) {
          const auto timer = timed();
          answers_timed_out(round);
        },
    };
  }

private:
  bool distributed() const { return !setup_.node_reducers.empty(); }

  // What times one of its handlers (into setup_.costs; nowhere when it is null).
  handler_timer timed() const { return {setup_.costs.get(), &control_costs::aggregators}; }

  // Every node reducer once (a node still waiting to join has none yet).
  void watch(const caf::actor& reducer) {
    if (reducer && watched_.insert(reducer.address()).second)
      monitor(reducer);
  }

  // The coordinator sends this before any plan that includes a new node's workers; rounds
  // already ordered keep the generation they were ordered with.
  void update(const cluster_topology& topology) {
    for (const auto& reducer : topology.node_reducers)
      watch(reducer);
    setup_.worker_nodes.assign(topology.worker_nodes.begin(), topology.worker_nodes.end());
    setup_.node_reducers = topology.node_reducers;
    setup_.generation = topology.generation;
  }

  // A node of this run not lost: its reducer takes orders.
  bool reachable(int node) const {
    return node >= 0 && static_cast<std::size_t>(node) < setup_.node_reducers.size() &&
           lost_nodes_.count(node) == 0;
  }

  int node_of(std::int32_t worker) const {
    return worker >= 0 && static_cast<std::size_t>(worker) < setup_.worker_nodes.size()
               ? setup_.worker_nodes[static_cast<std::size_t>(worker)]
               : -1;
  }

  void begin(group_plan given) {
    auto& state = rounds_.open(given.round);
    state.plan = std::move(given);
    const group_plan& plan = state.plan;
    state.answers.assign(plan.members.size(), std::nullopt);
    state.settled.assign(plan.members.size(), false);
    for (std::size_t position = 0; position < plan.members.size(); ++position) {
      const auto worker = static_cast<std::size_t>(std::max(0, plan.members[position]));
      if (worker >= state.position_of.size())
        state.position_of.resize(worker + 1, -1);
      state.position_of[worker] = static_cast<std::int32_t>(position);
    }
    state.outstanding = plan.members.size();
    state.started = clock_type::now();
    const std::uint64_t round = plan.round;
    if (distributed())
      ask_nodes(round, plan.step, plan.members); // a copy: it may end the round, plan with it
    else
      ask_members(plan);
    if (rounds_.holds(round)) // not finished already (every member on a lost node)
      delayed_send(this, setup_.contribution_timeout, answer_timeout_atom::value, round);
  }

  // In one process: each member for its contribution, as a plain message, which the member
  // answers with one (member_answered): no response handler per member to allocate, register and
  // look up, a third of this handler's time at 256 members. What a request would report, a
  // member that is gone, its monitor does (member_failed). One timer for the round (begin())
  // rather than a timeout per member: each costs a registration with the actor clock.
  void ask_members(const group_plan& plan) {
    const send_batch batch; // one wake of the other scheduler threads for all members
    for (std::size_t position = 0; position < plan.members.size(); ++position) {
      const auto& member = plan.member_handles[position];
      const auto worker = static_cast<std::size_t>(std::max(0, plan.members[position]));
      if (worker >= member_addresses_.size())
        member_addresses_.resize(worker + 1);
      if (member && member_addresses_[worker] != member.address()) {
        member_addresses_[worker] = member.address(); // a worker that took its index's place
        monitor(member);                              // a member already gone is reported at once
      }
      send(member, contribute_atom::value, plan.round, plan.step);
    }
  }

  void member_answered(const contribution& answer) {
    const auto found = rounds_.find(answer.round);
    if (found == rounds_.end())
      return; // given up (timed out) and finished without it
    const auto& positions = found->second.position_of;
    const auto worker = static_cast<std::size_t>(answer.worker);
    if (answer.worker >= 0 && worker < positions.size() && positions[worker] >= 0)
      answered(answer.round, static_cast<std::size_t>(positions[worker]), answer, {});
  }

  // In one process: the member at `source` stopped or answered with an error; every round that
  // still waits for it goes on without it.
  void member_failed(const caf::actor_addr& source, const std::string& what) {
    const auto known = std::find(member_addresses_.begin(), member_addresses_.end(), source);
    if (!source || known == member_addresses_.end())
      return;
    const auto worker = static_cast<std::size_t>(known - member_addresses_.begin());
    std::vector<std::uint64_t> rounds;
    for (const auto& [round, state] : rounds_.in_flight())
      rounds.push_back(round);
    for (std::uint64_t round : rounds) {
      const auto found = rounds_.find(round); // answered() may have finished an earlier one
      if (found == rounds_.end() || worker >= found->second.position_of.size() ||
          found->second.position_of[worker] < 0)
        continue;
      answered(round, static_cast<std::size_t>(found->second.position_of[worker]), std::nullopt,
               "worker " + std::to_string(worker) + " " + what);
    }
  }

  // Across processes: one request per node of the round, to its node reducer, which asks its
  // members (one message over the network per node, not per member).
  void ask_nodes(std::uint64_t round, std::uint64_t step, std::vector<std::int32_t> members) {
    std::map<int, std::vector<std::size_t>> positions; // by node
    for (std::size_t position = 0; position < members.size(); ++position) {
      const int node = node_of(members[position]);
      if (lost_nodes_.count(node) > 0)
        answered(round, position, std::nullopt, "its node was lost");
      else if (node < 0 || static_cast<std::size_t>(node) >= setup_.node_reducers.size() ||
               !setup_.node_reducers[static_cast<std::size_t>(node)])
        answered(round, position, std::nullopt, "its node has no reducer");
      else
        positions[node].push_back(position);
    }
    for (auto& [node, at] : positions) {
      contribution_asks asks{round, step, {}};
      for (std::size_t position : at)
        asks.workers.push_back(members[position]);
      request(setup_.node_reducers[static_cast<std::size_t>(node)], caf::infinite, asks)
          .then(
              [this, round, at](const contribution_answers& got) {
                const auto timer = timed();
                node_answered(round, at, got);
              },
              [this, round, at, node = node](caf::error& failure) {
                const std::string why = "node " + std::to_string(node) +
                                        " lost or not answering: " + system().render(failure);
                for (std::size_t position : at)
                  answered(round, position, std::nullopt, why);
              });
    }
  }

  // A node reducer's answers for the members at `positions` of `round`.
  void node_answered(std::uint64_t round, const std::vector<std::size_t>& positions,
                     const contribution_answers& got) {
    auto found = rounds_.find(round);
    if (found == rounds_.end())
      return;
    const auto members = found->second.plan.members; // answered() may end the round
    auto position_of = [&](std::int32_t worker) {
      for (std::size_t position : positions)
        if (members[position] == worker)
          return std::optional<std::size_t>(position);
      return std::optional<std::size_t>();
    };
    for (const auto& answer : got.answers)
      if (const auto position = position_of(answer.worker))
        answered(round, *position, answer, {});
    for (std::size_t i = 0; i < got.failed.size(); ++i)
      if (const auto position = position_of(got.failed[i]))
        answered(round, *position, std::nullopt,
                 i < got.reasons.size() ? got.reasons[i] : "no reason given");
  }

  void answered(std::uint64_t round, std::size_t position,
                const std::optional<contribution>& answer, std::string failure) {
    auto found = rounds_.find(round);
    if (found == rounds_.end())
      return;
    auto& state = found->second;
    if (state.settled[position])
      return; // given up when its node was lost; the late answer changes nothing
    state.settled[position] = true;
    state.answers[position] = answer;
    if (!failure.empty()) {
      state.plan_failures.unanswered.push_back(state.plan.members[position]);
      state.plan_failures.reasons.push_back(std::move(failure));
    }
    if (--state.outstanding == 0)
      contributions_in(found);
  }

  // The members of `round` that have not answered within contribution_timeout are given up
  // (each counts as unanswered, as a failed request would).
  void answers_timed_out(std::uint64_t round) {
    auto found = rounds_.find(round);
    if (found == rounds_.end())
      return; // finished in time
    const auto waiting = found->second.settled;
    const std::string why =
        "no contribution within " + std::to_string(setup_.contribution_timeout.count()) + " ms";
    for (std::size_t position = 0; position < waiting.size(); ++position) {
      if (waiting[position])
        continue;
      answered(round, position, std::nullopt, why);
      if (!rounds_.holds(round))
        return; // that was the last one: the round is finished
    }
  }

  void contributions_in(aggregator_rounds::map::iterator found) {
    auto& state = found->second;
    state.report.round = state.plan.round;
    state.report.unanswered = state.plan_failures.unanswered;
    state.report.unanswered_reasons = state.plan_failures.reasons;
    if (state.report.unanswered.size() >= state.plan.members.size()) {
      // Nothing to reduce and no one to give a result to: aborted, not completed.
      state.report.result = {comm::outcome::peer_lost, "no member answered"};
      state.report.aborted = true;
      finish(found);
      return;
    }
    // No exception may escape: it would kill the actor with the round unreported.
    try {
      const auto inputs = weigh_answers(state.plan, state.answers, state.report);
      // Across processes even a round with nothing to reduce goes through the nodes: a result
      // buffer cannot travel to another process, and every member needs one.
      if (distributed()) {
        order_reductions(state, inputs);
        return; // reported once every node answered
      }
      if (setup_.parameter_server) {
        apply_at_server(state, inputs);
        return; // reported once the server answered
      }
      reduce_and_deliver(state, inputs, state.report);
    } catch (const std::exception& failure) {
      state.report.result = {comm::outcome::failed,
                             std::string("aggregator failed: ") + failure.what()};
    }
    finish(found);
  }

  void finish(aggregator_rounds::map::iterator found) {
    auto& report = found->second.report;
    report.seconds =
        std::chrono::duration<double>(clock_type::now() - found->second.started).count();
    send(coordinator_, std::move(report));
    rounds_.close(found);
  }

  // The members' weighted sum into a result buffer; null if the reduction failed (the report
  // says why).
  comm::shared_buffer reduce(const aggregator_round& state,
                             const std::vector<comm::weighted_input>& inputs, group_done& report) {
    auto result = setup_.results->acquire();
    const auto reduce_start = clock_type::now();
    const auto costs_start = setup_.costs ? setup_.costs->now() : 0; // on the costs' clock
    if (inputs.empty()) {
      try { // nobody had anything: a zero update
        setup_.results->where().zero(result->data(), result->size() * sizeof(float));
      } catch (const std::exception& failure) {
        report.result = {comm::outcome::failed,
                         std::string("zeroing the result failed: ") + failure.what()};
      }
    } else {
      comm::operation_options options{state.plan.round, setup_.contribution_timeout};
      options.buckets = setup_.buckets;
      report.result =
          setup_.plane->group_reduce(inputs, nullptr, result->data(), result->size(), options)
              ->wait(setup_.contribution_timeout);
    }
    const auto reduced = clock_type::now() - reduce_start;
    report.reduce_seconds = std::chrono::duration<double>(reduced).count();
    if (setup_.costs)
      setup_.costs->reduction_nanoseconds.fetch_add(setup_.costs->nested_since(costs_start),
                                                    std::memory_order_relaxed);
    report.bytes = (inputs.size() + 1) * result->size() * sizeof(float);
    // A failed reduction leaves garbage: nobody gets it, and the coordinator ends the run.
    return report.result.ok() ? result : nullptr;
  }

  void reduce_and_deliver(const aggregator_round& state,
                          const std::vector<comm::weighted_input>& inputs, group_done& report) {
    const auto result = reduce(state, inputs, report);
    const auto members = static_cast<std::uint32_t>(report.members.size());
    if (!result) {
      // A member's backward pass failed while the round read its gradient (gradient buckets):
      // as when a node is lost across processes, the round is aborted, every member skips it,
      // and the run goes on without the member (its actor has quit).
      if (report.result.kind() == comm::outcome::peer_lost && report.in_backward > 0) {
        report.aborted = true;
        for (std::size_t position : answered_positions(state.answers))
          send(state.plan.member_handles[position],
               round_result{state.plan.round, nullptr, members});
      }
      return;
    }
    const round_result delivered{state.plan.round, result, members, state.plan.lr_scale};
    const send_batch batch;
    for (std::size_t position : answered_positions(state.answers))
      send(state.plan.member_handles[position], delivered);
  }

  // async: the round has one member (async_policy). Its gradient, reduced with weight 1 (a copy,
  // bit for bit), goes to the parameter server, which applies it and writes its parameters after
  // it into the same buffer: that is the round's result. A member with nothing to give gets the
  // parameters as they are. The round is reported once the server answered.
  void apply_at_server(aggregator_round& state, const std::vector<comm::weighted_input>& inputs) {
    const auto positions = answered_positions(state.answers);
    HERD_CHECK(positions.size() <= 1,
               "an async round with " << positions.size() << " answering members");
    const std::uint64_t round = state.plan.round;
    if (positions.empty()) { // the member did not answer: nothing to apply, nobody to tell
      finish(rounds_.find(round));
      return;
    }
    const auto result = reduce(state, inputs, state.report);
    if (!result) {
      finish(rounds_.find(round));
      return;
    }
    const auto member = state.plan.member_handles[positions.front()];
    server_update update{round, state.plan.members[positions.front()], result, !inputs.empty(),
                         state.plan.lr_scale};
    request(setup_.parameter_server, setup_.contribution_timeout, std::move(update))
        .then(
            [this, round, result, member,
             lr_scale = state.plan.lr_scale](const server_applied& applied) {
              auto found = rounds_.find(round);
              if (found == rounds_.end())
                return;
              auto& report = found->second.report;
              if (applied.applied)
                report.server_staleness.push_back(applied.staleness);
              report.bytes += 2 * result->size() * sizeof(float); // the step and the copy out
              send(member, round_result{round, result, 1, lr_scale});
              finish(found);
            },
            [this, round](caf::error& failure) {
              auto found = rounds_.find(round);
              if (found == rounds_.end())
                return;
              found->second.report.result = {comm::outcome::failed,
                                             "parameter server: " + system().render(failure)};
              finish(found);
            });
  }

  // -- across processes -------------------------------------------------------------------------

  void order_reductions(aggregator_round& state, const std::vector<comm::weighted_input>& inputs) {
    std::map<int, reduce_order> orders; // by node
    const auto members = static_cast<std::uint32_t>(state.report.members.size());
    for (std::size_t position : answered_positions(state.answers)) {
      const std::int32_t worker = state.plan.members[position];
      auto& order = orders[node_of(worker)];
      order.deliver_to.push_back(worker);
    }
    for (const auto& input : inputs) {
      auto& order = orders[node_of(input.rank)];
      order.inputs.push_back(input.rank);
      order.weights.push_back(input.weight);
    }
    for (const auto& [node, order] : orders) {
      state.group_nodes.push_back(node);
      if (!reachable(node))
        state.reduce_failure = {comm::outcome::peer_lost,
                                "node " + std::to_string(node) + " was lost"};
    }
    state.reduce_started = clock_type::now();
    const std::uint64_t round = state.plan.round;
    // A reduction between nodes takes its place in the global order now, just before its orders
    // go out: every node of the group gets a sequence number, and every live one gets its order.
    comm::reduction_tickets tickets;
    if (setup_.sequencer && state.reduce_failure.ok() && state.group_nodes.size() > 1)
      tickets = setup_.sequencer->take(setup_.generation, state.group_nodes);
    std::size_t position = 0;
    for (auto& [node, order] : orders) {
      order.round = round;
      order.nodes = state.group_nodes;
      order.generation = setup_.generation;
      order.members = members;
      order.lr_scale = state.plan.lr_scale;
      if (!tickets.sequences.empty()) {
        order.ticket = tickets.ticket;
        order.sequence = tickets.sequences[position];
      }
      ++position;
      if (!reachable(node))
        continue;
      if (!state.reduce_failure.ok()) {
        // The round is lost already: the live nodes only hold it, so that the commit to skip
        // reaches their members, and nobody waits in the data plane for the lost node.
        order.inputs.clear();
        order.weights.clear();
        order.nodes = {node};
      }
      state.reducing_nodes.insert(node);
      request(setup_.node_reducers[static_cast<std::size_t>(node)], setup_.reduce_timeout,
              std::move(order))
          .then([this, round, node = node](
                    const reduce_done& answer) { node_reduced(round, node, answer); },
                [this, round, node = node](caf::error& failure) {
                  node_reduced(round, node,
                               {round, node, status_of(failure, system().render(failure)), 0.0});
                });
    }
    // Each node's pre-reduction reads its inputs and writes one buffer; the ring among k nodes
    // sends 2(k-1)/k of a buffer from every node, 2(k-1) buffers in all.
    const std::size_t nodes = state.group_nodes.size();
    const std::size_t ring_buffers = nodes > 1 ? 2 * (nodes - 1) : 0;
    state.report.bytes =
        (inputs.size() + nodes + ring_buffers) * setup_.results->count() * sizeof(float);
    if (state.reducing_nodes.empty())
      commit(rounds_.find(round));
  }

  void node_reduced(std::uint64_t round, int node, const reduce_done& reply) {
    auto found = rounds_.find(round);
    if (found == rounds_.end() || found->second.reducing_nodes.erase(node) == 0)
      return;
    auto& state = found->second;
    const comm::status& answer = reply.result;
    if (answer.ok())
      state.node_seconds = std::min(state.node_seconds.value_or(reply.seconds), reply.seconds);
    if (!answer.ok() && state.reduce_failure.ok()) {
      state.reduce_failure = {answer.kind(),
                              "node " + std::to_string(node) + ": " + answer.message()};
      cancel_reductions(round, state, "node " + std::to_string(node) + " failed the round");
    }
    if (state.reducing_nodes.empty())
      commit(found);
  }

  // Every node of the group delivers the result, or (one failed) every node tells its members to
  // skip the round.
  void commit(aggregator_rounds::map::iterator found) {
    auto& state = found->second;
    const bool deliver = state.reduce_failure.ok();
    for (int node : state.group_nodes)
      if (lost_nodes_.count(node) == 0)
        send(setup_.node_reducers[static_cast<std::size_t>(node)], commit_atom::value,
             state.plan.round, deliver);
    state.report.reduce_seconds =
        deliver && state.node_seconds
            ? *state.node_seconds
            : std::chrono::duration<double>(clock_type::now() - state.reduce_started).count();
    if (!deliver) {
      state.report.result = state.reduce_failure;
      state.report.aborted = true;
    }
    finish(found);
  }

  // A node is gone: its members will not answer and its part of a reduction will not come.
  void on_down(const caf::down_msg& down) {
    if (!distributed()) {
      member_failed(down.source, "stopped: " + system().render(down.reason));
      return;
    }
    int node = -1;
    for (std::size_t i = 0; i < setup_.node_reducers.size(); ++i)
      if (setup_.node_reducers[i].address() == down.source)
        node = static_cast<int>(i);
    if (node < 0 || !lost_nodes_.insert(node).second)
      return;
    const std::string why =
        "node " + std::to_string(node) + " lost: " + system().render(down.reason);
    std::vector<std::uint64_t> rounds;
    for (const auto& [round, state] : rounds_.in_flight())
      rounds.push_back(round);
    for (std::uint64_t round : rounds) {
      auto found = rounds_.find(round);
      if (found == rounds_.end())
        continue;
      // A copy: the last answer can finish the round, which erases its state.
      const auto members = found->second.plan.members;
      for (std::size_t position = 0; position < members.size(); ++position)
        if (node_of(members[position]) == node)
          answered(round, position, std::nullopt, why);
      abandon_reduction(round, node, why);
    }
  }

  // The other nodes of the group may wait for the lost one until the data-plane timeout; their
  // members are told to skip the round now instead.
  void abandon_reduction(std::uint64_t round, int node, const std::string& why) {
    auto found = rounds_.find(round);
    if (found == rounds_.end())
      return;
    auto& state = found->second;
    if (std::find(state.group_nodes.begin(), state.group_nodes.end(), node) ==
            state.group_nodes.end() ||
        state.reducing_nodes.empty())
      return;
    if (state.reduce_failure.ok())
      state.reduce_failure = {comm::outcome::peer_lost, why};
    cancel_reductions(round, state, why);
    state.reducing_nodes.clear();
    commit(found);
  }

  // The round is lost: the nodes still reducing it would wait in the data plane for the one that
  // failed or was lost until their deadline; they end their part now (a lost node's reducer
  // hears nothing).
  void cancel_reductions(std::uint64_t round, const aggregator_round& state,
                         const std::string& why) {
    for (int node : state.reducing_nodes)
      if (lost_nodes_.count(node) == 0)
        send(setup_.node_reducers[static_cast<std::size_t>(node)], cancel_atom::value, round, why);
  }

  aggregator_setup setup_;
  caf::actor coordinator_;
  aggregator_rounds rounds_;
  std::set<int> lost_nodes_;
  std::set<caf::actor_addr> watched_; // node reducers monitored
  std::vector<caf::actor_addr> member_addresses_; // in one process: each worker's, monitored
};

} // namespace

caf::actor spawn_aggregator(caf::actor_system& system, aggregator_setup setup,
                            const caf::actor& coordinator) {
  return system.spawn<aggregator_actor>(std::move(setup), coordinator);
}

} // namespace herd::actors
