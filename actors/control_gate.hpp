// The control plane's front door. CAF 0.17's middleman crashes the whole process on some
// malformed handshakes (a 32-byte client handshake of zeros is enough: a null dereference in
// libcaf_io), so the coordinator never exposes CAF's own port. Its public port belongs to a
// gate_listener: a connection must first present Herd's preamble (a magic word, the cluster
// protocol version and the cluster token); only then are its bytes relayed to CAF on a loopback
// port. Anything else is closed before CAF sees a byte. A node's middleman connects to a
// gate_dialer on its own loopback port, which dials the coordinator's gate and sends the
// preamble. Plain sockets and threads; no CAF.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace herd::actors {

/// The coordinator's side: listens on host:port (0 = any free port) and relays admitted
/// connections to 127.0.0.1:`inner_port`, where CAF listens.
class gate_listener {
public:
  /// Throws std::runtime_error naming the address when it cannot listen. `on_refused` hears, on a
  /// gate thread, why a connection was refused (for the operator's log); may be empty.
  gate_listener(const std::string& host, std::uint16_t port, std::uint16_t inner_port,
                std::string token, std::function<void(const std::string&)> on_refused);
  ~gate_listener();
  gate_listener(const gate_listener&) = delete;
  gate_listener& operator=(const gate_listener&) = delete;

  std::uint16_t port() const;

  /// Waits until every relayed connection has been closed by its ends (nodes leave once told
  /// the job is over or refused), or `timeout` passed: what is on its way still arrives.
  void drain(std::chrono::milliseconds timeout);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A node's side: listens on a loopback port; every connection to it is relayed to the
/// coordinator's gate at host:port, opened with the preamble.
class gate_dialer {
public:
  gate_dialer(std::string coordinator_host, std::uint16_t coordinator_port, std::string token);
  ~gate_dialer();
  gate_dialer(const gate_dialer&) = delete;
  gate_dialer& operator=(const gate_dialer&) = delete;

  /// Where the node's middleman connects.
  std::uint16_t local_port() const;
  /// Why the last connection to the coordinator failed or was refused; empty if none did.
  std::string last_failure() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herd::actors
