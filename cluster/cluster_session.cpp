// One training run across processes, coordinator side; see cluster_session.hpp.
#include "cluster/cluster_session.hpp"

#include "actors/aggregator.hpp"
#include "actors/errors.hpp"
#include "actors/evaluator.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/messages.hpp"
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"
#include "comm/buffer_pool.hpp"
#include "config/loader.hpp"

#include <caf/io/all.hpp>

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "cluster/control_gate.hpp"
#include "cluster/node_join.hpp"
#include "cluster/remoting.hpp"

namespace herd::cluster {

// The actors of one process, which a cluster connects across processes.
using namespace herd::actors;

namespace {

// What the registry needs to build the run once the cluster has formed.
struct run_context {
  config::run_config config;
  std::shared_ptr<const models::train_test_split> data;
  cluster_options options;
  std::shared_ptr<run_outcome> result;
  std::string job; // names this run's keys in the rendezvous store

  // Read by effective_config() from another thread once the run started.
  mutable std::mutex config_mutex;
};

// The summary of a run that ended before its first step.
run_summary error_summary(const config::run_config& config, std::string error) {
  run_summary failed;
  failed.started = false;
  failed.algorithm = config.train.algorithm;
  failed.workers = config.train.workers;
  failed.backend = "gloo";
  failed.stop_reason = "error";
  failed.error = std::move(error);
  return failed;
}

// The coordinator's face to the nodes, published on the listen port: admits nodes until
// cluster.min-nodes have joined, hands each its place and the run's settings, keeps the data
// plane's rendezvous keys, and starts the run once every node is ready.
class registry_actor : public caf::event_based_actor {
public:
  registry_actor(caf::actor_config& actor_config, std::shared_ptr<run_context> context)
      : caf::event_based_actor(actor_config), context_(std::move(context)) {
    set_down_handler([this](caf::down_msg& down) { on_down(down); });
  }

  const char* name() const override { return "herd.registry"; }

  // The run's actors go with the registry: the system's shutdown waits for every one of them.
  void on_exit() override {
    auto stop = [](const caf::actor& handle) {
      if (handle)
        caf::anon_send_exit(handle, caf::exit_reason::user_shutdown);
    };
    for (const auto& aggregator : aggregators_)
      stop(aggregator);
    stop(evaluator_);
    stop(coordinator_);
    coordinator_ = nullptr;
    aggregators_.clear();
    evaluator_ = nullptr;
    nodes_.clear();
    // A promise holds this actor: one still waiting for a key (a rendezvous that failed) would
    // keep it alive forever.
    waiting_gets_.clear();
  }

