// One node of a cluster; see cluster_node.hpp.
#include "cluster/cluster_node.hpp"

#include "actors/errors.hpp"
#include "actors/messages.hpp"
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"
#include "comm/buffer_pool.hpp"
#include "comm/gloo_plane.hpp"
#include "config/loader.hpp"

#include <caf/io/all.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <cstdio>
#include <map>
#include <netdb.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "cluster/control_gate.hpp"
#include "cluster/node_reducer.hpp"
#include "cluster/remoting.hpp"

namespace herd::cluster {

// The actors of one process, which a cluster connects across processes.
using namespace herd::actors;

namespace {

using clock_type = std::chrono::steady_clock;

// The data plane's rendezvous keys live in the coordinator's registry; Gloo calls this from the
// thread that builds the plane, so each call uses a short-lived scoped actor (a long-lived one
// slows down with every timed request in CAF 0.17: stale timeouts pile up in its mailbox).
class registry_store final : public comm::rendezvous_store {
public:
  registry_store(caf::actor_system& system, caf::actor registry)
      : system_(system), registry_(std::move(registry)) {}

  void set(const std::string& key, const std::vector<char>& value) override {
    caf::scoped_actor self{system_};
    self->send(registry_, store_set_atom::value, key, value);
  }

  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override {
    caf::scoped_actor self{system_};
    std::vector<char> value;
    std::string failure;
    self->request(registry_, timeout, store_get_atom::value, key)
        .receive([&](std::vector<char>& found) { value = std::move(found); },
                 [&](caf::error& error) { failure = system_.render(error); });
    if (!failure.empty())
      throw comm::comm_error("rendezvous key " + key + " not set by the other nodes within " +
                             std::to_string(timeout.count()) + " ms: " + failure);
    return value;
  }

private:
  caf::actor_system& system_;
  caf::actor registry_;
};

constexpr std::chrono::milliseconds leave_poll{100};

bool leaving(const node_options& options) {
  return options.leave != nullptr && options.leave->load();
}

void notify(const node_options& options, const std::string& text) {
  if (options.on_notice)
    options.on_notice(text);
}

// Connects to the registry through the gate, retrying until the deadline: nodes may start
// before the coordinator. A refusal or a failed TLS handshake ends the attempts at once: a wrong
// token, version or certificate does not get better by waiting.
caf::actor connect(caf::actor_system& system, const node_options& options, gate_dialer& gate,
                   clock_type::time_point deadline, gate_connection& outcome) {
  const auto handshake_timeout = std::chrono::milliseconds(options.cluster.node_timeout_ms);
  auto registry = remote_through_gate(system, gate, outcome, handshake_timeout);
  bool said_waiting = false;
  while (!registry && clock_type::now() < deadline && !leaving(options) &&
         outcome.failure == gate_failure::unreachable) {
    if (!said_waiting) {
      notify(options, "waiting for the coordinator at " + options.coordinator_host + ":" +
                          std::to_string(options.coordinator_port) + " (" + outcome.why + ")");
      said_waiting = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    registry = remote_through_gate(system, gate, outcome, handshake_timeout);
  }
  return registry;
}

// Everything the node hosts, stopped in order when the job ends.
struct hosted {
  std::shared_ptr<comm::gloo_plane> plane;
  std::vector<caf::actor> workers;
  caf::actor reducer;

  void stop() {
    for (auto& worker : workers)
      caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    if (reducer)
      caf::anon_send_exit(reducer, caf::exit_reason::user_shutdown);
    workers.clear();
    reducer = nullptr;
  }
};

// This node's rank in the data plane of `generation` among `plane_nodes`, connected through the
// coordinator's rendezvous. Generation 0 is the plane the cluster formed with; every node joining
// the running job makes a new one.
std::shared_ptr<comm::gloo_plane>
connect_plane(caf::actor_system& system, const caf::actor& registry, const std::string& data_host,
              const std::string& job, std::uint32_t generation,
              const std::vector<std::int32_t>& plane_nodes, std::int32_t node,
              std::chrono::milliseconds timeout) {
  auto found = std::find(plane_nodes.begin(), plane_nodes.end(), node);
  if (found == plane_nodes.end())
    throw comm::comm_error("node " + std::to_string(node) + " is not in data plane generation " +
                           std::to_string(generation));
  comm::gloo_plane_options plane_options;
  plane_options.hostname = data_host;
  plane_options.prefix = plane_prefix(job, generation);
  plane_options.timeout = timeout;
  return std::make_shared<comm::gloo_plane>(
      static_cast<int>(found - plane_nodes.begin()), static_cast<int>(plane_nodes.size()),
      std::make_shared<registry_store>(system, registry), plane_options);
}

node_outcome fail(node_outcome outcome, std::string error) {
  outcome.ok = false;
  outcome.error = std::move(error);
  return outcome;
}

node_outcome run_joined(caf::actor_system& system, const node_options& options,
                        const caf::actor& registry, clock_type::time_point deadline,
                        hosted& parts) {
  node_outcome outcome;
  outcome.workers = options.workers;
  caf::scoped_actor self{system};
  self->monitor(registry);

  node_hello hello;
  hello.protocol = cluster_protocol_version;
  hello.name = options.name.empty() ? host_name() : options.name;
  hello.workers = options.workers;
  hello.data_host = options.data_host.empty()
                        ? local_address_towards(options.coordinator_host, options.coordinator_port)
                        : options.data_host;
  if (hello.data_host.empty())
    hello.data_host = "127.0.0.1";
  std::optional<node_welcome> welcome;
  std::string failure;
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(deadline - clock_type::now(), clock_type::duration(std::chrono::seconds(1))));
  // A plain send, not a request: the answer comes as a message, and so does the coordinator's
  // loss while the cluster forms (a request's receive would wait out its timeout instead).
  self->send(registry, hello);
  bool timed_out = false;
  bool answered = false;
  const auto wait_until = clock_type::now() + wait;
  while (!answered && !timed_out) {
    self->receive(
        [&](node_welcome& answer) {
          welcome = std::move(answer);
          answered = true;
        },
        [&](caf::error& error) {
          failure = system.render(error);
          answered = true;
        },
        [&](caf::down_msg& down) {
          failure = "lost the coordinator while the cluster formed: " + system.render(down.reason);
          answered = true;
        },
        caf::after(leave_poll) >>
            [&] {
              if (leaving(options)) {
                failure = "interrupted before the coordinator admitted this node";
                answered = true;
              }
              timed_out = clock_type::now() >= wait_until;
            });
  }
  if (timed_out)
    return fail(outcome, "no welcome from the coordinator within cluster.join-timeout-s (" +
                             std::to_string(options.cluster.join_timeout_s) +
                             " s): fewer than cluster.min-nodes nodes joined it (or, joining a "
                             "running job, the joins of other nodes took that long)");
  if (!welcome)
    return fail(outcome,
                leaving(options) ? failure : "the coordinator did not admit this node: " + failure);
  outcome.worker_indices.assign(welcome->workers.begin(), welcome->workers.end());
  outcome.joined_running = welcome->running;
  const std::string slots = index_list(welcome->workers);
  notify(options, welcome->running
                      ? "joining the running job as node " + std::to_string(welcome->node) +
                            " in place of lost worker(s) " + slots
                      : "joined as node " + std::to_string(welcome->node) + " of " +
                            std::to_string(welcome->plane_nodes.size()) + ": worker(s) " + slots);

  config::run_config config;
  try {
    config = config::load_text(welcome->settings, "the coordinator's settings");
  } catch (const std::exception& bad) {
    return fail(outcome, std::string("the coordinator's settings do not load here: ") + bad.what());
  }
  std::shared_ptr<const models::train_test_split> data;
  try {
    data = options.load_data(config);
  } catch (const std::exception& bad) {
    return fail(outcome, std::string("cannot load the run's dataset on this node: ") + bad.what());
  }
  if (data->train.size() != welcome->training_samples)
    return fail(outcome, "this node's training set (" + config.data.path + ") has " +
                             std::to_string(data->train.size()) + " samples, the coordinator's " +
                             std::to_string(welcome->training_samples) +
                             "; every node needs the same dataset");
  const auto sizes = mlp_layer_sizes(config, data->train);
  check_memory(sizes, options.workers);
  set_blas_threads_for(config, options.workers);
  auto model = std::make_shared<const models::mlp>(sizes);

  if (welcome->plane_nodes.size() > 1) {
    // Joining a running job, the others wait for this node's rendezvous for the data timeout.
    const auto timeout =
        welcome->running
            ? std::chrono::milliseconds(config.cluster.data_timeout_ms)
            : std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
                  deadline - clock_type::now(), clock_type::duration(std::chrono::seconds(5))));
    try {
      parts.plane =
          connect_plane(system, registry, hello.data_host, welcome->job, welcome->generation,
                        welcome->plane_nodes, welcome->node, timeout);
    } catch (const std::exception& bad) {
      return fail(outcome, std::string("the data plane did not connect: ") + bad.what());
    }
    notify(options, "data plane connected (" + hello.data_host + ", " +
                        std::to_string(welcome->plane_nodes.size()) + " nodes)");
  }

