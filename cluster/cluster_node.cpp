// One node of a cluster; see cluster_node.hpp.
#include "cluster/cluster_node.hpp"

#include "actors/checkpoint_state.hpp"
#include "actors/checkpoint_writer.hpp"
#include "actors/errors.hpp"
#include "actors/messages.hpp"
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"
#include "comm/buffer_pool.hpp"
#include "comm/gloo_plane.hpp"
#include "herd/config.hpp"
#include "kernels/machine.hpp"

#include <caf/io/all.hpp>

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>

#include "cluster/control_gate.hpp"
#include "cluster/node_departure.hpp"
#include "cluster/node_dial.hpp"
#include "cluster/node_inputs.hpp"
#include "cluster/node_plane.hpp"
#include "cluster/node_reducer.hpp"
#include "cluster/plane_beside.hpp"
#include "cluster/registry_store.hpp"
#include "cluster/remoting.hpp"
#include "cluster/step_relay.hpp"
#include "cluster/tcp_socket.hpp"

namespace herd::cluster {

// The actors of one process, which a cluster connects across processes.
using namespace herd::actors;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr std::chrono::milliseconds leave_poll{100};

// What a node says when its coordinator stopped before the run: `how` is the coordinator's own
// account ("stopped while waiting for nodes (1 of 2 had joined)").
std::string never_started(const std::string& how) {
  return "the coordinator was " + how + "; its run never started";
}

// Where a node's data planes report a refused peer: the registry, while the node's part of the job
// lasts (a plane may outlive it, and then reports nothing), as sent by the node's control actor,
// so that the registry knows which process reports. Called from a reduction's thread.
class refusal_route {
public:
  refusal_route(caf::actor registry, caf::actor node)
      : registry_(std::move(registry)), node_(std::move(node)) {}

  void report(actors::plane_refusal refusal) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (registry_)
      caf::send_as(node_, registry_, std::move(refusal));
  }
  void close() {
    std::lock_guard<std::mutex> guard(mutex_);
    registry_ = nullptr;
    node_ = nullptr;
  }

private:
  std::mutex mutex_;
  caf::actor registry_;
  caf::actor node_;
};

// Everything the node hosts, stopped in order when the job ends.
struct hosted {
  std::shared_ptr<comm::data_plane> plane;
  std::vector<caf::actor> workers;
  caf::actor reducer;
  caf::actor relay; // the workers' step reports to the coordinator

  void stop() {
    workers.insert(workers.end(), {reducer, relay}); // the workers first
    for (auto& actor : workers)
      if (actor)
        caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    workers.clear();
    reducer = relay = nullptr;
  }
};

// This node's request to join: the address its data plane listens on, its parts in `parts_dir`.
node_hello hello_of(const node_options& options, const std::string& parts_dir) {
  node_hello hello;
  if (!parts_dir.empty())
    hello.parts = checkpoint::list_parts(parts_dir);
  hello.protocol = cluster_protocol_version;
  hello.name = options.name.empty() ? kernels::host_name() : options.name;
  hello.workers = options.workers;
  hello.machine = kernels::machine_id();
  hello.heartbeat_ms = options.cluster.heartbeat_ms;
  hello.node_timeout_ms = options.cluster.node_timeout_ms;
  hello.data_host = options.data_host.empty()
                        ? local_address_towards(options.coordinator_host, options.coordinator_port)
                        : options.data_host;
  if (hello.data_host.empty())
    hello.data_host = "127.0.0.1";
  return hello;
}

node_outcome fail(node_outcome outcome, std::string error) {
  outcome.ok = false;
  outcome.error = std::move(error);
  return outcome;
}

// The node's part of one job once it reached the coordinator, in its steps: ask to join and wait
// for the welcome, load the run's settings and dataset, connect the data plane, spawn the workers
// and the node reducer, and serve until the job is over. A step that fails says why in the outcome.
class joined_node {
public:
  // `parts_dir`: where this node's checkpoint parts are, as far as it knows (the run's
  // checkpoint.dir once welcomed, kept for the next membership).
  // `deadline`: when joining gives up, which the setting `limit` ("cluster.join-timeout-s = 600
  // s", or cluster.rejoin-s for a node joining again) set.
  joined_node(caf::actor_system& system, const node_options& options, caf::actor registry,
              clock_type::time_point deadline, std::string limit, hosted& parts,
              std::string& parts_dir)
      : system_(system), options_(options), registry_(std::move(registry)), deadline_(deadline),
        limit_(std::move(limit)), parts_(parts), parts_dir_(parts_dir), self_(system),
        hello_(hello_of(options, parts_dir)),
        refusals_(std::make_shared<refusal_route>(registry_, caf::actor_cast<caf::actor>(self_))) {
    outcome_.workers = options.workers;
    self_->monitor(registry_);
  }
  // A plane's rendezvous left to its own thread (connect_beside()) lets go of this system here.
  ~joined_node() {
    refusals_->close();
    if (store_)
      store_->close();
  }
  joined_node(const joined_node&) = delete;
  joined_node& operator=(const joined_node&) = delete;

