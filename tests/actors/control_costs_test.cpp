// control_costs: a handler's time on the clock the run chose. Wall time counts a handler that
// lost its core to another thread (here: one that sleeps); the threads' CPU time does not.
#include "actors/control_costs.hpp"

#include <chrono>
#include <gtest/gtest.h>
#include <thread>

namespace {

using herd::actors::control_costs;
using herd::actors::handler_timer;

// One handler that sleeps `idle` and then computes for about `busy`, timed into the coordinator's
// counter; what that counter shows, in seconds.
double handled(control_costs& costs, std::chrono::milliseconds idle,
               std::chrono::milliseconds busy) {
  {
    handler_timer timer(&costs, &control_costs::coordinator);
    std::this_thread::sleep_for(idle);
    const auto until = std::chrono::steady_clock::now() + busy;
    volatile unsigned spin = 0;
    while (std::chrono::steady_clock::now() < until)
      spin = spin + 1;
  }
  EXPECT_EQ(costs.coordinator.messages.load(), 1u);
  EXPECT_EQ(costs.aggregators.messages.load(), 0u);
  return static_cast<double>(costs.summary().coordinator_seconds);
}

TEST(control_costs, wall_time_counts_a_handler_that_waits_for_its_core) {
  control_costs costs; // wall, the default
  EXPECT_GE(handled(costs, std::chrono::milliseconds(60), std::chrono::milliseconds(0)), 0.060);
}

TEST(control_costs, cpu_time_counts_what_the_handler_computed_only) {
  control_costs costs(control_costs::clock_kind::thread_cpu);
  // The sleep is 60 ms of wall time and next to no CPU time; the 20 ms of spinning are CPU time
  // when the thread had its core, and at least some of it on a loaded machine.
  const double seconds =
      handled(costs, std::chrono::milliseconds(60), std::chrono::milliseconds(20));
  EXPECT_GT(seconds, 0.0);
  EXPECT_LT(seconds, 0.050) << "the 60 ms asleep must not count";
}

} // namespace