  std::shared_ptr<comm::backend> local = comm::make_local_backend(*options.ops);
  const auto train = std::shared_ptr<const models::dataset>(data, &data->train);
  auto imbalance = std::make_shared<const imbalance_model>(config.imbalance, config.train.workers);
  node_reducer_setup reduction;
  for (const std::int32_t index : welcome->workers) {
    parts.workers.push_back(spawn_worker(system,
                                         make_worker_setup(config, index, model, train, options.ops,
                                                           local, imbalance, options.probe),
                                         welcome->coordinator));
    reduction.workers[index] = parts.workers.back();
  }
  reduction.node = welcome->node;
  reduction.local = local;
  reduction.plane = parts.plane;
  reduction.generation = welcome->generation;
  reduction.plane_nodes.assign(welcome->plane_nodes.begin(), welcome->plane_nodes.end());
  reduction.results = comm::buffer_pool::create(model->parameter_count());
  reduction.data_timeout = std::chrono::milliseconds(config.cluster.data_timeout_ms);
  parts.reducer = spawn_node_reducer(system, std::move(reduction));

  node_ready ready;
  ready.node = welcome->node;
  ready.workers = parts.workers;
  ready.reducer = parts.reducer;
  ready.control = caf::actor_cast<caf::actor>(self);
  self->send(registry, ready);

