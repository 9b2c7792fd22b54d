// A node joining the running job; see node_join.hpp.
#include "cluster/node_join.hpp"

#include "actors/errors.hpp"
#include "actors/messages.hpp"
#include "actors/run_parts.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

namespace herd::cluster {

using namespace herd::actors;

namespace {

// Data-plane tags of state transfers lie above every round number.
constexpr std::uint64_t transfer_tag_base = std::uint64_t{1} << 47;

class node_join : public join_hook {
public:
  node_join(coordinator_port& coordinator, std::chrono::milliseconds transfer_timeout)
      : coordinator_(coordinator), transfer_timeout_(transfer_timeout) {}

  void admit(node_admission admission, const caf::actor& registry) override {
    auto& self = coordinator_.self();
    const comm::status refusal = refusal_of(admission);
    if (!refusal.ok()) {
      self.send(registry, join_done_atom::value, admission.node, refusal);
      return;
    }
    // The registry saw the node of these slots lost; its workers' down messages may still be on
    // their way to the coordinator.
    for (std::int32_t slot : admission.workers)
      coordinator_.lose_worker(slot, "its node was lost");
    if (!coordinator_.running()) { // that was the last worker
      self.send(registry, join_done_atom::value, admission.node, run_ending());
      return;
    }
    // Watched from now on: losing the new node ends the join at once, not at the transfer's
    // timeout.
    self.monitor(admission.topology.node_reducers[static_cast<std::size_t>(admission.node)]);
    for (const auto& handle : admission.handles)
      self.monitor(handle);
    // Before any plan that includes the new workers: each aggregator hears this from the
    // coordinator first, and messages from one sender arrive in order.
    for (const auto& aggregator : coordinator_.aggregators())
      self.send(aggregator, admission.topology);
    const auto in_flight = coordinator_.rounds_in_flight();
    coordinator_.notice("node " + std::to_string(admission.node) + " joins: " +
                        (in_flight == 0 ? std::string("rounds pause")
                                        : "rounds pause while the " + std::to_string(in_flight) +
                                              " in flight finish") +
                        ", then its workers take a live worker's model");
    joining_ = join_state{std::move(admission), registry};
    rounds_changed();
  }

  // The registry never re-keys while a join is under way (nor the reverse): the generation of one
  // would replace the other's.
  void rekey(const plane_rekey& step, const caf::actor& registry) override {
    switch (step.stage) {
      case plane_rekey::hold:
        rekey_ = rekey_state{registry, std::nullopt};
        break;
      case plane_rekey::connected:
        if (!rekey_)
          rekey_ = rekey_state{registry, std::nullopt};
        rekey_->topology = step.topology;
        rounds_changed();
        break;
      default: // failed: the rounds go on through the generation in use
        if (rekey_) {
          rekey_.reset();
          if (!holding())
            resume();
        }
    }
  }

  // The node's workers stay in the rounds in flight (its reducer and data plane serve them until
  // it hears `done`); no round starts meanwhile, and none after includes them.
  void depart(const node_departure& departure,
              std::function<void(const comm::status&)> done) override {
    const auto label = "node " + std::to_string(departure.node) + " (" + departure.name + ")";
    if (!coordinator_.running() || joining_ || rekey_ || departing_) {
      done({comm::outcome::aborted,
            !coordinator_.running() ? "the run is ending" : "a node is joining or leaving"});
      return;
    }
    const auto in_flight = coordinator_.rounds_in_flight();
    coordinator_.notice(label + " leaves the job: " +
                        (in_flight == 0 ? std::string("rounds pause")
                                        : "rounds pause while the " + std::to_string(in_flight) +
                                              " in flight finish"));
    departing_ = departure_state{departure, std::move(done)};
    rounds_changed();
  }

  bool holding() const override {
    return joining_.has_value() || rekey_.has_value() || departing_.has_value();
  }

  // Once the rounds in flight have drained, a live worker's state is the state after every round
  // so far: the transfer starts. A re-keyed generation is used from then on.
  void rounds_changed() override {
    if (departing_ && coordinator_.rounds_in_flight() == 0)
      let_go();
    if (rekey_ && rekey_->topology && coordinator_.rounds_in_flight() == 0)
      use_rekeyed();
    if (!joining_ || joining_->transferring || coordinator_.rounds_in_flight() > 0)
      return;
    if (!coordinator_.running()) {
      end(run_ending());
      return;
    }
    const auto live = coordinator_.live_workers();
    if (live.empty()) {
      end({comm::outcome::peer_lost, "no live worker to take the model from"});
      return;
    }
    transfer(live.front());
  }

