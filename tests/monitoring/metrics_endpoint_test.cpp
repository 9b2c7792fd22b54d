// metrics_endpoint: the /metrics HTTP endpoint, driven over loopback with cpp-httplib's client and
// with raw sockets where a client has to misbehave.
#include "monitoring/metrics_endpoint.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <gtest/gtest.h>
#include <httplib.h>
#include <memory>
#include <netinet/in.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using herd::monitoring::metrics_endpoint;
using namespace std::chrono_literals;

constexpr const char* loopback = "127.0.0.1";
constexpr const char* exposition_content_type = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::size_t huge_header_bytes = std::size_t{64} * 1024;

httplib::Client client_for(const metrics_endpoint& endpoint) {
  httplib::Client client(loopback, endpoint.port());
  client.set_connection_timeout(5s);
  client.set_read_timeout(5s);
  client.set_write_timeout(5s);
  return client;
}

/// A TCP connection to the endpoint that the test drives byte by byte.
class raw_connection {
public:
  explicit raw_connection(int port) : socket_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (socket_ < 0)
      throw std::runtime_error("socket() failed");
    timeval receive_timeout{};
    receive_timeout.tv_sec = 5;
    ::setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &receive_timeout, sizeof(receive_timeout));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, loopback, &address.sin_addr);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    if (::connect(socket_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0)
      throw std::runtime_error("connect() failed");
  }
  ~raw_connection() { ::close(socket_); }
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  bool send_text(const std::string& text) {
    return ::send(socket_, text.data(), text.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(text.size());
  }

  /// Everything the server sends until it closes the connection or 5 s pass without a byte.
  std::string receive_all() {
    std::string received;
    char buffer[4096];
    for (;;) {
      const auto count = ::recv(socket_, buffer, sizeof(buffer), 0);
      if (count <= 0)
        return received;
      received.append(buffer, static_cast<std::size_t>(count));
    }
  }

  /// The status line and headers of the reply, or less if the server closes first.
  std::string receive_head() {
    std::string received;
    char byte = 0;
    while (received.find("\r\n\r\n") == std::string::npos && ::recv(socket_, &byte, 1, 0) == 1)
      received.push_back(byte);
    return received;
  }

private:
  int socket_;
};

TEST(metrics_endpoint, scrape_returns_the_callbacks_text_and_the_exposition_content_type) {
  const std::string text = "# HELP herd_up Whether Herd runs.\n# TYPE herd_up gauge\nherd_up 1\n";
  metrics_endpoint endpoint(loopback, 0, [&text] { return std::string(text); });
  auto client = client_for(endpoint);

  const auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, text);
  EXPECT_EQ(response->get_header_value("Content-Type"), exposition_content_type);
  EXPECT_EQ(endpoint.scrapes(), 1u);

  const auto head = client.Head("/metrics");
  ASSERT_TRUE(head) << httplib::to_string(head.error());
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  EXPECT_EQ(head->get_header_value("Content-Length"), std::to_string(text.size()));
  EXPECT_EQ(head->get_header_value("Content-Type"), exposition_content_type);
}

TEST(metrics_endpoint, port_zero_picks_a_free_port) {
  metrics_endpoint first(loopback, 0, [] { return std::string("a 1\n"); });
  metrics_endpoint second(loopback, 0, [] { return std::string("b 2\n"); });
  EXPECT_GT(first.port(), 0);
  EXPECT_GT(second.port(), 0);
  EXPECT_NE(first.port(), second.port());
  EXPECT_EQ(first.bind_address(), loopback);

  auto client = client_for(second);
  const auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->body, "b 2\n");
}

TEST(metrics_endpoint, binding_a_port_in_use_throws_naming_the_address) {
  metrics_endpoint holder(loopback, 0, [] { return std::string("a 1\n"); });
  const std::string expected = std::string(loopback) + ":" + std::to_string(holder.port());
  try {
    metrics_endpoint second(loopback, holder.port(), [] { return std::string("b 2\n"); });
    FAIL() << "a second endpoint bound " << expected;
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("cannot serve metrics on " + expected), std::string::npos) << message;
    EXPECT_NE(message.find("in use"), std::string::npos) << message;
  }
  // The holder is untouched: scrapes still reach it, not a second server on the same port.
  auto client = client_for(holder);
  const auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->body, "a 1\n");
}

TEST(metrics_endpoint, a_port_out_of_range_throws_naming_the_address) {
  try {
    metrics_endpoint endpoint(loopback, 70000, [] { return std::string(); });
    FAIL() << "port 70000 was accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("127.0.0.1:70000"), std::string::npos) << error.what();
  }
}