  // Until the coordinator says the job is over, or is lost. Meanwhile, when a node joins the
  // running job, this node connects the data plane's next generation with it.
  bool over = false;
  self->receive_while([&] { return !over; })(
      [&](job_over_atom) {
        over = true;
        outcome.ok = true;
        return true;
      },
      [&](const plane_rebuild& rebuild) -> caf::result<bool> {
        const auto generation = rebuild.generation;
        const auto& plane_nodes = rebuild.plane_nodes;
        try {
          auto plane = connect_plane(system, registry, hello.data_host, welcome->job, generation,
                                     plane_nodes, welcome->node,
                                     std::chrono::milliseconds(config.cluster.data_timeout_ms));
          self->send(parts.reducer, plane_update{generation, plane_nodes, std::move(plane)});
        } catch (const std::exception& bad) {
          notify(options,
                 std::string("the data plane did not reconnect for a joining node: ") + bad.what());
          return make_error(herd_errc::join_refused, bad.what());
        }
        notify(options, "data plane reconnected with a joining node (generation " +
                            std::to_string(generation) + ", " + std::to_string(plane_nodes.size()) +
                            " nodes)");
        return true;
      },
      [&](leave_atom, const std::string& why) {
        over = true;
        outcome = fail(outcome, "the coordinator turned this node away: " + why);
      },
      [&](caf::down_msg& down) {
        over = true;
        outcome = fail(outcome, "lost the coordinator: " + system.render(down.reason));
        outcome.lost_coordinator = true;
      },
      caf::after(leave_poll) >>
          [&] {
            if (!leaving(options))
              return;
            over = true;
            outcome.ok = true;
            outcome.left = true;
          });
  if (outcome.left)
    notify(options, "left the job before it was over; the coordinator counts this node's "
                    "workers lost, and another node may join in their place");
  else if (outcome.ok)
    notify(options, "the job is over");
  return outcome;
}

} // namespace

std::string local_address_towards(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 ||
      found == nullptr)
    return {};
  std::string address;
  const int sock = ::socket(AF_INET, SOCK_DGRAM, 0);
  // Connecting a UDP socket sends nothing; it only picks the route and so the source address.
  if (sock >= 0 && ::connect(sock, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t length = sizeof local;
    char text[INET_ADDRSTRLEN] = {};
    if (::getsockname(sock, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof text) != nullptr)
      address = text;
  }
  if (sock >= 0)
    ::close(sock);
  ::freeaddrinfo(found);
  return address;
}

node_outcome run_node(const node_options& options) {
  node_outcome outcome;
  outcome.workers = options.workers;
  caf::actor_system_config system_config;
  configure_remoting(system_config, options.cluster);
  caf::actor_system system{system_config};
  auto deadline = clock_type::now() + std::chrono::seconds(options.cluster.join_timeout_s);
  gate_dialer gate(options.coordinator_host, options.coordinator_port,
                   gate_settings_of(options.cluster));
  std::string lost; // why the last connection to the coordinator broke, while rejoining
  for (;;) {
    gate_connection attempt;
    auto registry = connect(system, options, gate, deadline, attempt);
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
      outcome = run_joined(system, options, registry, deadline, parts);
    } catch (const std::exception& error) {
      outcome = fail(outcome, error.what());
    }
    parts.stop();
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
  system.await_all_actors_done();
  return outcome;
}

} // namespace herd::cluster