  caf::behavior make_behavior() override {
    return {
        [this](const node_hello& hello) -> caf::result<node_welcome> { return on_hello(hello); },
        [this](const node_ready& ready) { on_ready(ready); },
        // Only nodes this cluster welcomed take part in the data plane's rendezvous.
        [this](store_set_atom, const std::string& key, const std::vector<char>& value) {
          if (welcomed(current_sender()))
            store_set(key, value);
          else
            notice("ignored a rendezvous key from a process that is not a welcomed node");
        },
        [this](store_get_atom, const std::string& key) -> caf::result<std::vector<char>> {
          if (!welcomed(current_sender()))
            return make_error(herd_errc::join_refused,
                              "the data plane's rendezvous is for welcomed nodes only");
          return store_get(key);
        },
        [this](stop_atom) { on_stop(); },
        [this](job_over_atom) -> caf::result<bool> { return tell_nodes_job_over(); },
        [this](join_done_atom, std::int32_t node, const std::string& error) {
          join_done(node, error);
        },
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
    std::string turned_away; // why its join failed
  };

  void notice(const std::string& text) {
    if (context_->options.observer != nullptr)
      context_->options.observer->on_notice(text);
  }

  caf::result<node_welcome> on_hello(const node_hello& hello) {
    if (hello.protocol != cluster_protocol_version)
      return make_error(herd_errc::join_refused,
                        "node " + hello.name + " speaks cluster protocol " +
                            std::to_string(hello.protocol) + ", this coordinator " +
                            std::to_string(cluster_protocol_version) +
                            "; run the same Herd version everywhere");
    if (hello.workers < 1 || hello.workers > 1024)
      return make_error(herd_errc::join_refused, "node " + hello.name + " offers " +
                                                     std::to_string(hello.workers) +
                                                     " workers; it must be between 1 and 1024");
    if (stopped_)
      return make_error(herd_errc::join_refused, "the job is over");
    if (formed_ && !started_)
      return make_error(herd_errc::join_refused,
                        "the cluster has formed with " + std::to_string(nodes_.size()) +
                            " nodes and is starting; try again once it runs");
    if (started_)
      return on_hello_running(hello);
    // Watched from now on: a node that leaves before the cluster forms must not be counted.
    nodes_.push_back(entry_for(hello));
    notice("node " + std::to_string(nodes_.size() - 1) + " (" + hello.name + ", " +
           count(hello.workers, "worker") + ") joined; " + std::to_string(nodes_.size()) + " of " +
           std::to_string(context_->config.cluster.min_nodes) + " nodes");
    auto promise = nodes_.back().welcome;
    if (static_cast<int>(nodes_.size()) >= context_->config.cluster.min_nodes)
      form_cluster();
    return promise;
  }

  // The node that sent `hello`, watched (its joining actor lives as long as its part of the job),
  // with the promise of its welcome.
  node_entry entry_for(const node_hello& hello) {
    node_entry entry;
    entry.hello = hello;
    entry.link = caf::actor_cast<caf::actor_addr>(current_sender());
    entry.process = current_sender() ? current_sender()->node() : caf::node_id{};
    monitor(entry.link);
    entry.welcome = make_response_promise();
    return entry;
  }

  // Every node is known: count the workers, check the settings against them, build the
  // coordinator and welcome the nodes.
  void form_cluster() {
    formed_ = true;
    auto& config = context_->config;
    int workers = 0;
    for (std::size_t index = 0; index < nodes_.size(); ++index)
      for (int i = 0; i < nodes_[index].hello.workers; ++i) {
        nodes_[index].slots.push_back(workers++);
        slot_nodes_.push_back(static_cast<std::int32_t>(index));
      }
    {
      std::lock_guard<std::mutex> guard(context_->config_mutex);
      config.train.workers = workers;
    }
    auto errors = config::validate(config);
    if (errors.empty())
      errors = config::validate_against_data(config, context_->data->train.size());
    if (!errors.empty()) {
      std::string text =
          "the settings do not fit the " + std::to_string(workers) + " workers of the nodes: ";
      for (std::size_t i = 0; i < errors.size(); ++i)
        text += (i > 0 ? "; " : "") + errors[i].message;
      refuse_all(text);
      return;
    }
    const auto sizes = mlp_layer_sizes(config, context_->data->train);
    model_ = std::make_shared<const models::mlp>(sizes);
    coordinator_setup coordination;
    coordination.config = config;
    coordination.backend_name = "gloo";
    coordination.samples_per_epoch = epoch_samples(config, context_->data->train.size());
    coordination.observer = context_->options.observer;
    coordination.progress_interval = context_->options.progress_interval;
    coordination.joins = node_joins(config);
    if (context_->options.metrics) {
      // Each worker's `node` label names the node that hosts it: the straggler's machine.
      std::vector<std::string> worker_nodes;
      for (const auto& node : nodes_)
        worker_nodes.insert(worker_nodes.end(), static_cast<std::size_t>(node.hello.workers),
                            node.hello.name);
      coordination.metrics = make_training_metrics(config, context_->options.metrics,
                                                   context_->options.node_name, worker_nodes);
    }
    coordination.on_finished = [result = context_->result](run_summary summary) {
      result->deliver(std::move(summary));
    };
    coordinator_ = spawn_group_coordinator(system(), std::move(coordination));
    coordinator_->attach_functor([result = context_->result, failed = error_summary(config, "")](
                                     const caf::error& reason) mutable {
      failed.error = "the group coordinator stopped: " + caf::to_string(reason);
      result->deliver(std::move(failed));
    });
    for (std::size_t index = 0; index < nodes_.size(); ++index)
      plane_nodes_.push_back(static_cast<std::int32_t>(index));
    for (std::size_t index = 0; index < nodes_.size(); ++index)
      welcome(index, false);
    notice("cluster formed: " + std::to_string(nodes_.size()) + " nodes, " +
           std::to_string(workers) + " workers; connecting the data plane");
  }

  void welcome(std::size_t index, bool running) {
    node_welcome welcome;
    welcome.node = static_cast<std::int32_t>(index);
    welcome.workers = nodes_[index].slots;
    welcome.generation = generation_;
    welcome.plane_nodes = plane_nodes_;
    welcome.running = running;
    // A node has its own token; the coordinator's is not passed around.
    welcome.settings = config::to_ini(config::without_secrets(context_->config));
    welcome.training_samples = context_->data->train.size();
    welcome.job = context_->job;
    welcome.coordinator = coordinator_;
    nodes_[index].answered = true;
    nodes_[index].welcome.deliver(std::move(welcome));
  }

  // Ends a run that never started: nodes still waiting for their welcome hear why.
  void refuse_all(const std::string& why, const std::string& stop_reason = "error") {
    for (auto& node : nodes_)
      if (!node.answered) {
        node.answered = true;
        node.welcome.deliver(make_error(herd_errc::join_refused, why));
      }
    stopped_ = true;
    auto summary = error_summary(context_->config, why);
    summary.stop_reason = stop_reason;
    context_->result->deliver(std::move(summary));
  }

  void on_ready(const node_ready& ready) {
    if (stopped_) { // the run ended while this node was connecting: it has nothing to do
      if (ready.control)
        request(ready.control, std::chrono::seconds(3), job_over_atom::value)
            .then([](bool) {}, [](caf::error&) {});
      return;
    }
    if (ready.node < 0 || static_cast<std::size_t>(ready.node) >= nodes_.size() ||
        nodes_[static_cast<std::size_t>(ready.node)].ready ||
        !nodes_[static_cast<std::size_t>(ready.node)].answered)
      return;
    auto& node = nodes_[static_cast<std::size_t>(ready.node)];
    if (!node.live) { // turned away before it was ready: it has not heard why yet
      if (ready.control)
        send(ready.control, leave_atom::value, node.turned_away);
      return;
    }
    if (static_cast<int>(ready.workers.size()) != node.hello.workers) {
      notice("node " + std::to_string(ready.node) + " reported " +
             std::to_string(ready.workers.size()) + " workers, not " +
             std::to_string(node.hello.workers) + "; ignored");
      return;
    }
    node.ready = true;
    node.workers = ready.workers;
    node.reducer = ready.reducer;
    node.control = ready.control;
    monitor(node.reducer);
    notice("node " + std::to_string(ready.node) + " (" + node.hello.name +
           ") ready: " + workers_of(node));
    if (started_) {
      if (joining_ && *joining_ == static_cast<std::size_t>(ready.node))
        admit_when_connected();
      return;
    }
    for (const auto& entry : nodes_)
      if (!entry.ready)
        return;
    start_run();
  }

  void start_run() {
    const auto& config = context_->config;
    aggregator_setup aggregation;
    aggregation.results = comm::buffer_pool::create(model_->parameter_count());
    aggregation.reduce_timeout =
        std::chrono::milliseconds(config.cluster.data_timeout_ms) + std::chrono::seconds(5);
    std::vector<caf::actor> workers;
    for (std::size_t index = 0; index < nodes_.size(); ++index) {
      for (const auto& worker : nodes_[index].workers)
        workers.push_back(worker);
      aggregation.node_reducers.push_back(nodes_[index].reducer);
    }
    aggregation.worker_nodes.assign(slot_nodes_.begin(), slot_nodes_.end());
    for (int i = 0; i < aggregator_count(config); ++i)
      aggregators_.push_back(spawn_aggregator(system(), aggregation, coordinator_));
    evaluator_setup evaluation;
    evaluation.model = model_;
    evaluation.test = std::shared_ptr<const models::dataset>(context_->data, &context_->data->test);
    evaluation.ops = &kernels::cpu_ops();
    evaluator_ = spawn_evaluator(system(), evaluation);
    send(coordinator_, run_start{workers, aggregators_, evaluator_});
    started_ = true;
  }

  void store_set(const std::string& key, const std::vector<char>& value) {
    store_[key] = value;
    auto waiting = waiting_gets_.find(key);
    if (waiting == waiting_gets_.end())
      return;
    for (auto& promise : waiting->second)
      promise.deliver(value);
    waiting_gets_.erase(waiting);
  }

  caf::result<std::vector<char>> store_get(const std::string& key) {
    auto found = store_.find(key);
    if (found != store_.end())
      return found->second;
    auto promise = make_response_promise<std::vector<char>>();
    waiting_gets_[key].push_back(promise);
    return promise;
  }

  void on_stop() {
    if (started_) {
      send(coordinator_, stop_atom::value);
      return;
    }
    refuse_all(formed_
                   ? "stopped while the nodes were connecting"
                   : "stopped while waiting for nodes (" + std::to_string(nodes_.size()) + " of " +
                         std::to_string(context_->config.cluster.min_nodes) + " had joined)",
               "interrupted");
  }

  // Answers once every live node acknowledged (or did not within a few seconds), so the
  // session closes the connections only after the nodes know.
  caf::result<bool> tell_nodes_job_over() {
    stopped_ = true;
    for (auto& node : nodes_) // nodes still waiting for their turn to join
      if (!node.answered && node.live) {
        node.answered = true;
        node.welcome.deliver(make_error(herd_errc::join_refused, "the job is over"));
      }
    auto outstanding = std::make_shared<std::size_t>(0);
    for (const auto& node : nodes_)
      if (node.live && node.control)
        ++*outstanding;
    if (*outstanding == 0)
      return true;
    // Only now: a promise takes the request's answer over.
    auto promise = make_response_promise<bool>();
    auto one_done = [promise, outstanding]() mutable {
      if (--*outstanding == 0)
        promise.deliver(true);
    };
    for (const auto& node : nodes_)
      if (node.live && node.control)
        request(node.control, std::chrono::seconds(3), job_over_atom::value)
            .then([one_done](bool) mutable { one_done(); },
                  [one_done](caf::error&) mutable { one_done(); });
    return promise;
  }

  void on_down(const caf::down_msg& down) {
    for (std::size_t index = 0; index < nodes_.size(); ++index) {
      auto& node = nodes_[index];
      if (!node.live || (node.reducer.address() != down.source && node.link != down.source))
        continue;
      node.live = false;
      if (stopped_)
        return; // the job is over: nodes leave
      const std::string why =
          down.reason ? system().render(down.reason) : std::string("it left the job");
      if (!formed_) {
        notice("node " + std::to_string(index) + " (" + node.hello.name +
               ") left before the cluster formed: " + why + "; " +
               std::to_string(nodes_.size() - 1) + " of " +
               std::to_string(context_->config.cluster.min_nodes) + " nodes");
        nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(index));
        return;
      }
      if (joining_ && *joining_ == index) {
        // Once admitted, the coordinator's transfer fails and says so (join_done).
        if (!admitted_)
          join_failed("it was lost while connecting: " + why);
        return;
      }
      // A node lost while it connected a joining node's plane will not answer: the join fails
      // (the others wait for its rank), and the next one need not wait for its answer.
      std::vector<std::uint32_t> connecting;
      for (const auto& [generation, peers] : rebuilding_)
        if (peers.count(index) > 0)
          connecting.push_back(generation);
      for (std::uint32_t generation : connecting)
        rebuilt(generation, index,
                "node " + std::to_string(index) + " (" + node.hello.name + ") was lost: " + why);
      if (started_ && !node.ready) { // a node waiting for its turn to join
        notice("node " + std::to_string(index) + " (" + node.hello.name +
               ") left before it could join: " + why);
        return;
      }
      notice("node " + std::to_string(index) + " (" + node.hello.name + ") lost: " + why +
             "; its " + workers_of(node) + (node.slots.size() == 1 ? " is" : " are") + " down");
      if (!started_)
        refuse_all("node " + std::to_string(index) + " (" + node.hello.name +
                   ") was lost before the run started: " + why);
      return;
    }
  }

