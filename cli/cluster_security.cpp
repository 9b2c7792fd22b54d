// What `herd coordinator` and `herd node` check before they open the control plane; see
// cluster_security.hpp.
#include "cli/cluster_security.hpp"

#include "kernels/regular_file.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace herd::cli {

namespace {

constexpr std::size_t max_token_file_bytes = 4096;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

} // namespace

std::string resolve_cluster_token(config::cluster_section& cluster) {
  if (cluster.token_file.empty())
    return {};
  const std::string& file = cluster.token_file;
  const std::string where = "cluster.token-file = " + file + ": ";
  // A FIFO must not block the start: it is refused as not a regular file, unopened.
  std::string token;
  mode_t mode = 0;
  try {
    kernels::regular_file opened(file);
    if (opened.size() > max_token_file_bytes)
      throw std::invalid_argument(where + std::to_string(opened.size()) +
                                  " bytes; a token file holds at most " +
                                  std::to_string(max_token_file_bytes));
    token = opened.read_rest(max_token_file_bytes);
    mode = opened.mode();
  } catch (const kernels::file_problem& problem) {
    throw std::invalid_argument(where + problem.what());
  }
  std::size_t begin = 0;
  std::size_t end = token.size();
  while (begin < end && is_space(token[begin]))
    ++begin;
  while (end > begin && is_space(token[end - 1]))
    --end;
  token = token.substr(begin, end - begin);
  if (token.empty())
    throw std::invalid_argument(where + "the file holds no token");
  if (token.size() > 1024)
    throw std::invalid_argument(where + "a token of " + std::to_string(token.size()) +
                                " bytes; at most 1024");
  if (token.find('\0') != std::string::npos || token.find('\n') != std::string::npos)
    throw std::invalid_argument(where + "the token must be one line of text");
  cluster.token = token;
  // Resolved: from here on the settings hold the token itself (checked again later, where a
  // token and a token file together are a mistake).
  cluster.token_file.clear();
  if ((mode & (S_IRWXG | S_IRWXO)) != 0)
    return where + "other users may read this file; chmod 600 it";
  return {};
}

bool is_loopback_host(const std::string& host) {
  if (host.empty())
    return false; // every address
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int failed = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); failed != 0)
    throw std::invalid_argument("--listen " + host +
                                ": cannot resolve this name: " + ::gai_strerror(failed));
  if (found == nullptr)
    throw std::invalid_argument("--listen " + host + ": this name has no address");
  bool all_loopback = true;
  for (auto* address = found; address != nullptr; address = address->ai_next) {
    if (address->ai_family == AF_INET) {
      const auto* ipv4 = reinterpret_cast<const sockaddr_in*>(address->ai_addr);
      all_loopback = all_loopback && (ntohl(ipv4->sin_addr.s_addr) >> 24) == 127;
    } else if (address->ai_family == AF_INET6) {
      const auto* ipv6 = reinterpret_cast<const sockaddr_in6*>(address->ai_addr);
      all_loopback = all_loopback && IN6_IS_ADDR_LOOPBACK(&ipv6->sin6_addr);
    } else {
      all_loopback = false;
    }
  }
  ::freeaddrinfo(found);
  return all_loopback;
}

void check_data_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (const int failed = ::getaddrinfo(host.c_str(), "0", &hints, &found); failed != 0)
    throw std::invalid_argument("--data-host " + host +
                                ": cannot resolve this name: " + ::gai_strerror(failed));
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const bool bound = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0;
  const int error = errno;
  if (fd >= 0)
    ::close(fd);
  ::freeaddrinfo(found);
  if (!bound)
    throw std::invalid_argument("--data-host " + host + ": the data plane cannot listen there (" +
                                std::strerror(error) +
                                "); name an address of this machine that the other nodes reach");
}

std::string listen_problem(const std::string& host, const config::cluster_section& cluster,
                           const std::string& defaulted_to) {
  if (is_loopback_host(host))
    return {};
  const std::string how =
      "Create a token file readable by you only (umask 077; openssl rand -hex 32 > "
      "/etc/herd/token) and pass --cluster.token-file=/etc/herd/token here and to every node, or "
      "listen on 127.0.0.1 for nodes on this machine";
  const std::string address = host.empty() ? "every address" : host;
  const std::string subject =
      defaulted_to.empty() ? "--listen " + address
                           : "--listen was not given, and its default, " + defaulted_to + ",";
  if (cluster.token.empty())
    return subject +
           " is reachable from other machines and cluster.token is not set: anyone who reaches "
           "the port could join the job and read its model. " +
           how;
  if (cluster.token.size() < min_network_token_bytes)
    return "cluster.token has " + std::to_string(cluster.token.size()) +
           " characters; on an address other machines reach (" + address + ") it needs at least " +
           std::to_string(min_network_token_bytes) + " to be hard to guess. " + how;
  return {};
}

} // namespace herd::cli
