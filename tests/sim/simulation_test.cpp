// The simulator on fixed-seed settings: the ring formula, the pace of each algorithm where it is
// known in closed form, who waits for a slow worker, reproducibility and scale.
#include "herd/config.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/network.hpp"
#include "sim/simulation.hpp"

namespace {

using herd::config::run_config;
using herd::sim::reduction_model;
using herd::sim::result;
using herd::sim::settings;
using herd::sim::simulate;

// `algorithm` with `workers` workers and no imbalance.
run_config job(const std::string& algorithm, int workers) {
  run_config config;
  config.train.algorithm = algorithm;
  config.train.workers = workers;
  return config;
}

// 10 ms steps, free reductions and messages, 200 steps' worth of time.
settings free_network(int steps = 200) {
  settings how;
  how.step_seconds = 0.01;
  how.duration_seconds = steps * how.step_seconds;
  return how;
}

run_config one_slow(const std::string& algorithm, int workers, double factor) {
  auto config = job(algorithm, workers);
  config.imbalance.kind = "persistent";
  config.imbalance.workers = {0};
  config.imbalance.factor = factor;
  return config;
}

TEST(RingModel, FollowsTheAlphaBetaFormula) {
  const reduction_model ring{2e-6, 1e9, 4e6}; // 2 us, 1 GB/s, 4 MB
  EXPECT_DOUBLE_EQ(ring.reduce_seconds(0), 0.0);
  EXPECT_DOUBLE_EQ(ring.reduce_seconds(1), 0.0); // nothing to exchange
  // 2(k-1) alpha + 2(k-1)/k n / beta
  EXPECT_DOUBLE_EQ(ring.reduce_seconds(2), 2 * 1 * 2e-6 + 2.0 * 1 / 2 * 4e6 / 1e9);
  EXPECT_DOUBLE_EQ(ring.reduce_seconds(4), 2 * 3 * 2e-6 + 2.0 * 3 / 4 * 4e6 / 1e9);
  // The bandwidth term tends to 2 n / beta, the latency term grows linearly.
  EXPECT_NEAR(ring.reduce_seconds(1024) - 2 * 1023 * 2e-6, 2 * 4e6 / 1e9, 1e-5);
}

// simulate.collective = halving-doubling: the same bytes in 2 ceil(log2 k) messages, so that a
// reduction over thousands of workers is not latency-bound as a ring's is.
TEST(RingModel, HalvingDoublingPaysLogarithmicLatencyForTheSameBytes) {
  const reduction_model tree{2e-6, 1e9, 4e6, true};
  EXPECT_DOUBLE_EQ(tree.reduce_seconds(1), 0.0);
  EXPECT_DOUBLE_EQ(tree.reduce_seconds(2), 2 * 1 * 2e-6 + 2.0 * 1 / 2 * 4e6 / 1e9);
  EXPECT_DOUBLE_EQ(tree.reduce_seconds(1024), 2 * 10 * 2e-6 + 2.0 * 1023 / 1024 * 4e6 / 1e9);
  EXPECT_DOUBLE_EQ(tree.reduce_seconds(1000), 2 * 10 * 2e-6 + 2.0 * 999 / 1000 * 4e6 / 1e9);
  herd::config::simulate_section simulate;
  EXPECT_FALSE(herd::sim::reduction_model_of(simulate).halving_doubling);
  simulate.collective = "halving-doubling";
  EXPECT_TRUE(herd::sim::reduction_model_of(simulate).halving_doubling);
}

TEST(RingModel, PresetsAndOverrides) {
  herd::config::simulate_section simulate;
  simulate.network = "25gbe";
  simulate.model_mb = 100.0;
  auto ring = herd::sim::reduction_model_of(simulate);
  EXPECT_DOUBLE_EQ(ring.alpha_seconds, 25e-6);
  EXPECT_DOUBLE_EQ(ring.bytes_per_second, 3.125e9); // 25 Gb/s
  EXPECT_DOUBLE_EQ(ring.bytes, 100e6);
  simulate.alpha_us = 7.0;
  simulate.bandwidth_gbs = 2.0;
  ring = herd::sim::reduction_model_of(simulate);
  EXPECT_DOUBLE_EQ(ring.alpha_seconds, 7e-6);
  EXPECT_DOUBLE_EQ(ring.bytes_per_second, 2e9);
  simulate.network = "infiniband";
  EXPECT_THROW(herd::sim::reduction_model_of(simulate), std::invalid_argument);
}

TEST(EventQueue, RunsInTimeOrderThenInTheOrderScheduled) {
  herd::sim::event_queue clock;
  std::vector<int> ran;
  clock.at(2.0, [&] { ran.push_back(3); });
  clock.at(1.0, [&] { ran.push_back(1); });
  clock.at(1.0, [&] { ran.push_back(2); });
  clock.at(5.0, [&] { ran.push_back(4); });
  while (clock.run_next(3.0)) {
  }
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(clock.now(), 2.0);
}

// Actions keep their captures in place: large ones (here a shared_ptr, two references and 28 more bytes: 64) run
// once, in order, from slots that events scheduled by running events reuse, and are released
// once run, whether run or dropped with the queue.
TEST(EventQueue, ActionsRunOnceInOrderAndReleaseTheirCaptures) {
  auto token = std::make_shared<int>(0);
  std::vector<double> ran;
  {
    herd::sim::event_queue clock;
    std::function<void(double, int)> chain = [&](double time, int left) {
      const std::array<double, 3> payload{time, time, time};
      clock.at(time, [&, token, payload, left] {
        ran.push_back(payload[2]);
        if (left > 0)
          chain(payload[0] + 1.0, left - 1);
      });
    };
    for (int start = 0; start < 10; ++start)
      chain(0.5 * start, 5);      // ten chains of six events, interleaved in time
    clock.at(1000.0, [token] {}); // never run: dropped with the queue
    while (clock.run_next(100.0)) {
    }
    EXPECT_EQ(clock.events_run(), 60u);
    EXPECT_EQ(token.use_count(), 2) << "run actions must release what they captured";
  }
  EXPECT_EQ(token.use_count(), 1);
  ASSERT_EQ(ran.size(), 60u);
  EXPECT_TRUE(std::is_sorted(ran.begin(), ran.end()));
}

TEST(Simulation, SyncWithoutImbalanceOrCostsRunsAtPOverTheStepTime) {
  for (int workers : {2, 8, 64}) {
    const auto r = simulate(job("sync", workers), free_network());
    const double expected = workers / 0.01;
    EXPECT_NEAR(r.steps_per_second, expected, expected * 0.01) << workers << " workers";
    EXPECT_NEAR(r.idle_fraction, 0.0, 1e-9);
    EXPECT_DOUBLE_EQ(r.mean_group_size, workers);
    EXPECT_EQ(r.rounds_full_sync, r.rounds);
  }
}

// Sync cannot overlap: a worker starts its next step once the round that took its gradient is
// applied, so a step costs the step time, four messages and the reduction.
TEST(Simulation, SyncWaitsForEachReductionBeforeTheNextStep) {
  auto how = free_network();
  how.reduction = {0.0, 1e9, 5e6}; // 2 workers: 2 (1/2) 5 MB / 1 GB/s = 5 ms
  how.message_seconds = 0.0005;
  const auto r = simulate(job("sync", 2), how);
  // step_ready, plan, request, answer, then the result: 5 messages.
  const double period = 0.01 + 0.005 + 5 * 0.0005;
  EXPECT_NEAR(r.steps_per_second, 2 / period, 2 / period * 0.01);
  EXPECT_NEAR(r.idle_fraction, (period - 0.01) / period, 0.01);
}

TEST(Simulation, SyncRunsAtTheSlowWorkersPaceWhileSoloAndMajorityDoNot) {
  const int workers = 8;
  const auto sync = simulate(one_slow("sync", workers, 3.0), free_network(300));
  const double slow_pace = workers / 0.03;
  EXPECT_NEAR(sync.steps_per_second, slow_pace, slow_pace * 0.02);
  // Under a barrier the fast workers wait two step times in three.
  EXPECT_NEAR(sync.idle_fraction, 7.0 / 8.0 * 2.0 / 3.0, 0.02);
  for (const char* partial : {"solo", "majority"}) {
    auto config = one_slow(partial, workers, 3.0);
    config.solo.sync_every = 0; // no full synchronous rounds: they wait for the slow worker
    config.majority.sync_every = 0;
    const auto r = simulate(config, free_network(300));
    // The seven fast workers keep their own pace; the slow one a third of it.
    const double free_pace = (7.0 + 1.0 / 3.0) / 0.01;
    EXPECT_GT(r.steps_per_second, 0.97 * free_pace) << partial;
    EXPECT_LT(r.waited_seconds, 0.2 * r.barrier_seconds) << partial;
    EXPECT_GT(r.late_steps + r.stale + r.none, 0u) << partial;
  }
  EXPECT_GE(sync.waited_seconds, sync.barrier_seconds * 0.99);
}

// Applied steps count what rounds took into the model: solo discards a late gradient (its steps
// count in steps/s, not in applied/s), accumulating it keeps it, and sync applies every step.
TEST(Simulation, AppliedStepsLeaveOutTheLateGradientsSoloDiscards) {
  const int workers = 8;
  const auto expect_applied = [&](const result& r, std::uint64_t steps, const std::string& what) {
    const double applied = r.applied_per_second * r.seconds;
    // The steps still held at the end (at most a few per worker) are not applied yet.
    EXPECT_LE(applied, static_cast<double>(steps)) << what;
    EXPECT_GE(applied, static_cast<double>(steps) - 2.0 * workers) << what;
    EXPECT_DOUBLE_EQ(applied, static_cast<double>(r.samples_applied) / 32) << what;
  };
  const auto sync = simulate(one_slow("sync", workers, 3.0), free_network(300));
  expect_applied(sync, sync.steps, "sync");
  auto config = one_slow("solo", workers, 3.0);
  config.solo.sync_every = 0;
  const auto discarding = simulate(config, free_network(300));
  ASSERT_GE(discarding.late_steps, 50u); // the slow worker's steps, most of them
  expect_applied(discarding, discarding.steps - discarding.late_steps, "solo, discard");
  config.solo.late_gradients = "accumulate";
  const auto accumulating = simulate(config, free_network(300));
  ASSERT_GE(accumulating.late_steps, 50u);
  expect_applied(accumulating, accumulating.steps, "solo, accumulate");
}

TEST(Simulation, WagmaGroupsFollowTheButterflyWithAGlobalAverageEveryTenSteps) {
  auto config = job("wagma", 16); // default group size: 4; tau = 10
  const auto r = simulate(config, free_network(100));
  EXPECT_EQ(r.max_group_size, 16u);
  // Per ten steps: nine steps of four groups of four, one global average of sixteen.
  EXPECT_NEAR(r.mean_group_size, (9.0 * 4 * 4 + 16) / (9.0 * 4 + 1), 0.05);
  EXPECT_NEAR(r.steps_per_second, 16 / 0.01, 16 / 0.01 * 0.02);
}

TEST(Simulation, PreduceFormsGroupsOfItsSizeFromTheReadyWorkers) {
  auto config = one_slow("preduce", 8, 3.0);
  const auto r = simulate(config, free_network());
  EXPECT_EQ(r.max_group_size, 2u);
  EXPECT_DOUBLE_EQ(r.mean_group_size, 2.0);
  EXPECT_GT(r.steps_per_second, 0.9 * (7.0 + 1.0 / 3.0) / 0.01);
}

// One aggregator reduces one round at a time: preduce's concurrent groups queue behind it.
TEST(Simulation, AnAggregatorPoolSerialisesReductions) {
  auto how = free_network();
  how.reduction = {0.0, 1e9, 10e6}; // groups of two: 10 ms each
  const auto independent = simulate(job("preduce", 8), how);
  how.aggregators = 1;
  const auto pooled = simulate(job("preduce", 8), how);
  EXPECT_LT(pooled.steps_per_second, 0.6 * independent.steps_per_second);
}

TEST(Simulation, IsDeterministicForAFixedSeed) {
  auto config = job("majority", 16);
  config.imbalance.kind = "random";
  config.imbalance.k = 3;
  config.imbalance.delay_ms = 25.0;
  config.imbalance.seed = 7;
  auto how = free_network();
  how.reduction = {5e-6, 1e10, 1e6};
  how.message_seconds = 2e-5;
  const auto first = simulate(config, how);
  const auto second = simulate(config, how);
  EXPECT_EQ(first.steps, second.steps);
  EXPECT_EQ(first.rounds, second.rounds);
  EXPECT_EQ(first.events, second.events);
  EXPECT_DOUBLE_EQ(first.idle_fraction, second.idle_fraction);
  EXPECT_DOUBLE_EQ(first.mean_staleness, second.mean_staleness);
  config.imbalance.seed = 8; // other workers delayed: another run
  const auto other = simulate(config, how);
  EXPECT_NE(first.events, other.events);
}

TEST(Simulation, FourThousandNinetySixWorkersFinish) {
  auto how = free_network(20);
  how.reduction = {5e-6, 1e10, 1e6};
  how.message_seconds = 2e-5;
  for (const char* algorithm : {"sync", "solo", "preduce", "wagma"}) {
    auto config = herd::sim::for_workers(one_slow(algorithm, 2, 2.0), 4096);
    const auto r = simulate(config, how);
    EXPECT_EQ(r.workers, 4096);
    EXPECT_GT(r.rounds, 0u) << algorithm;
    // A round of 4096 costs 2 * 4095 alpha = 41 ms on top of the steps: a few steps each.
    EXPECT_GE(r.steps, 4096u * 2) << algorithm;
  }
}

TEST(Simulation, ForWorkersFitsTheImbalanceToTheJob) {
  auto config = job("sync", 64);
  config.imbalance.k = 8;
  config.imbalance.workers = {0, 5, 40};
  const auto small = herd::sim::for_workers(config, 4);
  EXPECT_EQ(small.train.workers, 4);
  EXPECT_EQ(small.imbalance.k, 4);
  EXPECT_EQ(small.imbalance.workers, (std::vector<int>{0}));
  // wagma's group fits the sweep's largest P; a smaller P caps it at P rounded up to a power of
  // two, and sqrt(P) (0) stays what it is.
  config.wagma.group_size = 16;
  EXPECT_EQ(herd::sim::for_workers(config, 6).wagma.group_size, 8);
  EXPECT_EQ(herd::sim::for_workers(config, 64).wagma.group_size, 16);
  config.wagma.group_size = 0;
  EXPECT_EQ(herd::sim::for_workers(config, 6).wagma.group_size, 0);
}

// [simulate]'s keys become the simulation's settings, in seconds.
TEST(Simulation, TheSimulateSectionMapsToTheSettings) {
  herd::config::simulate_section simulate;
  simulate.step_ms = 10;
  simulate.message_us = 20;
  simulate.steps = 50;
  simulate.aggregators = 3;
  const auto how = herd::sim::settings_of(simulate);
  EXPECT_DOUBLE_EQ(how.step_seconds, 0.01);
  EXPECT_DOUBLE_EQ(how.message_seconds, 2e-5);
  EXPECT_DOUBLE_EQ(how.duration_seconds, 0.5);
  EXPECT_EQ(how.aggregators, 3);
}

// The papers' settings docs/simulation.md reports: each file loads, and its smallest job runs.
TEST(Simulation, ThePapersSettingsLoadAndRun) {
  for (const char* name :
       {"eager-sgd.ini", "wagma-weak-scaling.ini", "preduce-heterogeneous.ini"}) {
    auto config = herd::config::load(std::string(HERD_CONFIG_DIR) + "/simulate/" + name, {});
    const int workers =
        config.simulate.workers.empty() ? config.train.workers : config.simulate.workers.front();
    auto how = herd::sim::settings_of(config.simulate);
    how.duration_seconds = 20 * how.step_seconds;
    for (const char* algorithm : {"sync", "solo", "preduce", "wagma"}) {
      config.train.algorithm = algorithm;
      const auto r = simulate(herd::sim::for_workers(config, workers), how);
      EXPECT_GT(r.rounds, 0u) << name << " " << algorithm;
    }
  }
}

} // namespace

