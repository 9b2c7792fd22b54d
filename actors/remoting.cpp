// The actor-system settings every process of a cluster shares; see remoting.hpp.
#include "actors/remoting.hpp"

#include "actors/messages.hpp"

#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include <algorithm>
#include <thread>

namespace herd::actors {

void configure_remoting(caf::actor_system_config& system_config,
                        const config::cluster_section& cluster) {
  add_message_types(system_config);
  system_config.load<caf::io::middleman>();
  if (cluster.tls()) {
    system_config.load<caf::openssl::manager>();
    system_config.openssl_cafile = cluster.tls_ca;
    system_config.openssl_certificate = cluster.tls_cert;
    system_config.openssl_key = cluster.tls_key;
  }
  system_config.set("scheduler.policy", caf::atom("sharing"));
  system_config.set("scheduler.max-threads",
                    std::clamp<std::size_t>(std::thread::hardware_concurrency(), 2, 8));
  // Both settings on every process, or a healthy idle peer looks dead (shared/stack.md 1.5).
  system_config.set("middleman.heartbeat-interval",
                    caf::timespan{std::chrono::milliseconds(cluster.heartbeat_ms)});
  system_config.set("middleman.connection-timeout",
                    caf::timespan{std::chrono::milliseconds(cluster.node_timeout_ms)});
}

caf::expected<std::uint16_t> publish_on_loopback(const caf::actor& actor,
                                                 const config::cluster_section& cluster) {
  if (cluster.tls())
    return caf::openssl::publish(actor, 0, "127.0.0.1", true);
  return actor.home_system().middleman().publish(actor, 0, "127.0.0.1", true);
}

caf::expected<caf::actor> remote_on_loopback(caf::actor_system& system, std::uint16_t port,
                                             const config::cluster_section& cluster) {
  if (cluster.tls())
    return caf::openssl::remote_actor<caf::actor>(system, "127.0.0.1", port);
  return system.middleman().remote_actor("127.0.0.1", port);
}

} // namespace herd::actors
