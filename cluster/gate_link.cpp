// One end of a control-plane connection, plain TCP or TLS; see gate_link.hpp.
#include "cluster/gate_link.hpp"

#include "herd/config.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "cluster/tcp_socket.hpp"

namespace herd::cluster {

namespace {

// Whether the PEM file at `path` holds a certificate that may sign others, as the cluster CA's
// must: a node's or the coordinator's own certificate given in its place would verify nothing.
bool holds_a_ca_certificate(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr)
    return true; // not readable: loading it has said so
  bool found = false;
  while (X509* certificate = PEM_read_X509(file, nullptr, nullptr, nullptr)) {
    found = found || X509_check_ca(certificate) > 0;
    X509_free(certificate);
  }
  std::fclose(file);
  ERR_clear_error(); // the end of the file reads as an error
  return found;
}

// Why `context`'s own certificate would fail a peer's check against the CA `context` trusts (the
// same cluster CA on every process): signed by another CA, expired, not yet valid. Empty when it
// passes.
std::string own_certificate_problem(SSL_CTX* context) {
  X509* own = SSL_CTX_get0_certificate(context);
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(context, &chain);
  X509_STORE_CTX* check = X509_STORE_CTX_new();
  if (own == nullptr || check == nullptr ||
      X509_STORE_CTX_init(check, SSL_CTX_get_cert_store(context), own, chain) != 1) {
    X509_STORE_CTX_free(check);
    return {}; // cannot tell here: the handshake still checks it
  }
  const bool verified = X509_verify_cert(check) == 1;
  const int error = X509_STORE_CTX_get_error(check);
  X509_STORE_CTX_free(check);
  ERR_clear_error();
  return verified ? std::string() : X509_verify_cert_error_string(error);
}

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

bool is_ip_address(const std::string& host) {
  unsigned char bytes[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), bytes) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), bytes) == 1;
}

// The names a certificate is for: its DNS and IP subject alternative names.
struct certificate_names {
  std::vector<std::string> dns;
  std::vector<std::string> ip;
  std::string subject; // the subject's common name, for messages

  explicit certificate_names(X509* certificate) {
    if (certificate == nullptr)
      return;
    char common_name[256] = {};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, common_name,
                                  sizeof common_name) > 0)
      subject = common_name;
    auto* names = static_cast<GENERAL_NAMES*>(
        X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
    if (names == nullptr)
      return;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
      if (name->type == GEN_DNS) {
        const auto* text = ASN1_STRING_get0_data(name->d.dNSName);
        dns.emplace_back(reinterpret_cast<const char*>(text),
                         static_cast<std::size_t>(ASN1_STRING_length(name->d.dNSName)));
      } else if (name->type == GEN_IPADD) {
        const int length = ASN1_STRING_length(name->d.iPAddress);
        char text[INET6_ADDRSTRLEN] = "?";
        const auto* bytes = ASN1_STRING_get0_data(name->d.iPAddress);
        if (length == 4 || length == 16)
          ::inet_ntop(length == 4 ? AF_INET : AF_INET6, bytes, text, sizeof text);
        ip.emplace_back(text);
      }
    }
    GENERAL_NAMES_free(names);
  }

  std::string describe() const {
    std::string text = "CN=" + (subject.empty() ? std::string("(none)") : subject);
    for (const auto& name : dns)
      text += ", DNS:" + name;
    for (const auto& name : ip)
      text += ", IP:" + name;
    if (dns.empty() && ip.empty())
      text += ", no subject alternative names";
    return text;
  }
};

// OpenSSL's verification callback: keeps what the certificate that failed a check names (the peer's
// own, at depth 0), which is gone once the handshake has failed. The verdict is OpenSSL's.
int remember_failed_certificate(int verdict, X509_STORE_CTX* context) {
  if (verdict == 1 || X509_STORE_CTX_get_error_depth(context) != 0)
    return verdict;
  auto* ssl =
      static_cast<SSL*>(X509_STORE_CTX_get_ex_data(context, SSL_get_ex_data_X509_STORE_CTX_idx()));
  auto* failed = ssl != nullptr ? static_cast<std::string*>(SSL_get_app_data(ssl)) : nullptr;
  if (failed != nullptr && failed->empty())
    *failed = certificate_names(X509_STORE_CTX_get_current_cert(context)).describe();
  return verdict;
}

// True when `name` resolves (DNS or /etc/hosts) to `address`.
bool resolves_to(const std::string& name, const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0)
    return false;
  bool match = false;
  for (const addrinfo* entry = found; entry != nullptr && !match; entry = entry->ai_next) {
    char text[INET6_ADDRSTRLEN] = "";
    const void* bytes =
        entry->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(entry->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(entry->ai_addr)->sin6_addr);
    match = ::inet_ntop(entry->ai_family, bytes, text, sizeof text) != nullptr && address == text;
  }
  ::freeaddrinfo(found);
  return match;
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

