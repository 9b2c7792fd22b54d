// The node reducer actor; see node_reducer.hpp.
#include "cluster/node_reducer.hpp"

#include "actors/checkpoint_messages.hpp"
#include "actors/checkpoint_taker.hpp"
#include "actors/errors.hpp"
#include "actors/messages.hpp"
#include "actors/run_parts.hpp"
#include "actors/unexpected_messages.hpp"
#include "comm/sequencer.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "cluster/round_reduction.hpp"
#include "cluster/thread_set.hpp"

namespace herd::cluster {

// The actors of one process, which a cluster connects across processes.
using namespace herd::actors;

namespace {

using clock_type = std::chrono::steady_clock;
using reduced_atom = caf::atom_constant<caf::atom("reduced")>;
using prereduced_atom = caf::atom_constant<caf::atom("prereduced")>;
using moved_atom = caf::atom_constant<caf::atom("moved")>;

class node_reducer_actor : public caf::event_based_actor {
public:
  node_reducer_actor(caf::actor_config& config, node_reducer_setup setup)
      : caf::event_based_actor(config), setup_(std::move(setup)) {
    if (setup_.plane)
      planes_[setup_.generation] = {setup_.plane, setup_.plane_nodes};
    setup_.plane = nullptr; // planes_ holds it
  }

  const char* name() const override { return "herd.node_reducer"; }

  void on_exit() override {
    // Reductions and transfers still on the wire end now, not at their deadline: their threads
    // are joined when this actor goes, and a node that left in the middle of a round waited for
    // peers that had given the round up (30 s by default) before its process could exit.
    const std::string why = "node " + std::to_string(setup_.node) + " is shutting down";
    for (auto& [round, held] : held_)
      if (held.plane && !held.reduced)
        held.plane->cancel(round, why);
    for (auto& [tag, pending] : transfers_)
      if (pending.plane)
        pending.plane->cancel(tag, why);
    gate_->close(); // reductions waiting for their turn end now, not at their deadline
    held_.clear();
    transfers_.clear();
    setup_.workers.clear();
  }

  caf::behavior make_behavior() override {
    // The coordinator's process addresses it: what no handler takes is dropped in a line.
    set_default_handler(
        actors::drop_unexpected("the node reducer", [this](const std::string& text) {
          if (setup_.notice)
            setup_.notice(text);
        }));
    return {
        [this](reduce_order& order) -> caf::result<reduce_done> { return begin(std::move(order)); },
        [this](reduced_atom, std::uint64_t round, const comm::status& result, double seconds) {
          finished(round, result, seconds);
        },
        [this](prereduced_atom, std::uint64_t round) { prereduced(round); },
        [this](commit_atom, std::uint64_t round, bool deliver) { commit(round, deliver); },
        [this](cancel_atom, std::uint64_t round, const std::string& why) { cancel(round, why); },
        [this](plane_update& update) { add_plane(std::move(update)); },
        [this](const state_transfer& order) -> caf::result<reduce_done> { return transfer(order); },
        [this](moved_atom, std::uint64_t tag, const comm::status& result, double seconds) {
          moved(tag, result, seconds);
        },
        [this](checkpoint_atom, const part_request& request) -> caf::result<part_record> {
          return write_part_of(request);
        },
        [this](const contribution_asks& asks) -> caf::result<contribution_answers> {
          return gather(asks);
        },
    };
  }

private:
  // Asks the local workers of `asks` for their contributions to its round, and answers once each
  // has answered or failed.
  caf::result<contribution_answers> gather(const contribution_asks& asks) {
    struct gathering {
      contribution_answers got;
      std::size_t waiting = 0;
      caf::typed_response_promise<contribution_answers> promise;
    };
    auto state = std::make_shared<gathering>();
    state->promise = make_response_promise<contribution_answers>();
    auto fail = [state](std::int32_t worker, std::string why) {
      state->got.failed.push_back(worker);
      state->got.reasons.push_back(std::move(why));
    };
    std::vector<std::pair<std::int32_t, caf::actor>> asked;
    for (std::int32_t worker : asks.workers) {
      const auto found = setup_.workers.find(worker);
      if (found == setup_.workers.end())
        fail(worker,
             "worker " + std::to_string(worker) + " is not on node " + std::to_string(setup_.node));
      else
        asked.emplace_back(worker, found->second);
    }
    state->waiting = asked.size();
    auto result = state->promise;
    if (asked.empty())
      state->promise.deliver(std::move(state->got));
    auto one_done = [state] {
      if (--state->waiting == 0)
        state->promise.deliver(std::move(state->got));
    };
    for (const auto& [worker, actor] : asked)
      request(actor, caf::infinite, contribute_atom::value, asks.round, asks.step)
          .then(
              [state, one_done](const contribution& answer) {
                state->got.answers.push_back(answer);
                one_done();
              },
              [this, fail, one_done, worker = worker](caf::error& failure) {
                fail(worker, system().render(failure));
                one_done();
              });
    return result;
  }

