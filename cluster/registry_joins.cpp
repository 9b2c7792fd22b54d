// The registry actor: a node joining the running job, and the data plane re-keyed; see
// registry_actor.hpp.
#include "cluster/registry_actor.hpp"

namespace herd::cluster {

caf::result<node_welcome> registry_actor::on_hello_running(const node_hello& hello) {
  const auto free =
      slots_.free([this](std::size_t node) { return nodes_[node].live && !nodes_[node].departed; });
  if (auto refusal =
          running_join_refusal(hello, free, ledger_.busy(), context_->config.train.workers))
    return refuse(hello, *refusal);
  node_entry entry = entry_for(hello);
  const auto index = nodes_.size();
  entry.slots = slots_.take(index, free, hello.workers);
  nodes_.push_back(std::move(entry));
  auto promise = nodes_.back().welcome;
  notice(label(index) + " asks to join the running job in place of lost " +
         worker_list(nodes_.back().slots) + name_clash(index));
  ledger_.enqueue(index);
  next_turn();
  return promise;
}

void registry_actor::next_turn() {
  if (over_)
    return;
  if (ledger_.rekey_due()) {
    begin_rekey();
    return;
  }
  const auto live = [this](std::size_t node) { return nodes_[node].live; };
  if (auto index = ledger_.next_departure(live)) {
    begin_departure(*index);
    return;
  }
  if (auto index = ledger_.next(live))
    begin_join(*index);
}

void registry_actor::begin_join(std::size_t index) {
  std::vector<std::size_t> peers;
  for (std::size_t other = 0; other < nodes_.size(); ++other)
    if (other != index && in_plane(nodes_[other]))
      peers.push_back(other);
  const auto generation = ledger_.begin(index, peers);
  welcome(index, true);
  rebuild_planes(generation, peers);
}

void registry_actor::rebuild_planes(std::uint32_t generation,
                                    const std::vector<std::size_t>& peers) {
  const auto timeout = std::chrono::milliseconds(context_->config.cluster.data_timeout_ms) +
                       std::chrono::seconds(10);
  for (std::size_t peer : peers)
    request(nodes_[peer].control, timeout,
            plane_rebuild{generation, ledger_.plane_nodes(), plane_key(generation)})
        .then([this, generation, peer](bool) { rebuilt(generation, peer, {}); },
              [this, generation, peer](caf::error& failure) {
                rebuilt(generation, peer,
                        status_of(failure, label(peer) + ": " + system().render(failure)));
              });
}

void registry_actor::rebuilt(std::uint32_t generation, std::size_t peer,
                             const comm::status& result) {
  const auto next = ledger_.answered(generation, peer, !result.ok());
  if (next == join_ledger::next_step::fail_join)
    join_failed("the data plane did not reconnect: " + result.message());
  else if (next == join_ledger::next_step::fail_rekey)
    rekey_failed(result.message());
  else if (next == join_ledger::next_step::rekeyed)
    send(coordinator_, plane_rekey{plane_rekey::connected, {}, topology()});
  else if (next == join_ledger::next_step::admit_join)
    admit_when_connected();
  else if (next == join_ledger::next_step::start_next)
    next_turn();
}

void registry_actor::admit_when_connected() {
  const auto joining = ledger_.joining();
  if (!joining || !nodes_[*joining].ready || !ledger_.admit())
    return;
  const auto& node = nodes_[*joining];
  node_admission admission;
  admission.node = static_cast<std::int32_t>(*joining);
  admission.name = node.hello.name;
  admission.workers = node.slots;
  admission.handles = node.workers;
  admission.topology = topology();
  send(coordinator_, std::move(admission));
}

cluster_topology registry_actor::topology() const {
  cluster_topology current;
  current.generation = ledger_.generation();
  current.worker_nodes = slots_.worker_nodes();
  for (const auto& entry : nodes_)
    current.node_reducers.push_back(entry.reducer);
  return current;
}

void registry_actor::join_failed(const std::string& why) {
  const auto index = *ledger_.joining();
  auto& node = nodes_[index];
  notice(label(index) + " could not join the running job: " + why);
  lose(node);
  node.turned_away = why;
  // The failed generation's keys will never be set: nodes still waiting for them stop now.
  keys_.fail_reads(plane_prefix(context_->job, ledger_.generation()) + "/");
  if (node.control)
    send(node.control, leave_atom::value, why);
  ledger_.end();
  next_turn();
}

void registry_actor::on_refusal(const plane_refusal& refusal) {
  const auto known = [this](std::int32_t node) {
    return node >= 0 && static_cast<std::size_t>(node) < nodes_.size() &&
           nodes_[static_cast<std::size_t>(node)].live;
  };
  // A node reports for itself only; a repeated report, or one of a generation older than the
  // newest (which has a key of its own), changes nothing.
  if (phase_ != registry_phase::running || over_ || !known(refusal.node) || !known(refusal.peer) ||
      sender_process() != nodes_[static_cast<std::size_t>(refusal.node)].process ||
      rekeys_ >= max_rekeys || !ledger_.want_rekey(refusal.generation))
    return;
  notice(label(static_cast<std::size_t>(refusal.node)) + " refused data-plane messages from " +
         label(static_cast<std::size_t>(refusal.peer)) + " (generation " +
         std::to_string(refusal.generation) + "): " + refusal.why);
  next_turn(); // re-keys now, or once the join under way has ended
}

void registry_actor::begin_rekey() {
  std::vector<std::size_t> nodes;
  for (std::size_t index = 0; index < nodes_.size(); ++index)
    if (in_plane(nodes_[index]))
      nodes.push_back(index);
  ++rekeys_;
  const auto generation = ledger_.begin_rekey(nodes);
  notice("re-keying the data plane (" + std::to_string(rekeys_) + " of at most " +
         std::to_string(max_rekeys) + " in a run): rounds pause while " +
         std::to_string(nodes.size()) + " nodes connect generation " + std::to_string(generation) +
         " with a fresh key");
  send(coordinator_, plane_rekey{plane_rekey::hold, {}, {}});
  rebuild_planes(generation, nodes);
}

void registry_actor::rekey_failed(const std::string& why) {
  const bool again = rekeys_ < max_rekeys;
  notice("the data plane could not be re-keyed: " + why +
         (again ? "; rounds stay paused until the next try, once every node has answered"
                : "; rounds go on through the generation in use"));
  keys_.fail_reads(plane_prefix(context_->job, ledger_.generation()) + "/");
  ledger_.end();
  if (again)
    ledger_.want_rekey(ledger_.generation());
  else
    send(coordinator_, plane_rekey{plane_rekey::failed, why, {}});
  next_turn();
}

void registry_actor::on_depart(const std::string& why) {
  on_leaving(why);
  const auto speaker = caf::actor_cast<caf::actor_addr>(current_sender());
  const auto found = std::find_if(nodes_.begin(), nodes_.end(), [&](const node_entry& node) {
    return node.live && node.link == speaker;
  });
  if (found == nodes_.end() || over_ || phase_ != registry_phase::running || !found->ready) {
    if (auto asking = caf::actor_cast<caf::actor>(current_sender()))
      send(asking, depart_atom::value, false);
    return;
  }
  const auto index = static_cast<std::size_t>(found - nodes_.begin());
  if (ledger_.leaving(index))
    return; // asked again: the first ask is answered
  ledger_.enqueue_departure(index);
  if (ledger_.joining() || ledger_.rekeying()) {
    const std::string under_way = ledger_.joining() ? "join" : "re-key";
    notice(label(index) + " asks to leave the job; it leaves once the " + under_way +
           " under way has ended");
    // The node waits for its turn however long that takes: every step of a join or a re-key is
    // bounded here, and a node that left first would break it.
    if (found->control)
      send(found->control, depart_atom::value, under_way);
  }
  next_turn();
}

void registry_actor::begin_departure(std::size_t index) {
  const auto& node = nodes_[index];
  if (node.control) // its turn: from now on it waits for its release as long as for a prompt one
    send(node.control, depart_atom::value);
  // The coordinator answers once the rounds in flight have ended; a round whose peer is lost
  // fails within cluster.data-timeout-ms.
  const auto timeout = std::chrono::milliseconds(context_->config.cluster.data_timeout_ms) +
                       std::chrono::seconds(10);
  request(coordinator_, timeout,
          node_departure{static_cast<std::int32_t>(index), node.hello.name, node.slots})
      .then([this, index](bool released) { departed(index, released); },
            [this, index](caf::error&) { departed(index, false); });
}

void registry_actor::departed(std::size_t index, bool released) {
  ledger_.end_departure();
  // Its workers are retired and it closes its data plane: the next join or re-key (which may
  // start at once) leaves it out, though its connection closes only later.
  if (released)
    nodes_[index].departed = true;
  if (nodes_[index].control)
    send(nodes_[index].control, depart_atom::value, released);
  next_turn();
}

} // namespace herd::cluster