TEST(metrics_endpoint, unknown_path_is_404_naming_metrics) {
  std::atomic<int> calls{0};
  metrics_endpoint endpoint(loopback, 0, [&] {
    ++calls;
    return std::string("a 1\n");
  });
  auto client = client_for(endpoint);
  for (const char* path : {"/", "/metric", "/metrics/", "/metricsx", "/favicon.ico"}) {
    const auto response = client.Get(path);
    ASSERT_TRUE(response) << path << ": " << httplib::to_string(response.error());
    EXPECT_EQ(response->status, 404) << path;
    EXPECT_NE(response->body.find("/metrics"), std::string::npos) << path << ": " << response->body;
  }
  const auto post = client.Post("/other", "x=1", "text/plain");
  ASSERT_TRUE(post) << httplib::to_string(post.error());
  EXPECT_EQ(post->status, 404);
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(endpoint.scrapes(), 0u);
}

TEST(metrics_endpoint, other_methods_on_metrics_are_405) {
  std::atomic<int> calls{0};
  metrics_endpoint endpoint(loopback, 0, [&] {
    ++calls;
    return std::string("a 1\n");
  });
  auto client = client_for(endpoint);

  const auto post = client.Post("/metrics", "x=1", "text/plain");
  ASSERT_TRUE(post) << httplib::to_string(post.error());
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET, HEAD");
  EXPECT_NE(post->body.find("GET"), std::string::npos) << post->body;

  const auto put = client.Put("/metrics", "x=1", "text/plain");
  ASSERT_TRUE(put) << httplib::to_string(put.error());
  EXPECT_EQ(put->status, 405);
  const auto remove = client.Delete("/metrics");
  ASSERT_TRUE(remove) << httplib::to_string(remove.error());
  EXPECT_EQ(remove->status, 405);
  const auto options = client.Options("/metrics");
  ASSERT_TRUE(options) << httplib::to_string(options.error());
  EXPECT_EQ(options->status, 405);

  // Methods cpp-httplib 0.11 does not route are refused by its parser (400), never served.
  for (const char* method : {"TRACE", "CONNECT", "PROPFIND"}) {
    raw_connection connection(endpoint.port());
    ASSERT_TRUE(connection.send_text(std::string(method) +
                                     " /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    const auto reply = connection.receive_head();
    EXPECT_EQ(reply.rfind("HTTP/1.1 4", 0), 0u) << method << ": " << reply;
  }

  EXPECT_EQ(calls.load(), 0);
}

TEST(metrics_endpoint, a_huge_header_is_refused_and_the_endpoint_keeps_serving) {
  metrics_endpoint endpoint(loopback, 0, [] { return std::string("a 1\n"); });
  {
    auto client = client_for(endpoint);
    const auto response = client.Get("/metrics", {{"X-Huge", std::string(huge_header_bytes, 'h')}});
    if (response) {
      EXPECT_GE(response->status, 400) << response->body;
    } else {
      SUCCEED() << "the server closed the connection: " << httplib::to_string(response.error());
    }
  }
  {
    raw_connection huge(endpoint.port());
    // The same over a raw connection, so no client-side limit can hide the server's answer.
    huge.send_text("GET /metrics HTTP/1.1\r\nHost: x\r\n");
    huge.send_text("X-Huge: " + std::string(huge_header_bytes, 'h') + "\r\n\r\n");
    const auto reply = huge.receive_head();
    EXPECT_TRUE(reply.empty() || reply.rfind("HTTP/1.1 4", 0) == 0) << reply.substr(0, 200);
  }
  auto client = client_for(endpoint);
  const auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "a 1\n");
}

/// The text for one generation: a header line and sample lines that all carry `generation`, so a
/// torn or truncated body shows up as a short or mixed one.
std::string exposition_for(std::uint64_t generation, int lines) {
  std::ostringstream text;
  text << "# TYPE herd_generation gauge\n";
  for (int line = 0; line < lines; ++line)
    text << "herd_generation{line=\"" << line << "\"} " << generation << '\n';
  return text.str();
}

TEST(metrics_endpoint, concurrent_scrapes_get_complete_bodies_while_the_data_changes) {
  constexpr int clients = 16;
  constexpr int scrapes_per_client = 50;
  constexpr int lines = 200;
  std::atomic<std::uint64_t> generation{0};
  metrics_endpoint endpoint(loopback, 0, [&] { return exposition_for(generation.load(), lines); });

  std::atomic<bool> done{false};
  std::thread updater([&] {
    while (!done.load())
      generation.fetch_add(1);
  });

  std::vector<int> ok(clients, 0);
  std::vector<std::string> failures(clients);
  std::vector<std::thread> scrapers;
  scrapers.reserve(clients);
  for (int client_index = 0; client_index < clients; ++client_index) {
    scrapers.emplace_back([&, client_index] {
      auto client = client_for(endpoint);
      std::uint64_t last_generation = 0;
      for (int scrape = 0; scrape < scrapes_per_client; ++scrape) {
        const auto response = client.Get("/metrics");
        if (!response) {
          failures[client_index] = "no response: " + httplib::to_string(response.error());
          return;
        }
        if (response->status != 200) {
          failures[client_index] = "status " + std::to_string(response->status);
          return;
        }
        // The body's generation, read from its last line, then checked against the whole body.
        const auto& body = response->body;
        const auto last_space = body.rfind(' ');
        const std::uint64_t seen = std::stoull(body.substr(last_space + 1));
        if (body != exposition_for(seen, lines)) {
          failures[client_index] = "a torn body of " + std::to_string(body.size()) + " bytes";
          return;
        }
        if (seen < last_generation) {
          failures[client_index] = "generation went back from " + std::to_string(last_generation) +
                                   " to " + std::to_string(seen);
          return;
        }
        last_generation = seen;
        ++ok[client_index];
      }
    });
  }
  for (auto& scraper : scrapers)
    scraper.join();
  done = true;
  updater.join();

  for (int client_index = 0; client_index < clients; ++client_index) {
    EXPECT_EQ(ok[client_index], scrapes_per_client)
        << "client " << client_index << ": " << failures[client_index];
  }
  EXPECT_EQ(endpoint.scrapes(), static_cast<std::uint64_t>(clients * scrapes_per_client));
  EXPECT_GT(generation.load(), 0u);
}

TEST(metrics_endpoint, a_throwing_callback_gives_500_and_the_endpoint_keeps_serving) {
  std::atomic<bool> fail_next{true};
  metrics_endpoint endpoint(loopback, 0, [&] {
    if (fail_next.exchange(false))
      throw std::runtime_error("registry is broken");
    return std::string("a 1\n");
  });
  auto client = client_for(endpoint);

  const auto failed = client.Get("/metrics");
  ASSERT_TRUE(failed) << httplib::to_string(failed.error());
  EXPECT_EQ(failed->status, 500);
  EXPECT_NE(failed->body.find("registry is broken"), std::string::npos) << failed->body;
  EXPECT_EQ(endpoint.scrapes(), 0u);

  const auto recovered = client.Get("/metrics");
  ASSERT_TRUE(recovered) << httplib::to_string(recovered.error());
  EXPECT_EQ(recovered->status, 200);
  EXPECT_EQ(recovered->body, "a 1\n");
  EXPECT_EQ(endpoint.scrapes(), 1u);
}

TEST(metrics_endpoint, a_callback_throwing_a_non_exception_gives_500) {
  metrics_endpoint endpoint(loopback, 0, []() -> std::string { throw 42; });
  auto client = client_for(endpoint);
  const auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  EXPECT_EQ(response->status, 500);
}

TEST(metrics_endpoint, destruction_with_an_idle_keep_alive_client_does_not_hang) {
  auto endpoint =
      std::make_unique<metrics_endpoint>(loopback, 0, [] { return std::string("a\n"); });
  auto client = client_for(*endpoint);
  client.set_keep_alive(true);
  const auto response = client.Get("/metrics");
  ASSERT_TRUE(response) << httplib::to_string(response.error());
  ASSERT_EQ(response->status, 200);
  raw_connection silent(endpoint->port()); // connected, never sends a byte

  const auto start = std::chrono::steady_clock::now();
  endpoint.reset();
  // A hang check, not a speed claim.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(metrics_endpoint, destruction_with_a_trickling_client_does_not_hang_or_call_the_callback) {
  std::atomic<int> calls{0};
  auto endpoint = std::make_unique<metrics_endpoint>(loopback, 0, [&] {
    ++calls;
    return std::string("a\n");
  });
  // Keeps a request open by sending a header line every 100 ms: each read succeeds, so the
  // library's read timeout never fires.
  raw_connection trickler(endpoint->port());
  ASSERT_TRUE(trickler.send_text("GET /metrics HTTP/1.1\r\nHost: x\r\n"));
  std::atomic<bool> stop_trickling{false};
  std::thread trickle([&] {
    for (int line = 0; line < 200 && !stop_trickling.load(); ++line) {
      trickler.send_text("X-Line: " + std::to_string(line) + "\r\n");
      std::this_thread::sleep_for(100ms);
    }
  });
  std::this_thread::sleep_for(300ms);

  const auto start = std::chrono::steady_clock::now();
  endpoint.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s); // a hang check, not a speed claim

  stop_trickling = true;
  trickle.join();
  // The request completes after the endpoint is gone: it must not reach the callback, whose
  // captures may be destroyed by now.
  trickler.send_text("\r\n");
  const auto reply = trickler.receive_all();
  EXPECT_TRUE(reply.empty() || reply.rfind("HTTP/1.1 503", 0) == 0) << reply.substr(0, 200);
  EXPECT_EQ(calls.load(), 0);
}

} // namespace