  // The local workers answer once at rest (the coordinator holds the rounds back); the file is
  // on disk before the answer, so the coordinator's file that lists it commits a whole
  // checkpoint. Written on this actor's thread: no round runs meanwhile.
  caf::result<part_record> write_part_of(const part_request& request) {
    std::vector<caf::actor> workers;
    for (const auto& [index, worker] : setup_.workers)
      workers.push_back(worker);
    auto promise = make_response_promise<part_record>();
    request_worker_states(
        *this, workers, setup_.data_timeout,
        [this, promise, request](worker_records records) mutable {
          std::vector<worker_record> states;
          for (const auto& record : records)
            states.push_back(*record);
          try {
            promise.deliver(
                write_part(setup_.parts, request.stem, request.keep_from, request.node, states));
          } catch (const std::exception& failure) {
            promise.deliver(make_error(herd_errc::checkpoint_failed, failure.what()));
          }
        },
        [promise](const std::string& why) mutable {
          promise.deliver(make_error(herd_errc::checkpoint_failed, why));
        });
    return promise;
  }

  struct held_round {
    reduce_order order;
    std::shared_ptr<comm::data_plane> plane; // between nodes; null when the group is this node
    comm::shared_buffer result;
    caf::response_promise promise;
    bool prereduced = false;      // the workers' send buffers are no longer read
    bool reduced = false;         // the result is complete
    bool committed = false;       // the members were told (the thread may still run)
    std::optional<bool> deferred; // a commit that came while the send buffers were still read
  };

  struct plane_entry {
    std::shared_ptr<comm::data_plane> plane;
    std::vector<int> plane_nodes; // the node index of each rank
  };

  // A new generation is used only once its join was admitted, and a failed join's is never used:
  // until an order names a newer one, rounds go on through the older.
  void add_plane(plane_update update) {
    planes_[update.generation] = {std::move(update.plane), std::move(update.plane_nodes)};
  }

  // The first order of a generation comes after every round ordered with an older one has
  // finished (the coordinator drains the rounds in flight before the state transfer, which is the
  // first use of a join's generation), so the older ones go.
  void use_generation(std::uint32_t generation) {
    planes_.erase(planes_.begin(), planes_.lower_bound(generation));
    gate_->forget_before(generation);
  }

  // The plane of `generation`; throws naming it when this node has not connected it.
  const plane_entry& plane_of(std::uint32_t generation) const {
    auto entry = planes_.find(generation);
    if (entry == planes_.end())
      throw std::runtime_error("data plane generation " + std::to_string(generation) +
                               " is not connected on node " + std::to_string(setup_.node));
    return entry->second;
  }

