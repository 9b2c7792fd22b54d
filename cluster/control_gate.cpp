// The control plane's front door; see control_gate.hpp.
#include "cluster/control_gate.hpp"

#include "actors/cluster_protocol.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h> // O_CLOEXEC
#include <map>
#include <mutex>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "cluster/refusal_log.hpp"
#include "cluster/tcp_socket.hpp"
#include "cluster/thread_set.hpp"

namespace herd::cluster {

namespace {

// "HERDGATE", the cluster protocol's version (4 bytes, big-endian), the token's length (2 bytes)
// and the token. The gate answers one byte: accepted or refused (then a line saying why). It runs
// inside TLS when the cluster has a CA. The version is the messages' (actors/cluster_protocol.hpp):
// a node of another Herd is refused here, by name, rather than sending a hello CAF cannot read
// (Herd 0.2 before protocol 20 sent a gate version of its own, 2).
constexpr char magic[] = {'H', 'E', 'R', 'D', 'G', 'A', 'T', 'E'};
constexpr std::uint32_t gate_version = actors::cluster_protocol_version;
constexpr char accepted = 'A';
constexpr char refused = 'R';
constexpr std::size_t max_token = 1024;
constexpr std::size_t max_refusal_line = 512;
constexpr std::chrono::milliseconds connect_timeout{5000};
constexpr std::chrono::milliseconds accept_pause{100}; // short of descriptors: before trying again

std::vector<char> preamble(const std::string& token) {
  std::vector<char> bytes(magic, magic + sizeof magic);
  for (int shift = 24; shift >= 0; shift -= 8)
    bytes.push_back(static_cast<char>((gate_version >> shift) & 0xff));
  bytes.push_back(static_cast<char>((token.size() >> 8) & 0xff));
  bytes.push_back(static_cast<char>(token.size() & 0xff));
  bytes.insert(bytes.end(), token.begin(), token.end());
  return bytes;
}

bool same_token(const std::string& presented, const std::string& token) {
  // Constant time in the token's bytes: a timing side channel must not spell it out.
  return presented.size() == token.size() &&
         CRYPTO_memcmp(presented.data(), token.data(), token.size()) == 0;
}

// Whether the gate's stop pipe is readable: it is shutting down (the job is over).
bool stopping(int stop_fd) {
  pollfd stop{stop_fd, POLLIN, 0};
  return ::poll(&stop, 1, 0) > 0;
}

// Reads and checks a connection's preamble; empty when admitted, else why not.
std::string check_preamble(gate_link& link, const std::string& token,
                           gate_clock::time_point deadline, int stop_fd) {
  char head[sizeof magic + 6];
  if (!link.read_exactly(head, sizeof head, deadline, stop_fd))
    return stopping(stop_fd) ? "the coordinator is shutting down: the job is over"
                             : "no Herd preamble before the deadline";
  // A TLS record of type handshake (22), version 3.x: a ClientHello, from a node with TLS.
  constexpr unsigned char tls_handshake = 0x16;
  constexpr unsigned char tls_major = 0x03;
  if (static_cast<unsigned char>(head[0]) == tls_handshake &&
      static_cast<unsigned char>(head[1]) == tls_major)
    return "a TLS client (a node with cluster.tls-* set?), but this coordinator does not use "
           "TLS: give both the same cluster.tls-* settings";
  if (std::memcmp(head, magic, sizeof magic) != 0)
    return "not a Herd node (no preamble; a port scanner, or another protocol)";
  std::uint32_t version = 0;
  for (int i = 0; i < 4; ++i)
    version = (version << 8) | static_cast<unsigned char>(head[sizeof magic + i]);
  const std::size_t length =
      (static_cast<std::size_t>(static_cast<unsigned char>(head[sizeof magic + 4])) << 8) |
      static_cast<unsigned char>(head[sizeof magic + 5]);
  if (version != gate_version)
    return "a node of cluster protocol " + std::to_string(version) + ", this coordinator speaks " +
           std::to_string(gate_version) + "; run the same Herd version everywhere";
  if (length > max_token)
    return "a token of " + std::to_string(length) + " bytes";
  std::string presented(length, '\0');
  if (length > 0 && !link.read_exactly(presented.data(), length, deadline, stop_fd))
    return "the token did not arrive";
  if (token.empty() && !presented.empty())
    return "this coordinator has no cluster.token: remove it from the node, or give the "
           "coordinator the same one";
  if (!token.empty() && presented.empty())
    return "this coordinator requires a cluster.token: give the node the coordinator's "
           "(cluster.token-file)";
  if (!same_token(presented, token))
    return "wrong cluster.token";
  return {};
}

// Threads of one gate, stopped together: every wait also watches a pipe that stop() writes to.
class gate_threads {
public:
  gate_threads() {
    if (::pipe2(stop_pipe_, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe: " + errno_text());
  }

  ~gate_threads() {
    stop();
    ::close(stop_pipe_[0]);
    ::close(stop_pipe_[1]);
  }

  gate_threads(const gate_threads&) = delete;
  gate_threads& operator=(const gate_threads&) = delete;

  void stop() {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (stopped_)
        return;
      stopped_ = true;
    }
    const char wake = 'x';
    [[maybe_unused]] auto ignored = ::write(stop_pipe_[1], &wake, 1);
    threads_.join_all();
  }

  int stop_fd() const { return stop_pipe_[0]; }

  template <class Function>
  bool spawn(Function function) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (stopped_)
      return false;
    threads_.run(std::move(function));
    return true;
  }

