// metrics_endpoint: the /metrics HTTP endpoint, driven over loopback with cpp-httplib's client
// (an independent HTTP implementation playing Prometheus) and with raw sockets where a client has
// to misbehave: trickle, idle, flood, send too much or stop reading.
#include "monitoring/metrics_endpoint.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <gtest/gtest.h>
#include <httplib.h>
#include <iterator>
#include <memory>
#include <netinet/in.h>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

using herd::monitoring::metrics_endpoint;
using herd::monitoring::metrics_endpoint_limits;
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
  /// `receive_buffer_bytes` > 0 fixes the socket's receive buffer (and so the window it offers).
  explicit raw_connection(int port, int receive_buffer_bytes = 0)
      : socket_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (socket_ < 0)
      throw std::runtime_error("socket() failed");
    timeval receive_timeout{};
    receive_timeout.tv_sec = 5;
    ::setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &receive_timeout, sizeof(receive_timeout));
    if (receive_buffer_bytes > 0) {
      ::setsockopt(socket_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes,
                   sizeof(receive_buffer_bytes));
    }
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

  enum class ending { closed, reset, still_open };
  struct received_until_end {
    std::string text;
    ending how = ending::still_open;
  };

  /// Everything the server sends until it closes the connection (recv returns 0), resets it, or
  /// `limit` passes.
  received_until_end receive_until_closed(std::chrono::steady_clock::duration limit) {
    received_until_end result;
    const auto give_up_at = std::chrono::steady_clock::now() + limit;
    char buffer[65536];
    while (std::chrono::steady_clock::now() < give_up_at) {
      const auto count = ::recv(socket_, buffer, sizeof(buffer), 0);
      if (count > 0) {
        result.text.append(buffer, static_cast<std::size_t>(count));
      } else if (count == 0) {
        result.how = ending::closed;
        return result;
      } else if (errno == ECONNRESET) {
        result.how = ending::reset;
        return result;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return result;
      }
    }
    return result;
  }

private:
  int socket_;
};

std::ostream& operator<<(std::ostream& out, raw_connection::ending how) {
  switch (how) {
  case raw_connection::ending::closed:
    return out << "closed";
  case raw_connection::ending::reset:
    return out << "reset";
  case raw_connection::ending::still_open:
    return out << "still open";
  }
  return out;
}

/// Milliseconds, for messages people read.
long long in_ms(std::chrono::steady_clock::duration elapsed) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count();
}

/// Threads that run until the test ends, however it ends (a failed ASSERT returns early).
class background_threads {
public:
  background_threads() = default;
  ~background_threads() {
    stop_ = true;
    for (auto& thread : threads_)
      thread.join();
  }
  background_threads(const background_threads&) = delete;
  background_threads& operator=(const background_threads&) = delete;

  /// Runs `body(stop)`; the body returns once `stop` turns true.
  void start(std::function<void(const std::atomic<bool>&)> body) {
    threads_.emplace_back([this, body = std::move(body)] { body(stop_); });
  }

private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

/// Connects and sends the start of a request, then one header byte every 100-200 ms and never the
/// end of the head; reconnects when the server cuts it off. Counts the bytes trickled.
void trickle_until_stopped(const std::atomic<bool>& stop, int port, std::uint32_t seed,
                           std::atomic<int>& trickled_bytes) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> pause_ms(100, 200);
  while (!stop.load()) {
    try {
      raw_connection slow(port);
      if (!slow.send_text("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "))
        continue;
      while (!stop.load() && slow.send_text("s")) {
        ++trickled_bytes;
        std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
      }
    } catch (const std::runtime_error&) {
      std::this_thread::sleep_for(100ms); // the connect failed: try again
    }
  }
}

/// Descriptors this process holds (the directory listing's own included, the same every time).
std::ptrdiff_t open_descriptors() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                       std::filesystem::directory_iterator());
}

/// A scrape that must be answered 200 within the client's 5 s timeouts.
::testing::AssertionResult scrape_succeeds(const metrics_endpoint& endpoint) {
  auto client = client_for(endpoint);
  const auto response = client.Get("/metrics");
  if (!response)
    return ::testing::AssertionFailure() << "no answer: " << httplib::to_string(response.error());
  if (response->status != 200)
    return ::testing::AssertionFailure() << "status " << response->status;
  return ::testing::AssertionSuccess();
}

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

