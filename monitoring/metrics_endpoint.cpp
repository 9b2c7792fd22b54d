// The /metrics HTTP endpoint on cpp-httplib; see metrics_endpoint.hpp.
//
// Lifetime: the httplib::Server and everything its handlers touch live in a serving_state that
// the serving thread co-owns. The destructor stops the server, waits until no call of the
// caller's callback is running and drops the callback, and then joins the serving thread. A
// client that keeps a request open by trickling bytes (cpp-httplib's read timeout is per read,
// not per request) could hold a pool thread, and so the join, for as long as it likes; after
// stop_wait the destructor detaches the thread instead, which stays safe because the thread owns
// the state and never calls the callback again.
#include "monitoring/metrics_endpoint.hpp"

#include "kernels/check.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <httplib.h>
#include <mutex>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <utility>

namespace herd::monitoring {

namespace {

using namespace std::chrono_literals;

constexpr const char* metrics_path = "/metrics";
constexpr const char* allowed_methods = "GET, HEAD";
constexpr const char* exposition_content_type = "text/plain; version=0.0.4; charset=utf-8";
constexpr const char* error_content_type = "text/plain; charset=utf-8";

// Scrapes are rare (Prometheus: one every few seconds per server), so a few threads suffice, and
// a bounded pool caps what a flood of connections can take from training.
constexpr std::size_t serving_threads = 4;
constexpr time_t read_timeout_seconds = 5;
constexpr time_t write_timeout_seconds = 5;
// Short: an idle keep-alive connection holds one of the pool's threads. Prometheus scrapes every
// 15 s by default and so reconnects anyway.
constexpr time_t keep_alive_timeout_seconds = 2;
constexpr std::size_t keep_alive_max_requests = 10;
// A GET carries no body; this only bounds what a POST or PUT can make the server read. Header
// lines are bounded by the library itself (CPPHTTPLIB_HEADER_MAX_LENGTH, 8 KiB, compiled in).
constexpr std::size_t max_request_body_bytes = 4096;

constexpr auto start_wait = 5s;
constexpr auto stop_wait = 3s;
constexpr auto stop_retry_interval = 20ms;

struct serving_state {
  explicit serving_state(std::function<std::string()> callback) : exposition(std::move(callback)) {}

  /// Runs the callback into `text`; false (and no call) once the endpoint is shutting down.
  bool produce(std::string& text) {
    {
      const std::lock_guard<std::mutex> lock(mutex);
      if (closing)
        return false;
      ++callbacks_running;
    }
    // Released on the way out, also when the callback throws.
    struct release {
      serving_state& state;
      ~release() {
        {
          const std::lock_guard<std::mutex> lock(state.mutex);
          --state.callbacks_running;
        }
        state.changed.notify_all();
      }
    } const releaser{*this};
    text = exposition();
    return true;
  }

  httplib::Server server;
  std::atomic<std::uint64_t> scrapes{0};

  std::mutex mutex;
  std::condition_variable changed;
  // Called only between produce()'s bookkeeping; emptied once closing and no call is running.
  std::function<std::string()> exposition;
  bool closing = false;
  int callbacks_running = 0;
  bool serving_finished = false;
};

std::string endpoint_name(const std::string& address, int port) {
  return address + ":" + std::to_string(port);
}

/// The reason phrase for the error statuses the library produces itself.
const char* error_reason(int status) {
  switch (status) {
  case 400:
    return "bad request";
  case 413:
    return "payload too large";
  case 414:
    return "URI too long";
  case 416:
    return "range not satisfiable";
  case 431:
    return "request header fields too large";
  default:
    return "error";
  }
}

void set_error(httplib::Response& response, int status, const std::string& text) {
  response.status = status;
  response.set_content(text, error_content_type);
}

void set_not_found(httplib::Response& response) {
  set_error(response, 404, "404 not found: this endpoint serves only GET /metrics\n");
}

void set_method_not_allowed(httplib::Response& response) {
  response.set_header("Allow", allowed_methods);
  set_error(response, 405, "405 method not allowed: /metrics answers only GET and HEAD\n");
}

void serve_exposition(serving_state& state, const httplib::Request& request,
                      httplib::Response& response) {
  if (request.path != metrics_path) {
    set_not_found(response);
    return;
  }
  std::string text;
  try {
    if (!state.produce(text)) {
      set_error(response, 503, "503 service unavailable: the metrics endpoint is shutting down\n");
      return;
    }
  } catch (const std::exception& error) {
    set_error(response, 500,
              std::string("500 internal error: producing the metrics failed: ") + error.what() +
                  "\n");
    return;
  } catch (...) {
    set_error(response, 500, "500 internal error: producing the metrics failed\n");
    return;
  }
  response.status = 200;
  // What set_content does, without copying what may be a large text.
  response.body = std::move(text);
  response.set_header("Content-Type", exposition_content_type);
  state.scrapes.fetch_add(1, std::memory_order_relaxed);
}

void answer_other_method(const httplib::Request& request, httplib::Response& response) {
  if (request.path == metrics_path)
    set_method_not_allowed(response);
  else
    set_not_found(response);
}

void configure(serving_state& state) {
  auto& server = state.server;
  server.new_task_queue = [] { return new httplib::ThreadPool(serving_threads); };
  server.set_read_timeout(read_timeout_seconds, 0);
  server.set_write_timeout(write_timeout_seconds, 0);
  server.set_keep_alive_timeout(keep_alive_timeout_seconds);
  server.set_keep_alive_max_count(keep_alive_max_requests);
  server.set_payload_max_length(max_request_body_bytes);
  // cpp-httplib's default sets SO_REUSEPORT, with which a second process binds the same port and
  // the kernel splits the scrapes between the two. SO_REUSEADDR only allows a quick restart.
  server.set_socket_options([](socket_t socket) {
    const int yes = 1;
    ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  // Handlers capture a raw pointer: the state outlives the server it owns.
  serving_state* const shared = &state;
  // HEAD is routed to the GET handlers, and cpp-httplib leaves the body out.
  server.Get(".*", [shared](const httplib::Request& request, httplib::Response& response) {
    serve_exposition(*shared, request, response);
  });
  server.Post(".*", answer_other_method);
  server.Put(".*", answer_other_method);
  server.Patch(".*", answer_other_method);
  server.Delete(".*", answer_other_method);
  server.Options(".*", answer_other_method);
  // Runs for every status from 400 on and gives the library's own errors (400, 413, 414) a body.
  // Methods no handler takes (TRACE, CONNECT, unknown ones) never get here as 404s: cpp-httplib
  // 0.11's request-line parser refuses them with 400 before routing.
  // Named as HandlerWithResponse: a lambda converts to both of set_error_handler's overloads.
  const httplib::Server::HandlerWithResponse fill_error = [](const httplib::Request&,
                                                             httplib::Response& response) {
    if (!response.body.empty())
      return httplib::Server::HandlerResponse::Unhandled;
    set_error(response, response.status,
              std::to_string(response.status) + " " + error_reason(response.status) + "\n");
    return httplib::Server::HandlerResponse::Handled;
  };
  server.set_error_handler(fill_error);
  // A backstop: serve_exposition catches the callback's exceptions itself.
  server.set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, const std::exception_ptr&) {
        set_error(response, 500, "500 internal error while serving the request\n");
      });
}

/// Binds and returns the port; throws std::runtime_error naming the address when it cannot.
int bind_port(httplib::Server& server, const std::string& address, int port) {
  if (port < 0 || port > 65535)
    throw std::runtime_error("cannot serve metrics on " + endpoint_name(address, port) +
                             ": the port must be in 0..65535 (0 picks a free one)");
  errno = 0;
  int bound_port = port;
  bool bound = false;
  if (port == 0) {
    bound_port = server.bind_to_any_port(address);
    bound = bound_port > 0;
  } else {
    bound = server.bind_to_port(address, port);
  }
  if (!bound) {
    const int error = errno;
    const std::string reason = error != 0
                                   ? std::strerror(error)
                                   : "the address does not resolve to one this host can bind";
    throw std::runtime_error("cannot serve metrics on " + endpoint_name(address, port) + ": " +
                             reason + " (choose another address or port; port 0 picks a free one)");
  }
  return bound_port;
}

} // namespace

struct metrics_endpoint::impl {
  std::string bind_address;
  int port = 0;
  std::shared_ptr<serving_state> state;
  std::thread serving_thread;