  // A message from a process this cluster sent a welcome to (and that is still live).
  bool welcomed(const caf::strong_actor_ptr& from) const {
    if (!from || !formed_)
      return false;
    for (const auto& node : nodes_)
      if (node.live && node.answered && node.process == from->node())
        return true;
    return false;
  }

  static std::string count(int n, const std::string& what) {
    return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
  }

  // "worker 3" or "workers 4-7" or "workers 1, 4", for the operator's log.
  static std::string workers_of(const node_entry& node) { return worker_list(node.slots); }

  // -- a node joining the running job ----------------------------------------------------------
  //
  // It takes lost workers' slots (the run's worker count never changes). One node joins at a
  // time, the others wait for their welcome: every live node connects a new generation of the
  // data plane with it (a full mesh cannot grow), then the coordinator pauses the rounds, has the
  // new workers adopt a live worker's state through that plane, and counts them live.

  caf::result<node_welcome> on_hello_running(const node_hello& hello) {
    const auto& config = context_->config;
    std::vector<std::int32_t> free;
    for (std::size_t slot = 0; slot < slot_nodes_.size(); ++slot)
      if (!nodes_[static_cast<std::size_t>(slot_nodes_[slot])].live)
        free.push_back(static_cast<std::int32_t>(slot));
    if (free.empty()) {
      const bool taken = !waiting_joins_.empty() || joining_.has_value();
      return make_error(herd_errc::join_refused,
                        taken ? "the job is running and the slots of its lost workers are taken "
                                "by nodes joining now; a node joins a running job only in place "
                                "of a lost node's workers"
                              : "the job is running and none of its " +
                                    std::to_string(config.train.workers) +
                                    " workers is lost; a node joins a running job only in place "
                                    "of a lost node's workers");
    }
    if (static_cast<int>(free.size()) < hello.workers)
      return make_error(herd_errc::join_refused,
                        "node " + hello.name + " offers " + count(hello.workers, "worker") +
                            " but only " + std::to_string(free.size()) + " slot(s) are free (" +
                            worker_list(free) + "); start it with --workers " +
                            std::to_string(free.size()));
    node_entry entry = entry_for(hello);
    const auto index = nodes_.size();
    for (int i = 0; i < hello.workers; ++i) {
      entry.slots.push_back(free[static_cast<std::size_t>(i)]);
      slot_nodes_[static_cast<std::size_t>(free[static_cast<std::size_t>(i)])] =
          static_cast<std::int32_t>(index);
    }
    nodes_.push_back(std::move(entry));
    auto promise = nodes_.back().welcome;
    notice("node " + std::to_string(index) + " (" + hello.name + ") asks to join the running job " +
           "in place of lost " + worker_list(nodes_.back().slots));
    waiting_joins_.push_back(index);
    next_join();
    return promise;
  }

