// The registry actor; see registry.hpp.
#include "cluster/registry.hpp"

#include "actors/aggregator.hpp"
#include "actors/checkpoint_state.hpp"
#include "actors/checkpoint_writer.hpp"
#include "actors/errors.hpp"
#include "actors/evaluator.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/messages.hpp"
#include "actors/train_session.hpp"
#include "comm/buffer_pool.hpp"
#include "comm/sealing.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "cluster/admission.hpp"
#include "cluster/join_ledger.hpp"
#include "cluster/node_join.hpp"
#include "cluster/rendezvous_keys.hpp"
#include "cluster/run_assembly.hpp"

namespace herd::cluster {

// The actors of one process, which a cluster connects across processes.
using namespace herd::actors;

namespace {

using bytes = std::vector<char>;

class registry_actor : public caf::event_based_actor {
public:
  registry_actor(caf::actor_config& actor_config, std::shared_ptr<registry_context> context)
      : caf::event_based_actor(actor_config), context_(std::move(context)) {
    set_down_handler([this](caf::down_msg& down) { on_down(down); });
  }

  const char* name() const override { return "herd.registry"; }

  // The run's actors go with the registry: the system's shutdown waits for every one of them.
  void on_exit() override {
    for (const auto& aggregator : aggregators_)
      caf::anon_send_exit(aggregator, caf::exit_reason::user_shutdown);
    for (const auto& actor : {evaluator_, coordinator_})
      if (actor)
        caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    coordinator_ = nullptr;
    aggregators_.clear();
    evaluator_ = nullptr;
    nodes_.clear();
    // A promise holds this actor: one still waiting for a key (a rendezvous that failed) would
    // keep it alive forever.
    keys_.drop_reads("");
  }

  caf::behavior make_behavior() override {
    return {
        [this](const node_hello& hello) { return on_hello(hello); },
        [this](const node_ready& ready) { on_ready(ready); },
        [this](store_set_atom, const std::string& key, const bytes& value) { on_set(key, value); },
        [this](store_get_atom, const std::string& key) { return on_get(key); },
        [this](store_peek_atom, const std::string& key) { return on_peek(key); },
        [this](leave_atom, const std::string& why) { on_leaving(why); },
        [this](stop_atom) { on_stop(); },
        [this](job_over_atom) { return on_job_over(); },
        [this](join_done_atom, std::int32_t node, const comm::status& result) {
          on_join_done(node, result);
        },
        [this](const plane_refusal& refusal) { on_refusal(refusal); },
    };
  }

private:
  struct node_entry {
    node_hello hello;
    caf::response_promise welcome;
    std::vector<std::int32_t> slots; // the worker indices it hosts
    bool ready = false;
    std::vector<caf::actor> workers; // same order
    caf::actor reducer;
    caf::actor control;
    caf::actor_addr link;  // the node's joining actor: lives as long as the node's part of the job
    caf::node_id process;  // the node's process, as CAF knows it
    bool answered = false; // its welcome (or refusal) was delivered
    bool live = true;
    std::string turned_away;         // why its join failed
    std::string farewell;            // why it said it leaves, if it did
    std::optional<std::size_t> part; // resuming: the checkpoint part it holds
  };

  // -- handlers ----------------------------------------------------------------------------------

  caf::result<node_welcome> on_hello(const node_hello& hello) {
    if (auto refusal = hello_refusal(hello, phase_, over_, nodes_.size()))
      return make_error(herd_errc::join_refused, *refusal);
    if (phase_ == registry_phase::running)
      return on_hello_running(hello);
    std::optional<std::size_t> part;
    if (resuming()) {
      auto claim = claim_part(hello, resume_parts(), claimed_parts(), context_->resume_file);
      if (!claim.part)
        return make_error(herd_errc::join_refused, claim.refusal);
      part = claim.part;
    }
    // Watched from now on: a node that leaves before the cluster forms must not be counted.
    nodes_.push_back(entry_for(hello));
    nodes_.back().part = part;
    if (!resuming() && !hello.parts.empty()) // a coordinator restarted without --resume?
      notice(label(nodes_.size() - 1) + unresumed_parts(hello));
    notice("node " + std::to_string(nodes_.size() - 1) + " (" + hello.name + ", " +
           count_of(hello.workers, "worker") + ") joined; " +
           (part ? "it holds part " + resume_parts()[*part].file + "; " : std::string()) +
           nodes_of_min_nodes(nodes_.size()));
    auto promise = nodes_.back().welcome;
    if (resuming() ? nodes_.size() == resume_parts().size()
                   : cluster_complete(nodes_.size(), context_->config.cluster.min_nodes))
      form_cluster();
    return promise;
  }

