// Before a run, work that cannot be cut short (reading a dataset, which may take minutes) runs
// on a thread of its own: a stop signal meanwhile ends the command at once with exit status 130
// and one line, instead of when the work ends.
#include "cli/stop_signals.hpp"

#include <chrono>
#include <csignal>
#include <gtest/gtest.h>
#include <stdexcept>
#include <thread>

namespace {

using herd::cli::run_unless_stopped;

TEST(stop_signals, work_that_returns_returns_and_its_exception_comes_out) {
  int done = 0;
  run_unless_stopped("train", [&done] { done = 7; });
  EXPECT_EQ(done, 7);
  EXPECT_THROW(run_unless_stopped("train", [] { throw std::runtime_error("unreadable"); }),
               std::runtime_error);
}

// The work takes 5 s (a dataset on a slow disk); the signal ends the process 0.1 s in.
TEST(stop_signals_death, a_stop_signal_during_the_work_ends_the_command_at_once_with_130) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  for (const auto& [signal, name] : {std::pair{SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}}) {
    EXPECT_EXIT(
        {
          herd::cli::install_stop_signals();
          std::thread([signal = signal] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            std::raise(signal);
          }).detach();
          run_unless_stopped("train", [] { std::this_thread::sleep_for(std::chrono::seconds(5)); });
        },
        ::testing::ExitedWithCode(130),
        std::string("herd train: interrupted by ") + name +
            " before the run started; nothing was trained");
  }
}

} // namespace