  // Not while a live node may still be connecting a failed join's plane: it would answer the next
  // join's request only after that gives up.
  void next_join() {
    while (!joining_ && rebuilding_.empty() && !waiting_joins_.empty() && !stopped_) {
      const std::size_t index = waiting_joins_.front();
      waiting_joins_.pop_front();
      if (nodes_[index].live)
        begin_join(index);
    }
  }

  void begin_join(std::size_t index) {
    joining_ = index;
    admitted_ = false;
    ++generation_;
    plane_nodes_.clear();
    std::vector<std::size_t> peers;
    for (std::size_t other = 0; other < nodes_.size(); ++other)
      if (other != index && nodes_[other].live && nodes_[other].ready) {
        plane_nodes_.push_back(static_cast<std::int32_t>(other));
        peers.push_back(other);
      }
    plane_nodes_.push_back(static_cast<std::int32_t>(index));
    welcome(index, true);
    if (!peers.empty())
      rebuilding_[generation_] = std::set<std::size_t>(peers.begin(), peers.end());
    const auto& cluster = context_->config.cluster;
    const auto timeout =
        std::chrono::milliseconds(cluster.data_timeout_ms) + std::chrono::seconds(10);
    for (std::size_t peer : peers)
      request(nodes_[peer].control, timeout, plane_rebuild{generation_, plane_nodes_})
          .then([this, generation = generation_, peer](bool) { rebuilt(generation, peer, {}); },
                [this, generation = generation_, peer](caf::error& failure) {
                  rebuilt(generation, peer,
                          "node " + std::to_string(peer) + " (" + nodes_[peer].hello.name +
                              "): " + system().render(failure));
                });
  }

