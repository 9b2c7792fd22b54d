// An HTTP job server: Herd's training jobs inside a CAF actor system this program owns.
//
//   job_service [--port N] [--bind ADDRESS] [--keep-finished N]
//                       default: a free port on 127.0.0.1; the 100 latest finished jobs kept
//
//   POST   /jobs        an INI configuration as the body (as `herd train --config` reads it);
//                       starts a job, answers 201 {"id": N, "name": "job-N"}; a bad
//                       configuration answers 400 with the messages `herd train` prints
//   GET    /jobs        every job's status (JSON array): the running ones and the latest
//                       --keep-finished finished ones (older ones are forgotten, answering 404)
//   GET    /jobs/{id}   one job: state, progress, accuracy, the current straggler, its curve
//   DELETE /jobs/{id}   stops a job early (202), 404 for an unknown id
//   GET    /metrics     every job's metrics in Prometheus' text format, labelled job="job-N"
//
// SIGINT or SIGTERM stops the server, stops every running job and waits for them.
#include "herd/config.hpp"
#include "herd/data.hpp"
#include "herd/job_actor.hpp"
#include "herd/metrics.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <httplib.h>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

#include "job_book.hpp"

namespace {

constexpr auto ask_timeout = std::chrono::seconds(10);

// The jobs this service started that may still run, for the wait at shutdown (the actor system
// must outlive them).
struct started_jobs {
  std::mutex mutex;
  std::vector<std::shared_ptr<herd::job>> facades;
};

struct arguments {
  std::string bind = "127.0.0.1";
  int port = 0;
  int keep_finished = 100;
};

// The value of `flag` as a whole number within [low, high].
int whole_number(const std::string& flag, const std::string& value, int low, int high) {
  try {
    std::size_t used = 0;
    const int number = std::stoi(value, &used);
    if (used == value.size() && number >= low && number <= high)
      return number;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(flag + " " + value + ": not a whole number from " +
                              std::to_string(low) + " to " + std::to_string(high));
}

arguments parse(int argc, char** argv) {
  arguments parsed;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if ((flag == "--port" || flag == "--bind" || flag == "--keep-finished") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (flag == "--bind")
        parsed.bind = value;
      else if (flag == "--port")
        parsed.port = whole_number(flag, value, 0, 65535);
      else
        parsed.keep_finished = whole_number(flag, value, 0, 1000000);
    } else {
      throw std::invalid_argument(
          flag + ": usage: job_service [--port N] [--bind ADDRESS] [--keep-finished N]");
    }
  }
  return parsed;
}

void answer(httplib::Response& response, int status, const std::string& json) {
  response.status = status;
  response.set_content(json, "application/json");
}

void refuse(httplib::Response& response, const std::vector<std::string>& messages) {
  std::string text;
  for (const auto& message : messages)
    text += message + "\n";
  response.status = 400;
  response.set_content(text, "text/plain");
}

// Asks the job book and answers with its (status, JSON) reply.
template <class... Ts>
void ask(caf::actor_system& system, const caf::actor& book, httplib::Response& response,
         Ts&&... message) {
  caf::scoped_actor self{system};
  self->request(book, ask_timeout, std::forward<Ts>(message)...)
      .receive([&](int status, std::string& json) { answer(response, status, json); },
               [&](caf::error& error) {
                 answer(response, 500,
                        nlohmann::json({{"error", system.render(error)}}).dump());
               });
}

// POST /jobs: the configuration and data are read on the HTTP thread (loading a dataset takes a
// while; the job book keeps answering meanwhile), the job spawned into the service's system, and
// the handle given to the book.
void start_job(caf::actor_system& system, const caf::actor& book,
               const std::shared_ptr<herd::monitoring::registry>& metrics, std::atomic<int>& ids,
               started_jobs& started, const httplib::Request& request,
               httplib::Response& response) {
  const int id = ++ids;
  herd::job_handle handle;
  try {
    const herd::config::run_config config =
        herd::config::from_ini(request.body, "POST /jobs (job " + std::to_string(id) + ")");
    const auto data = herd::models::load_dataset(config);
    herd::job_options options;
    options.name = "job-" + std::to_string(id);
    options.metrics = metrics;
    // Several jobs share this process's cores: one BLAS thread a GEMM (a process-wide setting),
    // whatever one job alone would choose.
    options.blas_threads = 1;
    // The book hears every event of the job from its first: a job that fails at once too.
    handle = herd::spawn_job(system, config, data, std::move(options), {book});
    const std::lock_guard<std::mutex> lock(started.mutex);
    // A job that has ended needs no wait at shutdown: held here, it would hold its parameters.
    auto& facades = started.facades;
    facades.erase(std::remove_if(facades.begin(), facades.end(),
                                 [](const std::shared_ptr<herd::job>& job) {
                                   const auto state = job->status().state;
                                   return state == herd::job_state::finished ||
                                          state == herd::job_state::failed;
                                 }),
                  facades.end());
    facades.push_back(handle.facade);
  } catch (const herd::config::invalid_config& invalid) {
    std::vector<std::string> messages;
    for (const auto& error : invalid.errors())
      messages.push_back(error.message);
    refuse(response, messages);
    return;
  } catch (const std::exception& bad) { // data that cannot be read, a checkpoint, a size
    refuse(response, {bad.what()});
    return;
  }
  caf::scoped_actor self{system};
  self->request(book, ask_timeout, job_service::add_atom::value, id, handle)
      .receive(
          [&](bool) {
            answer(response, 201,
                   nlohmann::json({{"id", id}, {"name", "job-" + std::to_string(id)}}).dump());
          },
          [&](caf::error& error) {
            handle.facade->stop();
            answer(response, 500, nlohmann::json({{"error", system.render(error)}}).dump());
          });
}

// SIGINT and SIGTERM: the handler only writes a byte to a pipe (all a handler may safely do), and
// a thread that reads it stops the server. Threads that libraries started before main (OpenBLAS
// starts its own at load time) may take the signal: the pipe works whichever does.
int stop_pipe[2] = {-1, -1};

void on_stop_signal(int) {
  const char byte = 1;
  [[maybe_unused]] const auto written = ::write(stop_pipe[1], &byte, 1);
}

// False, with errno set, when the pipe cannot be made.
bool catch_stop_signals() {
  if (::pipe(stop_pipe) != 0)
    return false;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  return true;
}

// Blocks until a stop signal came, or until wake_stop_waiter().
void wait_for_stop_signal() {
  char byte = 0;
  while (::read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
}

void wake_stop_waiter() {
  on_stop_signal(0);
}

// The id in the path; nothing, answered 404, for digits beyond any id an int holds.
std::optional<int> job_id(const httplib::Request& request, httplib::Response& response) {
  const std::string digits = request.matches[1].str();
  int id = 0;
  const auto [end, problem] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (problem == std::errc() && end == digits.data() + digits.size())
    return id;
  response.status = 404;
  response.set_content(nlohmann::json({{"error", "no job " + digits}}).dump(), "application/json");
  return std::nullopt;
}

} // namespace

int main(int argc, char** argv) {
  arguments args;
  try {
    args = parse(argc, argv);
  } catch (const std::invalid_argument& bad) {
    std::cerr << "job_service: " << bad.what() << '\n';
    return 2;
  }
  if (!catch_stop_signals()) {
    std::cerr << "job_service: pipe: " << std::strerror(errno) << '\n';
    return 1;
  }

  caf::actor_system_config system_config;
  herd::add_message_types(system_config);
  caf::actor_system system{system_config};
  const caf::actor book = system.spawn<job_service::job_book>(args.keep_finished);
  const auto metrics = std::make_shared<herd::monitoring::registry>();
  std::atomic<int> ids{0};
  started_jobs started;

  httplib::Server server;
  server.Post("/jobs", [&](const httplib::Request& request, httplib::Response& response) {
    start_job(system, book, metrics, ids, started, request, response);
  });
  server.Get("/jobs", [&](const httplib::Request&, httplib::Response& response) {
    ask(system, book, response, job_service::list_atom::value);
  });
  server.Get(R"(/jobs/(\d+))", [&](const httplib::Request& request, httplib::Response& response) {
    if (const auto id = job_id(request, response))
      ask(system, book, response, job_service::show_atom::value, *id);
  });
  server.Delete(R"(/jobs/(\d+))",
                [&](const httplib::Request& request, httplib::Response& response) {
                  if (const auto id = job_id(request, response))
                    ask(system, book, response, job_service::cancel_atom::value, *id);
                });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& response) {
    response.set_content(herd::monitoring::expose(*metrics), "text/plain; version=0.0.4");
  });

  const int port = args.port == 0 ? server.bind_to_any_port(args.bind)
                                  : (server.bind_to_port(args.bind, args.port) ? args.port : -1);
  if (port < 0) {
    std::cerr << "job_service: cannot listen on " << args.bind << ":" << args.port << '\n';
    caf::anon_send_exit(book, caf::exit_reason::user_shutdown);
    return 1;
  }
  std::thread stopper([&] {
    wait_for_stop_signal();
    server.stop();
  });
  std::cout << "job_service: listening on http://" << args.bind << ":" << port << std::endl;
  server.listen_after_bind();

  // Stopped: every running job is asked to stop, then waited for (a stopped job runs its final
  // evaluation first), before the actor system goes.
  wake_stop_waiter(); // in case the server stopped by itself
  stopper.join();
  std::cout << "job_service: stopping" << std::endl;
  {
    caf::scoped_actor self{system};
    self->request(book, ask_timeout, job_service::cancel_all_atom::value)
        .receive([](int) {}, [](caf::error&) {});
  }
  const std::lock_guard<std::mutex> lock(started.mutex);
  for (const auto& job : started.facades)
    job->wait();
  caf::anon_send_exit(book, caf::exit_reason::user_shutdown);
  return 0;
}
