// A node's way to its coordinator; see node_dial.hpp.
#include "cluster/node_dial.hpp"

#include "actors/messages.hpp"

#include <caf/io/all.hpp>

#include <algorithm>
#include <thread>

#include "cluster/remoting.hpp"

namespace herd::cluster {

bool leaving(const node_options& options) {
  return options.leave != nullptr && options.leave->load();
}

std::chrono::milliseconds departure_wait(const config::cluster_section& cluster) {
  return std::min<std::chrono::milliseconds>(std::chrono::milliseconds(cluster.data_timeout_ms),
                                             std::chrono::seconds(10));
}

void notify(const node_options& options, const std::string& text) {
  if (options.on_notice)
    options.on_notice(text);
}

caf::actor dial_coordinator(caf::actor_system& system, const node_options& options,
                            gate_dialer& gate, node_clock::time_point deadline,
                            gate_connection& outcome) {
  const auto handshake_timeout = std::chrono::milliseconds(options.cluster.node_timeout_ms);
  auto registry = remote_through_gate(system, gate, outcome, handshake_timeout);
  // Says why it waits, again whenever the reason changes (a coordinator that listens now but
  // does not answer is another problem than one that is not there yet) and once a minute.
  std::string said;
  const auto started = node_clock::now();
  auto last_said = started;
  // Backs off from 250 ms to 2 s between attempts: a coordinator being restarted comes back
  // within seconds, and a thousand nodes should not dial it four times a second meanwhile.
  std::chrono::milliseconds pause{250};
  while (!registry && node_clock::now() < deadline && !leaving(options) &&
         outcome.failure == gate_failure::unreachable) {
    const auto now = node_clock::now();
    if (said.empty() || outcome.why != said || now - last_said >= std::chrono::minutes(1)) {
      const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - started).count();
      notify(options, (said.empty() ? std::string("waiting")
                                    : "still waiting after " + std::to_string(waited) + " s") +
                          " for the coordinator at " + options.coordinator_host + ":" +
                          std::to_string(options.coordinator_port) + " (" + outcome.why + ")");
      said = outcome.why;
      last_said = now;
    }
    std::this_thread::sleep_for(std::min<node_clock::duration>(
        pause, std::max(deadline - node_clock::now(), node_clock::duration::zero())));
    pause = std::min(pause * 2, std::chrono::milliseconds(2000));
    registry = remote_through_gate(system, gate, outcome, handshake_timeout);
  }
  return registry;
}

} // namespace herd::cluster
