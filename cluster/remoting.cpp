// The actor-system settings every process of a cluster shares; see remoting.hpp.
#include "cluster/remoting.hpp"

#include "actors/messages.hpp"
#include "actors/scheduling.hpp"
#include "kernels/machine.hpp"

#include <caf/io/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/policy/tcp.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>

#include "cluster/basp_check.hpp"

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

// How CAF's stream reads and writes a TLS session the gate began: through the gate's link, which
// keeps the session (and blocks SIGPIPE around OpenSSL's writes). "Would block" is a transfer of
// nothing, as for CAF's own TCP policy.
class tls_io {
public:
  explicit tls_io(std::shared_ptr<gate_link> link) : link_(std::move(link)) {}
  ~tls_io() { link_->close_gracefully(); } // a close notification when the socket can take it

  caf::io::network::rw_state read_some(size_t& result, caf::io::network::native_socket,
                                       void* data, size_t size) {
    return settled(link_->read_some(static_cast<char*>(data), size, result));
  }
  caf::io::network::rw_state write_some(size_t& result, caf::io::network::native_socket,
                                        const void* data, size_t size) {
    return settled(link_->write_some(static_cast<const char*>(data), size, result));
  }
  // Bytes TLS decrypted ahead: the socket's readiness does not show them.
  bool must_read_more(caf::io::network::native_socket, size_t) {
    return link_->has_buffered_input();
  }

private:
  static caf::io::network::rw_state settled(link_status status) {
    return status == link_status::done || status == link_status::would_block
               ? caf::io::network::rw_state::success
               : caf::io::network::rw_state::failure;
  }

  std::shared_ptr<gate_link> link_;
};

// CAF's scribe on a peer's socket (CAF's own, caf::io::network::scribe_impl, generalised over how
// the stream reads and writes: `Io` is CAF's TCP policy in the clear, tls_io with TLS), except
// that every buffer CAF's remoting would consume is checked first. CAF reads exactly what its
// remoting asks for (a 32-byte header, then the payload that header announced), so the header
// is checked before the remoting sizes a buffer by it. A broken frame ends the connection the way
// a read failure does: the broker hears that the connection closed, and the peer's node is lost.
template <class Io>
class checked_scribe final : public caf::io::scribe {
public:
  template <class... IoArguments>
  checked_scribe(caf::io::network::default_multiplexer& backend, int fd, basp_check check,
                 std::function<void(const std::string&)> on_broken, std::shared_ptr<void> hold,
                 IoArguments&&... io)
      : scribe(caf::io::network::conn_hdl_from_socket(fd)),
        stream_(backend, fd, std::forward<IoArguments>(io)...), check_(std::move(check)),
        on_broken_(std::move(on_broken)), hold_(std::move(hold)) {}

  bool consume(caf::execution_unit* context, const void* data, size_t size) override {
    const auto& problem = check_.feed(static_cast<const char*>(data), size);
    if (problem.empty())
      return scribe::consume(context, data, size);
    if (on_broken_)
      std::exchange(on_broken_, nullptr)(problem);
    io_failure(context, caf::io::network::operation::read);
    return false; // the stream stops reading
  }

  void configure_read(caf::io::receive_policy::config config) override {
    stream_.configure_read(config);
    if (!launched_) {
      launched_ = true;
      stream_.start(this);
    }
  }
  void ack_writes(bool enable) override { stream_.ack_writes(enable); }
  std::vector<char>& wr_buf() override { return stream_.wr_buf(); }
  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }
  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }
  void flush() override { stream_.flush(this); }
  std::string addr() const override {
    auto address = caf::io::network::remote_addr_of_fd(stream_.fd());
    return address ? *address : std::string();
  }
  uint16_t port() const override {
    auto number = caf::io::network::remote_port_of_fd(stream_.fd());
    return number ? *number : 0;
  }
  void add_to_loop() override { stream_.activate(this); }
  void remove_from_loop() override { stream_.passivate(); }

private:
  bool launched_ = false;
  caf::io::network::stream_impl<Io> stream_;
  basp_check check_;
  std::function<void(const std::string&)> on_broken_;
  std::shared_ptr<void> hold_; // the gate counts the connection until the scribe goes
};

// The checked scribe CAF reads the peer's socket `fd` with (and the TLS session on it, if any).
caf::io::scribe_ptr checked_scribe_for(caf::actor_system& system, int fd,
                                       std::shared_ptr<gate_link> tls, basp_check check,
                                       std::function<void(const std::string&)> on_broken = nullptr,
                                       std::shared_ptr<void> hold = nullptr) {
  auto* backend = dynamic_cast<caf::io::network::default_multiplexer*>(
      &system.middleman().backend());
  if (backend == nullptr)
    throw std::logic_error("a checked scribe needs CAF's default multiplexer");
  if (tls)
    return caf::make_counted<checked_scribe<tls_io>>(
        *backend, fd, std::move(check), std::move(on_broken), std::move(hold), std::move(tls));
  return caf::make_counted<checked_scribe<caf::policy::tcp>>(*backend, fd, std::move(check),
                                                             std::move(on_broken), std::move(hold));
}

} // namespace

void configure_remoting(caf::actor_system_config& system_config,
                        const config::cluster_section& cluster) {
  add_message_types(system_config);
  system_config.load<caf::io::middleman>();
  actors::use_herd_scheduler(system_config);
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
  // What all the nodes' frames may announce and not yet have sent: half of this process's memory,
  // at least 1 GiB (four of the largest frames). Snapshots for an evaluation come from every
  // worker at once under model averaging: 12 nodes of a 100 MB model announce 1.2 GB together.
  std::shared_ptr<payload_budget> budget = std::make_shared<payload_budget>(
      std::max<std::uint64_t>(std::uint64_t{1} << 30, kernels::this_process_memory().usable() / 2));

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
  auto scribe = checked_scribe_for(
      impl_->system, connection.fd, std::move(connection.tls),
      basp_check(basp_check::sender::client, basp_check::default_max_payload_bytes, impl_->budget),
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
  auto scribe = checked_scribe_for(system, outcome.caf_fd, std::move(outcome.tls),
                                   basp_check(basp_check::sender::server));
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
          [&](caf::error& error) {
            outcome.why =
                error == caf::sec::request_timeout || error == caf::sec::connection_timeout
                    ? "the coordinator took the connection but did not finish the "
                      "handshake within cluster.node-timeout-ms (" +
                          std::to_string(timeout.count()) + " ms): it is starting up, or overloaded"
                    : system.render(error);
          });
  if (!registry && outcome.failure == gate_failure::none)
    outcome.failure = gate_failure::unreachable;
  return registry;
}

} // namespace herd::cluster