  node_outcome run() {
    if (welcome() && load() && connect_plane()) {
      spawn();
      serve();
    }
    return outcome_;
  }

private:
  // A welcomed node tells the coordinator why it leaves, so that the coordinator's log names the
  // cause of the loss rather than only that the node left.
  bool failed(std::string error) {
    if (welcomed_)
      self_->send(registry_, leave_atom::value, error);
    outcome_ = fail(outcome_, std::move(error));
    return false;
  }

  bool welcome() {
    // A plain send, not a request: the answer comes as a message, and so does the coordinator's
    // loss while the cluster forms (a request's receive would wait out its timeout instead).
    self_->send(registry_, hello_);
    notify(options_, "connected to the coordinator; waiting for its welcome (a run starts once "
                     "cluster.min-nodes nodes have joined; at most " +
                         limit_ + ")");
    if (auto refused = await_welcome(); !refused.empty()) {
      if (!stopped_before_run_) // else the node's part is over, not failed
        return failed(std::move(refused));
      notify(options_, refused);
      outcome_.ok = true;
      return false;
    }
    welcomed_ = true;
    outcome_.worker_indices.assign(welcome_.workers.begin(), welcome_.workers.end());
    outcome_.joined_running = welcome_.running;
    const std::string slots = index_list(welcome_.workers);
    notify(options_, welcome_.running
                         ? "joining the running job as node " + std::to_string(welcome_.node) +
                               " in place of lost worker(s) " + slots
                         : "joined as node " + std::to_string(welcome_.node) + " of " +
                               std::to_string(welcome_.plane_nodes.size()) + ": worker(s) " +
                               slots);
    return true;
  }

  // Why the coordinator stopped before its run, if it says so within a second (it tells the
  // welcomed nodes as it stops, and their data plane fails meanwhile).
  std::optional<std::string> coordinator_stopped() {
    std::optional<std::string> why;
    self_->receive([&](run_stopped_atom, std::string& text) { why = std::move(text); },
                   caf::after(std::chrono::seconds(1)) >> [] {});
    return why;
  }

  // Why the coordinator is gone, if its connection closed (this actor monitors it since its
  // hello): the reason, not the data plane's account of the rendezvous it cut short.
  std::optional<std::string> coordinator_gone() {
    std::optional<std::string> why;
    self_->receive([&](caf::down_msg& down) { why = system_.render(down.reason); },
                   caf::after(std::chrono::milliseconds(0)) >> [] {});
    return why;
  }

  // Empty once welcomed; otherwise why not.
  std::string await_welcome() {
    std::string failure;
    bool answered = false;
    bool welcomed = false;
    bool timed_out = false;
    const auto wait_until =
        clock_type::now() +
        std::max(deadline_ - clock_type::now(), clock_type::duration(std::chrono::seconds(1)));
    while (!answered && !timed_out)
      self_->receive(
          [&](node_welcome& answer) {
            welcome_ = std::move(answer);
            answered = welcomed = true;
          },
          [&](caf::error& error) {
            const auto stopped = context_of(error, herd_errc::run_stopped);
            stopped_before_run_ = stopped.has_value();
            failure = stopped ? never_started(*stopped)
                              : system_.render(error);
            answered = true;
          },
          [&](caf::down_msg& down) {
            failure =
                "lost the coordinator while the cluster formed: " + system_.render(down.reason);
            answered = true;
          },
          caf::after(leave_poll) >>
              [&] {
                if (leaving(options_)) {
                  failure = "interrupted while waiting for the coordinator's welcome to the run";
                  answered = true;
                }
                timed_out = clock_type::now() >= wait_until;
              });
    if (timed_out)
      return "no welcome from the coordinator within cluster.join-timeout-s (" +
             std::to_string(options_.cluster.join_timeout_s) +
             " s): fewer than cluster.min-nodes nodes joined it (or, joining a running job, the "
             "joins of other nodes took that long)";
    if (welcomed)
      return {};
    return leaving(options_) || stopped_before_run_
               ? failure
               : "the coordinator did not admit this node: " + failure;
  }

