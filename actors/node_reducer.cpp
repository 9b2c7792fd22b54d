// The node reducer actor; see node_reducer.hpp.
#include "actors/node_reducer.hpp"

#include "actors/messages.hpp"
#include "actors/thread_set.hpp"
#include "comm/gloo_plane.hpp"

#include <algorithm>
#include <optional>

namespace herd::actors {

namespace {

using clock_type = std::chrono::steady_clock;
using reduced_atom = caf::atom_constant<caf::atom("reduced")>;
using prereduced_atom = caf::atom_constant<caf::atom("prereduced")>;

class node_reducer_actor : public caf::event_based_actor {
public:
  node_reducer_actor(caf::actor_config& config, node_reducer_setup setup)
      : caf::event_based_actor(config), setup_(std::move(setup)) {}

  const char* name() const override { return "herd.node_reducer"; }

  void on_exit() override {
    held_.clear();
    setup_.workers.clear();
  }

  caf::behavior make_behavior() override {
    return {
        [this](reduce_order& order) -> caf::result<reduce_done> { return begin(std::move(order)); },
        [this](reduced_atom, std::uint64_t round, const std::string& error, double seconds) {
          finished(round, error, seconds);
        },
        [this](prereduced_atom, std::uint64_t round) { prereduced(round); },
        [this](commit_atom, std::uint64_t round, bool deliver) { commit(round, deliver); },
    };
  }

private:
  struct held_round {
    reduce_order order;
    comm::shared_buffer result;
    caf::response_promise promise;
    bool prereduced = false;      // the workers' send buffers are no longer read
    bool reduced = false;         // the result is complete
    bool committed = false;       // the members were told (the thread may still run)
    std::optional<bool> deferred; // a commit that came while the send buffers were still read
  };

  caf::result<reduce_done> begin(reduce_order order) {
    const std::uint64_t round = order.round;
    if (held_.count(round) > 0)
      return reduce_done{round, setup_.node, "round already ordered on this node", 0.0};
    auto& held = held_[round];
    held.order = std::move(order);
    held.result = setup_.results->acquire();
    held.promise = make_response_promise();
    threads_.run([self = address(), local = setup_.local, plane = setup_.plane,
                  result = held.result, inputs = held.order.inputs, weights = held.order.weights,
                  nodes = held.order.nodes, round, timeout = setup_.data_timeout] {
      const auto start = clock_type::now();
      std::string error;
      try {
        if (inputs.empty()) {
          std::fill(result->begin(), result->end(), 0.0f);
        } else {
          std::vector<comm::weighted_input> weighted;
          for (std::size_t i = 0; i < inputs.size(); ++i)
            weighted.push_back({inputs[i], weights[i]});
          auto work = local->group_reduce(weighted, result->data(), result->size());
          error = work->wait(timeout) ? work->error() : "local pre-reduction timed out";
        }
        if (auto reducer = caf::actor_cast<caf::actor>(self))
          caf::anon_send(reducer, prereduced_atom::value, round);
        if (error.empty() && nodes.size() > 1) {
          if (!plane)
            error = "the group spans " + std::to_string(nodes.size()) +
                    " nodes but this node has no data plane";
          else
            plane->group_allreduce(result->data(), result->size(), nodes, round, timeout);
        }
      } catch (const std::exception& failure) {
        error = failure.what();
      }
      const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
      if (auto reducer = caf::actor_cast<caf::actor>(self))
        caf::anon_send(reducer, reduced_atom::value, round, error, seconds);
    });
    return held.promise;
  }

  void prereduced(std::uint64_t round) {
    auto found = held_.find(round);
    if (found == held_.end())
      return;
    found->second.prereduced = true;
    if (found->second.deferred)
      commit(round, *found->second.deferred);
  }

  void finished(std::uint64_t round, const std::string& error, double seconds) {
    auto found = held_.find(round);
    if (found == held_.end())
      return;
    auto& held = found->second;
    held.prereduced = true; // also when the pre-reduction itself failed
    held.reduced = error.empty();
    held.promise.deliver(reduce_done{round, setup_.node, error, seconds});
    if (!error.empty())
      held.result = nullptr; // nobody gets garbage; the commit says skip
    if (held.committed)
      held_.erase(found); // the members were told already
    else if (held.deferred)
      commit(round, *held.deferred);
  }

  // A commit to deliver comes only after every node answered. A commit to skip may come while
  // this node still reduces (another node of the group was lost): the members are told as soon
  // as their send buffers are no longer read, and the reduction thread finishes on its own.
  void commit(std::uint64_t round, bool deliver) {
    auto found = held_.find(round);
    if (found == held_.end() || found->second.committed)
      return;
    auto& held = found->second;
    if (!held.prereduced) {
      held.deferred = deliver;
      return;
    }
    const round_result result{round, deliver && held.reduced ? held.result : nullptr,
                              held.order.members};
    for (std::int32_t worker : held.order.deliver_to) {
      auto handle = setup_.workers.find(worker);
      if (handle != setup_.workers.end())
        send(handle->second, result);
    }
    held.committed = true;
    if (held.reduced || !held.promise.pending())
      held_.erase(found);
  }

  node_reducer_setup setup_;
  std::map<std::uint64_t, held_round> held_;
  // One thread per reduction in flight: rounds of different groups may be in flight at once and
  // may meet the nodes in different orders, so one thread doing them in turn could deadlock
  // (node A waits in round 5 for B, B in round 6 for A). Every data-plane wait has a timeout, so
  // joining is bounded. Last: joined before the rest goes.
  thread_set threads_;
};

} // namespace

caf::actor spawn_node_reducer(caf::actor_system& system, node_reducer_setup setup) {
  return system.spawn<node_reducer_actor>(std::move(setup));
}

} // namespace herd::actors