namespace {

// This thread's OpenSSL errors, taken off its queue: their codes and their text.
struct tls_errors {
  std::vector<unsigned long> codes;
  std::string text;
};

tls_errors take_tls_errors() {
  tls_errors taken;
  while (const unsigned long code = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(code, line, sizeof line);
    taken.codes.push_back(code);
    taken.text += (taken.text.empty() ? "" : "; ") + std::string(line);
  }
  if (taken.text.empty())
    taken.text = "no reason given";
  return taken;
}

} // namespace

std::string tls_error_text() {
  return take_tls_errors().text;
}

// -- tls_context ----------------------------------------------------------------------------------

tls_context::tls_context(side role, const tls_files& files) : role_(role) {
  ERR_clear_error();
  auto* context = SSL_CTX_new(role == side::server ? TLS_server_method() : TLS_client_method());
  if (context == nullptr)
    throw std::runtime_error("cannot make a TLS context: " + tls_error_text());
  context_ = context;
  // A file without the PEM block asked for (a key given as the certificate, say: no decoder
  // takes it) and a key of another certificate are said in words; OpenSSL's own codes follow for
  // anything else.
  auto fail = [this](const std::string& key, const std::string& message) {
    SSL_CTX_free(as_context(context_));
    context_ = nullptr;
    throw config::invalid_config({{key, message}});
  };
  auto refuse = [&fail, &files](const std::string& key, const std::string& file,
                                const std::string& what) {
    const unsigned long first = ERR_peek_error();
    const int library = ERR_GET_LIB(first);
    const int reason = ERR_GET_REASON(first);
    std::string why = tls_error_text();
    if ((library == ERR_LIB_PEM && reason == PEM_R_NO_START_LINE) ||
        (library == ERR_LIB_OSSL_DECODER && reason == ERR_R_UNSUPPORTED) ||
        (library == ERR_LIB_X509 && reason == X509_R_NO_CERTIFICATE_OR_CRL_FOUND))
      why = "no PEM " + what + " in this file";
    else if (library == ERR_LIB_X509 && reason == X509_R_KEY_VALUES_MISMATCH)
      why = "this key does not belong to the certificate cluster.tls-cert = " + files.cert;
    fail(key, key + " = " + file + ": " + why);
  };
  SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  // CAF's stream hands SSL_write whatever part of its buffer is left, from wherever it now is.
  SSL_CTX_set_mode(context, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_load_verify_locations(context, files.ca.c_str(), nullptr) != 1)
    refuse("cluster.tls-ca", files.ca, "certificate");
  if (!holds_a_ca_certificate(files.ca))
    fail("cluster.tls-ca", "cluster.tls-ca = " + files.ca +
                               ": holds no CA certificate (none of its certificates may sign "
                               "others); give the cluster CA's certificate, not a node's");
  if (SSL_CTX_use_certificate_chain_file(context, files.cert.c_str()) != 1)
    refuse("cluster.tls-cert", files.cert, "certificate");
  if (SSL_CTX_use_PrivateKey_file(context, files.key.c_str(), SSL_FILETYPE_PEM) != 1)
    refuse("cluster.tls-key", files.key, "private key");
  if (SSL_CTX_check_private_key(context) != 1)
    refuse("cluster.tls-key", files.key, "private key");
  // Every peer checks this certificate against the same cluster CA: one it fails would be found
  // out only when the first peer connects (minutes later, on another machine).
  if (auto problem = own_certificate_problem(context); !problem.empty())
    fail("cluster.tls-cert", "cluster.tls-cert = " + files.cert +
                                 " does not verify against cluster.tls-ca = " + files.ca + " (" +
                                 problem +
                                 "): every process's certificate must come from the cluster CA, "
                                 "or its peers refuse it");
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
  SSL_set_app_data(ssl, &failed_certificate_);
  SSL_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                 remember_failed_certificate);
  ssl_ = ssl;
}