  void worker_lost(int worker, const std::string& why) override {
    if (joining_ && joining_->transferring && joining_->source == worker)
      end({comm::outcome::peer_lost, "worker " + std::to_string(worker) +
                                          ", whose state the new workers were taking, was lost: " +
                                          why});
  }

  void actor_down(const caf::down_msg& down) override {
    if (!joining_)
      return;
    const auto& admission = joining_->admission;
    const auto& reducer =
        admission.topology.node_reducers[static_cast<std::size_t>(admission.node)];
    const bool joiner =
        reducer.address() == down.source ||
        std::any_of(admission.handles.begin(), admission.handles.end(),
                    [&](const caf::actor& handle) { return handle.address() == down.source; });
    if (joiner)
      end({comm::outcome::peer_lost,
           "it was lost while joining: " + coordinator_.self().system().render(down.reason)});
  }

private:
  struct join_state {
    node_admission admission;
    caf::actor registry; // hears (join_done_atom, node, comm::status)
    bool transferring = false;
    std::uint64_t tag = 0;    // the transfer's
    int source = -1;          // the live worker whose state the new workers adopt
    std::uint64_t rounds = 0; // rounds finished when it was taken
  };

  struct rekey_state {
    caf::actor registry;                      // hears (join_done_atom, -1, comm::status)
    std::optional<cluster_topology> topology; // once every node has connected it
  };

  struct departure_state {
    node_departure departure;
    std::function<void(const comm::status&)> done;
  };

  static comm::status run_ending() { return {comm::outcome::aborted, "the run is ending"}; }

  // No round is in flight: the departing node's workers are lost (the registry's notice of the
  // node's loss names them), and it may close its data plane. All of them while the rounds are
  // still held (a round decided after the first one's loss could take the others), and the
  // policy hears the new live set before the inputs it was held from (one of them may be an
  // arrival of a departed worker).
  void let_go() {
    for (std::int32_t slot : departing_->departure.workers)
      coordinator_.retire_worker(slot, "its node left the job");
    const departure_state leaving = std::move(*departing_);
    departing_.reset();
    leaving.done({});
    live_changed_ = true;
    if (!holding()) // a re-key that began meanwhile holds them until its generation is in use
      resume();
  }

  // The policy hears what it was held from; first the live set, if a departure changed it.
  void resume() { coordinator_.resume_rounds(std::exchange(live_changed_, false)); }

  // Rounds from now on use the re-keyed generation (every round of the old one has ended, so each
  // node drops it at the first order that names the new one).
  void use_rekeyed() {
    const rekey_state rekey = std::move(*rekey_);
    rekey_.reset();
    auto& self = coordinator_.self();
    if (!coordinator_.running()) {
      self.send(rekey.registry, join_done_atom::value, std::int32_t{-1}, run_ending());
      return;
    }
    for (const auto& aggregator : coordinator_.aggregators())
      self.send(aggregator, *rekey.topology);
    coordinator_.notice("data plane re-keyed: rounds go on through generation " +
                        std::to_string(rekey.topology->generation));
    self.send(rekey.registry, join_done_atom::value, std::int32_t{-1}, comm::status{});
    if (!holding()) // a departure under way resumes them when it has let its node go
      resume();
  }

  // Why `admission` cannot start now (a result that is not ok), or done.
  comm::status refusal_of(const node_admission& admission) const {
    const auto refused = [](std::string why) {
      return comm::status{comm::outcome::invalid_argument, std::move(why)};
    };
    const auto workers = coordinator_.worker_count();
    if (!coordinator_.running())
      return run_ending();
    if (joining_)
      return refused("another node is joining");
    if (departing_)
      return refused("a node is leaving");
    if (admission.workers.size() != admission.handles.size() || admission.workers.empty())
      return refused("the admission names " + std::to_string(admission.workers.size()) +
                     " slots for " + std::to_string(admission.handles.size()) + " workers");
    for (std::int32_t slot : admission.workers)
      if (slot < 0 || static_cast<std::size_t>(slot) >= workers)
        return refused("worker " + std::to_string(slot) + " is not a worker of this run");
    const auto& topology = admission.topology;
    const auto nodes = static_cast<std::int32_t>(topology.node_reducers.size());
    if (topology.worker_nodes.size() != workers || admission.node < 0 || admission.node >= nodes ||
        std::any_of(topology.worker_nodes.begin(), topology.worker_nodes.end(),
                    [nodes](std::int32_t node) { return node < 0 || node >= nodes; }))
      return refused("the admission's topology does not cover the run's " +
                     std::to_string(workers) + " workers");
    return {};
  }

