// wait_ledger: real waiting against what a barrier would have imposed, from reports in any order.
#include "monitoring/wait_ledger.hpp"

#include <algorithm>
#include <cereal/archives/binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/vector.hpp>
#include <gtest/gtest.h>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace {

using herd::monitoring::wait_ledger;

void expect_same(const wait_ledger::comparison& actual, const wait_ledger::comparison& expected) {
  EXPECT_EQ(actual.steps_compared, expected.steps_compared);
  EXPECT_EQ(actual.waited, expected.waited);
  EXPECT_EQ(actual.barrier, expected.barrier);
  EXPECT_EQ(actual.waited_total, expected.waited_total);
  EXPECT_EQ(actual.barrier_total, expected.barrier_total);
}

/// Worker i reports compute[i] and then waited[i] for `step`.
void report_step(wait_ledger& ledger, std::uint64_t step, const std::vector<double>& compute,
                 const std::vector<double>& waited) {
  for (std::size_t worker = 0; worker < compute.size(); ++worker) {
    ledger.step_finished(static_cast<int>(worker), step, compute[worker]);
    ledger.waited_after(static_cast<int>(worker), step, waited[worker]);
  }
}

TEST(wait_ledger, nothing_reported_compares_nothing) {
  const wait_ledger ledger(3);
  const auto result = ledger.compare();
  EXPECT_EQ(result.steps_compared, 0u);
  EXPECT_EQ(result.waited, (std::vector<double>{0.0, 0.0, 0.0}));
  EXPECT_EQ(result.barrier, (std::vector<double>{0.0, 0.0, 0.0}));
  EXPECT_EQ(result.waited_total, 0.0);
  EXPECT_EQ(result.barrier_total, 0.0);
}