  // " (ranks of data plane generation 1: 0 = node 0, 1 = node 2, 2 = node 3)": the data plane's
  // errors name ranks, which after a join or a loss are no longer the nodes' numbers.
  std::string ranks_legend(std::uint32_t generation) const {
    const auto entry = planes_.find(generation);
    if (entry == planes_.end())
      return {};
    std::string legend = " (ranks of data plane generation " + std::to_string(generation) + ":";
    for (std::size_t rank = 0; rank < entry->second.plane_nodes.size(); ++rank)
      legend += (rank == 0 ? " " : ", ") + std::to_string(rank) + " = node " +
                std::to_string(entry->second.plane_nodes[rank]);
    return legend + ")";
  }

  static int rank_of(const plane_entry& entry, std::int32_t node, std::uint32_t generation) {
    auto found = std::find(entry.plane_nodes.begin(), entry.plane_nodes.end(), node);
    if (found == entry.plane_nodes.end())
      throw std::runtime_error("node " + std::to_string(node) +
                               " is not in data plane generation " + std::to_string(generation));
    return static_cast<int>(found - entry.plane_nodes.begin());
  }

  // The ranks of `nodes` in the plane of `generation`, sorted (the ring's order on every node).
  std::vector<int> ranks_of(std::uint32_t generation,
                            const std::vector<std::int32_t>& nodes) const {
    const auto& entry = plane_of(generation);
    std::vector<int> ranks;
    ranks.reserve(nodes.size());
    for (std::int32_t node : nodes)
      ranks.push_back(rank_of(entry, node, generation));
    std::sort(ranks.begin(), ranks.end());
    return ranks;
  }

  caf::result<reduce_done> begin(reduce_order order) {
    const std::uint64_t round = order.round;
    // An order refused here still gives its place in the order back, so later ones go on.
    if (held_.count(round) > 0) {
      gate_->done(order.generation, order.sequence);
      return refusal(round, "round already ordered on this node");
    }
    std::shared_ptr<comm::data_plane> plane;
    std::vector<int> ranks;
    if (order.nodes.size() > 1) {
      try {
        ranks = ranks_of(order.generation, order.nodes);
        plane = plane_of(order.generation).plane;
        use_generation(order.generation);
      } catch (const std::exception& failure) {
        gate_->done(order.generation, order.sequence);
        // The aggregator aborts the round on this refusal, and its commit to skip finds no round
        // here: this node's members are told now (a worker stopping waits for every result).
        for (std::int32_t worker : order.deliver_to)
          if (auto handle = setup_.workers.find(worker); handle != setup_.workers.end())
            send(handle->second, round_result{round, nullptr, order.members});
        return refusal(round, failure.what());
      }
    }
    auto& held = held_[round];
    held.order = std::move(order);
    held.plane = plane;
    held.result = setup_.results->acquire();
    held.promise = make_response_promise();
    round_reduction job;
    job.round = round;
    job.local = setup_.local;
    job.plane = std::move(plane);
    for (std::size_t i = 0; i < held.order.inputs.size(); ++i)
      job.inputs.push_back({held.order.inputs[i], held.order.weights[i]});
    job.ranks = std::move(ranks);
    job.result = held.result->data();
    job.count = held.result->size();
    job.timeout = setup_.data_timeout;
    job.buckets = setup_.buckets;
    // `result` keeps the buffer job.result points into alive while the thread reduces into it.
    threads_.run([self = address(), job = std::move(job), result = held.result, gate = gate_,
                  place = issue_place{held.order.generation, held.order.sequence}] {
      const auto start = clock_type::now();
      const auto reduced = reduce_round(job, *gate, place, [&] {
        if (auto reducer = caf::actor_cast<caf::actor>(self))
          caf::anon_send(reducer, prereduced_atom::value, job.round);
      });
      const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
      if (auto reducer = caf::actor_cast<caf::actor>(self))
        caf::anon_send(reducer, reduced_atom::value, job.round, reduced, seconds);
    });
    return held.promise;
  }

