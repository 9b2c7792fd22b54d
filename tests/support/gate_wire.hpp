// Bytes of the control plane's wire for tests that speak to a gate or a coordinator's CAF by
// hand: loopback sockets with deadlines, CAF 0.17's remoting frames (BASP) and the gate's preamble.
#pragma once

#include "actors/cluster_protocol.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <random>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace herd::testing::gate_wire {

inline int connect_loopback(std::uint16_t port) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(sock);
    return -1;
  }
  return sock;
}

// Reads until `size` bytes came or the peer closed or `timeout` passed; what came.
inline std::string read_some(int sock, std::size_t size, std::chrono::milliseconds timeout) {
  timeval limit{};
  limit.tv_sec = static_cast<long>(timeout.count() / 1000);
  limit.tv_usec = static_cast<long>((timeout.count() % 1000) * 1000);
  ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  std::string text;
  char buffer[4096];
  while (text.size() < size) {
    const ssize_t got = ::recv(sock, buffer, std::min(sizeof buffer, size - text.size()), 0);
    if (got <= 0)
      break;
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

// True when the peer closed `sock` within `timeout` (reading whatever came before).
inline bool closed_within(int sock, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  timeval limit{0, 100000};
  ::setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  while (std::chrono::steady_clock::now() < deadline) {
    const ssize_t got = ::recv(sock, buffer, sizeof buffer, 0);
    if (got == 0)
      return true;
    if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return true;
  }
  return false;
}

inline void send_all(int sock, const std::string& bytes) {
  ASSERT_EQ(::send(sock, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

inline std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 generator(seed);
  std::string bytes(size, '\0');
  for (auto& byte : bytes)
    byte = static_cast<char>(generator());
  return bytes;
}

inline void put_big_endian(std::string& out, std::uint64_t value, int bytes) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((value >> shift) & 0xff));
}

// One frame of CAF's remoting protocol: the 32-byte header, then the payload.
inline std::string frame(unsigned char operation, const std::string& payload,
                         std::uint64_t operation_data = 0, std::uint64_t source_actor = 0,
                         std::uint64_t dest_actor = 0,
                         std::uint32_t announced_length = 0xffffffff) {
  std::string bytes{static_cast<char>(operation), 0, 0, 0};
  put_big_endian(bytes, announced_length == 0xffffffff ? payload.size() : announced_length, 4);
  put_big_endian(bytes, operation_data, 8);
  put_big_endian(bytes, source_actor, 8);
  put_big_endian(bytes, dest_actor, 8);
  return bytes + payload;
}

inline constexpr unsigned char server_handshake = 0;
inline constexpr unsigned char client_handshake = 1;
inline constexpr unsigned char direct_message = 2;

// The preamble of a node of cluster protocol `version` (this Herd's by default).
inline std::string preamble(const std::string& token,
                            std::uint32_t version = herd::actors::cluster_protocol_version) {
  std::string bytes = "HERDGATE";
  put_big_endian(bytes, version, 4);
  put_big_endian(bytes, token.size(), 2);
  return bytes + token;
}

// A connection to the gate that passed the preamble with `token` (plain TCP).
inline int authenticated(std::uint16_t port, const std::string& token) {
  const int sock = connect_loopback(port);
  if (sock < 0)
    return -1;
  const auto hello = preamble(token);
  ::send(sock, hello.data(), hello.size(), MSG_NOSIGNAL);
  if (read_some(sock, 1, std::chrono::seconds(10)) != "A") {
    ::close(sock);
    return -1;
  }
  return sock;
}

} // namespace herd::testing::gate_wire