  // Waits until `fd` is readable; false when the set is stopping.
  bool readable(int fd) const {
    pollfd watched[2] = {{fd, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    for (;;) {
      const int ready = ::poll(watched, 2, -1);
      if (ready < 0 && errno == EINTR)
        continue;
      return ready > 0 && watched[1].revents == 0;
    }
  }

  // Waits `pause`; false when the set is stopping.
  bool rest(std::chrono::milliseconds pause) const {
    pollfd watched{stop_pipe_[0], POLLIN, 0};
    const int ready = ::poll(&watched, 1, static_cast<int>(pause.count()));
    return ready == 0 || (ready < 0 && errno == EINTR);
  }

private:
  int stop_pipe_[2] = {-1, -1};
  std::mutex mutex_;
  bool stopped_ = false;
  thread_set threads_;
};

// Counts one live admitted connection until the last copy of the token goes.
std::shared_ptr<void> hold_on(const std::shared_ptr<std::atomic<int>>& live) {
  ++*live;
  return std::shared_ptr<void>(nullptr, [live](void*) { --*live; });
}

} // namespace

// -- the coordinator's side ---------------------------------------------------------------------

struct gate_listener::impl {
  int listen_fd = -1;
  std::uint16_t port = 0;
  gate_settings settings;
  std::unique_ptr<tls_context> tls;
  admit_function admit;
  notice_function on_notice;
  refusal_log refusals; // how many refusals from one address reach the log
  std::mutex pending_mutex;
  int pending = 0;
  std::map<std::string, int> pending_by_address;
  std::shared_ptr<std::atomic<int>> live = std::make_shared<std::atomic<int>>(0);
  bool short_of_resources = false; // the accept thread's: said once until an accept succeeds
  gate_threads threads;            // last: stopped first

  bool take_pending(const std::string& address) {
    std::lock_guard<std::mutex> guard(pending_mutex);
    auto& mine = pending_by_address[address];
    if (pending >= max_pending || mine >= max_pending_per_address ||
        live->load() >= max_connections) {
      if (mine == 0)
        pending_by_address.erase(address);
      return false;
    }
    ++pending;
    ++mine;
    return true;
  }

  void release_pending(const std::string& address) {
    std::lock_guard<std::mutex> guard(pending_mutex);
    --pending;
    if (--pending_by_address[address] == 0)
      pending_by_address.erase(address);
  }