  bool load() {
    try {
      auto inputs = load_node_inputs(welcome_, options_, parts_dir_);
      config_ = std::move(inputs.config);
      data_ = std::move(inputs.data);
      model_ = std::move(inputs.model);
      parts_dir_ = std::move(inputs.parts_dir);
      resumed_ = std::move(inputs.resumed);
      if (!inputs.resumed_from.empty())
        notify(options_, "resuming worker(s) " + index_list(welcome_.workers) + " from " +
                             inputs.resumed_from);
    } catch (const std::exception& refused) {
      return failed(refused.what());
    }
    // A node process is Herd's own: its workers' share of the machine's cores for BLAS, counting
    // other nodes' workers on this machine (each would otherwise take every core, and their BLAS
    // threads spin against each other and the data plane).
    const int blas = blas_threads_for(config_, options_.workers, welcome_.workers_on_machine);
    kernels::set_blas_threads(blas);
    if (blas != blas_threads_for(config_, options_.workers))
      notify(options_,
             std::to_string(welcome_.workers_on_machine - options_.workers) +
                 " worker(s) of other nodes run on this machine: " + std::to_string(blas) +
                 " BLAS thread(s) for this node's (train.blas-threads sets another count)");
    return true;
  }

  bool connect_plane() {
    if (welcome_.plane_nodes.size() <= 1)
      return true;
    // Joining a running job, the others wait for this node's rendezvous for the data timeout.
    const auto timeout =
        welcome_.running
            ? std::chrono::milliseconds(config_.cluster.data_timeout_ms)
            : std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
                  deadline_ - clock_type::now(), clock_type::duration(std::chrono::seconds(5))));
    try {
      auto connected = connect_beside(
          plane_maker(welcome_.generation, welcome_.plane_nodes, welcome_.data_key, timeout));
      if (!connected)
        return false; // said why
      parts_.plane = std::move(*connected);
    } catch (const std::exception& bad) {
      if (leaving(options_)) // a stop signal ended the rendezvous
        return failed("interrupted while the data plane connected");
      if (auto stopped = coordinator_stopped()) { // the run's end, not this node's failure
        notify(options_, never_started(*stopped));
        outcome_.ok = true;
        return false;
      }
      if (auto gone = coordinator_gone()) { // as when it goes mid-run: the node may join again
        failed("lost the coordinator while the data plane connected: " + *gone);
        outcome_.lost_coordinator = true;
        return false;
      }
      if (auto why = store_ ? store_->refusal() : std::nullopt) // the cause first, then Gloo's
        return failed("the data plane did not connect, because " + *why + " (" + bad.what() + ")");
      return failed(std::string("the data plane did not connect: ") + bad.what());
    }
    notify(options_, plane_connected_text(config_, hello_.data_host, welcome_.plane_nodes.size(),
                                          !welcome_.data_key.empty()));
    return true;
  }

  using plane_maker_type = std::function<std::shared_ptr<comm::data_plane>()>;

  // connect_beside() (plane_beside.hpp) for this node: the plane, or nothing where a stop signal,
  // the coordinator's stop or its loss ended the wait first (said why).
  std::optional<std::shared_ptr<comm::data_plane>> connect_beside(plane_maker_type make) {
    auto waited = cluster::connect_beside(
        std::move(make), self_, [this] { return leaving(options_); },
        [this](const std::string& text) { notify(options_, text); });
    switch (waited.how) {
    case plane_wait::end::connected:
      return std::move(waited.plane);
    case plane_wait::end::stop_signal:
      failed("interrupted while the data plane connected");
      break;
    case plane_wait::end::run_stopped: // the run's end, not this node's failure
      notify(options_, never_started(waited.why));
      outcome_.ok = true;
      break;
    case plane_wait::end::coordinator_gone:
      if (auto why = store_ ? store_->refusal() : std::nullopt) { // it ended the run first
        failed("the data plane did not connect, because " + *why);
        break;
      }
      // As when it goes mid-run: the node may join again.
      failed("lost the coordinator while the data plane connected: " + waited.why);
      outcome_.lost_coordinator = true;
      break;
    }
    return std::nullopt;
  }

  // This node's rank in the data plane of `generation` among `plane_nodes`, connected through the
  // coordinator's rendezvous, its messages sealed with `key` (from the coordinator; "" = in the
  // clear). Generation 0 is the plane the cluster formed with; every node joining the running job
  // makes a new one.
  std::shared_ptr<comm::data_plane> plane_of(std::uint32_t generation,
                                             const std::vector<std::int32_t>& plane_nodes,
                                             const std::string& key,
                                             std::chrono::milliseconds timeout) {
    return plane_maker(generation, plane_nodes, key, timeout)();
  }

  // What plane_of() connects, made ready here and run by the caller: it holds copies of what it
  // needs, not this object.
  plane_maker_type plane_maker(std::uint32_t generation,
                               const std::vector<std::int32_t>& plane_nodes, const std::string& key,
                               std::chrono::milliseconds timeout) {
    auto found = std::find(plane_nodes.begin(), plane_nodes.end(), welcome_.node);
    if (found == plane_nodes.end())
      throw comm::comm_error(comm::outcome::invalid_argument,
                             "node " + std::to_string(welcome_.node) +
                                 " is not in data plane generation " + std::to_string(generation));
    const int rank = static_cast<int>(found - plane_nodes.begin());
    const int size = static_cast<int>(plane_nodes.size());
    if (options_.make_plane)
      return [make = options_.make_plane, generation, rank, size] {
        return make(generation, rank, size);
      };
    auto plane_options = node_plane_options(config_, hello_.data_host,
                                            plane_prefix(welcome_.job, generation), timeout, key);
    // Copies, not this object nor the run's options: the plane outlives the one (hosted::stop
    // ends it), and one left to its own thread (connect_beside()) may outlive the other.
    plane_options.on_refused = [on_notice = options_.on_notice, generation, plane_nodes,
                                route = refusals_,
                                node = welcome_.node](int peer, const std::string& why) {
      const auto peer_node = plane_nodes[static_cast<std::size_t>(peer)];
      if (on_notice)
        on_notice("refused data-plane peer node " + std::to_string(peer_node) + " (generation " +
                  std::to_string(generation) + "): " + why +
                  "; the rounds it shares with this node abort until the coordinator re-keys the "
                  "data plane");
      route->report(plane_refusal{generation, node, peer_node, why});
    };
    if (options_.adjust_plane)
      options_.adjust_plane(generation, plane_options);
    store_ = std::make_shared<registry_store>(system_, registry_,
                                              [&options = options_] { return leaving(options); });
    return [rank, size, store = store_, plane_options] {
      return comm::make_gloo_plane(rank, size, store, plane_options);
    };
  }

  // The workers and the node reducer; the registry hears that the node is ready.
  void spawn() {
    std::shared_ptr<comm::data_plane> local = comm::make_local_plane(*options_.ops);
    const auto train = std::shared_ptr<const models::dataset>(data_, &data_->train);
    auto imbalance =
        std::make_shared<const imbalance_model>(config_.imbalance, config_.train.workers);
    node_reducer_setup reduction;
    reduction.buckets = gradient_buckets(config_, *model_);
    reduction.optimizer_state =
        models::optimizer::state_floats(optimizer_of(config_).kind, model_->parameter_count());
    parts_.relay = spawn_step_relay(system_, welcome_.coordinator);
    for (std::size_t i = 0; i < welcome_.workers.size(); ++i) {
      const std::int32_t index = welcome_.workers[i];
      auto setup = make_worker_setup(config_, index, model_, train, options_.ops, local, imbalance,
                                     options_.probe);
      if (!resumed_.empty())
        setup.resume = std::make_shared<const worker_record>(std::move(resumed_[i]));
      setup.relayed_reports = true;
      parts_.workers.push_back(spawn_worker(system_, std::move(setup), parts_.relay));
      reduction.workers[index] = parts_.workers.back();
    }
    resumed_.clear();
    reduction.parts.directory = parts_dir_;
    reduction.parts.shape = structure_of(config_, *model_, data_->train.size());
    reduction.parts.herd_version = herd_version();
    reduction.node = welcome_.node;
    reduction.local = local;
    reduction.plane = parts_.plane;
    reduction.generation = welcome_.generation;
    reduction.plane_nodes.assign(welcome_.plane_nodes.begin(), welcome_.plane_nodes.end());
    reduction.results = comm::buffer_pool::create(model_->parameter_count());
    reduction.data_timeout = std::chrono::milliseconds(config_.cluster.data_timeout_ms);
    reduction.notice = [&options = options_](const std::string& text) { notify(options, text); };
    parts_.reducer = spawn_node_reducer(system_, std::move(reduction));
    self_->send(registry_, node_ready{welcome_.node, parts_.workers, parts_.reducer,
                                      caf::actor_cast<caf::actor>(self_)});
  }

  // Until the coordinator says the job is over, or is lost. Meanwhile, when a node joins the
  // running job, this node connects the data plane's next generation with it; once it has asked
  // to depart, it waits for the answer as departure_ says.
  void serve() {
    departure_ = node_departure(departure_wait(config_.cluster));
    self_->receive_while([this] {
      return !over_;
    })([this](job_over_atom, const std::string& failure,
              const std::string& ending) { return job_over(failure, ending); },
       [this](depart_atom, bool released) { departed(released); },
       [this](depart_atom, const std::string& under_way) { departure_queued(under_way); },
       [this](depart_atom) { departure_.turn(clock_type::now()); },
       [this](const plane_rebuild& rebuild) -> caf::result<bool> { return rebuild_plane(rebuild); },
       [this](leave_atom, const std::string& why) { turned_away(why); },
       [this](run_stopped_atom, const std::string& how) { stopped_while_connecting(how); },
       [this](caf::down_msg& down) { coordinator_lost(down); },
       caf::after(leave_poll) >> [this] { tick(); });
    if (outcome_.left && outcome_.ok)
      notify(options_,
             std::string(departure_.released() ? "left the job once the rounds it was in had ended"
                                               : "left the job before it was over") +
                 "; the coordinator counts this node's workers lost, and another node "
                 "may join in their place");
    else if (outcome_.ok && !stopped_before_run_)
      notify(options_, "the job is over" + (ending_.empty() ? "" : ": " + ending_));
  }

  bool job_over(const std::string& failure, const std::string& ending) {
    over_ = true;
    ending_ = ending;
    outcome_.left = false; // it ended before the node could leave: nothing to leave
    if (failure.empty())
      outcome_.ok = true;
    else
      outcome_ = fail(outcome_, "the job failed on the coordinator: " + failure);
    return true;
  }

  void departed(bool released) {
    over_ = true;
    departure_.answered(released);
  }

  void departure_queued(const std::string& under_way) {
    departure_.queued();
    notify(options_, "leaves once the " + under_way +
                         " under way has ended (a second stop signal leaves at once)");
  }

  void turned_away(const std::string& why) {
    over_ = true;
    failed("the coordinator turned this node away: " + why);
  }

  void stopped_while_connecting(const std::string& how) {
    over_ = true;
    outcome_.ok = true;
    stopped_before_run_ = true;
    notify(options_, never_started(how));
  }

  void coordinator_lost(const caf::down_msg& down) {
    over_ = true;
    if (departure_.asked())
      return; // leaving anyway
    // The connection closed: either side may have gone (a node paused past the timeout is
    // dropped by the coordinator, and sees only that).
    failed("lost the coordinator: " +
           (down.reason == caf::exit_reason::remote_link_unreachable
                ? std::string("the connection to it closed (it exited or crashed, the network "
                              "went away, or it dropped this node, silent past "
                              "cluster.node-timeout-ms: paused or overloaded)")
                : system_.render(down.reason)));
    outcome_.lost_coordinator = true;
  }

  // Every leave_poll: a departure waits out its bound; a stop signal asks to depart.
  void tick() {
    const auto now = clock_type::now();
    if (departure_.asked()) {
      over_ = departure_.gave_up(now);
      return;
    }
    if (!leaving(options_))
      return;
    outcome_.ok = true;
    outcome_.left = true;
    self_->send(registry_, depart_atom::value, std::string("it left the job"));
    departure_.ask(now);
  }

  caf::result<bool> rebuild_plane(const plane_rebuild& rebuild) {
    try {
      auto plane = plane_of(rebuild.generation, rebuild.plane_nodes, rebuild.data_key,
                            std::chrono::milliseconds(config_.cluster.data_timeout_ms));
      self_->send(parts_.reducer,
                  plane_update{rebuild.generation, rebuild.plane_nodes, std::move(plane)});
    } catch (const std::exception& bad) {
      const auto why = store_ ? store_->refusal() : std::nullopt; // the coordinator's reason
      const std::string text = why ? *why + " (" + bad.what() + ")" : std::string(bad.what());
      notify(options_, "the data plane did not reconnect: " + text);
      return make_error(herd_errc::join_refused, text);
    }
    notify(options_, "data plane reconnected (generation " + std::to_string(rebuild.generation) +
                         ", " + std::to_string(rebuild.plane_nodes.size()) + " nodes)");
    return true;
  }

  caf::actor_system& system_;
  const node_options& options_;
  caf::actor registry_;
  clock_type::time_point deadline_;
  std::string limit_; // the setting that set deadline_, for messages
  hosted& parts_;
  std::string& parts_dir_;
  caf::scoped_actor self_;
  node_outcome outcome_;
  node_hello hello_;
  node_welcome welcome_;
  bool welcomed_ = false;
  bool stopped_before_run_ = false; // the answer to its hello: the coordinator was stopped
  bool over_ = false;               // serve() ends: the job is over or the node's part of it
  std::string ending_;              // how the job ended, as the coordinator says
  node_departure departure_{clock_type::duration::zero()}; // the run's, once serve() begins
  config::run_config config_;
  std::shared_ptr<const models::train_test_split> data_;
  std::shared_ptr<const models::model> model_;
  std::vector<worker_record> resumed_; // from the checkpoint part, in welcome_.workers' order
  std::shared_ptr<refusal_route> refusals_;
  std::shared_ptr<registry_store> store_; // the last plane's rendezvous, which knows its refusal
};

} // namespace

