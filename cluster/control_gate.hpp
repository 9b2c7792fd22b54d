// The control plane's front door. CAF 0.17's middleman trusts every byte it reads: a 32-byte
// handshake header with no payload is a null dereference in libcaf_io, and a header announcing
// gigabytes is an allocation of gigabytes. So CAF never listens on a socket, and every frame a
// peer sends passes basp_check (basp_check.hpp) before CAF's remoting parses it. The
// coordinator's public port belongs to a gate_listener:
//   1. TLS first, when the cluster has a CA (both ends show a certificate the CA signed, and by
//      default each certificate must name the address its holder is reached at or comes from);
//   2. then, inside it, Herd's preamble: a magic word, the cluster protocol's version and the
//      cluster token, answered with one byte (accepted, or refused and a line saying why);
//   3. then CAF takes the peer's socket (and, with TLS, the session on it) and reads it itself,
//      through a checked scribe (remoting.hpp) that drops a peer whose framing breaks. No
//      thread copies bytes between two sockets.
// A node's gate_dialer does the same from the other side.
// Plain sockets, OpenSSL and threads; no CAF.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cluster/gate_link.hpp"

namespace herd::cluster {

struct gate_settings {
  std::string token; // cluster.token: what a peer must present ("" = nothing)
  tls_files tls;     // cluster.tls-*: TLS when tls.ca is set
  /// cluster.tls-check-names, with TLS: the coordinator refuses a node whose certificate does not
  /// name the address it connects from (an IP alternative name, or a DNS one resolving to it);
  /// a node refuses a coordinator whose certificate does not name the host it dials.
  bool check_names = true;
  /// How long a peer may take for the TLS handshake and the preamble.
  std::chrono::milliseconds handshake_timeout{3000};
};

/// A connection the gate admitted, on its way to CAF. Nothing checks what the peer sends from
/// here: CAF must read it through basp_check (a checked scribe, remoting.hpp).
struct admitted_connection {
  int fd = -1; ///< the peer's socket; CAF owns it from here
  /// With TLS, the session on `fd` (its handshake and the preamble done): CAF reads and writes
  /// through it. Null in the clear.
  std::shared_ptr<gate_link> tls;
  /// What to call, once, with basp_check's reason when the peer broke the framing (it says so in
  /// the gate's log).
  std::function<void(const std::string&)> on_broken;
  /// Kept for as long as the connection lasts: the gate counts live connections (max_connections,
  /// drain) by it.
  std::shared_ptr<void> hold;
};

/// The coordinator's side.
class gate_listener {
public:
  /// Takes each admitted connection; false when CAF cannot take it now (the connection is then
  /// closed).
  using admit_function = std::function<bool(admitted_connection)>;
  /// Hears, on a gate thread, why a connection was refused or a peer dropped (for the log).
  using notice_function = std::function<void(const std::string&)>;

  /// At most this many connections may be in the handshake at once, and at most
  /// max_pending_per_address from one address; more are closed unread (a node retries). One
  /// address holding its share of silent connections cannot keep other nodes out.
  static constexpr int max_pending = 256;
  static constexpr int max_pending_per_address = 8;
  /// At most this many admitted connections live at once (nodes of one job).
  static constexpr int max_connections = 1100;

  /// Listens on host:port (0 = any free port). Throws std::runtime_error naming the address when
  /// it cannot listen, or naming the key and file when a TLS file cannot be used.
  gate_listener(const std::string& host, std::uint16_t port, gate_settings settings,
                admit_function admit, notice_function on_notice);
  ~gate_listener();
  gate_listener(const gate_listener&) = delete;
  gate_listener& operator=(const gate_listener&) = delete;

  std::uint16_t port() const;

  /// Admitted connections that live now (CAF holds them).
  int connections() const;

  /// Waits until every admitted connection has been closed by its ends (nodes leave once told
  /// the job is over or refused), or `timeout` passed: what is on its way still arrives.
  void drain(std::chrono::milliseconds timeout);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Why a dialer could not open a connection.
enum class gate_failure {
  none,
  unreachable, // nothing answered (yet): worth retrying
  refused,     // the gate said no (token, version, TLS required): retrying does not help
  tls,         // the TLS handshake failed (certificates): retrying does not help
};

struct gate_connection {
  /// The socket to the coordinator, for CAF (it owns it from here, and reads it through
  /// basp_check); -1 on failure.
  int caf_fd = -1;
  std::shared_ptr<gate_link> tls; // with TLS, the session on caf_fd; null in the clear
  gate_failure failure = gate_failure::none;
  std::string why; // for people
};

/// A node's side: dials the coordinator's gate and hands the node's CAF the connection.
class gate_dialer {
public:
  /// Throws std::runtime_error naming the key and file when a TLS file cannot be used.
  gate_dialer(std::string coordinator_host, std::uint16_t coordinator_port, gate_settings settings);
  ~gate_dialer();
  gate_dialer(const gate_dialer&) = delete;
  gate_dialer& operator=(const gate_dialer&) = delete;

  /// Connects and authenticates; the caller hands the connection to CAF (which then owns it).
  gate_connection open();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace herd::cluster