  void notice(const std::string& text) const {
    if (on_notice)
      on_notice(text);
  }

  // A refused connection from `from`, logged unless that address has been refused often lately.
  void refusal_notice(const std::string& from, const std::string& text) {
    if (auto line = refusals.line(from, text, refusal_log::clock::now()); !line.empty())
      notice(line);
  }

  void accept_loop() {
    while (threads.readable(listen_fd)) {
      const int client = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) {
        if (errno != EMFILE && errno != ENFILE && errno != ENOBUFS && errno != ENOMEM)
          continue; // that connection's own trouble
        // The process or the host is short of descriptors or memory: the connections wait in
        // the backlog, and accepting again at once would spin on them.
        if (!short_of_resources)
          notice("cannot accept a connection: " + errno_text() +
                 " (pausing; if it is 'Too many open files', raise the limit with ulimit -n)");
        short_of_resources = true;
        if (!threads.rest(accept_pause))
          return;
        continue;
      }
      short_of_resources = false;
      // A flood of connections costs a descriptor and a moment each, never a thread each.
      const std::string from = peer_of(client);
      if (!take_pending(from)) {
        ::close(client);
        continue;
      }
      if (!threads.spawn([this, client, from] { serve(client, from); })) {
        release_pending(from);
        ::close(client);
      }
    }
  }

  // A peer that speaks the gate's plain preamble to a TLS gate (a node without cluster.tls-*):
  // told so in plain text, since it cannot read TLS.
  bool plain_preamble_on_tls_gate(int client, gate_clock::time_point deadline) {
    // poll() wakes for the whole magic word, not for each byte already peeked at: a peer that
    // sends part of it and waits must not keep this thread spinning (before TLS and the token).
    const int whole = sizeof magic;
    const int one = 1;
    ::setsockopt(client, SOL_SOCKET, SO_RCVLOWAT, &whole, sizeof whole);
    const bool plain = peek_magic(client, deadline);
    ::setsockopt(client, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof one); // TLS reads what comes
    return plain;
  }

