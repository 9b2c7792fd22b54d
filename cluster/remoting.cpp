// The actor-system settings every process of a cluster shares; see remoting.hpp.
#include "cluster/remoting.hpp"

#include "actors/messages.hpp"

#include <caf/io/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/scribe_impl.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

namespace herd::cluster {

// The actors of one process, which a cluster connects across processes.
using namespace herd::actors;

namespace {

// The middleman's BASP broker, which owns every remote connection of the system. Handing it a
// scribe over a socket is how CAF's own middleman actor connects, and (for the server side) how
// CAF's tests publish without a doorman.
caf::actor basp_broker_of(caf::actor_system& system) {
  return system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
}

// CAF's own scribe on a peer's socket, except that every buffer CAF's remoting would consume is
// checked first. CAF reads exactly what its remoting asks for (a 32-byte header, then the payload
// that header announced), so the header is checked before the remoting sizes a buffer by it. A
// broken frame ends the connection the way a read failure does: the broker hears that the
// connection closed, and the peer's node is lost.
class checked_scribe final : public caf::io::network::scribe_impl {
public:
  checked_scribe(caf::io::network::default_multiplexer& backend, int fd, basp_check check,
                 std::function<void(const std::string&)> on_broken, std::shared_ptr<void> hold)
      : scribe_impl(backend, fd), check_(std::move(check)), on_broken_(std::move(on_broken)),
        hold_(std::move(hold)) {}

  bool consume(caf::execution_unit* context, const void* data, size_t size) override {
    const auto& problem = check_.feed(static_cast<const char*>(data), size);
    if (problem.empty())
      return scribe::consume(context, data, size);
    if (on_broken_)
      std::exchange(on_broken_, nullptr)(problem);
    io_failure(context, caf::io::network::operation::read);
    return false; // the stream stops reading
  }

private:
  basp_check check_;
  std::function<void(const std::string&)> on_broken_;
  std::shared_ptr<void> hold_; // the gate counts the connection until the scribe goes
};

// The scribe CAF reads `fd` with: a checked one for a peer's own socket, CAF's own for the end
// of a socketpair the gate relays (and checks).
caf::io::scribe_ptr scribe_for(caf::actor_system& system, int fd, bool direct,
                               basp_check::sender sender,
                               std::function<void(const std::string&)> on_broken = nullptr,
                               std::shared_ptr<void> hold = nullptr) {
  auto& backend = system.middleman().backend();
  if (!direct)
    return backend.new_scribe(fd);
  auto* multiplexer = dynamic_cast<caf::io::network::default_multiplexer*>(&backend);
  if (multiplexer == nullptr)
    throw std::logic_error("a checked scribe needs CAF's default multiplexer");
  return caf::make_counted<checked_scribe>(*multiplexer, fd, basp_check(sender),
                                           std::move(on_broken), std::move(hold));
}

} // namespace

void configure_remoting(caf::actor_system_config& system_config,
                        const config::cluster_section& cluster) {
  add_message_types(system_config);
  system_config.load<caf::io::middleman>();
  system_config.set("scheduler.policy", caf::atom("sharing"));
  system_config.set("scheduler.max-threads",
                    std::clamp<std::size_t>(std::thread::hardware_concurrency(), 2, 8));
  // Both settings on every process, or a healthy idle peer looks dead.
  system_config.set("middleman.heartbeat-interval",
                    caf::timespan{std::chrono::milliseconds(cluster.heartbeat_ms)});
  system_config.set("middleman.connection-timeout",
                    caf::timespan{std::chrono::milliseconds(cluster.node_timeout_ms)});
}

gate_settings gate_settings_of(const config::cluster_section& cluster) {
  gate_settings settings;
  settings.token = cluster.token;
  settings.tls = {cluster.tls_ca, cluster.tls_cert, cluster.tls_key};
  settings.check_names = cluster.tls_check_names;
  return settings;
}

struct connection_server::impl {
  caf::actor_system& system;
  caf::actor broker;
  caf::actor published;
  std::uint16_t port = 0;
  std::mutex mutex;
  bool stopped = false;

  impl(caf::actor_system& sys, caf::actor actor, std::uint16_t number)
      : system(sys), broker(basp_broker_of(sys)), published(std::move(actor)), port(number) {}
};

connection_server::connection_server(caf::actor_system& system, caf::actor published,
                                     std::uint16_t port)
    : impl_(std::make_unique<impl>(system, std::move(published), port)) {}

connection_server::~connection_server() {
  stop();
}

bool connection_server::serve(admitted_connection connection) {
  std::lock_guard<std::mutex> guard(impl_->mutex);
  if (impl_->stopped)
    return false;
  auto scribe =
      scribe_for(impl_->system, connection.fd, connection.direct, basp_check::sender::client,
                 std::move(connection.on_broken), std::move(connection.hold));
  // The broker adds the scribe, (re)publishes the actor under `port` and sends the server
  // handshake that names it.
  caf::anon_send(impl_->broker, caf::publish_atom::value, std::move(scribe), impl_->port,
                 caf::actor_cast<caf::strong_actor_ptr>(impl_->published), std::set<std::string>{});
  return true;
}

void connection_server::stop() {
  caf::actor published;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex);
    if (impl_->stopped)
      return;
    impl_->stopped = true;
    published = std::move(impl_->published);
  }
  // No node may have connected, so there may be nothing to unpublish: that is fine.
  [[maybe_unused]] auto ignored = impl_->system.middleman().unpublish(published, impl_->port);
}

caf::actor remote_through_gate(caf::actor_system& system, gate_dialer& dialer,
                               gate_connection& outcome, std::chrono::milliseconds timeout) {
  outcome = dialer.open();
  if (outcome.caf_fd < 0)
    return nullptr;
  auto scribe = scribe_for(system, outcome.caf_fd, outcome.direct, basp_check::sender::server);
  caf::actor registry;
  caf::scoped_actor self{system};
  self->request(basp_broker_of(system), timeout, caf::connect_atom::value, std::move(scribe),
                std::uint16_t{0})
      .receive(
          [&](caf::node_id&, caf::strong_actor_ptr& published, std::set<std::string>&) {
            if (published)
              registry = caf::actor_cast<caf::actor>(std::move(published));
            else
              outcome.why = "the coordinator published no actor (is it a Herd coordinator?)";
          },
          [&](caf::error& error) { outcome.why = system.render(error); });
  if (!registry && outcome.failure == gate_failure::none)
    outcome.failure = gate_failure::unreachable;
  return registry;
}

} // namespace herd::cluster
