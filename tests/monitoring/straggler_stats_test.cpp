// Straggler scores on scripted step times: the slow worker stands out (against the other workers,
// so also when it is one of two, or of a slow half), the score follows a worker that becomes slow
// and recovers, and lost workers stop counting. A worker's typical time is the mean of the middle
// half of its recent steps, its last 1024 at most.
#include "monitoring/straggler_stats.hpp"

#include <algorithm>
#include <gtest/gtest.h>
#include <optional>
#include <random>
#include <vector>

namespace {

using herd::monitoring::straggler_stats;

// Every worker finishes a step every `period` seconds of its own step time, from `from` to `to`,
// in the order of time: each the last step it finishes by `to`.
void run(straggler_stats& stats, const std::vector<double>& step_seconds, double from, double to) {
  std::vector<double> next(step_seconds.size(), from);
  for (;;) {
    std::optional<std::size_t> worker;
    for (std::size_t i = 0; i < next.size(); ++i)
      if (next[i] + step_seconds[i] <= to &&
          (!worker || next[i] + step_seconds[i] < next[*worker] + step_seconds[*worker]))
        worker = i;
    if (!worker)
      return;
    const double at = next[*worker] + step_seconds[*worker];
    stats.step_finished(static_cast<int>(*worker), at, step_seconds[*worker]);
    next[*worker] = at;
  }
}

TEST(straggler_stats, the_slow_worker_scores_its_slowdown_and_the_others_one) {
  straggler_stats stats(4, 10.0);
  run(stats, {0.01, 0.03, 0.01, 0.01}, 0.0, 20.0);
  const auto now = stats.compute(20.0);
  ASSERT_TRUE(now.score[1].has_value());
  EXPECT_NEAR(*now.score[1], 3.0, 1e-9);
  for (int worker : {0, 2, 3})
    EXPECT_NEAR(*now.score[static_cast<std::size_t>(worker)], 1.0, 1e-9);
  ASSERT_TRUE(now.imbalance_ratio.has_value());
  EXPECT_NEAR(*now.imbalance_ratio, 3.0, 1e-9);
}

// The reference is the other workers' median: with two workers, or a slow half, a median that
// counted the slow worker itself would be its mean with the fast one, and no score could reach 2.
TEST(straggler_stats, one_slow_worker_of_two_scores_its_slowdown) {
  straggler_stats stats(2, 10.0);
  run(stats, {0.01, 0.045}, 0.0, 20.0);
  const auto now = stats.compute(20.0);
  EXPECT_NEAR(*now.score[1], 4.5, 1e-9);
  EXPECT_NEAR(*now.score[0], 1.0 / 4.5, 1e-9);
  EXPECT_NEAR(*now.imbalance_ratio, 4.5, 1e-9);
}

TEST(straggler_stats, a_slow_half_scores_its_slowdown) {
  straggler_stats stats(4, 10.0);
  run(stats, {0.01, 0.01, 0.04, 0.04}, 0.0, 20.0);
  const auto now = stats.compute(20.0);
  for (std::size_t slow : {2u, 3u})
    EXPECT_NEAR(*now.score[slow], 4.0, 1e-9) << "worker " << slow;
  for (std::size_t fast : {0u, 1u})
    EXPECT_NEAR(*now.score[fast], 0.25, 1e-9) << "worker " << fast;
  EXPECT_NEAR(*now.imbalance_ratio, 4.0, 1e-9);
}

TEST(straggler_stats, a_worker_alone_scores_one) {
  straggler_stats stats(1, 10.0);
  run(stats, {0.02}, 0.0, 1.0);
  EXPECT_NEAR(*stats.compute(1.0).score[0], 1.0, 1e-9);
}

TEST(straggler_stats, the_score_follows_a_worker_that_becomes_slow_and_recovers) {
  straggler_stats stats(3, 5.0);
  run(stats, {0.01, 0.01, 0.01}, 0.0, 10.0);
  EXPECT_NEAR(*stats.compute(10.0).score[2], 1.0, 1e-9);
  run(stats, {0.01, 0.01, 0.04}, 10.0, 20.0);
  EXPECT_NEAR(*stats.compute(20.0).score[2], 4.0, 1e-9) << "slow for longer than the window";
  run(stats, {0.01, 0.01, 0.01}, 20.0, 30.0);
  EXPECT_NEAR(*stats.compute(30.0).score[2], 1.0, 1e-9) << "recovered for longer than the window";
}

// A worker that stops finishing steps (a frozen process, a hung device) must not look healthy: it
// stays in the scores with no step in the window, and behind the others it is scored by how long
// its current step has taken so far, which grows while it hangs. (It used to keep its last score,
// and a frozen node read as healthy until it was declared lost.)
TEST(straggler_stats, a_hung_worker_scores_by_how_long_its_step_has_taken) {
  straggler_stats stats(3, 2.0);
  run(stats, {0.01, 0.01, 0.05}, 0.0, 4.0);
  EXPECT_NEAR(*stats.compute(4.0).score[2], 5.0, 1e-9);
  // Its last step's round gave it its result at once, and it began its next step: it hangs
  // there, while the others go on for longer than the window.
  stats.result_applied(2, 4.0);
  run(stats, {0.01, 0.01, 1000.0}, 4.0, 4.5);
  const auto early = stats.compute(4.5);
  ASSERT_TRUE(early.score[2].has_value()) << "a hung worker must not vanish from the scores";
  EXPECT_NEAR(*early.score[2], 5.0, 1e-9) << "half a second may be a slow step, not a hang";
  run(stats, {0.01, 0.01, 1000.0}, 4.5, 6.0);
  EXPECT_NEAR(*stats.compute(6.0).score[2], 2.0 / 0.01, 1e-6); // its step has taken 2 s so far
  run(stats, {0.01, 0.01, 1000.0}, 6.0, 10.0);
  const auto later = stats.compute(10.0);
  EXPECT_NEAR(*later.score[2], 6.0 / 0.01, 1e-6);
  EXPECT_NEAR(*later.imbalance_ratio, 6.0 / 0.01, 1e-6);
  EXPECT_FALSE(stats.recent_typical(2, 10.0).has_value());
  // Once it finishes a step it is the others' equal in steps no more than before: a worker that
  // waits for the others (under sync) is never scored by its wait, only one behind them.
  stats.step_finished(2, 10.0, 6.0);
  EXPECT_NEAR(*stats.compute(10.0).score[2], 6.0 / 0.01, 1e-6); // its one step in the window
}

// Under sync the workers that finished their step wait for the slowest: their clocks run too, but
// they are not behind it, so only the one still computing is scored by its time so far.
TEST(straggler_stats, workers_waiting_for_a_slow_one_are_not_scored_by_their_wait) {
  straggler_stats stats(3, 10.0);
  for (int step = 1; step <= 20; ++step)
    for (int worker = 0; worker < 3; ++worker) {
      stats.step_finished(worker, step * 0.1, 0.05);
      stats.result_applied(worker, step * 0.1); // the step's round, at once
    }
  // Step 21: workers 0 and 1 finish at 2.05 and wait; worker 2 is still computing at 4.0.
  stats.step_finished(0, 2.05, 0.05);
  stats.step_finished(1, 2.05, 0.05);
  EXPECT_NEAR(*stats.compute(4.0).score[2], 2.0 / 0.05, 1e-6); // 4.0 - 2.0: its step so far
  // A worker that waited for a round's result began its step when the result came, not when its
  // last step ended: worker 2's round 20 ended at 2.5 (it had waited for a slow fourth, say).
  stats.result_applied(2, 2.5);
  const auto now = stats.compute(4.0);
  EXPECT_NEAR(*now.score[2], 1.5 / 0.05, 1e-6);
  // The waiting ones keep their 0.05 s (against the others' median: the mean of 0.05 and 1.5).
  for (std::size_t waiting : {0u, 1u})
    EXPECT_NEAR(*now.score[waiting], 0.05 / ((0.05 + 1.5) / 2), 1e-6) << "worker " << waiting;
}

// A worker that finished its step and waits for a round to take it is not computing, however long
// no round starts (a checkpoint's pause, a join, a full sync waiting for the slowest arrival, the
// stop): behind the others in steps or not, its wait is no step time. (A first version counted it,
// and healthy workers of a solo run scored 100 and more during a checkpoint.)
TEST(straggler_stats, a_worker_whose_step_waits_for_a_round_is_not_scored_by_the_wait) {
  straggler_stats stats(3, 10.0);
  run(stats, {0.01, 0.02, 0.04}, 0.0, 2.0);
  const auto before = stats.compute(2.0);
  // No round starts for 3 s: each waits with its last step done, none of them late.
  const auto during = stats.compute(5.0);
  for (std::size_t worker = 0; worker < 3; ++worker)
    EXPECT_NEAR(*during.score[worker], *before.score[worker], 1e-9) << "worker " << worker;
  // A late step goes on at once: that worker is computing, and 3 s of it is a hang.
  stats.step_finished(2, 2.0, 0.04, true);
  EXPECT_NEAR(*stats.compute(5.0).score[2], 3.0 / 0.015, 1e-6); // against 0.01 and 0.02
}

TEST(straggler_stats, lost_workers_do_not_count) {
  straggler_stats stats(3, 10.0);
  run(stats, {0.01, 0.02, 0.08}, 0.0, 10.0);
  stats.worker_lost(2);
  const auto now = stats.compute(10.0);
  EXPECT_FALSE(now.score[2].has_value());
  // Each of the two left against the other.
  EXPECT_NEAR(*now.score[0], 0.01 / 0.02, 1e-9);
  EXPECT_NEAR(*now.score[1], 0.02 / 0.01, 1e-9);
  stats.step_finished(2, 11.0, 5.0); // ignored
  EXPECT_FALSE(stats.compute(11.0).score[2].has_value());
}

TEST(straggler_stats, a_worker_that_comes_back_counts_again_from_its_new_steps) {
  straggler_stats stats(3, 10.0);
  run(stats, {0.01, 0.02, 0.08}, 0.0, 10.0);
  stats.worker_lost(2);
  stats.worker_joined(2);
  EXPECT_FALSE(stats.compute(10.0).score[2].has_value()) << "no step since it came back";
  run(stats, {0.01, 0.02, 1000.0}, 10.0, 11.0);
  stats.step_finished(2, 11.0, 0.04);
  const auto now = stats.compute(11.0);
  ASSERT_TRUE(now.score[2].has_value());
  EXPECT_NEAR(*now.score[2], 0.04 / 0.015, 1e-9); // the others' median: of 0.01 and 0.02
}

TEST(straggler_stats, nothing_to_say_before_the_first_step) {
  straggler_stats stats(2, 10.0);
  const auto now = stats.compute(1.0);
  EXPECT_FALSE(now.score[0].has_value());
  EXPECT_FALSE(now.imbalance_ratio.has_value());
  EXPECT_THROW(stats.step_finished(2, 0.0, 1.0), std::invalid_argument);
  EXPECT_THROW(straggler_stats(0, 10.0), std::invalid_argument);
  EXPECT_THROW(straggler_stats(2, 0.0), std::invalid_argument);
}

// A worker's typical step is the mean of the middle half of its steps: a quarter of outlying
// steps does not move it, and where half of each worker's steps are delayed (random imbalance,
// k = 1 of 2 workers) neither worker is called a straggler. A median jumped to the delayed mode
// for whichever worker drew a few more delays, and one of two such workers scored 7.
TEST(straggler_stats, half_delayed_steps_on_every_worker_name_no_straggler) {
  straggler_stats stats(2, 10.0);
  std::mt19937 draw(3);
  double at[2] = {0.0, 0.0};
  for (int step = 0; step < 2000; ++step) {
    const int delayed = static_cast<int>(draw() % 2);
    for (int worker = 0; worker < 2; ++worker) {
      const double seconds = worker == delayed ? 0.0064 : 0.0009;
      at[worker] += seconds;
      stats.step_finished(worker, at[worker], seconds);
    }
  }
  const auto now = stats.compute(std::max(at[0], at[1]));
  for (std::size_t worker : {0u, 1u}) {
    ASSERT_TRUE(now.score[worker].has_value());
    EXPECT_GT(*now.score[worker], 0.8) << "worker " << worker;
    EXPECT_LT(*now.score[worker], 1.25) << "worker " << worker;
  }
}

// The typical time is the interquartile mean: each step time weighted by how much of its rank
// [r, r + 1) among n lies in [n/4, 3n/4]. Against that definition, computed here by sorting, for
// every count from 1 to 60 steps of random times.
TEST(straggler_stats, the_typical_time_is_the_mean_of_the_middle_half_by_rank) {
  std::mt19937 draw(11);
  std::uniform_real_distribution<double> seconds(0.001, 0.01);
  for (int count = 1; count <= 60; ++count) {
    straggler_stats stats(1, 1000.0);
    std::vector<double> times;
    double at = 0.0;
    for (int step = 0; step < count; ++step) {
      times.push_back(seconds(draw));
      at += times.back();
      stats.step_finished(0, at, times.back());
    }
    std::sort(times.begin(), times.end());
    const double n = count, from = n / 4.0, to = 3.0 * n / 4.0;
    double sum = 0.0;
    for (int rank = 0; rank < count; ++rank)
      sum += std::max(0.0, std::min(rank + 1.0, to) - std::max(rank + 0.0, from)) *
             times[static_cast<std::size_t>(rank)];
    const auto typical = stats.recent_typical(0, at);
    ASSERT_TRUE(typical.has_value());
    EXPECT_NEAR(*typical, sum / (to - from), 1e-12) << count << " steps";
  }
}

// However long the window, a worker's typical time is over its last 1024 steps: 2000 steps of
// 1 ms and then 1100 of 3 ms, all in the window, make it 3 ms (over all 3100 steps it would be
// about 1.4 ms).
TEST(straggler_stats, the_typical_time_is_over_the_last_1024_steps_at_most) {
  straggler_stats stats(1, 1000.0);
  double at = 0.0;
  for (int step = 0; step < 3100; ++step) {
    const double seconds = step < 2000 ? 0.001 : 0.003;
    at += seconds;
    stats.step_finished(0, at, seconds);
  }
  const auto typical = stats.recent_typical(0, at);
  ASSERT_TRUE(typical.has_value());
  EXPECT_NEAR(*typical, 0.003, 1e-12);
}

TEST(straggler_stats, a_fifth_of_slow_steps_does_not_move_a_workers_score) {
  straggler_stats stats(3, 100.0);
  for (int step = 1; step <= 100; ++step)
    for (int worker = 0; worker < 3; ++worker)
      stats.step_finished(worker, step * 0.1, worker == 2 && step % 5 == 0 ? 0.1 : 0.01);
  EXPECT_NEAR(*stats.compute(10.0).score[2], 1.0, 1e-9);
}

} // namespace
