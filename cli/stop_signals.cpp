// Stop signals for the training commands; see stop_signals.hpp.
#include "cli/stop_signals.hpp"

#include "cli/train_command.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <future>
#include <iostream>
#include <unistd.h>

namespace herd::cli {

namespace {

constexpr int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

// A handler may only touch lock-free atomics (and async-signal-safe calls).
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);
std::atomic<bool> stop_flag{false};
std::atomic<int> first_signal{0};
std::atomic<bool> run_ended{false};
std::atomic<bool> stop_after_run{false};

extern "C" void on_stop_signal(int signal) {
  if (run_ended.load()) { // nothing left to abort: the signal only ends the final wait
    stop_after_run.store(true);
    return;
  }
  const int saved_errno = errno;
  int none = 0;
  first_signal.compare_exchange_strong(none, signal);
  if (stop_flag.exchange(true)) {
    // The second signal: its default action ends the process once this handler returns (the
    // signal is blocked until then). It says so first (write is async-signal-safe).
    static const char aborted[] =
        "\nherd: aborted by a second stop signal: no summary, report or final checkpoint\n";
    [[maybe_unused]] const auto written = ::write(STDERR_FILENO, aborted, sizeof aborted - 1);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    sigaction(signal, &default_action, nullptr);
    raise(signal);
  }
  errno = saved_errno;
}

} // namespace

void install_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (int signal : stop_signals) // one handler at a time: the second signal sees the first's flag
    sigaddset(&action.sa_mask, signal);
  action.sa_flags = SA_RESTART; // a blocking call in a library is not cut short by the flag
  for (int signal : stop_signals) {
    // nohup asks for SIGHUP to be ignored, and so it stays. SIGINT is taken even when inherited
    // as ignored: a script's background job inherits it so, and scripts/local-cluster forwards
    // Ctrl-C to the coordinator with kill -INT.
    struct sigaction previous {};
    if (signal == SIGHUP && sigaction(signal, nullptr, &previous) == 0 &&
        previous.sa_handler == SIG_IGN)
      continue;
    sigaction(signal, &action, nullptr);
  }
}

void keep_running_when_output_closes() {
  std::signal(SIGPIPE, SIG_IGN);
}

void run_has_ended() {
  run_ended.store(true);
}

bool stopped_after_run() {
  return stop_after_run.load();
}

bool stop_signalled() {
  return stop_flag.load();
}

const std::atomic<bool>& stop_signal_flag() {
  return stop_flag;
}

std::string stop_signal_name() {
  switch (first_signal.load()) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  default:
    return "a signal";
  }
}

bool interrupted_before_run(const std::string& command) {
  if (!stop_signalled())
    return false;
  std::cerr << "herd " << command << ": interrupted by " << stop_signal_name()
            << " before the run started; nothing was trained\n";
  return true;
}

void run_unless_stopped(const std::string& command, const std::function<void()>& work) {
  auto working = std::async(std::launch::async, work);
  while (working.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
    if (interrupted_before_run(command)) {
      std::cerr.flush();
      std::_Exit(exit_interrupted); // the working thread cannot be stopped, and holds nothing
    }
  working.get();
}

} // namespace herd::cli