  // `peer` answered for `generation` (or was lost, and will not).
  void rebuilt(std::uint32_t generation, std::size_t peer, const std::string& error) {
    auto outstanding = rebuilding_.find(generation);
    if (outstanding != rebuilding_.end() && outstanding->second.erase(peer) > 0 &&
        outstanding->second.empty())
      rebuilding_.erase(outstanding);
    const bool current = joining_ && !admitted_ && generation == generation_;
    if (current && !error.empty())
      join_failed("the data plane did not reconnect: " + error);
    else if (current)
      admit_when_connected();
    else if (!joining_)
      next_join(); // a failed join's plane: the next may start once every node has answered
  }

  void admit_when_connected() {
    if (!joining_ || admitted_ || rebuilding_.count(generation_) > 0 || !nodes_[*joining_].ready)
      return;
    admitted_ = true;
    const auto& node = nodes_[*joining_];
    node_admission admission;
    admission.node = static_cast<std::int32_t>(*joining_);
    admission.name = node.hello.name;
    admission.workers = node.slots;
    admission.handles = node.workers;
    admission.topology.generation = generation_;
    admission.topology.worker_nodes = slot_nodes_;
    for (const auto& entry : nodes_)
      admission.topology.node_reducers.push_back(entry.reducer);
    send(coordinator_, std::move(admission));
  }

