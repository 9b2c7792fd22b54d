// Runs a program as a child process for end-to-end tests: collects its output (stdout and stderr
// together), optionally sends SIGINT after a delay, and kills it if it overruns a timeout.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace herd::testing {

struct process_result {
  int exit_code = -1; // the exit status; -1 when a signal ended the process
  int signal = 0;     // the signal that ended it, or 0
  std::string output; // stdout and stderr, interleaved as written
  bool timed_out = false;
};

/// In a forked child: replaces the process with argv[0] (a path), or exits 127 saying why.
[[noreturn]] void exec_child(const std::vector<std::string>& argv);

process_result run_process(const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout = std::chrono::seconds(120),
                           std::optional<std::chrono::milliseconds> interrupt_after = {});

} // namespace herd::testing