  bool peek_magic(int client, gate_clock::time_point deadline) {
    char head[sizeof magic] = {};
    bool hung_up = false;
    for (;;) {
      const ssize_t got = ::recv(client, head, sizeof head, MSG_PEEK);
      if (got == static_cast<ssize_t>(sizeof head))
        break;
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
        return false;
      if (got > 0 && std::memcmp(head, magic, static_cast<std::size_t>(got)) != 0)
        return false; // not our preamble: let TLS fail on it, without waiting for more
      if (hung_up)
        return false; // the peer stopped sending before the whole word
      pollfd watched[2] = {{client, POLLIN | POLLRDHUP, 0}, {threads.stop_fd(), POLLIN, 0}};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - gate_clock::now());
      if (left.count() <= 0 || ::poll(watched, 2, static_cast<int>(left.count())) <= 0 ||
          watched[1].revents != 0)
        return false;
      hung_up = (watched[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
    }
    return std::memcmp(head, magic, sizeof magic) == 0;
  }

  void refuse(gate_link& link, const std::string& from, const std::string& why,
              gate_clock::time_point deadline) {
    refusal_notice(from, "refused a connection from " + from + ": " + why); // before answering
    const std::string answer = std::string(1, refused) + why + "\n";
    link.write_all(answer.data(), answer.size(), deadline, threads.stop_fd());
    link.close_gracefully();
  }

  void serve(int client, const std::string& from) {
    struct pending_guard {
      impl& gate;
      const std::string& from;
      bool released = false;
      void release() {
        if (!released)
          gate.release_pending(from);
        released = true;
      }
      ~pending_guard() { release(); }
    } guard{*this, from};
    const auto deadline = gate_clock::now() + settings.handshake_timeout;
    set_nodelay(client);
    if (tls) {
      set_nonblocking(client);
      if (plain_preamble_on_tls_gate(client, deadline)) {
        gate_link plain(client, nullptr);
        refuse(plain, from,
               "this coordinator requires TLS: set cluster.tls-ca, cluster.tls-cert and "
               "cluster.tls-key on the node too",
               deadline);
        return;
      }
    }
    std::unique_ptr<gate_link> link;
    try {
      link = std::make_unique<gate_link>(client, tls.get());
    } catch (const std::exception& failure) {
      refusal_notice(from, "refused a connection from " + from + ": " + failure.what());
      return;
    }
    if (const auto shook = link->handshake(deadline, threads.stop_fd()); !shook.ok()) {
      // An alert is the node ending the handshake; an unknown CA or a bad certificate says it did
      // not trust this coordinator's certificate.
      using kind = handshake_result::kind;
      const std::string why = shook.describe();
      const bool alert = shook.what == kind::peer_alert || shook.what == kind::refused_by_peer;
      refusal_notice(
          from,
          !alert ? "refused a connection from " + from + ": TLS handshake failed: " + why
          : shook.what == kind::refused_by_peer
              ? "the node at " + from + " ended the TLS handshake (" + why +
                    "): it refused this coordinator's certificate: another CA than the "
                    "node's cluster.tls-ca signed it, or it does not name the address the "
                    "node dialled (its log says which)"
              : "the node at " + from + " ended the TLS handshake (" + why + "); see its log");
      link->drain_before_close(std::min(deadline, gate_clock::now() + std::chrono::seconds(1)),
                               threads.stop_fd());
      return;
    }
    if (auto why = check_preamble(*link, settings.token, deadline, threads.stop_fd());
        !why.empty()) {
      refuse(*link, from, why, deadline);
      return;
    }
    if (settings.check_names) { // after the preamble: refusing with it unread could reset the line
      if (auto why = link->check_peer_address(from); !why.empty()) {
        refuse(*link, from, why, deadline);
        return;
      }
    }
    if (!link->write_all(&accepted, 1, deadline, threads.stop_fd()))
      return;
    guard.release(); // no longer in the handshake: counted as a live connection from here
    hand_to_caf(std::move(link), from);
  }

  // CAF takes the peer's socket (and the TLS session on it), and checks what it reads.
  void hand_to_caf(std::unique_ptr<gate_link> link, const std::string& from) {
    admitted_connection connection;
    connection.fd = link->hand_over();
    if (link->secure())
      connection.tls = std::move(link);
    // By value: CAF may hold the connection after this gate has gone.
    connection.on_broken = [report = on_notice, from](const std::string& why) {
      if (report)
        report("dropped the node connection from " + from + ": it broke the control protocol (" +
               why + ")");
    };
    connection.hold = hold_on(live);
    const int fd = connection.fd;
    if (!admit(std::move(connection)))
      ::close(fd);
  }
};

gate_listener::gate_listener(const std::string& host, std::uint16_t port, gate_settings settings,
                             admit_function admit, notice_function on_notice)
    : impl_(std::make_unique<impl>()) {
  if (settings.tls.enabled())
    impl_->tls = std::make_unique<tls_context>(tls_context::side::server, settings.tls);
  impl_->listen_fd = listen_on(host, port);
  impl_->port = bound_port(impl_->listen_fd);
  impl_->settings = std::move(settings);
  impl_->admit = std::move(admit);
  impl_->on_notice = std::move(on_notice);
  impl_->threads.spawn([this] { impl_->accept_loop(); });
}

gate_listener::~gate_listener() {
  impl_->threads.stop();
  ::close(impl_->listen_fd);
}

std::uint16_t gate_listener::port() const {
  return impl_->port;
}

int gate_listener::connections() const {
  return impl_->live->load();
}

void gate_listener::drain(std::chrono::milliseconds timeout) {
  const auto deadline = gate_clock::now() + timeout;
  while (impl_->live->load() > 0 && gate_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// -- a node's side ------------------------------------------------------------------------------

struct gate_dialer::impl {
  std::string host;
  std::uint16_t port = 0;
  gate_settings settings;
  std::unique_ptr<tls_context> tls;
  gate_threads threads; // last: stopped first

  gate_connection fail(gate_failure kind, std::string why) const {
    gate_connection result;
    result.failure = kind;
    result.why = std::move(why);
    return result;
  }

  gate_connection open() {
    std::string failure;
    const int remote = connect_to(host, port, connect_timeout, failure);
    if (remote < 0)
      return fail(gate_failure::unreachable, failure);
    const auto deadline = gate_clock::now() + settings.handshake_timeout;
    auto link = std::make_shared<gate_link>(remote, tls.get());
    if (settings.check_names)
      link->expect_peer_name(host);
    if (const auto shook = link->handshake(deadline, threads.stop_fd()); !shook.ok()) {
      using kind = handshake_result::kind;
      const std::string why = shook.describe("the coordinator", settings.tls.ca);
      const bool wrong_name = shook.what == kind::wrong_name;
      const bool certificate = wrong_name || shook.what == kind::untrusted;
      if (shook.what == kind::plain_peer) // a server that speaks no TLS
        return fail(gate_failure::tls,
                    "the coordinator at " + host + ":" + std::to_string(port) +
                        " answered in the clear: it does not use TLS (give it the same "
                        "cluster.tls-* settings, or give none here)");
      return fail(gate_failure::tls,
                  "the TLS handshake with the coordinator failed: " + why +
                      (wrong_name ? "; dial an address or name the certificate names, or "
                                    "reissue it with this one in its subjectAltName"
                       : certificate
                           ? std::string()
                           : std::string(" (does the coordinator use TLS too, and did the "
                                         "cluster CA (cluster.tls-ca) sign both "
                                         "certificates?)")));
    }
    const auto hello = preamble(settings.token);
    char answer = 0;
    if (!link->write_all(hello.data(), hello.size(), deadline, threads.stop_fd()) ||
        !link->read_exactly(&answer, 1, deadline, threads.stop_fd())) {
      // Under TLS 1.3 the coordinator checks this node's certificate after the node's handshake
      // has returned: its refusal comes as an alert on the first read. Retrying cannot help.
      if (link->secure() && link->failed_in_tls())
        return fail(gate_failure::tls,
                    "the TLS handshake with the coordinator failed: the coordinator refused "
                    "this node's certificate (" +
                        link->failure() +
                        "); was cluster.tls-cert signed by the cluster CA the coordinator "
                        "trusts (its cluster.tls-ca)?");
      return fail(gate_failure::unreachable, "no answer from the coordinator's gate");
    }
    if (answer == refused) {
      std::string why;
      char c = 0;
      while (why.size() < max_refusal_line &&
             link->read_exactly(&c, 1, deadline, threads.stop_fd()) && c != '\n')
        why += c;
      return fail(gate_failure::refused, "the coordinator refused this node: " + why);
    }
    if (answer != accepted)
      return fail(gate_failure::refused,
                  "the coordinator's gate answered with something else (is it a Herd "
                  "coordinator of the same version, and TLS set the same on both sides?)");
    gate_connection result;
    result.caf_fd = link->hand_over();
    if (link->secure())
      result.tls = std::move(link);
    return result;
  }
};

gate_dialer::gate_dialer(std::string coordinator_host, std::uint16_t coordinator_port,
                         gate_settings settings)
    : impl_(std::make_unique<impl>()) {
  if (settings.tls.enabled())
    impl_->tls = std::make_unique<tls_context>(tls_context::side::client, settings.tls);
  impl_->host = std::move(coordinator_host);
  impl_->port = coordinator_port;
  impl_->settings = std::move(settings);
}

gate_dialer::~gate_dialer() {
  impl_->threads.stop();
}

gate_connection gate_dialer::open() {
  return impl_->open();
}

} // namespace herd::cluster