gate_link::~gate_link() {
  if (ssl_ != nullptr)
    SSL_free(as_ssl(ssl_));
  if (fd_ >= 0 && owns_fd_)
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

void gate_link::expect_peer_name(const std::string& host) {
  if (ssl_ == nullptr)
    return;
  expected_peer_ = host;
  auto* ssl = as_ssl(ssl_);
  if (is_ip_address(host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
  } else {
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    SSL_set1_host(ssl, host.c_str());
  }
}

std::string handshake_result::describe(const std::string& peer, const std::string& ca) const {
  switch (what) {
  case kind::done:
    return {};
  case kind::deadline:
    return "no TLS handshake before the deadline";
  case kind::stopped:
    return "stopped during the TLS handshake";
  case kind::closed:
    return "the peer closed the connection";
  case kind::wrong_name:
    return peer + "'s certificate is not for " + expected_name + " (it names " + detail + ")";
  case kind::untrusted:
    return peer + "'s certificate failed verification against the cluster CA (cluster.tls-ca" +
           (ca.empty() ? "" : " = " + ca) + "): " + detail;
  case kind::refused_by_peer:
  case kind::peer_alert:
  case kind::plain_peer:
  case kind::other:
    break;
  }
  return detail;
}

namespace {

// A failed handshake from OpenSSL's reasons, the most telling of them.
handshake_result failed_handshake(const tls_errors& errors) {
  using kind = handshake_result::kind;
  auto what = kind::other;
  for (const unsigned long code : errors.codes) {
    const int reason = ERR_GET_REASON(code);
    if (reason == SSL_R_WRONG_VERSION_NUMBER) // a record that is no TLS: the peer speaks none
      what = kind::plain_peer;
    else if (reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA || reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE)
      what = kind::refused_by_peer;
    // OpenSSL reports an alert the peer sent as its code past SSL_AD_REASON_OFFSET.
    else if (reason >= SSL_AD_REASON_OFFSET && what == kind::other)
      what = kind::peer_alert;
  }
  return {what, errors.text, {}};
}

} // namespace

handshake_result gate_link::handshake(gate_clock::time_point deadline, int stop_fd) {
  using kind = handshake_result::kind;
  if (ssl_ == nullptr)
    return {};
  for (;;) {
    ERR_clear_error();
    const sigpipe_guard guard;
    const int result = SSL_do_handshake(as_ssl(ssl_));
    if (result == 1)
      return {};
    // A certificate that failed a check: say which, and what it names.
    const long verified = SSL_get_verify_result(as_ssl(ssl_));
    if (verified != X509_V_OK) {
      if (verified == X509_V_ERR_HOSTNAME_MISMATCH || verified == X509_V_ERR_IP_ADDRESS_MISMATCH)
        return {kind::wrong_name, failed_certificate_, expected_peer_};
      return {kind::untrusted, X509_verify_cert_error_string(verified), {}};
    }
    const int error = SSL_get_error(as_ssl(ssl_), result);
    short events = 0;
    if (error == SSL_ERROR_WANT_READ) {
      events = POLLIN;
    } else if (error == SSL_ERROR_WANT_WRITE) {
      events = POLLOUT;
    } else if ((error == SSL_ERROR_SYSCALL || error == SSL_ERROR_ZERO_RETURN) &&
               ERR_peek_error() == 0) {
      return {kind::closed, {}, {}};
    } else {
      return failed_handshake(take_tls_errors());
    }
    if (!wait(events, deadline, stop_fd))
      return {gate_clock::now() >= deadline ? kind::deadline : kind::stopped, {}, {}};
  }
}

std::string gate_link::check_peer_address(const std::string& peer) const {
  if (ssl_ == nullptr)
    return {};
  // An IPv4 peer of a dual-stack socket shows as ::ffff:a.b.c.d; certificates name a.b.c.d.
  const std::string mapped = "::ffff:";
  const bool v4_in_v6 = peer.rfind(mapped, 0) == 0 && peer.find('.') != std::string::npos;
  const std::string address = v4_in_v6 ? peer.substr(mapped.size()) : peer;
  X509* certificate = SSL_get0_peer_certificate(as_ssl(ssl_));
  if (certificate == nullptr)
    return "the peer showed no certificate";
  if (X509_check_ip_asc(certificate, address.c_str(), 0) == 1)
    return {};
  const certificate_names names(certificate);
  for (const auto& name : names.dns)
    if (resolves_to(name, address))
      return {};
  return "its certificate (" + names.describe() + ") is not for " + address +
         ", the address it connects from: give it that address as an IP alternative name, or a "
         "DNS name that resolves to it (or set cluster.tls-check-names = false on the "
         "coordinator)";
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
    failed_in_tls_ = true;
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

int gate_link::hand_over() {
  owns_fd_ = false;
  return fd_;
}

void gate_link::drain_before_close(gate_clock::time_point deadline, int stop_fd) {
  if (fd_ < 0 || !owns_fd_)
    return;
  ::shutdown(fd_, SHUT_WR);
  char discarded[4096];
  while (wait(POLLIN, deadline, stop_fd)) {
    const ssize_t got = ::recv(fd_, discarded, sizeof discarded, 0);
    if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK))
      return;
  }
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