  // The source exports its state once its step has ended, then both nodes move it; the join ends
  // when both have answered.
  void transfer(int source) {
    const auto& admission = joining_->admission;
    const auto& topology = admission.topology;
    state_transfer order;
    order.tag = transfer_tag_base + ++transfers_;
    order.generation = topology.generation;
    order.from = topology.worker_nodes.at(static_cast<std::size_t>(source));
    order.to = admission.node;
    order.source = source;
    order.targets = admission.workers;
    joining_->transferring = true;
    joining_->source = source;
    joining_->rounds = coordinator_.rounds_finished();
    joining_->tag = order.tag;
    struct parts {
      int outstanding = 2;
      comm::status result;
    };
    auto state = std::make_shared<parts>();
    auto& self = coordinator_.self();
    for (int node : {order.from, order.to}) {
      auto one_done = [this, state, node, tag = order.tag](const comm::status& result) {
        if (!result.ok() && state->result.ok())
          state->result = {result.kind(), "node " + std::to_string(node) + ": " + result.message()};
        if (--state->outstanding == 0 && joining_ && joining_->tag == tag)
          end(state->result);
      };
      self.request(topology.node_reducers.at(static_cast<std::size_t>(node)), transfer_timeout_,
                   order)
          .then(
              [one_done](const reduce_done& answer) { one_done(answer.result); },
              [&self, one_done](caf::error& failure) {
                one_done(status_of(failure, self.system().render(failure)));
              });
    }
  }

  // The transfer ended (or could not start): the new workers count as live from here on, or the
  // node is turned away; either way the policy hears what it was held from.
  void end(const comm::status& result) {
    if (!joining_)
      return;
    const join_state join = std::move(*joining_);
    joining_.reset();
    const auto& admission = join.admission;
    comm::status outcome = result;
    if (outcome.ok() && !coordinator_.running())
      outcome = run_ending();
    if (outcome.ok()) {
      for (std::size_t i = 0; i < admission.workers.size(); ++i)
        coordinator_.admit_worker(admission.workers[i], admission.handles[i], admission.name);
      coordinator_.notice(
          "node " + std::to_string(admission.node) + " (" + admission.name +
          ") joined the running job: worker" + (admission.workers.size() == 1 ? " " : "s ") +
          index_list(admission.workers) + " took worker " + std::to_string(join.source) +
          "'s model after round " + std::to_string(join.rounds));
    } else {
      coordinator_.notice("node " + std::to_string(admission.node) +
                          " could not join: " + outcome.message());
    }
    coordinator_.self().send(join.registry, join_done_atom::value, admission.node, outcome);
    coordinator_.resume_rounds(outcome.ok());
  }

  coordinator_port& coordinator_;
  std::chrono::milliseconds transfer_timeout_;
  std::optional<join_state> joining_;
  std::optional<rekey_state> rekey_;
  std::optional<departure_state> departing_;
  bool live_changed_ = false; // a departure retired workers; the next resume says so first
  std::uint64_t transfers_ = 0;
};

} // namespace

std::function<std::unique_ptr<join_hook>(coordinator_port&)>
node_joins(const config::run_config& config) {
  // The source waits for its step to end before it exports, then the state crosses the data
  // plane: two transfers' worth, and some.
  const auto transfer_timeout =
      std::chrono::milliseconds(2 * config.cluster.data_timeout_ms) + std::chrono::seconds(5);
  return [transfer_timeout](coordinator_port& coordinator) -> std::unique_ptr<join_hook> {
    return std::make_unique<node_join>(coordinator, transfer_timeout);
  };
}

} // namespace herd::cluster
