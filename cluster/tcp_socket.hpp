// Small TCP socket helpers for the control gate (plain POSIX, no CAF): dial with a deadline,
// listen, and name the ends of a connection and the address a route leaves from.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace herd::cluster {

/// strerror(errno), as text.
std::string errno_text();

void set_nodelay(int fd);
bool set_nonblocking(int fd);

/// A TCP connection to host:port (TCP_NODELAY set, non-blocking) within `timeout`; -1, with
/// `failure` saying why, when there is none.
int connect_to(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout,
               std::string& failure);

/// A socket listening on host:port (an empty host: every address; port 0: any free one). Throws
/// std::runtime_error with the system's reason when it cannot.
int listen_on(const std::string& host, std::uint16_t port);

/// The port `fd` is bound to.
std::uint16_t bound_port(int fd);

/// The address of the peer of connected socket `fd` ("?" when unknown).
std::string peer_of(int fd);

/// The local address (of this host) that packets to `host`:`port` leave from, found without
/// sending anything; empty when there is no route.
std::string local_address_towards(const std::string& host, std::uint16_t port);

} // namespace herd::cluster