// -- step times from a measured run (herd simulate --step-trace) -------------------------------

namespace {

using herd::actors::histogram_bar;
using herd::sim::step_trace;

// A worker whose every step took `seconds` (a bar 0.1% wide).
std::vector<histogram_bar> constant(double seconds) {
  return {{seconds, seconds * 1.001, 50}};
}

} // namespace

TEST(StepTrace, DrawsBarsInProportionToTheirCountsAndWithinThem) {
  // One worker: 30 steps in [1, 2) ms, 10 in [8, 10) ms, an empty bar between.
  const step_trace trace({{{0.001, 0.002, 30}, {0.002, 0.008, 0}, {0.008, 0.010, 10}}});
  EXPECT_NEAR(trace.mean_seconds(), (30 * 0.0015 + 10 * 0.009) / 40, 1e-12);
  int long_steps = 0;
  double total = 0.0;
  const int draws = 20000;
  for (int step = 1; step <= draws; ++step) {
    const double t = trace.draw(0, static_cast<std::uint64_t>(step), 7);
    ASSERT_TRUE((t >= 0.001 && t < 0.002) || (t >= 0.008 && t < 0.010)) << t;
    long_steps += t >= 0.008 ? 1 : 0;
    total += t;
  }
  EXPECT_NEAR(long_steps / static_cast<double>(draws), 0.25, 0.015);
  EXPECT_NEAR(total / draws, trace.mean_seconds(), 0.02 * trace.mean_seconds());
}

