// Runs a function in a forked child under a deadline, for tests of calls that might block forever
// or crash the process: the test sees what the child reported, or that it hung or died, and fails
// on that instead of hanging or taking the whole test binary down.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <functional>
#include <poll.h>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace herd::testing {

struct forked_outcome {
  bool finished = false; // the child exited by itself before the deadline
  int exit_code = -1;    // its exit status when it exited: 0 after `body` returned
  int signal = 0;        // the signal that ended it, if one did (SIGKILL after the deadline)
  std::string report;    // what `body` returned, or "exception: <what>" when it threw
};

/// Calls `body` in a child process and collects what it returns. The child exits with 0 after
/// `body` returns and 1 after it throws; it is killed at the deadline.
inline forked_outcome run_forked(const std::function<std::string()>& body,
                                 std::chrono::milliseconds deadline) {
  int ends[2];
  if (::pipe(ends) != 0)
    throw std::runtime_error("pipe failed");
  const pid_t child = ::fork();
  if (child < 0)
    throw std::runtime_error("fork failed");
  if (child == 0) {
    ::close(ends[0]);
    std::string report;
    int status = 0;
    try {
      report = body();
    } catch (const std::exception& error) {
      report = std::string("exception: ") + error.what();
      status = 1;
    } catch (...) {
      report = "exception: not a std::exception";
      status = 1;
    }
    for (std::size_t written = 0; written < report.size();) {
      const ssize_t got = ::write(ends[1], report.data() + written, report.size() - written);
      if (got <= 0)
        break;
      written += static_cast<std::size_t>(got);
    }
    ::_exit(status); // not back into the test framework
  }
  ::close(ends[1]);
  forked_outcome outcome;
  const auto until = std::chrono::steady_clock::now() + deadline;
  char buffer[4096];
  bool killed = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(child, SIGKILL);
      killed = true;
      break;
    }
    pollfd readable{ends[0], POLLIN, 0};
    if (::poll(&readable, 1, static_cast<int>(left.count())) <= 0)
      continue;
    const ssize_t got = ::read(ends[0], buffer, sizeof buffer);
    if (got <= 0)
      break; // the child closed its end: it exited
    outcome.report.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(ends[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFEXITED(status)) {
    outcome.exit_code = WEXITSTATUS(status);
    outcome.finished = !killed;
  } else if (WIFSIGNALED(status)) {
    outcome.signal = WTERMSIG(status);
  }
  return outcome;
}

} // namespace herd::testing
