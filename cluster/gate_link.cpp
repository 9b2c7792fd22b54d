// One end of a control-plane connection, plain TCP or TLS; see gate_link.hpp.
#include "cluster/gate_link.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/tcp_socket.hpp"

namespace herd::cluster {

namespace {

// OpenSSL writes to the socket with plain write(): to a peer that has gone, that raises SIGPIPE,
// which ends the process. Nothing process-wide may change (Herd is a library too), so each TLS
// call blocks SIGPIPE in its own thread and takes back a SIGPIPE it raised itself.
class sigpipe_guard {
public:
  sigpipe_guard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
    pending_before_ = pending();
  }
  ~sigpipe_guard() {
    if (!pending_before_ && pending()) {
      const timespec now{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;

private:
  bool pending() const {
    sigset_t set;
    sigemptyset(&set);
    return sigpending(&set) == 0 && sigismember(&set, SIGPIPE) == 1;
  }
  sigset_t pipe_{};
  sigset_t previous_{};
  bool pending_before_ = false;
};

SSL* as_ssl(void* ssl) {
  return static_cast<SSL*>(ssl);
}

SSL_CTX* as_context(void* context) {
  return static_cast<SSL_CTX*>(context);
}

int milliseconds_until(gate_clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - gate_clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left);
}

} // namespace

std::string tls_library() {
  return OpenSSL_version(OPENSSL_VERSION);
}

std::string tls_error_text() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(code, line, sizeof line);
    text += (text.empty() ? "" : "; ") + std::string(line);
  }
  return text.empty() ? "no reason given" : text;
}

// -- tls_context ----------------------------------------------------------------------------------

tls_context::tls_context(side role, const tls_files& files) : role_(role) {
  ERR_clear_error();
  auto* context = SSL_CTX_new(role == side::server ? TLS_server_method() : TLS_client_method());
  if (context == nullptr)
    throw std::runtime_error("cannot make a TLS context: " + tls_error_text());
  context_ = context;
  auto refuse = [this](const std::string& key, const std::string& file) {
    const std::string why = tls_error_text();
    SSL_CTX_free(as_context(context_));
    context_ = nullptr;
    throw std::runtime_error(key + " = " + file + ": " + why);
  };
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  // The relay hands SSL_write whatever part of its buffer is left, from wherever it now is.
  SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_load_verify_locations(context, files.ca.c_str(), nullptr) != 1)
    refuse("cluster.tls-ca", files.ca);
  if (SSL_CTX_use_certificate_chain_file(context, files.cert.c_str()) != 1)
    refuse("cluster.tls-cert", files.cert);
  if (SSL_CTX_use_PrivateKey_file(context, files.key.c_str(), SSL_FILETYPE_PEM) != 1)
    refuse("cluster.tls-key", files.key);
  if (SSL_CTX_check_private_key(context) != 1)
    refuse("cluster.tls-key", files.key + " (does not belong to " + files.cert + ")");
  // Both ends must show a certificate the cluster CA signed. Host names are not checked: the
  // cluster CA signs only the cluster's own processes.
  SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
}

tls_context::~tls_context() {
  if (context_ != nullptr)
    SSL_CTX_free(as_context(context_));
}

// -- gate_link ------------------------------------------------------------------------------------

gate_link::gate_link(int fd, const tls_context* tls) : fd_(fd) {
  set_nonblocking(fd_);
  if (tls == nullptr)
    return;
  ERR_clear_error();
  auto* ssl = SSL_new(as_context(tls->native()));
  if (ssl == nullptr || SSL_set_fd(ssl, fd_) != 1) {
    if (ssl != nullptr)
      SSL_free(ssl);
    ::close(fd_);
    throw std::runtime_error("cannot start TLS on a connection: " + tls_error_text());
  }
  if (tls->role() == tls_context::side::server)
    SSL_set_accept_state(ssl);
  else
    SSL_set_connect_state(ssl);
  ssl_ = ssl;
}

gate_link::~gate_link() {
  if (ssl_ != nullptr)
    SSL_free(as_ssl(ssl_));
  if (fd_ >= 0)
    ::close(fd_);
}

bool gate_link::wait(short events, gate_clock::time_point deadline, int stop_fd) {
  for (;;) {
    pollfd watched[2] = {{fd_, events, 0}, {stop_fd, POLLIN, 0}};
    const int ready = ::poll(watched, stop_fd >= 0 ? 2 : 1, milliseconds_until(deadline));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0 || (stop_fd >= 0 && watched[1].revents != 0))
      return false;
    return true;
  }
}