  // Another node failed the round: its reduction here ends now (the thread then answers).
  void cancel(std::uint64_t round, const std::string& why) {
    auto found = held_.find(round);
    if (found == held_.end() || !found->second.plane || found->second.reduced)
      return;
    auto& plane = *found->second.plane;
    const bool bucket_by_bucket = reduces_in_buckets(&plane, setup_.buckets);
    try {
      for (std::uint64_t tag : round_tags(round, setup_.buckets, bucket_by_bucket))
        plane.cancel(tag, why);
    } catch (const std::invalid_argument&) { // no tags: the reduction failed before it began
    }
  }

  void prereduced(std::uint64_t round) {
    auto found = held_.find(round);
    if (found == held_.end())
      return;
    found->second.prereduced = true;
    if (found->second.deferred)
      commit(round, *found->second.deferred);
  }

  void finished(std::uint64_t round, const comm::status& result, double seconds) {
    auto found = held_.find(round);
    if (found == held_.end())
      return;
    auto& held = found->second;
    held.prereduced = true; // also when the pre-reduction itself failed
    held.reduced = result.ok();
    held.promise.deliver(reduce_done{
        round, setup_.node,
        result.ok()
            ? result
            : comm::status{result.kind(), result.message() + ranks_legend(held.order.generation)},
        seconds});
    if (!result.ok())
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
                              held.order.members, held.order.lr_scale};
    for (std::int32_t worker : held.order.deliver_to) {
      auto handle = setup_.workers.find(worker);
      if (handle != setup_.workers.end())
        send(handle->second, result);
    }
    held.committed = true;
    if (held.reduced || !held.promise.pending())
      held_.erase(found);
  }

  // -- a node joining the running job ------------------------------------------------------------

  struct transfer_state {
    state_transfer order;
    caf::typed_response_promise<reduce_done> promise;
    std::shared_ptr<comm::data_plane> plane; // the order's generation
    std::vector<int> ranks;                  // of `from` and `to`, sorted
    int root = 0;                            // the rank of `from`
    worker_state state;                      // sent, or received
    std::size_t adopting = 0;                // targets that have not answered yet
    comm::status result;
    double seconds = 0.0;
  };

  // The sending node exports the source worker's state (once its rounds are applied) and
  // broadcasts it; the receiving node receives it and has its new workers adopt it. Both answer
  // once their part is done.
  caf::result<reduce_done> transfer(const state_transfer& order) {
    transfer_state pending;
    try {
      const auto& entry = plane_of(order.generation);
      pending.plane = entry.plane;
      pending.root = rank_of(entry, order.from, order.generation);
      pending.ranks = ranks_of(order.generation, {order.from, order.to});
      use_generation(order.generation);
    } catch (const std::exception& failure) {
      return refusal(order.tag, failure.what());
    }
    const bool sending = setup_.node == order.from;
    if (!sending && setup_.node != order.to)
      return refusal(order.tag, "this node takes no part in the transfer");
    if (transfers_.count(order.tag) > 0)
      return refusal(order.tag, "transfer already ordered on this node");
    if (!sending && setup_.optimizer_state == 0) // a state of its size is received
      return refusal(order.tag, "this node's reducer was not told its optimizer's state size");
    pending.order = order;
    pending.promise = make_response_promise<reduce_done>();
    auto promise = transfers_.emplace(order.tag, std::move(pending)).first->second.promise;
    if (!sending) {
      broadcast(order.tag,
                worker_state::make(setup_.results->count(), setup_.optimizer_state, 0, 0, 0));
      return promise;
    }
    auto source = setup_.workers.find(order.source);
    if (source == setup_.workers.end()) {
      transfers_.erase(order.tag);
      return refusal(order.tag, "worker " + std::to_string(order.source) + " is not on this node");
    }
    request(source->second, setup_.data_timeout, export_atom::value)
        .then([this, tag = order.tag](const worker_state& state) { broadcast(tag, state); },
              [this, tag = order.tag](caf::error& failure) {
                moved(tag,
                      status_of(failure, "worker state export failed: " + system().render(failure)),
                      0.0);
              });
    return promise;
  }