  void on_ready(const node_ready& ready) {
    if (over_) { // the run ended while this node was connecting: it has nothing to do
      if (ready.control)
        request(ready.control, std::chrono::seconds(3), job_over_atom::value)
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
    notice(label(index) + " ready: " + worker_list(node.slots));
    if (phase_ == registry_phase::running) {
      if (ledger_.joining() == index)
        admit_when_connected();
      return;
    }
    if (std::all_of(nodes_.begin(), nodes_.end(), [](const auto& entry) { return entry.ready; }))
      start_run();
  }

  // Only nodes this cluster welcomed take part in the data plane's rendezvous.
  void on_set(const std::string& key, const bytes& value) {
    if (keys_.admits(sender_process()))
      keys_.set(key, value);
    else
      notice("ignored a rendezvous key from a process that is not a welcomed node");
  }

  caf::result<bytes> on_get(const std::string& key) {
    if (!keys_.admits(sender_process()))
      return make_error(herd_errc::join_refused,
                        "the data plane's rendezvous is for welcomed nodes only");
    if (const auto* value = keys_.find(key))
      return *value;
    auto promise = make_response_promise<bytes>();
    keys_.wait(key, [this, promise, key](const bytes* value) mutable {
      if (value != nullptr)
        promise.deliver(*value);
      else
        promise.deliver(
            make_error(herd_errc::join_refused,
                       "rendezvous key " + key + " will not be set: " +
                           (over_ ? "the run ended before it started"
                                  : "its data plane generation failed on another node")));
    });
    return promise;
  }

  // A failed rendezvous asks which ranks' addresses are missing, to name them.
  caf::result<bool, bytes> on_peek(const std::string& key) {
    if (!keys_.admits(sender_process()))
      return make_error(herd_errc::join_refused,
                        "the data plane's rendezvous is for welcomed nodes only");
    const auto* value = keys_.find(key);
    return {value != nullptr, value != nullptr ? *value : bytes{}};
  }

  // A node about to leave says why (its data plane did not connect, say); its loss names that.
  // Only the node's own joining actor speaks for it, and a log line is all it can change.
  void on_leaving(const std::string& why) {
    constexpr std::size_t longest = 1000;
    const auto speaker = caf::actor_cast<caf::actor_addr>(current_sender());
    for (auto& node : nodes_)
      if (node.live && node.link == speaker)
        node.farewell = why.size() <= longest ? why : why.substr(0, longest) + "...";
  }

  void on_stop() {
    if (phase_ == registry_phase::running) {
      send(coordinator_, stop_atom::value);
      return;
    }
    refuse_all(phase_ == registry_phase::connecting
                   ? "stopped while the nodes were connecting"
                   : "stopped while waiting for nodes (" + std::to_string(nodes_.size()) + " of " +
                         std::to_string(context_->config.cluster.min_nodes) + " had joined)",
               "interrupted");
  }

  // Answers once every live node acknowledged (or did not within a few seconds), so the
  // session closes the connections only after the nodes know.
  caf::result<bool> on_job_over() {
    over_ = true;
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
      request(control, std::chrono::seconds(3), job_over_atom::value)
          .then([one_done](bool) mutable { one_done(); },
                [one_done](caf::error&) mutable { one_done(); });
    return promise;
  }

  void on_join_done(std::int32_t node, const comm::status& result) {
    if (node < 0) { // a re-key: the coordinator uses its generation now, or the run is ending
      if (ledger_.rekeying()) {
        ledger_.end();
        next_join();
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
    next_join();
  }

  void on_down(const caf::down_msg& down) {
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
      notice(label(index) + " left before the cluster formed: " + why + "; " +
             nodes_of_min_nodes(nodes_.size() - 1));
      nodes_.erase(lost);
    } else if (ledger_.joining() == index) {
      // Once admitted, the coordinator's transfer fails and says so (join_done).
      if (!ledger_.admitted())
        join_failed("it was lost while connecting: " + why);
    } else {
      lost_after_forming(index, why);
    }
  }

  // -- the cluster forming -----------------------------------------------------------------------

  // The node that sent `hello`, watched (its joining actor lives as long as its part of the job),
  // with the promise of its welcome.
  node_entry entry_for(const node_hello& hello) {
    node_entry entry;
    entry.hello = hello;
    entry.link = caf::actor_cast<caf::actor_addr>(current_sender());
    entry.process = sender_process();
    monitor(entry.link);
    entry.welcome = make_response_promise();
    return entry;
  }

  // Every node is known: give out the slots, check the settings against them, build the
  // coordinator and welcome the nodes.
  void form_cluster() {
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
    notice("cluster formed: " + std::to_string(nodes_.size()) + " nodes, " +
           std::to_string(workers) + " workers; connecting the data plane");
  }

  void spawn_coordinator() {
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

  void welcome(std::size_t index, bool running) {
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

  // The workers of the live nodes on node `index`'s machine, its own included; 0 when its machine
  // is unknown.
  std::int32_t workers_on_machine_of(std::size_t index) const {
    const auto& machine = nodes_[index].hello.machine;
    if (machine.empty())
      return 0;
    std::size_t workers = 0;
    for (const auto& node : nodes_)
      if (node.live && node.hello.machine == machine)
        workers += node.slots.size();
    return static_cast<std::int32_t>(workers);
  }

  // Ends a run that never started: nodes still waiting for their welcome hear why.
  void refuse_all(const std::string& why, const std::string& stop_reason = "error") {
    for (auto& node : nodes_)
      if (!node.answered)
        answer(node, make_error(herd_errc::join_refused, why));
    // Nodes connecting the data plane wait for no one's address any more.
    over_ = true;
    keys_.fail_reads("");
    context_->result->deliver(error_summary(context_->config, why, stop_reason));
  }

  void start_run() {
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
  }

  // A node of the formed cluster was lost (not the one joining now).
  void lost_after_forming(std::size_t index, const std::string& why) {
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

  // -- a node joining the running job ------------------------------------------------------------
  //
  // It takes lost workers' slots (the run's worker count never changes). One node joins at a
  // time, the others wait for their welcome: every live node connects a new generation of the
  // data plane with it (a full mesh cannot grow), then the coordinator pauses the rounds, has the
  // new workers adopt a live worker's state through that plane, and counts them live.

  caf::result<node_welcome> on_hello_running(const node_hello& hello) {
    const auto free = slots_.free([this](std::size_t node) { return nodes_[node].live; });
    if (auto refusal =
            running_join_refusal(hello, free, ledger_.busy(), context_->config.train.workers))
      return make_error(herd_errc::join_refused, *refusal);
    node_entry entry = entry_for(hello);
    const auto index = nodes_.size();
    entry.slots = slots_.take(index, free, hello.workers);
    nodes_.push_back(std::move(entry));
    auto promise = nodes_.back().welcome;
    notice(label(index) + " asks to join the running job in place of lost " +
           worker_list(nodes_.back().slots));
    ledger_.enqueue(index);
    next_join();
    return promise;
  }

  void next_join() {
    if (over_)
      return;
    if (ledger_.rekey_due()) {
      begin_rekey();
      return;
    }
    if (auto index = ledger_.next([this](std::size_t node) { return nodes_[node].live; }))
      begin_join(*index);
  }

  void begin_join(std::size_t index) {
    std::vector<std::size_t> peers;
    for (std::size_t other = 0; other < nodes_.size(); ++other)
      if (other != index && nodes_[other].live && nodes_[other].ready)
        peers.push_back(other);
    const auto generation = ledger_.begin(index, peers);
    welcome(index, true);
    rebuild_planes(generation, peers);
  }

  // Every one of `peers` connects data plane `generation` and answers.
  void rebuild_planes(std::uint32_t generation, const std::vector<std::size_t>& peers) {
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

  // `peer` answered for `generation` (or was lost, and will not).
  void rebuilt(std::uint32_t generation, std::size_t peer, const comm::status& result) {
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
      next_join();
  }

  void admit_when_connected() {
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

  // Where every worker lives, and the newest generation of the data plane.
  cluster_topology topology() const {
    cluster_topology current;
    current.generation = ledger_.generation();
    current.worker_nodes = slots_.worker_nodes();
    for (const auto& entry : nodes_)
      current.node_reducers.push_back(entry.reducer);
    return current;
  }

  // The node is turned away (told why, if it is still there); its slots are free again.
  void join_failed(const std::string& why) {
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
    next_join();
  }

  // -- the data plane re-keyed -------------------------------------------------------------------
  //
  // A node refused a peer's data-plane messages: they did not open with the generation's key, so
  // bytes that are not the peer's reached their connection. The rounds that need that pair fail.
  // Every live node connects a new generation (fresh connections, a fresh key) while the
  // coordinator holds the rounds, then the rounds use it. Both nodes of the pair report it; the
  // first report counts. At most max_rekeys times in a run: a peer refused again and again is not
  // a passing stranger, and its rounds then keep aborting, as before.

  static constexpr int max_rekeys = 8;

  void on_refusal(const plane_refusal& refusal) {
    const auto known = [this](std::int32_t node) {
      return node >= 0 && static_cast<std::size_t>(node) < nodes_.size() &&
             nodes_[static_cast<std::size_t>(node)].live;
    };
    // A node reports for itself only; a repeated report, or one of a generation older than the
    // newest (which has a key of its own), changes nothing.
    if (phase_ != registry_phase::running || over_ || !known(refusal.node) ||
        !known(refusal.peer) ||
        sender_process() != nodes_[static_cast<std::size_t>(refusal.node)].process ||
        rekeys_ >= max_rekeys || !ledger_.want_rekey(refusal.generation))
      return;
    notice(label(static_cast<std::size_t>(refusal.node)) + " refused data-plane messages from " +
           label(static_cast<std::size_t>(refusal.peer)) + " (generation " +
           std::to_string(refusal.generation) + "): " + refusal.why);
    next_join(); // re-keys now, or once the join under way has ended
  }

  void begin_rekey() {
    std::vector<std::size_t> nodes;
    for (std::size_t index = 0; index < nodes_.size(); ++index)
      if (nodes_[index].live && nodes_[index].ready)
        nodes.push_back(index);
    ++rekeys_;
    const auto generation = ledger_.begin_rekey(nodes);
    notice("re-keying the data plane (" + std::to_string(rekeys_) + " of at most " +
           std::to_string(max_rekeys) + " in a run): rounds pause while " +
           std::to_string(nodes.size()) + " nodes connect generation " +
           std::to_string(generation) + " with a fresh key");
    send(coordinator_, plane_rekey{plane_rekey::hold, {}, {}});
    rebuild_planes(generation, nodes);
  }

  // The pair is still refused: while re-keys are left, the rounds stay paused and another re-key
  // follows once every node has answered for this one (a node lost meanwhile is not in the next);
  // otherwise the rounds go on through the generation in use.
  void rekey_failed(const std::string& why) {
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
    next_join();
  }

  // -- helpers -----------------------------------------------------------------------------------

  // Delivers a node's welcome or refusal. From then on, while it is live, its process may use the
  // rendezvous keys, once the cluster has formed.
  template <class Answer>
  void answer(node_entry& node, Answer&& reply) {
    node.answered = true;
    if (node.live && phase_ != registry_phase::gathering)
      keys_.admit(node.process);
    node.welcome.deliver(std::forward<Answer>(reply));
  }

  void lose(node_entry& node) {
    if (node.live && node.answered && phase_ != registry_phase::gathering)
      keys_.expel(node.process);
    node.live = false;
  }

  caf::node_id sender_process() {
    return current_sender() ? current_sender()->node() : caf::node_id{};
  }

  void notice(const std::string& text) {
    if (context_->options.observer != nullptr)
      context_->options.observer->on_notice(text);
  }

  std::string label(std::size_t index) const {
    return "node " + std::to_string(index) + " (" + nodes_[index].hello.name + ")";
  }

  // The key that seals the messages of data plane `generation`, drawn when first asked for; ""
  // when the data plane is not sealed (cluster.data-encryption). It reaches only the nodes of that
  // generation, in their welcome or rebuild order.
  std::string plane_key(std::uint32_t generation) {
    if (!context_->config.cluster.seals_data())
      return {};
    auto& key = plane_keys_[generation];
    if (key.empty()) {
      const comm::plane_key drawn = comm::random_plane_key();
      key.assign(drawn.begin(), drawn.end());
    }
    return key;
  }

  std::string nodes_of_min_nodes(std::size_t nodes) const {
    if (resuming())
      return std::to_string(nodes) + " of the " + std::to_string(resume_parts().size()) +
             " nodes that hold the checkpoint's parts";
    return std::to_string(nodes) + " of " + std::to_string(context_->config.cluster.min_nodes) +
           " nodes";
  }

  bool resuming() const { return context_->resume != nullptr; }
  const std::vector<part_record>& resume_parts() const { return context_->resume->parts; }
  // The parts a node waiting for the cluster to form holds.
  std::vector<bool> claimed_parts() const {
    std::vector<bool> claimed(resume_parts().size(), false);
    for (const auto& node : nodes_)
      if (node.part)
        claimed[*node.part] = true;
    return claimed;
  }

  std::shared_ptr<registry_context> context_;
  registry_phase phase_ = registry_phase::gathering;
  bool over_ = false; // refused, stopped, or over: no node joins any more
  std::vector<node_entry> nodes_;
  slot_table slots_;
  join_ledger ledger_;
  int rekeys_ = 0;                                  // re-keys begun in this run
  std::map<std::uint32_t, std::string> plane_keys_; // by data-plane generation
  rendezvous_keys keys_;
  std::shared_ptr<const models::model> model_;
  caf::actor coordinator_;
  std::vector<caf::actor> aggregators_;
  caf::actor evaluator_;
};

} // namespace

caf::actor spawn_registry(caf::actor_system& system, std::shared_ptr<registry_context> context) {
  return system.spawn<registry_actor>(std::move(context));
}

} // namespace herd::cluster