node_outcome run_node(const node_options& options) {
  node_outcome outcome;
  outcome.workers = options.workers;
  auto deadline = clock_type::now() + std::chrono::seconds(options.cluster.join_timeout_s);
  gate_dialer gate(options.coordinator_host, options.coordinator_port,
                   gate_settings_of(options.cluster));
  std::string lost; // why the last connection to the coordinator broke, while rejoining
  std::string parts_dir = options.checkpoint_dir;
  for (;;) {
    // Each membership has an actor system of its own, so that a node joining again is a CAF node
    // the coordinator has never seen: after a partition that healed, the coordinator's CAF may
    // still hold a route and proxies for the old one, and took the new connections of the same
    // node for redundant ones (the rejoin then failed in about one run of six).
    caf::actor_system_config system_config;
    configure_remoting(system_config, options.cluster);
    caf::actor_system system{system_config};
    gate_connection attempt;
    auto registry = dial_coordinator(system, options, gate, deadline, attempt);
    if (!registry && leaving(options))
      return fail(outcome, "interrupted before it reached the coordinator");
    if (!registry) {
      const std::string why =
          attempt.failure != gate_failure::unreachable
              ? attempt.why
              : "cannot reach the coordinator at " + options.coordinator_host + ":" +
                    std::to_string(options.coordinator_port) + " within " +
                    (lost.empty()
                         ? std::to_string(options.cluster.join_timeout_s) +
                               " s (cluster.join-timeout-s)"
                         : std::to_string(options.cluster.rejoin_s) + " s (cluster.rejoin-s)") +
                    ": " + attempt.why;
      return fail(outcome, lost.empty() ? why : lost + "; could not join again: " + why);
    }
    hosted parts;
    try {
      const std::string limit =
          lost.empty()
              ? "cluster.join-timeout-s = " + std::to_string(options.cluster.join_timeout_s) + " s"
              : "cluster.rejoin-s = " + std::to_string(options.cluster.rejoin_s) + " s";
      outcome = joined_node(system, options, registry, deadline, limit, parts, parts_dir).run();
    } catch (const std::exception& error) {
      outcome = fail(outcome, error.what());
    }
    parts.stop();
    registry = nullptr;
    system.await_all_actors_done();
    if (!lost.empty() && !outcome.ok && !outcome.lost_coordinator)
      outcome.error = lost + "; could not join again: " + outcome.error;
    if (outcome.ok || !outcome.lost_coordinator || leaving(options) ||
        options.cluster.rejoin_s == 0)
      break;
    // Declared lost (paused or cut off longer than the node timeout) is not the end: the job may
    // still run, and this node's workers are the lost ones it can take back.
    lost = outcome.error;
    notify(options, outcome.error + "; joining the running job again (for up to " +
                        std::to_string(options.cluster.rejoin_s) + " s, cluster.rejoin-s)");
    deadline = clock_type::now() + std::chrono::seconds(options.cluster.rejoin_s);
  }
  return outcome;
}

} // namespace herd::cluster