std::string gate_link::handshake(gate_clock::time_point deadline, int stop_fd) {
  if (ssl_ == nullptr)
    return {};
  for (;;) {
    ERR_clear_error();
    const sigpipe_guard guard;
    const int result = SSL_do_handshake(as_ssl(ssl_));
    if (result == 1)
      return {};
    const int error = SSL_get_error(as_ssl(ssl_), result);
    short events = 0;
    if (error == SSL_ERROR_WANT_READ)
      events = POLLIN;
    else if (error == SSL_ERROR_WANT_WRITE)
      events = POLLOUT;
    else if (error == SSL_ERROR_SYSCALL || error == SSL_ERROR_ZERO_RETURN)
      return ERR_peek_error() != 0 ? tls_error_text()
                                   : std::string("the peer closed the connection");
    else
      return tls_error_text();
    if (!wait(events, deadline, stop_fd))
      return gate_clock::now() >= deadline ? "no TLS handshake before the deadline"
                                           : "stopped during the TLS handshake";
  }
}

link_status gate_link::settle(int result, std::size_t& moved, short& wants) {
  if (result > 0) {
    moved = static_cast<std::size_t>(result);
    return link_status::done;
  }
  const int error = SSL_get_error(as_ssl(ssl_), result);
  switch (error) {
  case SSL_ERROR_WANT_READ:
    wants = POLLIN;
    return link_status::would_block;
  case SSL_ERROR_WANT_WRITE:
    wants = POLLOUT;
    return link_status::would_block;
  case SSL_ERROR_ZERO_RETURN:
    return link_status::closed;
  case SSL_ERROR_SYSCALL:
    if (ERR_peek_error() == 0) {
      failure_ = errno != 0 ? std::strerror(errno) : "the peer closed the connection";
      return link_status::closed;
    }
    [[fallthrough]];
  default:
    failure_ = "TLS: " + tls_error_text();
    return link_status::failed;
  }
}

link_status gate_link::read_some(char* data, std::size_t size, std::size_t& moved) {
  moved = 0;
  if (ssl_ == nullptr) {
    for (;;) {
      const ssize_t got = ::recv(fd_, data, size, 0);
      if (got > 0) {
        moved = static_cast<std::size_t>(got);
        return link_status::done;
      }
      if (got == 0)
        return link_status::closed;
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return link_status::would_block;
      failure_ = std::strerror(errno);
      return link_status::failed;
    }
  }
  // A stale error of another connection in this thread's queue would make SSL_get_error report
  // a failure of this one.
  ERR_clear_error();
  errno = 0;
  read_wants_ = POLLIN;
  const sigpipe_guard guard; // reading may write (an alert, a key update)
  return settle(SSL_read(as_ssl(ssl_), data, static_cast<int>(size)), moved, read_wants_);
}

link_status gate_link::write_some(const char* data, std::size_t size, std::size_t& moved) {
  moved = 0;
  if (ssl_ == nullptr) {
    for (;;) {
      const ssize_t sent = ::send(fd_, data, size, MSG_NOSIGNAL);
      if (sent >= 0) {
        moved = static_cast<std::size_t>(sent);
        return link_status::done;
      }
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return link_status::would_block;
      failure_ = std::strerror(errno);
      return errno == EPIPE || errno == ECONNRESET ? link_status::closed : link_status::failed;
    }
  }
  ERR_clear_error();
  errno = 0;
  write_wants_ = POLLOUT;
  const sigpipe_guard guard;
  return settle(SSL_write(as_ssl(ssl_), data, static_cast<int>(size)), moved, write_wants_);
}

bool gate_link::has_buffered_input() const {
  return ssl_ != nullptr && SSL_pending(as_ssl(ssl_)) > 0;
}

bool gate_link::read_exactly(void* data, std::size_t size, gate_clock::time_point deadline,
                             int stop_fd) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    std::size_t moved = 0;
    switch (read_some(bytes, size, moved)) {
    case link_status::done:
      bytes += moved;
      size -= moved;
      break;
    case link_status::would_block:
      if (!has_buffered_input() && !wait(read_wants_, deadline, stop_fd))
        return false;
      break;
    default:
      return false;
    }
  }
  return true;
}

bool gate_link::write_all(const void* data, std::size_t size, gate_clock::time_point deadline,
                          int stop_fd) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    std::size_t moved = 0;
    switch (write_some(bytes, size, moved)) {
    case link_status::done:
      bytes += moved;
      size -= moved;
      break;
    case link_status::would_block:
      if (!wait(write_wants_, deadline, stop_fd))
        return false;
      break;
    default:
      return false;
    }
  }
  return true;
}

void gate_link::close_gracefully() {
  if (ssl_ != nullptr) {
    ERR_clear_error();
    const sigpipe_guard guard;
    SSL_shutdown(as_ssl(ssl_)); // one attempt: the socket is non-blocking and about to close
    ERR_clear_error();
  }
}

} // namespace herd::cluster