  // Sends the state, or receives it into `state`, over the transfer's plane on a thread of its
  // own; moved() hears when it is done.
  void broadcast(std::uint64_t tag, const worker_state& state) {
    auto found = transfers_.find(tag);
    if (found == transfers_.end())
      return;
    auto& pending = found->second;
    pending.state = state;
    threads_.run([self = address(), plane = pending.plane, ranks = pending.ranks,
                  root = pending.root, tag, data = state.data, timeout = setup_.data_timeout] {
      const auto start = clock_type::now();
      const auto copied =
          plane->broadcast(data->data(), data->size(), ranks, root, {tag, timeout})->wait(timeout);
      const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
      if (auto reducer = caf::actor_cast<caf::actor>(self))
        caf::anon_send(reducer, moved_atom::value, tag, copied, seconds);
    });
  }

  void moved(std::uint64_t tag, const comm::status& result, double seconds) {
    auto found = transfers_.find(tag);
    if (found == transfers_.end())
      return;
    auto& pending = found->second;
    pending.seconds = seconds;
    if (!result.ok() || pending.order.from == setup_.node) {
      finish_transfer(tag, result);
      return;
    }
    // Copies: adopted() erases the entry once the last target answered.
    const auto targets = pending.order.targets;
    const auto state = pending.state;
    if (targets.empty()) {
      finish_transfer(tag, {});
      return;
    }
    pending.adopting = targets.size();
    for (std::int32_t target : targets) {
      auto worker = setup_.workers.find(target);
      if (worker == setup_.workers.end()) {
        adopted(tag, {comm::outcome::invalid_argument,
                      "worker " + std::to_string(target) + " is not on this node"});
        continue;
      }
      request(worker->second, setup_.data_timeout, adopt_atom::value, state)
          .then([this, tag](bool) { adopted(tag, {}); },
                [this, tag](caf::error& failure) {
                  adopted(tag, status_of(failure, system().render(failure)));
                });
    }
  }

  void adopted(std::uint64_t tag, const comm::status& result) {
    auto found = transfers_.find(tag);
    if (found == transfers_.end())
      return;
    auto& pending = found->second;
    if (!result.ok() && pending.result.ok())
      pending.result = result;
    if (--pending.adopting == 0)
      finish_transfer(tag, pending.result);
  }

  void finish_transfer(std::uint64_t tag, const comm::status& result) {
    auto found = transfers_.find(tag);
    if (found == transfers_.end())
      return;
    const auto& ended = found->second;
    if (result.ok() && ended.order.to == setup_.node && setup_.notice) {
      char size[64];
      std::snprintf(size, sizeof size, " (%.1f MB in %.2f s)",
                    ended.state.data ? 4e-6 * static_cast<double>(ended.state.data->size()) : 0.0,
                    ended.seconds);
      setup_.notice(std::string(ended.order.targets.size() == 1 ? "worker " : "workers ") +
                    index_list(ended.order.targets) + " took worker " +
                    std::to_string(ended.order.source) + "'s model from node " +
                    std::to_string(ended.order.from) + size);
    }
    found->second.promise.deliver(reduce_done{tag, setup_.node, result, found->second.seconds});
    transfers_.erase(found);
  }

  // An order this node cannot carry out (a bad or repeated order): it fails alone.
  reduce_done refusal(std::uint64_t round, std::string why) const {
    return reduce_done{round, setup_.node, {comm::outcome::invalid_argument, std::move(why)}, 0.0};
  }

  node_reducer_setup setup_;
  // Reductions between nodes reach a plane that matches in issue order in their sequence order.
  std::shared_ptr<comm::issue_gate> gate_ = std::make_shared<comm::issue_gate>();
  std::map<std::uint32_t, plane_entry> planes_;       // by generation
  std::map<std::uint64_t, transfer_state> transfers_; // by tag
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

} // namespace herd::cluster