  /// Stops the server and ends or lets go of the serving thread; see the top of the file.
  void shut_down() {
    {
      std::unique_lock<std::mutex> lock(state->mutex);
      state->closing = true;
      // No timeout on purpose: returning while the caller's callback runs would let it read
      // objects the caller destroys next. The callback renders a registry; it does not block.
      state->changed.wait(lock, [this] { return state->callbacks_running == 0; });
      state->exposition = nullptr;
    }
    const auto deadline = std::chrono::steady_clock::now() + stop_wait;
    std::unique_lock<std::mutex> lock(state->mutex);
    while (!state->serving_finished && std::chrono::steady_clock::now() < deadline) {
      lock.unlock();
      // Repeated because stop() does nothing until listen_after_bind() has started.
      state->server.stop();
      lock.lock();
      state->changed.wait_for(lock, stop_retry_interval,
                              [this] { return state->serving_finished; });
    }
    const bool finished = state->serving_finished;
    lock.unlock();
    if (finished)
      serving_thread.join();
    else
      serving_thread.detach();
  }
};

metrics_endpoint::metrics_endpoint(const std::string& bind_address, int port,
                                   std::function<std::string()> exposition)
    : impl_(std::make_unique<impl>()) {
  HERD_CHECK(static_cast<bool>(exposition),
             "metrics_endpoint needs a callback that returns the exposition text");
  impl_->bind_address = bind_address;
  auto state = std::make_shared<serving_state>(std::move(exposition));
  configure(*state);
  impl_->port = bind_port(state->server, bind_address, port);
  impl_->state = state;
  impl_->serving_thread = std::thread([state] {
    state->server.listen_after_bind();
    {
      const std::lock_guard<std::mutex> lock(state->mutex);
      state->serving_finished = true;
    }
    state->changed.notify_all();
  });

  // listen_after_bind() marks the server running before its first accept; until then a scrape
  // would wait in the listen backlog, which works, but callers and tests expect a live endpoint.
  const auto deadline = std::chrono::steady_clock::now() + start_wait;
  std::unique_lock<std::mutex> lock(state->mutex);
  while (!state->server.is_running()) {
    const bool finished = state->serving_finished;
    if (finished || std::chrono::steady_clock::now() >= deadline) {
      lock.unlock();
      impl_->shut_down();
      throw std::runtime_error("cannot serve metrics on " + endpoint_name(bind_address, port) +
                               (finished ? ": the server stopped as it started"
                                         : ": the server thread did not start within 5 s"));
    }
    state->changed.wait_for(lock, 1ms);
  }
}

metrics_endpoint::~metrics_endpoint() {
  impl_->shut_down();
}

int metrics_endpoint::port() const {
  return impl_->port;
}

const std::string& metrics_endpoint::bind_address() const {
  return impl_->bind_address;
}

std::uint64_t metrics_endpoint::scrapes() const {
  return impl_->state->scrapes.load(std::memory_order_relaxed);
}

} // namespace herd::monitoring