// Where to scrape it, as the commands print it: an IPv6 address bracketed (given with brackets,
// as copied from a URL, or without), and this host's name for every address, which "0.0.0.0"
// is not from elsewhere.
TEST(metrics_endpoint, its_url_brackets_an_ipv6_address_and_names_the_host_for_every_address) {
  const auto text = [] { return std::string("a 1\n"); };
  metrics_endpoint loop(loopback, 0, text);
  EXPECT_EQ(loop.url(),
            std::string("http://") + loopback + ":" + std::to_string(loop.port()) + "/metrics");
  metrics_endpoint every("0.0.0.0", 0, text);
  EXPECT_EQ(every.url().find("0.0.0.0"), std::string::npos) << every.url();
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(every.url(),
            "http://" + std::string(host) + ":" + std::to_string(every.port()) + "/metrics");
  for (const std::string given : {"::1", "[::1]"}) {
    std::unique_ptr<metrics_endpoint> six;
    try {
      six = std::make_unique<metrics_endpoint>(given, 0, text);
    } catch (const std::runtime_error& unavailable) {
      GTEST_SKIP() << "no IPv6 loopback on this machine: " << unavailable.what();
    }
    EXPECT_EQ(six->bind_address(), "::1");
    EXPECT_EQ(six->url(), "http://[::1]:" + std::to_string(six->port()) + "/metrics");
  }
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

  // Methods no client library sends are refused the same way.
  for (const char* method : {"TRACE", "CONNECT", "PROPFIND"}) {
    raw_connection connection(endpoint.port());
    ASSERT_TRUE(connection.send_text(std::string(method) +
                                     " /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    const auto reply = connection.receive_head();
    EXPECT_EQ(reply.rfind("HTTP/1.1 405", 0), 0u) << method << ": " << reply;
    EXPECT_NE(reply.find("Allow: GET, HEAD\r\n"), std::string::npos) << method << ": " << reply;
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

/// The reply's status line, or what came instead.
std::string status_line(const std::string& reply) {
  return reply.substr(0, reply.find("\r\n"));
}

TEST(metrics_endpoint, slow_clients_trickling_requests_do_not_block_scrapes) {
  // Twice the four threads cpp-httplib served with, each of which one trickler used to hold.
  constexpr int slow_clients = 8;
  constexpr int scrapes = 20;
  metrics_endpoint endpoint(loopback, 0, [] { return std::string("a 1\n"); });
  std::atomic<int> trickled_bytes{0};
  background_threads tricklers;
  for (int client = 0; client < slow_clients; ++client) {
    tricklers.start([&, client](const std::atomic<bool>& stop) {
      trickle_until_stopped(stop, endpoint.port(), 1234u + static_cast<std::uint32_t>(client),
                            trickled_bytes);
    });
  }
  std::this_thread::sleep_for(500ms); // all of them connected and trickling

  auto client = client_for(endpoint);
  client.set_read_timeout(3s);
  for (int scrape = 0; scrape < scrapes; ++scrape) {
    const auto start = std::chrono::steady_clock::now();
    const auto response = client.Get("/metrics");
    // Answered at all is the point; 3 s is a hang bound (the old server never answered).
    ASSERT_TRUE(response) << "scrape " << scrape << ": " << httplib::to_string(response.error());
    EXPECT_EQ(response->status, 200) << "scrape " << scrape;
    EXPECT_EQ(response->body, "a 1\n");
    EXPECT_LT(in_ms(std::chrono::steady_clock::now() - start), 3000) << "scrape " << scrape;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(endpoint.scrapes(), static_cast<std::uint64_t>(scrapes));
  // The slow clients really were trickling the whole time (about 8 bytes a second each).
  EXPECT_GT(trickled_bytes.load(), slow_clients * 10);
}

TEST(metrics_endpoint,
     a_trickling_client_is_cut_off_at_the_request_deadline_though_it_keeps_sending) {
  metrics_endpoint_limits limits;
  limits.request_deadline = 1000ms;
  metrics_endpoint endpoint(
      loopback, 0, [] { return std::string("a 1\n"); }, limits);

  raw_connection trickler(endpoint.port());
  const auto connected = std::chrono::steady_clock::now();
  ASSERT_TRUE(trickler.send_text("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: "));
  std::atomic<int> trickled_bytes{0};
  background_threads trickling;
  trickling.start([&](const std::atomic<bool>& stop) {
    // A byte every 100 ms, so no single read ever waits long: only a whole-request deadline ends
    // it.
    while (!stop.load() && trickler.send_text("s")) {
      ++trickled_bytes;
      std::this_thread::sleep_for(100ms);
    }
  });

  const auto ending = trickler.receive_until_closed(10s);
  const auto cut_off_after = std::chrono::steady_clock::now() - connected;
  const int trickled_by_then = trickled_bytes.load();

  EXPECT_EQ(ending.how, raw_connection::ending::closed)
      << "received before the end: " << ending.text.substr(0, 200);
  EXPECT_EQ(status_line(ending.text), "HTTP/1.1 408 Request Timeout") << ending.text;
  // Not before its deadline, and soon after it (a hang bound, not a speed claim).
  EXPECT_GE(in_ms(cut_off_after), 900);
  EXPECT_LT(in_ms(cut_off_after), 4000);
  RecordProperty("cut_off_after_ms", static_cast<int>(in_ms(cut_off_after)));
  EXPECT_GE(trickled_by_then, 5) << "the client stopped sending before the deadline";
  EXPECT_TRUE(scrape_succeeds(endpoint));
}

TEST(metrics_endpoint, a_silent_connection_is_closed_at_the_request_deadline) {
  metrics_endpoint_limits limits;
  limits.request_deadline = 500ms;
  metrics_endpoint endpoint(
      loopback, 0, [] { return std::string("a 1\n"); }, limits);
  raw_connection silent(endpoint.port());
  const auto connected = std::chrono::steady_clock::now();
  const auto ending = silent.receive_until_closed(10s);
  const auto closed_after = std::chrono::steady_clock::now() - connected;
  EXPECT_EQ(ending.how, raw_connection::ending::closed);
  EXPECT_EQ(ending.text, ""); // it asked nothing, so it gets no answer
  EXPECT_GE(in_ms(closed_after), 400);
  EXPECT_LT(in_ms(closed_after), 3000); // a hang bound, well short of cpp-httplib's 5 s per read
}

TEST(metrics_endpoint, a_request_sent_in_pieces_within_the_deadline_is_served) {
  metrics_endpoint endpoint(loopback, 0, [] { return std::string("a 1\n"); });
  raw_connection client(endpoint.port());
  for (const char* piece : {"GE", "T /metr", "ics HTTP/1.1\r", "\nHost: x\r\n\r", "\n"}) {
    ASSERT_TRUE(client.send_text(piece));
    std::this_thread::sleep_for(50ms);
  }
  const auto reply = client.receive_all();
  EXPECT_EQ(status_line(reply), "HTTP/1.1 200 OK") << reply;
  EXPECT_EQ(reply.substr(reply.find("\r\n\r\n") + 4), "a 1\n");
}

TEST(metrics_endpoint, idle_connections_beyond_the_cap_hold_no_descriptors_and_scrapes_succeed) {
  metrics_endpoint_limits limits;
  // Far beyond the test's length, so only the cap, not a deadline, can close idle connections.
  limits.request_deadline = 60s;
  metrics_endpoint endpoint(
      loopback, 0, [] { return std::string("a 1\n"); }, limits);
  const auto cap = static_cast<std::ptrdiff_t>(endpoint.limits().max_connections);
  ASSERT_LE(cap, 64);

  constexpr std::ptrdiff_t idle_clients = 300;
  const auto before = open_descriptors();
  std::vector<std::unique_ptr<raw_connection>> idle;
  idle.reserve(idle_clients);
  for (std::ptrdiff_t client = 0; client < idle_clients; ++client)
    idle.push_back(std::make_unique<raw_connection>(endpoint.port()));

  // The server accepts in arrival order, so once this scrape is answered it has taken all 300.
  for (int scrape = 0; scrape < 5; ++scrape)
    ASSERT_TRUE(scrape_succeeds(endpoint)) << "scrape " << scrape;

  // The clients' own 300 sockets are this process's too; what is left is the server's.
  const auto held_by_server = open_descriptors() - before - idle_clients;
  EXPECT_LE(held_by_server, cap) << "cap " << cap;
  EXPECT_EQ(endpoint.scrapes(), 5u);
  RecordProperty("held_by_server", static_cast<int>(held_by_server));
}

TEST(metrics_endpoint, the_connection_cap_is_at_most_a_sixteenth_of_the_descriptor_limit) {
  rlimit original{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &original), 0);
  ASSERT_GE(original.rlim_cur, 256u) << "this test lowers the soft limit to 256";
  struct restore_limit {
    rlimit saved;
    ~restore_limit() { ::setrlimit(RLIMIT_NOFILE, &saved); }
  } const restorer{original};
  rlimit lowered = original;
  lowered.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);

  metrics_endpoint_limits limits;
  limits.request_deadline = 60s;
  metrics_endpoint endpoint(
      loopback, 0, [] { return std::string("a 1\n"); }, limits);
  EXPECT_EQ(endpoint.limits().max_connections, 16u); // 256 / 16

  // It holds: 40 idle connections leave it with at most 16 sockets.
  constexpr std::ptrdiff_t idle_clients = 40;
  const auto before = open_descriptors();
  std::vector<std::unique_ptr<raw_connection>> idle;
  for (std::ptrdiff_t client = 0; client < idle_clients; ++client)
    idle.push_back(std::make_unique<raw_connection>(endpoint.port()));
  ASSERT_TRUE(scrape_succeeds(endpoint));
  const auto held_by_server = open_descriptors() - before - idle_clients;
  EXPECT_LE(held_by_server, 16);
  RecordProperty("held_by_server", static_cast<int>(held_by_server));

  // A cap below the share is kept as given.
  limits.max_connections = 8;
  metrics_endpoint smaller(
      loopback, 0, [] { return std::string("a 1\n"); }, limits);
  EXPECT_EQ(smaller.limits().max_connections, 8u);
}

TEST(metrics_endpoint, zero_limits_are_refused) {
  const auto make = [](metrics_endpoint_limits limits) {
    metrics_endpoint endpoint(
        loopback, 0, [] { return std::string(); }, limits);
  };
  metrics_endpoint_limits no_connections;
  no_connections.max_connections = 0;
  EXPECT_THROW(make(no_connections), std::invalid_argument);
  metrics_endpoint_limits no_time;
  no_time.request_deadline = 0ms;
  EXPECT_THROW(make(no_time), std::invalid_argument);
  metrics_endpoint_limits no_head;
  no_head.max_request_head_bytes = 0;
  EXPECT_THROW(make(no_head), std::invalid_argument);
}

TEST(metrics_endpoint, a_request_head_over_the_bound_is_refused_and_one_at_the_bound_is_served) {
  metrics_endpoint endpoint(loopback, 0, [] { return std::string("a 1\n"); });
  const std::size_t bound = endpoint.limits().max_request_head_bytes;
  ASSERT_EQ(bound, 8192u);
  const std::string start = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Filler: ";
  const std::string end = "\r\n\r\n";
  const auto head_of = [&](std::size_t bytes) {
    return start + std::string(bytes - start.size() - end.size(), 'f') + end;
  };
  const auto reply_to = [&](const std::string& request) {
    raw_connection client(endpoint.port());
    client.send_text(request);
    return client.receive_all();
  };

  EXPECT_EQ(status_line(reply_to(head_of(bound))), "HTTP/1.1 200 OK");
  EXPECT_EQ(status_line(reply_to(head_of(bound + 1))),
            "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(status_line(reply_to(head_of(4 * bound))),
            "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(status_line(reply_to("GET /" + std::string(bound, 'p') + " HTTP/1.1\r\n\r\n")),
            "HTTP/1.1 414 URI Too Long");
  EXPECT_EQ(endpoint.scrapes(), 1u);
  EXPECT_TRUE(scrape_succeeds(endpoint));
}

TEST(metrics_endpoint, malformed_requests_are_400_and_odd_but_valid_ones_are_served) {
  std::atomic<int> calls{0};
  metrics_endpoint endpoint(loopback, 0, [&] {
    ++calls;
    return std::string("a 1\n");
  });
  const auto reply_to = [&](const std::string& request) {
    raw_connection client(endpoint.port());
    client.send_text(request);
    return status_line(client.receive_all());
  };
  const std::string bad_request = "HTTP/1.1 400 Bad Request";
  EXPECT_EQ(reply_to("GARBAGE\r\n\r\n"), bad_request);
  EXPECT_EQ(reply_to("GET /metrics\r\n\r\n"), bad_request);           // HTTP/0.9
  EXPECT_EQ(reply_to("GET  /metrics HTTP/1.1\r\n\r\n"), bad_request); // two spaces
  EXPECT_EQ(reply_to("GET metrics HTTP/1.1\r\n\r\n"), bad_request);   // not a path
  EXPECT_EQ(reply_to("G(T /metrics HTTP/1.1\r\n\r\n"), bad_request);  // not a token
  EXPECT_EQ(reply_to("GET /metrics HTTP/1.1\r\nNo colon\r\n\r\n"), bad_request);
  EXPECT_EQ(reply_to("GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n"), bad_request);
  EXPECT_EQ(reply_to("GET /metrics HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n"), bad_request);
  EXPECT_EQ(reply_to("GET /metrics HTTP/1.1\r\nContent-Length: x\r\n\r\n"), bad_request);
  EXPECT_EQ(reply_to("GET /metrics HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            bad_request);
  EXPECT_EQ(reply_to("GET /metrics HTTP/2.0\r\n\r\n"), "HTTP/1.1 505 HTTP Version Not Supported");
  EXPECT_EQ(reply_to("GET /metrics HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"),
            "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(calls.load(), 0);

  const std::string ok = "HTTP/1.1 200 OK";
  EXPECT_EQ(reply_to("GET /metrics HTTP/1.0\r\n\r\n"), ok);
  EXPECT_EQ(reply_to("GET /metrics?name[]=herd_up HTTP/1.1\r\nHost: x\r\n\r\n"), ok);
  EXPECT_EQ(reply_to("GET http://127.0.0.1/metrics HTTP/1.1\r\n\r\n"), ok);
  EXPECT_EQ(reply_to("GET /metrics HTTP/1.1\nHost: x\n\n"), ok); // bare LF line ends
  EXPECT_EQ(calls.load(), 4);
}

TEST(metrics_endpoint, a_client_that_stops_reading_is_cut_off_at_the_reply_deadline) {
  // Its reply is far more than the kernel buffers hold with the client's window kept small (the
  // server's send buffer grows to 4 MiB at most), so it cannot be handed off at once.
  constexpr int small_window_bytes = 64 * 1024;
  const std::string large(std::size_t{16} << 20, 'x');
  std::atomic<int> calls{0};
  metrics_endpoint_limits limits;
  limits.reply_deadline = 1000ms;
  metrics_endpoint endpoint(
      loopback, 0, [&] { return calls++ == 0 ? large : std::string("a 1\n"); }, limits);

  raw_connection stalled(endpoint.port(), small_window_bytes);
  ASSERT_TRUE(stalled.send_text("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  const auto asked = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(100ms); // the server is stuck on it, as far as it can be
  ASSERT_EQ(calls.load(), 1);
  EXPECT_TRUE(scrape_succeeds(endpoint)); // meanwhile others are served

  // Reads only after the deadline: a server without one would now send the rest.
  std::this_thread::sleep_until(asked + limits.reply_deadline + 1s);
  const auto ending = stalled.receive_until_closed(10s);
  EXPECT_NE(ending.how, raw_connection::ending::still_open);
  EXPECT_LT(ending.text.size(), large.size()) << "the whole reply arrived";
  RecordProperty("bytes_received_by_the_stalled_client", static_cast<int>(ending.text.size()));
  EXPECT_EQ(status_line(ending.text), "HTTP/1.1 200 OK");
}

} // namespace
