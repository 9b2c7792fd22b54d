// run_phases: every transition of a run, from the start to the summary, without an actor system.
#include "actors/run_phases.hpp"

#include <gtest/gtest.h>
#include <vector>

namespace {

using herd::actors::stop_cause;
using herd::actors::run_phase;
using herd::actors::run_phases;
using action = run_phases::action;

run_phases running(double max_seconds = 0.0) {
  run_phases phases(max_seconds);
  EXPECT_TRUE(phases.start());
  return phases;
}

// From draining with nothing in flight to done, every worker answering.
void stop_workers_and_finish(run_phases& phases, const std::vector<int>& live) {
  ASSERT_EQ(phases.rounds_changed(0), action::stop_workers);
  ASSERT_EQ(phases.stopping(live), live.empty() ? action::evaluate_final : action::none);
  for (std::size_t i = 0; i < live.size(); ++i)
    ASSERT_EQ(phases.worker_stopped(live[i]),
              i + 1 == live.size() ? action::evaluate_final : action::none);
  ASSERT_EQ(phases.phase(), run_phase::final_evaluation);
  ASSERT_EQ(phases.final_evaluation_ended(""), action::finish);
  EXPECT_TRUE(phases.done());
}

TEST(run_phases, a_run_starts_once) {
  run_phases phases;
  EXPECT_EQ(phases.phase(), run_phase::starting);
  EXPECT_TRUE(phases.start());
  EXPECT_TRUE(phases.running());
  EXPECT_FALSE(phases.start());
  EXPECT_TRUE(phases.running());
  EXPECT_EQ(phases.stop_reason(), stop_cause::none);
}

TEST(run_phases, a_stop_before_the_start_is_done_at_once) {
  run_phases phases;
  EXPECT_EQ(phases.stop(stop_cause::interrupted), action::finish);
  EXPECT_TRUE(phases.done());
  EXPECT_EQ(phases.stop_reason(), stop_cause::interrupted);
  EXPECT_FALSE(phases.start());
}

TEST(run_phases, an_error_before_the_start_is_done_at_once) {
  run_phases phases;
  EXPECT_EQ(phases.fail("no data"), action::finish);
  EXPECT_TRUE(phases.done());
  EXPECT_EQ(phases.stop_reason(), stop_cause::error);
  EXPECT_EQ(phases.error(), "no data");
}

TEST(run_phases, a_stop_while_rounds_are_in_flight_waits_for_them) {
  auto phases = running();
  EXPECT_EQ(phases.stop(stop_cause::interrupted), action::drain);
  EXPECT_EQ(phases.phase(), run_phase::draining);
  EXPECT_EQ(phases.rounds_changed(2), action::none);
  EXPECT_EQ(phases.rounds_changed(1), action::none);
  EXPECT_EQ(phases.phase(), run_phase::draining);
  stop_workers_and_finish(phases, {0, 1, 2});
  EXPECT_EQ(phases.stop_reason(), stop_cause::interrupted);
  EXPECT_EQ(phases.error(), "");
}

TEST(run_phases, rounds_ending_while_running_change_nothing) {
  auto phases = running();
  EXPECT_EQ(phases.rounds_changed(0), action::none);
  EXPECT_EQ(phases.drain_timed_out(3), action::none);
  EXPECT_TRUE(phases.running());
}

TEST(run_phases, rounds_that_outlast_the_stop_timeout_are_abandoned) {
  auto phases = running();
  ASSERT_EQ(phases.stop(stop_cause::epochs), action::drain);
  EXPECT_EQ(phases.drain_timed_out(0), action::none); // they finished before the timer fired
  EXPECT_EQ(phases.drain_timed_out(2), action::stop_workers);
  EXPECT_EQ(phases.phase(), run_phase::stopping_workers);
  EXPECT_EQ(phases.drain_timed_out(2), action::none);
  EXPECT_EQ(phases.rounds_changed(0), action::none);
}

TEST(run_phases, each_worker_is_awaited_once_and_the_last_starts_the_final_evaluation) {
  auto phases = running();
  ASSERT_EQ(phases.stop(stop_cause::epochs), action::drain);
  ASSERT_EQ(phases.rounds_changed(0), action::stop_workers);
  EXPECT_EQ(phases.stopping({0, 2, 3}), action::none);
  EXPECT_EQ(phases.worker_stopped(2), action::none);
  EXPECT_EQ(phases.worker_stopped(2), action::none); // answered, then lost: counted once
  EXPECT_EQ(phases.worker_stopped(1), action::none); // not asked: lost before the stop
  EXPECT_EQ(phases.worker_stopped(0), action::none);
  EXPECT_EQ(phases.phase(), run_phase::stopping_workers);
  EXPECT_EQ(phases.worker_stopped(3), action::evaluate_final);
  EXPECT_EQ(phases.phase(), run_phase::final_evaluation);
  EXPECT_EQ(phases.worker_stopped(3), action::none);
}

TEST(run_phases, with_no_live_worker_to_stop_the_final_evaluation_starts_at_once) {
  auto phases = running();
  ASSERT_EQ(phases.stop(stop_cause::epochs), action::drain);
  stop_workers_and_finish(phases, {});
}

TEST(run_phases, reaching_the_target_stops_and_later_reasons_are_ignored) {
  auto phases = running();
  EXPECT_EQ(phases.stop(stop_cause::target_accuracy), action::drain);
  EXPECT_EQ(phases.stop(stop_cause::interrupted), action::none);
  EXPECT_FALSE(phases.time_is_up(1e9));
  stop_workers_and_finish(phases, {0});
  EXPECT_EQ(phases.stop_reason(), stop_cause::target_accuracy);
  // Reached by the final evaluation: too late to change how the run ended.
  EXPECT_EQ(phases.stop(stop_cause::target_accuracy), action::none);
}

TEST(run_phases, max_seconds_stops_the_run_once_that_much_time_passed) {
  auto phases = running(2.0);
  EXPECT_FALSE(phases.time_is_up(0.0));
  EXPECT_FALSE(phases.time_is_up(1.999));
  EXPECT_TRUE(phases.running());
  EXPECT_TRUE(phases.time_is_up(2.0));
  EXPECT_EQ(phases.stop(stop_cause::max_seconds), action::drain);
  EXPECT_FALSE(phases.time_is_up(3.0)); // stopping already
  EXPECT_EQ(phases.stop_reason(), stop_cause::max_seconds);
}

TEST(run_phases, without_max_seconds_time_never_stops_the_run) {
  auto phases = running(0.0);
  EXPECT_FALSE(phases.time_is_up(1e9));
  run_phases starting(1.0);
  EXPECT_FALSE(starting.time_is_up(5.0));
  EXPECT_EQ(starting.phase(), run_phase::starting);
}

TEST(run_phases, losing_every_worker_ends_the_run_with_an_error) {
  auto phases = running();
  EXPECT_EQ(phases.fail("every worker was lost"), action::drain);
  EXPECT_EQ(phases.stop_reason(), stop_cause::error);
  stop_workers_and_finish(phases, {});
  EXPECT_EQ(phases.error(), "every worker was lost");
}

TEST(run_phases, a_worker_lost_while_stopping_counts_as_stopped) {
  auto phases = running();
  ASSERT_EQ(phases.stop(stop_cause::interrupted), action::drain);
  ASSERT_EQ(phases.rounds_changed(0), action::stop_workers);
  ASSERT_EQ(phases.stopping({4, 5}), action::none);
  EXPECT_EQ(phases.worker_stopped(5), action::none); // lost
  EXPECT_EQ(phases.worker_stopped(4), action::evaluate_final);
  EXPECT_EQ(phases.stop_reason(), stop_cause::interrupted);
}

TEST(run_phases, an_error_while_stopping_keeps_the_phase_and_becomes_the_reason) {
  auto phases = running();
  ASSERT_EQ(phases.stop(stop_cause::epochs), action::drain);
  // A round in flight failed: the coordinator checks whether that was the last one.
  EXPECT_EQ(phases.fail("round 7: the data plane failed"), action::none);
  EXPECT_EQ(phases.phase(), run_phase::draining);
  EXPECT_EQ(phases.stop_reason(), stop_cause::error);
  EXPECT_EQ(phases.fail("aggregator 0 stopped"), action::none);
  EXPECT_EQ(phases.error(), "round 7: the data plane failed"); // the first error is the run's
  stop_workers_and_finish(phases, {0, 1});
  EXPECT_EQ(phases.stop_reason(), stop_cause::error);
}

TEST(run_phases, an_error_while_running_drains_the_rounds_in_flight) {
  auto phases = running();
  EXPECT_EQ(phases.fail("training diverged"), action::drain);
  EXPECT_EQ(phases.phase(), run_phase::draining);
  EXPECT_EQ(phases.rounds_changed(1), action::none);
  stop_workers_and_finish(phases, {0});
  EXPECT_EQ(phases.error(), "training diverged");
}

TEST(run_phases, a_failed_final_evaluation_is_an_error_but_not_the_stop_reason) {
  auto phases = running();
  ASSERT_EQ(phases.stop(stop_cause::epochs), action::drain);
  ASSERT_EQ(phases.rounds_changed(0), action::stop_workers);
  ASSERT_EQ(phases.stopping({}), action::evaluate_final);
  EXPECT_EQ(phases.final_evaluation_ended("final evaluation failed: timeout"), action::finish);
  EXPECT_TRUE(phases.done());
  EXPECT_EQ(phases.stop_reason(), stop_cause::epochs);
  EXPECT_EQ(phases.error(), "final evaluation failed: timeout");
}

TEST(run_phases, a_failed_final_evaluation_keeps_an_earlier_error) {
  auto phases = running();
  ASSERT_EQ(phases.fail("aggregator 1 stopped"), action::drain);
  ASSERT_EQ(phases.rounds_changed(0), action::stop_workers);
  ASSERT_EQ(phases.stopping({}), action::evaluate_final);
  EXPECT_EQ(phases.final_evaluation_ended("final evaluation failed: no live worker"),
            action::finish);
  EXPECT_EQ(phases.error(), "aggregator 1 stopped");
}

TEST(run_phases, once_done_nothing_moves) {
  auto phases = running();
  ASSERT_EQ(phases.stop(stop_cause::epochs), action::drain);
  stop_workers_and_finish(phases, {0});
  EXPECT_EQ(phases.stop(stop_cause::interrupted), action::none);
  EXPECT_EQ(phases.rounds_changed(0), action::none);
  EXPECT_EQ(phases.drain_timed_out(1), action::none);
  EXPECT_EQ(phases.stopping({0}), action::none);
  EXPECT_EQ(phases.worker_stopped(0), action::none);
  EXPECT_EQ(phases.final_evaluation_ended(""), action::none);
  EXPECT_EQ(phases.fail("late"), action::none);
  EXPECT_TRUE(phases.done());
  EXPECT_EQ(phases.stop_reason(), stop_cause::epochs);
  EXPECT_EQ(phases.error(), "");
}

} // namespace