  void join_done(std::int32_t node, const std::string& error) {
    if (!joining_ || static_cast<std::int32_t>(*joining_) != node)
      return;
    if (!error.empty()) {
      join_failed(error);
      return;
    }
    joining_.reset();
    next_join();
  }

  // The node is turned away (told why, if it is still there); its slots are free again.
  void join_failed(const std::string& why) {
    auto& node = nodes_[*joining_];
    notice("node " + std::to_string(*joining_) + " (" + node.hello.name +
           ") could not join the running job: " + why);
    node.live = false;
    node.turned_away = why;
    // Rendezvous reads of the failed generation's keys will never be answered.
    const std::string prefix = plane_prefix(context_->job, generation_) + "/";
    for (auto waiting = waiting_gets_.begin(); waiting != waiting_gets_.end();)
      waiting = waiting->first.compare(0, prefix.size(), prefix) == 0 ? waiting_gets_.erase(waiting)
                                                                      : std::next(waiting);
    if (node.control)
      send(node.control, leave_atom::value, why);
    joining_.reset();
    next_join();
  }

  static std::string worker_list(const std::vector<std::int32_t>& slots) {
    if (slots.empty())
      return "no workers";
    if (slots.size() == 1)
      return "worker " + std::to_string(slots.front());
    const bool contiguous = slots.back() - slots.front() + 1 == static_cast<int>(slots.size());
    if (contiguous)
      return "workers " + std::to_string(slots.front()) + "-" + std::to_string(slots.back());
    return "workers " + index_list(slots);
  }

  std::shared_ptr<run_context> context_;
  std::vector<node_entry> nodes_;
  std::vector<std::int32_t> slot_nodes_;  // the node index of every worker
  std::uint32_t generation_ = 0;          // of the data plane
  std::vector<std::int32_t> plane_nodes_; // its ranks' node indices
  std::deque<std::size_t> waiting_joins_; // nodes waiting for their turn to join
  std::optional<std::size_t> joining_;    // the node joining now
  std::map<std::uint32_t, std::set<std::size_t>>
      rebuilding_;        // nodes still connecting, by generation
  bool admitted_ = false; // the coordinator took over the join
  bool formed_ = false;
  bool started_ = false;
  bool stopped_ = false;
  std::shared_ptr<const models::mlp> model_;
  caf::actor coordinator_;
  std::vector<caf::actor> aggregators_;
  caf::actor evaluator_;
  std::map<std::string, std::vector<char>> store_;
  std::map<std::string, std::vector<caf::response_promise>> waiting_gets_;
};

std::string make_job_name() {
  std::random_device entropy;
  const auto value = (static_cast<std::uint64_t>(entropy()) << 32) ^ entropy();
  char text[32];
  std::snprintf(text, sizeof text, "herd-%016llx", static_cast<unsigned long long>(value));
  return text;
}

} // namespace

struct cluster_session::impl {
  std::shared_ptr<run_context> context = std::make_shared<run_context>();
  caf::actor_system_config system_config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor registry;
  std::mutex server_mutex;                   // the gate's threads read `server`
  std::unique_ptr<connection_server> server; // hands CAF the connections the gate admits
  std::unique_ptr<gate_listener> gate;
  bool shut_down = false;

