// The registry actor; see registry.hpp.
#include "cluster/end_of_run_waits.hpp"
#include "cluster/node_plane.hpp"
#include "cluster/registry_actor.hpp"

namespace herd::cluster {

caf::result<node_welcome> registry_actor::on_hello(const node_hello& hello) {
  if (auto refusal = hello_refusal(hello, context_->config.cluster, phase_, over_, nodes_.size()))
    return refuse(hello, *refusal);
  if (phase_ == registry_phase::running)
    return on_hello_running(hello);
  std::optional<std::size_t> part;
  if (resuming()) {
    auto claim = claim_part(hello, resume_parts(), claimed_parts(), context_->resume_file);
    if (!claim.part)
      return refuse(hello, claim.refusal);
    part = claim.part;
  }
  // Watched from now on: a node that leaves before the cluster forms must not be counted.
  nodes_.push_back(entry_for(hello));
  nodes_.back().part = part;
  count_nodes();
  if (!resuming() && !hello.parts.empty()) // a coordinator restarted without --resume?
    notice(label(nodes_.size() - 1) + unresumed_parts(hello));
  notice("node " + std::to_string(nodes_.size() - 1) + " (" + hello.name + ", " +
         count_of(hello.workers, "worker") + ") joined; " +
         (part ? "it holds part " + resume_parts()[*part].file + "; " : std::string()) +
         nodes_of_min_nodes(nodes_.size()) + name_clash(nodes_.size() - 1));
  auto promise = nodes_.back().welcome;
  if (resuming() ? nodes_.size() == resume_parts().size()
                 : cluster_complete(nodes_.size(), context_->config.cluster.min_nodes))
    form_cluster();
  return promise;
}

void registry_actor::on_ready(const node_ready& ready) {
  if (over_) { // the run ended while this node was connecting: it has nothing to do
    if (ready.control)
      request(ready.control, node_job_over_reply, job_over_atom::value, failure_, ending_)
          .then([](bool) {}, [](caf::error&) {});
    return;
  }
  const auto index = static_cast<std::size_t>(ready.node);
  if (ready.node < 0 || index >= nodes_.size() || nodes_[index].ready || !nodes_[index].answered)
    return;
  auto& node = nodes_[index];
  if (!node.live) { // turned away before it was ready: it has not heard why yet
    if (ready.control)
      send(ready.control, leave_atom::value, node.turned_away);
    return;
  }
  if (static_cast<int>(ready.workers.size()) != node.hello.workers) {
    notice(label(index) + " reported " + std::to_string(ready.workers.size()) + " workers, not " +
           std::to_string(node.hello.workers) + "; ignored");
    return;
  }
  node.ready = true;
  node.workers = ready.workers;
  node.reducer = ready.reducer;
  node.control = ready.control;
  monitor(node.reducer);
  count_nodes();
  notice(label(index) + " ready: " + worker_list(node.slots));
  if (phase_ == registry_phase::running) {
    if (ledger_.joining() == index)
      admit_when_connected();
    return;
  }
  if (std::all_of(nodes_.begin(), nodes_.end(), [](const auto& entry) { return entry.ready; }))
    start_run();
}

void registry_actor::on_set(const std::string& key, const bytes& value) {
  if (keys_.admits(sender_process()))
    keys_.set(key, value.data);
  else
    notice("ignored a rendezvous key from a process that is not a welcomed node");
}

// Why a rendezvous read of `process` is refused: a node whose join failed hears why (it was
// welcomed, and "for welcomed nodes only" read as if it had not been); `otherwise` else.
std::string registry_actor::read_refusal(const caf::node_id& process,
                                         const std::string& otherwise) const {
  for (const auto& node : nodes_)
    if (node.process == process && !node.turned_away.empty())
      return "the coordinator turned this node away: " + node.turned_away +
             "; start it again to try to join once more";
  return otherwise;
}

caf::result<bytes> registry_actor::on_get(const std::string& key) {
  const auto process = sender_process();
  if (!keys_.admits(process))
    return make_error(herd_errc::join_refused,
                      read_refusal(process, "the data plane's rendezvous is for welcomed nodes "
                                            "only"));
  if (const auto* value = keys_.find(key))
    return bytes{*value};
  auto promise = make_response_promise<bytes>();
  keys_.wait(key, [this, promise, key, process](const rendezvous_keys::value_type* value) mutable {
    if (value != nullptr)
      promise.deliver(bytes{*value});
    else
      // Only the reason: the store names the key, and a node leads its error with the reason.
      promise.deliver(make_error(
          herd_errc::join_refused,
          over_ ? "the run ended before it started" + over_why_
                : read_refusal(process, "the data plane generation failed on another node")));
  });
  return promise;
}

caf::result<bool, bytes> registry_actor::on_peek(const std::string& key) {
  const auto process = sender_process();
  if (!keys_.admits(process))
    return make_error(herd_errc::join_refused,
                      read_refusal(process, "the data plane's rendezvous is for welcomed nodes "
                                            "only"));
  const auto* value = keys_.find(key);
  return {value != nullptr, value != nullptr ? bytes{*value} : bytes{}};
}

void registry_actor::on_leaving(const std::string& why) {
  constexpr std::size_t longest = 1000;
  const auto speaker = caf::actor_cast<caf::actor_addr>(current_sender());
  for (auto& node : nodes_)
    if (node.live && node.link == speaker)
      node.farewell = why.size() <= longest ? why : why.substr(0, longest) + "...";
}

void registry_actor::on_stop() {
  if (phase_ == registry_phase::running) {
    send(coordinator_, stop_atom::value);
    return;
  }
  refuse_all(phase_ == registry_phase::connecting
                 ? "stopped while the nodes were connecting"
                 : "stopped while waiting for nodes (" + std::to_string(nodes_.size()) + " of " +
                       std::to_string(nodes_required()) + " had joined)",
             actors::stop_cause::interrupted);
}

caf::result<bool> registry_actor::on_job_over(const std::string& failure,
                                              const std::string& ending) {
  over_ = true;
  failure_ = failure;
  ending_ = ending;
  std::vector<caf::actor> controls;
  for (auto& node : nodes_) {
    if (!node.answered && node.live) // waiting for its turn to join
      answer(node, make_error(herd_errc::join_refused, "the job is over"));
    if (node.live && node.control)
      controls.push_back(node.control);
  }
  if (controls.empty())
    return true;
  // Only now: a promise takes the request's answer over.
  auto promise = make_response_promise<bool>();
  auto one_done = [promise,
                   outstanding = std::make_shared<std::size_t>(controls.size())]() mutable {
    if (--*outstanding == 0)
      promise.deliver(true);
  };
  for (const auto& control : controls)
    request(control, node_job_over_reply, job_over_atom::value, failure_, ending_)
        .then([one_done](bool) mutable { one_done(); },
              [one_done](caf::error&) mutable { one_done(); });
  return promise;
}

void registry_actor::on_join_done(std::int32_t node, const comm::status& result) {
  if (node < 0) { // a re-key: the coordinator uses its generation now, or the run is ending
    if (ledger_.rekeying()) {
      ledger_.end();
      next_turn();
    }
    return;
  }
  if (ledger_.joining() != static_cast<std::size_t>(node))
    return;
  if (!result.ok()) {
    join_failed(result.message());
    return;
  }
  ledger_.end();
  next_turn();
}

void registry_actor::on_down(const caf::down_msg& down) {
  auto lost = std::find_if(nodes_.begin(), nodes_.end(), [&](const node_entry& node) {
    return node.live && (node.reducer.address() == down.source || node.link == down.source);
  });
  if (lost == nodes_.end())
    return;
  const auto index = static_cast<std::size_t>(lost - nodes_.begin());
  lose(*lost);
  if (over_)
    return; // the job is over: nodes leave
  const std::string why = !lost->farewell.empty() ? lost->farewell
                          : down.reason           ? system().render(down.reason)
                                                  : std::string("it left the job");
  if (phase_ == registry_phase::gathering) {
    // Numbers are places in the list until the cluster forms: those after it move up one.
    std::string moved;
    for (std::size_t later = index + 1; later < nodes_.size(); ++later)
      moved += (moved.empty() ? "; " : ", ") + nodes_[later].hello.name + " is node " +
               std::to_string(later - 1) + " now";
    notice(label(index) + " left before the cluster formed: " + why + "; " +
           nodes_of_min_nodes(nodes_.size() - 1) + moved);
    nodes_.erase(lost);
  } else if (ledger_.joining() == index) {
    // Once admitted, the coordinator's transfer fails and says so (join_done).
    if (!ledger_.admitted())
      join_failed("it was lost while connecting: " + why);
  } else {
    lost_after_forming(index, why);
  }
}

registry_actor::node_entry registry_actor::entry_for(const node_hello& hello) {
  node_entry entry;
  entry.hello = hello;
  entry.link = caf::actor_cast<caf::actor_addr>(current_sender());
  entry.process = sender_process();
  monitor(entry.link);
  entry.welcome = make_response_promise();
  return entry;
}

void registry_actor::form_cluster() {
  phase_ = registry_phase::connecting;
  if (resuming()) { // each node hosts the workers of the part it holds
    std::vector<std::vector<std::int32_t>> node_slots;
    for (auto& node : nodes_) {
      node.slots = resume_parts()[*node.part].workers;
      node_slots.push_back(node.slots);
    }
    slots_.assign(node_slots);
  } else {
    std::vector<int> offered;
    for (const auto& node : nodes_)
      offered.push_back(node.hello.workers);
    auto node_slots = slots_.form(offered);
    for (std::size_t index = 0; index < nodes_.size(); ++index)
      nodes_[index].slots = std::move(node_slots[index]);
  }
  const auto workers = static_cast<int>(slots_.worker_nodes().size());
  {
    std::lock_guard<std::mutex> guard(context_->config_mutex);
    context_->config.train.workers = workers;
  }
  if (auto refusal = settings_refusal(context_->config, context_->data->train.size())) {
    refuse_all(*refusal);
    return;
  }
  // The command built this model once already (the settings were refused there if not).
  model_ = make_model(context_->config, context_->data->train);
  spawn_coordinator();
  ledger_.form(nodes_.size());
  for (std::size_t index = 0; index < nodes_.size(); ++index)
    welcome(index, false);
  notice("cluster formed: " + count_of(static_cast<int>(nodes_.size()), "node") + ", " +
         count_of(workers, "worker") + "; connecting the data plane");
  constexpr std::int32_t first_word_s = 15;
  delayed_send(this, std::chrono::seconds(first_word_s), plane_wait_atom::value, first_word_s);
}

void registry_actor::on_plane_wait(std::int32_t seconds) {
  if (over_ || phase_ != registry_phase::connecting)
    return;
  std::string waiting_for;
  std::size_t ready = 0;
  std::size_t live = 0;
  for (std::size_t index = 0; index < nodes_.size(); ++index) {
    if (!nodes_[index].live || nodes_[index].departed)
      continue;
    ++live;
    if (nodes_[index].ready)
      ++ready;
    else
      waiting_for += (waiting_for.empty() ? "" : ", ") + label(index);
  }
  notice(plane_waiting_text(seconds) + " (" + std::to_string(ready) + " of " +
         std::to_string(live) + " nodes connected; waiting for " + waiting_for + ")");
  constexpr std::int32_t word_every_s = 60;
  delayed_send(this, std::chrono::seconds(word_every_s), plane_wait_atom::value,
               seconds + word_every_s);
}

void registry_actor::spawn_coordinator() {
  // Each worker's `node` label in the metrics names the node that hosts it: the straggler's
  // machine.
  std::vector<std::string> worker_hosts;
  for (std::int32_t node : slots_.worker_nodes())
    worker_hosts.push_back(nodes_[static_cast<std::size_t>(node)].hello.name);
  coordinator_ =
      spawn_group_coordinator(system(), coordinator_setup_for(*context_, *model_, worker_hosts));
  coordinator_->attach_functor(
      [result = context_->result,
       failed = error_summary(context_->config, "")](const caf::error& reason) mutable {
        failed.error = "the group coordinator stopped: " + caf::to_string(reason);
        result->deliver(std::move(failed));
      });
}

void registry_actor::welcome(std::size_t index, bool running) {
  node_welcome welcome;
  welcome.node = static_cast<std::int32_t>(index);
  welcome.workers = nodes_[index].slots;
  welcome.generation = ledger_.generation();
  welcome.plane_nodes = ledger_.plane_nodes();
  welcome.running = running;
  // A node has its own token; the coordinator's is not passed around.
  welcome.settings = config::to_ini(config::without_secrets(context_->config));
  welcome.training_samples = context_->data->train.size();
  welcome.job = context_->job;
  welcome.coordinator = coordinator_;
  welcome.data_key = plane_key(welcome.generation);
  if (!running && nodes_[index].part)
    welcome.resume = resume_parts()[*nodes_[index].part];
  welcome.workers_on_machine = workers_on_machine_of(index);
  answer(nodes_[index], std::move(welcome));
}

std::int32_t registry_actor::workers_on_machine_of(std::size_t index) const {
  const auto& machine = nodes_[index].hello.machine;
  if (machine.empty())
    return 0;
  std::size_t workers = 0;
  for (const auto& node : nodes_)
    if (node.live && !node.departed && node.hello.machine == machine)
      workers += node.slots.size();
  return static_cast<std::int32_t>(workers);
}

void registry_actor::refuse_all(const std::string& why, actors::stop_cause stop_reason) {
  const auto code = stop_reason == actors::stop_cause::interrupted ? herd_errc::run_stopped
                                                                   : herd_errc::join_refused;
  for (auto& node : nodes_) {
    if (!node.answered)
      answer(node, make_error(code, why));
    else if (node.live && code == herd_errc::run_stopped) // welcomed, connecting the data plane
      if (auto link = caf::actor_cast<caf::actor>(node.link))
        send(link, run_stopped_atom::value, why);
  }
  // Nodes connecting the data plane wait for no one's address any more, and hear why.
  over_ = true;
  over_why_ = ": " + why;
  keys_.fail_reads("");
  context_->result->deliver(error_summary(context_->config, why, stop_reason));
}

void registry_actor::start_run() {
  // By slot: a resumed cluster's nodes hold the slots of their parts, in any order.
  std::vector<caf::actor> workers(slots_.worker_nodes().size());
  std::vector<caf::actor> reducers;
  for (const auto& node : nodes_) {
    for (std::size_t i = 0; i < node.slots.size(); ++i)
      workers[static_cast<std::size_t>(node.slots[i])] = node.workers[i];
    reducers.push_back(node.reducer);
  }
  auto aggregation = aggregator_setup_for(*context_, *model_, slots_.worker_nodes(), reducers);
  for (int i = 0; i < aggregator_count(context_->config); ++i)
    aggregators_.push_back(spawn_aggregator(system(), aggregation, coordinator_));
  evaluator_ = spawn_evaluator(system(), evaluator_setup_for(*context_, model_));
  run_start start{workers, aggregators_, evaluator_, caf::actor{}, {}, {}}; // no async
  start.node_reducers = aggregation.node_reducers;
  start.worker_nodes = aggregation.worker_nodes;
  send(coordinator_, std::move(start));
  phase_ = registry_phase::running;
  context_->started = true;
  count_nodes();
  if (cluster_metrics_)
    cluster_metrics_->formed();
}

void registry_actor::lost_after_forming(std::size_t index, const std::string& why) {
  // A node lost while it connected a joining node's plane will not answer: the join fails
  // (the others wait for its rank), and the next one need not wait for its answer.
  for (std::uint32_t generation : ledger_.owed_by(index))
    rebuilt(generation, index, {comm::outcome::peer_lost, label(index) + " was lost: " + why});
  const auto& node = nodes_[index];
  if (phase_ == registry_phase::running && !node.ready) { // waiting for its turn to join
    notice(label(index) + " left before it could join: " + why);
    return;
  }
  notice(label(index) + " lost: " + why + "; its " + worker_list(node.slots) +
         (node.slots.size() == 1 ? " is" : " are") + " down");
  if (phase_ != registry_phase::running)
    refuse_all(label(index) + " was lost before the run started: " + why);
}

void registry_actor::lose(node_entry& node) {
  if (node.live && node.answered && phase_ != registry_phase::gathering)
    keys_.expel(node.process);
  node.live = false;
  count_nodes();
}

void registry_actor::count_nodes() {
  // Once the job is over the nodes leave: the count stays at the end's, since nodes under the
  // required count read as nodes lost during the run.
  if (!cluster_metrics_ || over_)
    return;
  const auto in_cluster = std::count_if(nodes_.begin(), nodes_.end(), [this](const auto& node) {
    return node.live && (phase_ != registry_phase::running || node.ready);
  });
  cluster_metrics_->nodes(static_cast<std::size_t>(in_cluster));
}

caf::node_id registry_actor::sender_process() {
  return current_sender() ? current_sender()->node() : caf::node_id{};
}

void registry_actor::notice(const std::string& text) {
  if (context_->options.observer != nullptr)
    context_->options.observer->on_notice(text);
}

caf::error registry_actor::refuse(const node_hello& hello, const std::string& why) {
  notice("refused a node (" + printable(hello.name) + ", " + count_of(hello.workers, "worker") +
         "): " + why);
  return make_error(herd_errc::join_refused, why);
}

std::string registry_actor::label(std::size_t index) const {
  return "node " + std::to_string(index) + " (" + nodes_[index].hello.name + ")";
}

// Machines cloned from one image keep its host name, the default --name: the logs and the
// metrics' node label would not tell them apart.
std::string registry_actor::name_clash(std::size_t index) const {
  for (std::size_t other = 0; other < nodes_.size(); ++other)
    if (other != index && nodes_[other].live && !nodes_[other].departed &&
        nodes_[other].hello.name == nodes_[index].hello.name)
      return "; node " + std::to_string(other) + " is named " + nodes_[index].hello.name +
             " too: give each node a name of its own (herd node --name), or the logs and the "
             "metrics cannot tell them apart";
  return {};
}

std::string registry_actor::plane_key(std::uint32_t generation) {
  if (!context_->config.cluster.seals_data())
    return {};
  auto& key = plane_keys_[generation];
  if (key.empty()) {
    const comm::plane_key drawn = comm::random_plane_key();
    key.assign(drawn.begin(), drawn.end());
  }
  return key;
}

std::size_t registry_actor::nodes_required() const {
  return resuming() ? resume_parts().size()
                    : static_cast<std::size_t>(context_->config.cluster.min_nodes);
}

std::string registry_actor::nodes_of_min_nodes(std::size_t nodes) const {
  if (resuming())
    return std::to_string(nodes) + " of the " + std::to_string(resume_parts().size()) +
           " nodes that hold the checkpoint's parts";
  return std::to_string(nodes) + " of " + std::to_string(context_->config.cluster.min_nodes) +
         " nodes";
}

std::vector<bool> registry_actor::claimed_parts() const {
  std::vector<bool> claimed(resume_parts().size(), false);
  for (const auto& node : nodes_)
    if (node.part)
      claimed[*node.part] = true;
  return claimed;
}

caf::actor spawn_registry(caf::actor_system& system, std::shared_ptr<registry_context> context) {
  auto registry = system.spawn<registry_actor>(context);
  // A registry that stops before the run started (an exception in a handler, a kill) ends the
  // wait for the run with why: `herd coordinator` must not wait forever for nodes no one admits.
  // Once the run started, its group coordinator (which goes with the registry) has the summary.
  registry->attach_functor([&system, context](const caf::error& reason) {
    if (!context->started.load())
      context->result->deliver(
          error_summary(context->config, "the registry stopped: " + system.render(reason)));
  });
  return registry;
}

} // namespace herd::cluster