TEST(wait_ledger, barrier_makes_each_worker_wait_for_the_slowest) {
  wait_ledger ledger(3);
  report_step(ledger, 1, {1.0, 2.0, 4.0}, {0.5, 0.5, 0.5});
  const auto result = ledger.compare();
  EXPECT_EQ(result.steps_compared, 1u);
  EXPECT_EQ(result.waited, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(result.barrier, (std::vector<double>{3.0, 2.0, 0.0}));
  EXPECT_EQ(result.waited_total, 1.5);
  EXPECT_EQ(result.barrier_total, 5.0);
}

TEST(wait_ledger, step_missing_one_workers_wait_is_not_counted) {
  wait_ledger ledger(3);
  report_step(ledger, 1, {1.0, 2.0, 4.0}, {0.5, 0.5, 0.5});
  for (int worker = 0; worker < 3; ++worker)
    ledger.step_finished(worker, 2, 8.0);
  ledger.waited_after(0, 2, 1.0);
  ledger.waited_after(1, 2, 1.0); // worker 2 has not reported its wait after step 2
  const auto result = ledger.compare();
  EXPECT_EQ(result.steps_compared, 1u);
  EXPECT_EQ(result.waited, (std::vector<double>{0.5, 0.5, 0.5}));
  EXPECT_EQ(result.barrier, (std::vector<double>{3.0, 2.0, 0.0}));
  ledger.waited_after(2, 2, 0.25); // now it has
  EXPECT_EQ(ledger.compare().steps_compared, 2u);
  EXPECT_EQ(ledger.compare().waited, (std::vector<double>{1.5, 1.5, 0.75}));
}

TEST(wait_ledger, lost_worker_no_longer_holds_back_pending_steps) {
  wait_ledger ledger(3);
  report_step(ledger, 1, {1.0, 2.0, 4.0}, {0.5, 0.5, 0.5});
  // Step 2: worker 2 finished a very slow step but never reported the wait after it.
  ledger.step_finished(2, 2, 16.0);
  report_step(ledger, 2, {1.0, 3.0}, {0.25, 0.25});
  EXPECT_EQ(ledger.compare().steps_compared, 1u);

  ledger.worker_lost(2);
  auto result = ledger.compare();
  EXPECT_EQ(result.steps_compared, 2u);
  // Step 2 compares workers 0 and 1 only: the lost worker's 16 s does not set the barrier.
  EXPECT_EQ(result.barrier, (std::vector<double>{3.0 + 2.0, 2.0 + 0.0, 0.0}));
  EXPECT_EQ(result.waited, (std::vector<double>{0.75, 0.75, 0.5}));
  EXPECT_EQ(result.barrier_total, 7.0);
  EXPECT_EQ(result.waited_total, 2.0);

  // Later steps settle without it; its late reports are ignored.
  ledger.step_finished(2, 3, 1.0);
  ledger.waited_after(2, 3, 1.0);
  report_step(ledger, 3, {2.0, 1.0}, {0.0, 1.0});
  result = ledger.compare();
  EXPECT_EQ(result.steps_compared, 3u);
  EXPECT_EQ(result.barrier, (std::vector<double>{5.0, 3.0, 0.0}));
  EXPECT_EQ(result.waited, (std::vector<double>{0.75, 1.75, 0.5}));
  ledger.worker_lost(2); // losing it twice changes nothing
  expect_same(ledger.compare(), result);
}

TEST(wait_ledger, a_worker_that_comes_back_counts_from_its_first_report_on) {
  wait_ledger ledger(3);
  report_step(ledger, 1, {1.0, 2.0, 4.0}, {0.5, 0.5, 0.5});
  ledger.worker_lost(2);
  report_step(ledger, 2, {1.0, 3.0}, {0.25, 0.25});
  ledger.worker_joined(2); // a node joined in its place; its workers took a peer's step 4
  report_step(ledger, 3, {1.0, 1.0}, {0.0, 0.0}); // settles without it: it has not reported yet
  ledger.step_finished(2, 5, 6.0);
  ledger.waited_after(2, 4, 9.0);                 // before its first step: ignored
  report_step(ledger, 4, {1.0, 1.0}, {0.0, 0.0}); // step 4 is before it counts
  const auto before = ledger.compare();
  EXPECT_EQ(before.steps_compared, 4u);
  report_step(ledger, 5, {1.0, 2.0}, {0.5, 0.5});
  EXPECT_EQ(ledger.compare().steps_compared, 4u) << "step 5 waits for the returning worker";
  ledger.waited_after(2, 5, 0.25);
  const auto after = ledger.compare();
  EXPECT_EQ(after.steps_compared, 5u);
  // Its 6 s step sets step 5's barrier.
  EXPECT_EQ(after.barrier[0] - before.barrier[0], 5.0);
  EXPECT_EQ(after.barrier[1] - before.barrier[1], 4.0);
  EXPECT_EQ(after.barrier[2] - before.barrier[2], 0.0);
  EXPECT_EQ(after.waited[2] - before.waited[2], 0.25);
}

TEST(wait_ledger, a_worker_that_comes_back_holds_back_the_later_steps_already_open) {
  wait_ledger ledger(3);
  report_step(ledger, 1, {1.0, 1.0, 1.0}, {0.0, 0.0, 0.0});
  ledger.worker_lost(2);
  ledger.worker_joined(2);
  // Workers 0 and 1 run ahead to step 3 while the returning worker has reported nothing yet:
  // step 3 is open and, so far, waits for them only.
  ledger.step_finished(0, 3, 1.0);
  ledger.step_finished(1, 3, 1.0);
  ledger.waited_after(0, 3, 0.0);
  // Its first report is for step 2: from then on it counts for step 3 too.
  ledger.step_finished(2, 2, 1.0);
  ledger.waited_after(1, 3, 0.0);
  EXPECT_EQ(ledger.compare().steps_compared, 1u) << "step 3 must wait for the returning worker";
  report_step(ledger, 2, {1.0, 1.0}, {0.0, 0.0});
  ledger.waited_after(2, 2, 0.0);
  EXPECT_EQ(ledger.compare().steps_compared, 2u);
  ledger.step_finished(2, 3, 5.0);
  ledger.waited_after(2, 3, 0.0);
  const auto result = ledger.compare();
  EXPECT_EQ(result.steps_compared, 3u);
  EXPECT_EQ(result.barrier, (std::vector<double>{4.0, 4.0, 0.0})) << "its 5 s sets step 3's";
}

TEST(wait_ledger, a_ledger_restored_from_its_archive_settles_what_the_original_would) {
  wait_ledger original(3);
  report_step(original, 1, {1.0, 2.0, 4.0}, {0.5, 0.5, 0.5});
  original.step_finished(0, 2, 1.0);
  original.waited_after(0, 2, 0.25);
  original.step_finished(1, 2, 3.0);
  std::stringstream archive;
  {
    cereal::BinaryOutputArchive out(archive);
    out(original);
  }
  wait_ledger restored(1);
  {
    cereal::BinaryInputArchive in(archive);
    in(restored);
  }
  for (auto* ledger : {&original, &restored}) {
    ledger->waited_after(1, 2, 0.25);
    ledger->step_finished(2, 2, 2.0);
    EXPECT_EQ(ledger->compare().steps_compared, 1u) << "step 2 still waits for one report";
    ledger->waited_after(2, 2, 0.5);
  }
  EXPECT_EQ(restored.compare().steps_compared, 2u);
  expect_same(restored.compare(), original.compare());
}

TEST(wait_ledger, losing_every_worker_leaves_the_settled_steps) {
  wait_ledger ledger(2);
  report_step(ledger, 1, {1.0, 2.0}, {0.5, 0.5});
  ledger.step_finished(0, 2, 1.0);
  const auto before = ledger.compare();
  ledger.worker_lost(0);
  ledger.worker_lost(1);
  expect_same(ledger.compare(), before);
  report_step(ledger, 2, {1.0, 1.0}, {1.0, 1.0}); // from lost workers: ignored
  expect_same(ledger.compare(), before);
}

TEST(wait_ledger, reports_for_a_settled_step_are_ignored) {
  wait_ledger ledger(2);
  report_step(ledger, 2, {1.0, 2.0}, {0.5, 0.5}); // step 2 settles before step 1
  const auto settled = ledger.compare();
  EXPECT_EQ(settled.steps_compared, 1u);
  report_step(ledger, 2, {8.0, 1.0}, {4.0, 4.0}); // a replay of step 2
  expect_same(ledger.compare(), settled);
  report_step(ledger, 1, {1.0, 1.0}, {0.25, 0.25}); // step 1 still counts
  report_step(ledger, 1, {1.0, 1.0}, {0.25, 0.25}); // once
  report_step(ledger, 2, {8.0, 1.0}, {4.0, 4.0});
  const auto result = ledger.compare();
  EXPECT_EQ(result.steps_compared, 2u);
  EXPECT_EQ(result.waited, (std::vector<double>{0.75, 0.75}));
  EXPECT_EQ(result.barrier, (std::vector<double>{1.0, 0.0}));
}

TEST(wait_ledger, repeated_report_for_an_open_step_keeps_the_first) {
  wait_ledger ledger(2);
  ledger.step_finished(0, 1, 1.0);
  ledger.step_finished(0, 1, 9.0);
  ledger.waited_after(0, 1, 0.5);
  ledger.waited_after(0, 1, 7.0);
  report_step(ledger, 1, {2.0, 2.0}, {0.0, 0.0}); // worker 0's part repeats again
  const auto result = ledger.compare();
  EXPECT_EQ(result.steps_compared, 1u);
  EXPECT_EQ(result.barrier, (std::vector<double>{1.0, 0.0}));
  EXPECT_EQ(result.waited, (std::vector<double>{0.5, 0.0}));
}

TEST(wait_ledger, waits_before_computes_and_steps_backwards_give_the_same_result) {
  wait_ledger in_order(3);
  report_step(in_order, 1, {1.0, 2.0, 4.0}, {0.5, 0.25, 0.0});
  report_step(in_order, 2, {3.0, 1.0, 1.0}, {0.0, 1.0, 2.0});

  wait_ledger backwards(3);
  for (int worker = 2; worker >= 0; --worker)
    backwards.waited_after(worker, 2, std::vector<double>{0.0, 1.0, 2.0}[worker]);
  for (int worker = 2; worker >= 0; --worker)
    backwards.waited_after(worker, 1, std::vector<double>{0.5, 0.25, 0.0}[worker]);
  for (int worker = 0; worker < 3; ++worker)
    backwards.step_finished(worker, 2, std::vector<double>{3.0, 1.0, 1.0}[worker]);
  EXPECT_EQ(backwards.compare().steps_compared, 1u); // step 2 first
  for (int worker = 0; worker < 3; ++worker)
    backwards.step_finished(worker, 1, std::vector<double>{1.0, 2.0, 4.0}[worker]);

  const auto result = backwards.compare();
  expect_same(result, in_order.compare());
  EXPECT_EQ(result.steps_compared, 2u);
  EXPECT_EQ(result.barrier, (std::vector<double>{3.0, 2.0 + 2.0, 0.0 + 2.0}));
  EXPECT_EQ(result.waited, (std::vector<double>{0.5, 1.25, 2.0}));
}

TEST(wait_ledger, any_order_of_the_same_reports_gives_the_same_comparison) {
  // Times are multiples of 1/64 s, so every sum is exact whatever order steps settle in.
  constexpr int workers = 4;
  constexpr int steps = 30;
  std::mt19937_64 rng(20240611);
  auto draw = [&rng] { return static_cast<double>(rng() % 256) / 64.0; };
  struct report {
    bool is_wait;
    int worker;
    std::uint64_t step;
    double seconds;
  };
  std::vector<report> reports;
  std::vector<std::vector<double>> compute(steps + 1, std::vector<double>(workers));
  wait_ledger::comparison expected;
  expected.waited.assign(workers, 0.0);
  expected.barrier.assign(workers, 0.0);
  for (std::uint64_t step = 1; step <= steps; ++step) {
    for (int worker = 0; worker < workers; ++worker) {
      compute[step][worker] = draw();
      const double waited = draw();
      reports.push_back({false, worker, step, compute[step][worker]});
      reports.push_back({true, worker, step, waited});
      expected.waited[worker] += waited;
      expected.waited_total += waited;
    }
    const double slowest = *std::max_element(compute[step].begin(), compute[step].end());
    for (int worker = 0; worker < workers; ++worker) {
      expected.barrier[worker] += slowest - compute[step][worker];
      expected.barrier_total += slowest - compute[step][worker];
    }
  }
  expected.steps_compared = steps;

  for (int trial = 0; trial < 50; ++trial) {
    // A portable Fisher-Yates (std::shuffle's result differs between standard libraries).
    for (std::size_t i = reports.size() - 1; i > 0; --i)
      std::swap(reports[i], reports[rng() % (i + 1)]);
    wait_ledger ledger(workers);
    for (const auto& r : reports) {
      if (r.is_wait)
        ledger.waited_after(r.worker, r.step, r.seconds);
      else
        ledger.step_finished(r.worker, r.step, r.seconds);
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_same(ledger.compare(), expected);
  }
}

TEST(wait_ledger, rejects_reports_it_cannot_place) {
  wait_ledger ledger(2);
  EXPECT_THROW(ledger.step_finished(2, 1, 1.0), std::invalid_argument);
  EXPECT_THROW(ledger.waited_after(-1, 1, 1.0), std::invalid_argument);
  EXPECT_THROW(ledger.worker_lost(5), std::invalid_argument);
  EXPECT_THROW(ledger.step_finished(0, 0, 1.0), std::invalid_argument); // steps start at 1
  EXPECT_THROW(ledger.waited_after(0, 1, -0.5), std::invalid_argument);
  EXPECT_THROW(wait_ledger(0), std::invalid_argument);
  EXPECT_EQ(ledger.compare().steps_compared, 0u);
}

} // namespace
