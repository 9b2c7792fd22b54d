// One end of a control-plane connection between the gate and a peer: a TCP socket, with TLS on it
// when the cluster has a CA (mutual authentication: both ends present a certificate the cluster CA
// signed). Blocking helpers with a deadline for the handshake and the preamble, and non-blocking
// reads and writes, through which CAF's reader uses the TLS session once the gate handed the
// connection over (remoting.hpp). OpenSSL directly, no CAF.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <poll.h>
#include <string>

namespace herd::cluster {

using gate_clock = std::chrono::steady_clock;

/// The cluster.tls-* files. TLS is off when `ca` is empty.
struct tls_files {
  std::string ca;
  std::string cert;
  std::string key;
  bool enabled() const { return !ca.empty(); }
};

/// An OpenSSL context for one side. Throws config::invalid_config (key cluster.tls-ca, -cert or
/// -key) naming the file and why when a file cannot be used: no PEM block of its kind in it, a key
/// that does not belong to the certificate, or OpenSSL's reason.
class tls_context {
public:
  enum class side { server, client };
  tls_context(side role, const tls_files& files);
  ~tls_context();
  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  side role() const { return role_; }
  void* native() const { return context_; } // SSL_CTX*

private:
  side role_;
  void* context_ = nullptr;
};

/// The result of one non-blocking transfer.
enum class link_status { done, would_block, closed, failed };

/// What a TLS handshake came to, for code to act on (never its words, which OpenSSL's releases
/// may change); describe() says it for people.
struct handshake_result {
  enum class kind {
    done,
    deadline,        // no handshake before the deadline
    stopped,         // the stop descriptor became readable
    closed,          // the peer closed the connection
    wrong_name,      // the peer's certificate does not name the host dialled
    untrusted,       // the peer's certificate failed verification against the cluster CA
    refused_by_peer, // the peer ended the handshake: it did not trust this side's certificate
    peer_alert,      // the peer ended the handshake with another alert
    plain_peer,      // the peer does not speak TLS
    other,
  };
  kind what = kind::done;
  /// wrong_name: what the certificate names; untrusted: the verification's error; the kinds from
  /// OpenSSL's reasons: their text.
  std::string detail;
  std::string expected_name; // wrong_name: the host dialled

  bool ok() const { return what == kind::done; }
  /// Why, in words; the peer called `peer` ("the peer", "the coordinator"), the CA named
  /// with its file `ca` where given.
  std::string describe(const std::string& peer = "the peer", const std::string& ca = "") const;
};

class gate_link {
public:
  /// Takes ownership of the connected socket `fd` (made non-blocking). With a context, TLS runs on
  /// it once handshake() is called; without one, it is plain TCP.
  gate_link(int fd, const tls_context* tls);
  ~gate_link();
  gate_link(const gate_link&) = delete;
  gate_link& operator=(const gate_link&) = delete;

  int fd() const { return fd_; }
  bool secure() const { return ssl_ != nullptr; }

  /// Client side, before handshake(): the peer's certificate must name `host` (a DNS name in its
  /// subject alternative names, or an IP address as an IP one), or the handshake fails.
  void expect_peer_name(const std::string& host);

  /// Runs the TLS handshake (nothing for plain TCP) until `deadline`, or until `stop_fd` (when
  /// not -1) becomes readable: done, or what it failed on (for a certificate: which check it
  /// failed and what the certificate names).
  handshake_result handshake(gate_clock::time_point deadline, int stop_fd = -1);

  /// Server side, after handshake(): empty when the peer's certificate names `address`, the IP it
  /// connects from, as an IP alternative name, or names a host whose DNS addresses include it;
  /// else why not, with what the certificate names.
  std::string check_peer_address(const std::string& peer) const;

  /// Non-blocking. `moved` is set to the bytes transferred when done.
  link_status read_some(char* data, std::size_t size, std::size_t& moved);
  link_status write_some(const char* data, std::size_t size, std::size_t& moved);
  /// The poll() events the last write that would block waits for.
  short write_wants() const { return write_wants_; }
  /// Bytes TLS has decrypted that no read took yet (poll() does not see them).
  bool has_buffered_input() const;
  /// Why the last transfer failed.
  const std::string& failure() const { return failure_; }
  /// Whether it failed in TLS (an alert, a record that does not open), not on the socket.
  bool failed_in_tls() const { return failed_in_tls_; }

  /// Blocking helpers (poll with a deadline and an optional stop descriptor).
  bool read_exactly(void* data, std::size_t size, gate_clock::time_point deadline,
                    int stop_fd = -1);
  bool write_all(const void* data, std::size_t size, gate_clock::time_point deadline,
                 int stop_fd = -1);

  /// Sends TLS's close notification when possible; the socket closes with the object.
  void close_gracefully();

  /// After a failed handshake: closes the sending side and discards what the peer still sends,
  /// until it closes too, `deadline` or `stop_fd`. Closing with unread bytes (the peer's first
  /// message, sent once its own handshake returned) resets the connection, and the reset can
  /// overtake the TLS alert that says why the peer was refused.
  void drain_before_close(gate_clock::time_point deadline, int stop_fd = -1);

  /// Hands the socket (still non-blocking) to a reader that takes it over (CAF's): from here
  /// the new owner closes it, not this link. In plain TCP the link is done with it: a plain link
  /// reads only what it is asked for, so nothing the peer sent stays behind. With TLS the link
  /// stays the session on it: the new owner reads and writes through read_some() and
  /// write_some(), and asks has_buffered_input() for what TLS decrypted ahead.
  int hand_over();

private:
  link_status settle(int result, std::size_t& moved, short& wants);
  bool wait(short events, gate_clock::time_point deadline, int stop_fd);

  int fd_ = -1;
  bool owns_fd_ = true;            // until hand_over()
  std::string expected_peer_;      // expect_peer_name()'s host, for the handshake's failure
  std::string failed_certificate_; // what the peer's certificate names, once it failed a check
  void* ssl_ = nullptr;            // SSL*
  short read_wants_ = POLLIN;
  short write_wants_ = POLLOUT;
  std::string failure_;
  bool failed_in_tls_ = false;
};

/// OpenSSL's queued errors as one line (and clears the queue).
std::string tls_error_text();

/// The TLS library this process runs with, for `herd devices`: "OpenSSL 3.0.15 3 Sep 2024".
std::string tls_library();

} // namespace herd::cluster