TEST(StepTrace, AWorkerDrawsFromItsMeasuredWorkerAndADrawDependsOnlyOnItsArguments) {
  const step_trace trace({constant(0.01), constant(0.03)});
  EXPECT_NEAR(trace.draw(0, 1, 1), 0.01, 0.0001);
  EXPECT_NEAR(trace.draw(1, 1, 1), 0.03, 0.0001);
  EXPECT_NEAR(trace.draw(5, 1, 1), 0.03, 0.0001) << "simulated worker 5 replays measured worker 1";
  EXPECT_EQ(trace.draw(4, 9, 3), trace.draw(4, 9, 3));
  EXPECT_NE(trace.draw(4, 9, 3), trace.draw(4, 10, 3));
  EXPECT_NE(trace.draw(4, 9, 3), trace.draw(4, 9, 4));
}

TEST(StepTrace, RefusesATraceWithoutWorkersStepsOrSaneBars) {
  EXPECT_THROW(step_trace({}), std::invalid_argument);
  EXPECT_THROW(step_trace({{{0.001, 0.002, 0}}}), std::invalid_argument);
  EXPECT_THROW(step_trace({{{0.002, 0.001, 5}}}), std::invalid_argument);
  EXPECT_THROW(step_trace({{{-0.001, 0.001, 5}}}), std::invalid_argument);
  // Bounds no step has: not finite, beyond an hour; steps of no time; counts past 2^64.
  const double infinity = std::numeric_limits<double>::infinity();
  EXPECT_THROW(step_trace({{{0.001, infinity, 5}}}), std::invalid_argument);
  EXPECT_THROW(step_trace({{{0.001, std::nan(""), 5}}}), std::invalid_argument);
  EXPECT_THROW(step_trace({{{1e300, 1e308, 5}}}), std::invalid_argument);
  EXPECT_NO_THROW(step_trace({{{3599.0, 3600.0, 5}}}));
  EXPECT_THROW(step_trace({{{0.0, 0.0, 5}}}), std::invalid_argument);
  EXPECT_NO_THROW(step_trace({{{0.0, 0.0, 5}, {0.001, 0.002, 1}}}));
  EXPECT_THROW(step_trace({{{0.001, 0.002, ~std::uint64_t{0}}, {0.001, 0.002, 2}}}),
               std::invalid_argument);
}

TEST(Simulation, ATracedSlowWorkerSetsSyncsPaceAndNotSolos) {
  // Measured: worker 0 took 30 ms a step, worker 1 10 ms; replayed by 4 workers (0 and 2 slow).
  auto how = free_network(300);
  how.trace = std::make_shared<const step_trace>(
      std::vector<std::vector<histogram_bar>>{constant(0.03), constant(0.01)});
  const auto sync = simulate(job("sync", 4), how);
  EXPECT_NEAR(sync.steps_per_second, 4 / 0.03, 4 / 0.03 * 0.02);
  auto solo = job("solo", 4);
  solo.solo.sync_every = 0;
  const auto r = simulate(solo, how);
  const double free_pace = 2 / 0.03 + 2 / 0.01;
  EXPECT_GT(r.steps_per_second, 0.97 * free_pace);
}
