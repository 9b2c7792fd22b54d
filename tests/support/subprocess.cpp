// Child processes for end-to-end tests; see subprocess.hpp.
#include "support/subprocess.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace herd::testing {

void exec_child(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  std::fprintf(stderr, "execv %s: %s\n", args[0], std::strerror(errno));
  ::_exit(127);
}

process_result run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                           std::optional<std::chrono::milliseconds> interrupt_after) {
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child == 0) {
    ::dup2(pipe_ends[1], STDOUT_FILENO);
    ::dup2(pipe_ends[1], STDERR_FILENO);
    ::close(pipe_ends[0]);
    ::close(pipe_ends[1]);
    exec_child(argv);
  }
  ::close(pipe_ends[1]);
  process_result result;
  const auto start = std::chrono::steady_clock::now();
  bool interrupted = false;
  char buffer[4096];
  for (;;) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    if (interrupt_after && !interrupted && elapsed >= *interrupt_after) {
      ::kill(child, SIGINT);
      interrupted = true;
    }
    if (elapsed >= timeout) {
      ::kill(child, SIGKILL);
      result.timed_out = true;
      break;
    }
    pollfd readable{pipe_ends[0], POLLIN, 0};
    if (::poll(&readable, 1, 50) > 0) {
      const ssize_t got = ::read(pipe_ends[0], buffer, sizeof buffer);
      if (got <= 0)
        break; // EOF: the child closed its output (it exited)
      result.output.append(buffer, static_cast<std::size_t>(got));
    }
  }
  ::close(pipe_ends[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.signal = WTERMSIG(status);
  return result;
}

} // namespace herd::testing
