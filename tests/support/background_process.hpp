// A child process that runs beside a test (a training run, a Prometheus server): its output goes
// to a file the test can read, and it is stopped (SIGTERM, then SIGKILL) when the object goes.
// Also: a free loopback TCP port for a server to listen on.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace herd::testing {

class background_process {
public:
  /// Starts argv[0] (a path) with the remaining arguments; output goes to `log_file`.
  background_process(const std::vector<std::string>& argv, std::string log_file);
  ~background_process();

  background_process(const background_process&) = delete;
  background_process& operator=(const background_process&) = delete;

  /// Waits for the process to exit on its own; its exit status, or nothing on timeout (or when
  /// a signal ended it).
  std::optional<int> wait(std::chrono::milliseconds timeout);
  /// Sends `signal`, then waits up to `timeout`; SIGKILL if it is still running.
  void stop(int signal, std::chrono::milliseconds timeout);
  bool running();
  int pid() const { return pid_; }
  std::string output() const;
  /// Waits until the output holds `text`; false when `timeout` passed first.
  bool wait_for_output(const std::string& text, std::chrono::milliseconds timeout) const;

private:
  int pid_ = -1;
  bool reaped_ = false;
  std::optional<int> exit_code_;
  std::string log_file_;
};

/// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it, close).
int free_loopback_port();

} // namespace herd::testing