  void shutdown() {
    if (shut_down || !system)
      return;
    shut_down = true;
    if (registry) {
      {
        caf::scoped_actor self{*system};
        self->request(registry, std::chrono::seconds(5), job_over_atom::value)
            .receive([](bool) {}, [](caf::error&) {});
      }
      // Refusals and the job's end are on their way through the gate: let the nodes read them
      // and leave before the connections go.
      if (gate)
        gate->drain(std::chrono::seconds(3));
      gate.reset();
      // The published registry must go before the system, or its destructor waits forever.
      server.reset();
      caf::anon_send_exit(registry, caf::exit_reason::user_shutdown);
      registry = nullptr;
    }
    system->await_all_actors_done();
  }
};

cluster_session::cluster_session(config::run_config config,
                                 std::shared_ptr<const models::train_test_split> data,
                                 cluster_options options)
    : impl_(std::make_unique<impl>()) {
  if (auto errors = config::validate(config); !errors.empty())
    throw config::invalid_config(std::move(errors));
  if (config.train.backend != "cpu")
    throw config::invalid_config(
        {{"train.backend",
          "train.backend = " + config.train.backend +
              ": across processes (herd coordinator / herd node) workers compute on the CPU; the "
              "GPU data plane (NCCL) is not part of the cluster yet. Run `herd train` for a GPU"}});
  auto& context = *impl_->context;
  context.config = std::move(config);
  context.data = std::move(data);
  context.options = std::move(options);
  context.result = std::make_shared<run_outcome>();
  context.job = make_job_name();
  configure_remoting(impl_->system_config, context.config.cluster);
  impl_->system = std::make_unique<caf::actor_system>(impl_->system_config);
  impl_->registry = impl_->system->spawn<registry_actor>(impl_->context);
  // CAF listens on nothing: the gate owns the public address and hands CAF each connection it
  // admitted (control_gate.hpp). The registry is published once the gate's port is known.
  const auto& listen = context.options.listen_host;
  try {
    auto* observer = context.options.observer;
    impl_->gate = std::make_unique<gate_listener>(
        listen, context.options.port, gate_settings_of(context.config.cluster),
        [this](int fd) {
          std::lock_guard<std::mutex> guard(impl_->server_mutex);
          return impl_->server && impl_->server->serve(fd);
        },
        [observer](const std::string& why) {
          if (observer != nullptr)
            observer->on_notice(why);
        });
    std::lock_guard<std::mutex> guard(impl_->server_mutex);
    impl_->server =
        std::make_unique<connection_server>(*impl_->system, impl_->registry, impl_->gate->port());
  } catch (const std::exception& failure) {
    impl_->gate.reset();
    caf::anon_send_exit(impl_->registry, caf::exit_reason::user_shutdown);
    impl_->registry = nullptr;
    impl_->system->await_all_actors_done();
    throw std::runtime_error("cannot listen on " + listen + ":" +
                             std::to_string(context.options.port) + ": " + failure.what());
  }
}

cluster_session::~cluster_session() {
  if (!impl_->shut_down) {
    request_stop();
    wait_for(std::chrono::seconds(60));
  }
  impl_->shutdown();
}

std::uint16_t cluster_session::port() const {
  return impl_->gate ? impl_->gate->port() : 0;
}

void cluster_session::request_stop() {
  if (impl_->registry && !impl_->shut_down)
    caf::anon_send(impl_->registry, stop_atom::value);
}

std::optional<run_summary> cluster_session::wait_for(std::chrono::milliseconds timeout) {
  auto& result = *impl_->context->result;
  if (!result.wait_for(timeout))
    return std::nullopt;
  impl_->shutdown();
  return result.summary();
}

config::run_config cluster_session::effective_config() const {
  std::lock_guard<std::mutex> guard(impl_->context->config_mutex);
  return impl_->context->config;
}

} // namespace herd::cluster
