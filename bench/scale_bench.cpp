// The control plane at scale in one process: P worker actors (a tiny model on synthetic data, every
// step made to last --step-ms by the random imbalance kind with k = P), under each algorithm. For
// each P and algorithm, medians over the repetitions of: rounds per second, the time of a round,
// the group coordinator's and the aggregators' time in their handlers per round (the aggregators'
// data-plane reductions left out), their messages per round, the control plane's share of the
// run's time, and the growth of its time per member of a round against the smallest P run here
// (1.0 = linear in P). Runs are time-bounded (--seconds each).
//
// --clock=wall (the default) times the handlers in wall time: what a round waits for, including
// the time the OS gave a handler's core to another thread, which is most of it where 256 workers
// share 2 cores. --clock=cpu times them in their threads' CPU time: what the control plane
// computes, the figure that carries over to a machine with a core per worker. Either clock's own
// readings (on a paravirtualized VM about 1.2 us a handler for the CPU clock, a system call; 20-30
// ns for the wall clock) are measured when a run starts and left out of every handler's time; the
// header line says how much that was.
//
//   bench_scale [--workers=16,64,256] [--algorithms=sync,solo,majority,preduce,wagma]
//               [--step-ms=1] [--seconds=3] [--repetitions=3] [--clock=wall|cpu]
#include "actors/control_costs.hpp"
#include "actors/train_session.hpp"
#include "herd/config.hpp"
#include "herd/dataset.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_flags.hpp"

namespace {

using namespace herd;

struct options {
  std::vector<int> workers{16, 64, 256};
  std::vector<std::string> algorithms{"sync", "solo", "majority", "preduce", "wagma"};
  double step_ms = 1.0;
  double seconds = 3.0;
  int repetitions = 3;
  bool cpu_clock = false;
};

options parse(int argc, char** argv) {
  options parsed;
  for (int i = 1; i < argc; ++i) {
    const auto [key, value] = herd::bench::split_flag(argv[i]);
    if (key == "--workers") {
      parsed.workers = herd::bench::int_list("bench_scale", key, value);
    } else if (key == "--algorithms") {
      parsed.algorithms = herd::bench::list_flag(value);
    } else if (key == "--step-ms") {
      parsed.step_ms = std::stod(value);
    } else if (key == "--seconds") {
      parsed.seconds = std::stod(value);
    } else if (key == "--repetitions") {
      parsed.repetitions = herd::bench::int_flag("bench_scale", key, value);
    } else if (key == "--clock" && (value == "wall" || value == "cpu")) {
      parsed.cpu_clock = value == "cpu";
    } else {
      std::cerr << "usage: bench_scale [--workers=16,64,256] [--algorithms=sync,solo,...] "
                   "[--step-ms=1] [--seconds=3] [--repetitions=3] [--clock=wall|cpu]\n";
      std::exit(2);
    }
  }
  return parsed;
}

struct measured {
  double rounds_per_second = 0.0;
  double round_ms = 0.0;
  double coordinator_us = 0.0; // per round
  double aggregator_us = 0.0;  // per round
  double messages = 0.0;       // per round, coordinator and aggregators
  double control_share = 0.0;  // of the run's wall time
  double members = 0.0;        // contributions per round
};

measured run_one(const options& opts, int workers, const std::string& algorithm,
                 const std::shared_ptr<const models::train_test_split>& data) {
  const auto config = config::load(
      "", {"--train.algorithm=" + algorithm, "--train.workers=" + std::to_string(workers),
           "--train.batch-size=8", "--model.hidden=[16]", "--train.epochs=100000",
           "--train.eval-every=1000000000", "--train.max-seconds=" + std::to_string(opts.seconds),
           "--imbalance.kind=random", "--imbalance.k=" + std::to_string(workers),
           "--imbalance.delay-ms=" + std::to_string(opts.step_ms), "--train.blas-threads=1"});
  actors::session_options session_options;
  session_options.blas_threads = actors::blas_threads_for(config, workers);
  session_options.control_costs_in_cpu_time = opts.cpu_clock;
  actors::train_session session(config, data, session_options);
  const auto s = session.run();
  measured m;
  const double rounds = std::max<double>(1.0, static_cast<double>(s.rounds));
  m.rounds_per_second = s.wall_seconds > 0.0 ? rounds / s.wall_seconds : 0.0;
  m.round_ms = 1e3 * s.wall_seconds / rounds;
  m.coordinator_us = 1e6 * s.control.coordinator_seconds / rounds;
  m.aggregator_us = 1e6 * s.control.aggregator_seconds / rounds;
  m.messages =
      static_cast<double>(s.control.coordinator_messages + s.control.aggregator_messages) / rounds;
  m.control_share =
      s.wall_seconds > 0.0
          ? (s.control.coordinator_seconds + s.control.aggregator_seconds) / s.wall_seconds
          : 0.0;
  m.members =
      static_cast<double>(s.fresh_contributions + s.stale_contributions + s.empty_contributions) /
      rounds;
  return m;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n == 0 ? 0.0 : n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

measured median_of(const std::vector<measured>& runs) {
  auto of = [&runs](double measured::*field) {
    std::vector<double> values;
    for (const auto& run : runs)
      values.push_back(run.*field);
    return median(values);
  };
  measured m;
  m.rounds_per_second = of(&measured::rounds_per_second);
  m.round_ms = of(&measured::round_ms);
  m.coordinator_us = of(&measured::coordinator_us);
  m.aggregator_us = of(&measured::aggregator_us);
  m.messages = of(&measured::messages);
  m.control_share = of(&measured::control_share);
  m.members = of(&measured::members);
  return m;
}

} // namespace

int main(int argc, char** argv) {
  auto opts = parse(argc, argv);
  std::sort(opts.workers.begin(), opts.workers.end());
  const auto data = std::make_shared<const models::train_test_split>(
      models::make_synthetic_split(60000, 1000, 784, 10, 1));
  const actors::control_costs clock(opts.cpu_clock ? actors::control_costs::clock_kind::thread_cpu
                                                    : actors::control_costs::clock_kind::wall);
  std::printf("bench_scale: %g ms steps, %g s per run, median of %d; control = coordinator + "
              "aggregators in their handlers (reductions left out), in %s (the clock's own "
              "readings, %llu ns a handler, left out)\n",
              opts.step_ms, opts.seconds, opts.repetitions,
              opts.cpu_clock ? "their threads' CPU time" : "wall time",
              static_cast<unsigned long long>(clock.clock_overhead_nanoseconds));
  std::printf("%-9s %5s %9s %9s %10s %10s %9s %8s %8s %12s\n", "algorithm", "P", "rounds/s",
              "round ms", "coord us", "aggr us", "msgs", "members", "control", "growth/member");
  for (const auto& algorithm : opts.algorithms) {
    double baseline = 0.0; // control us per member at the smallest P
    for (int workers : opts.workers) {
      std::vector<measured> runs;
      for (int r = 0; r < opts.repetitions; ++r)
        runs.push_back(run_one(opts, workers, algorithm, data));
      const auto m = median_of(runs);
      const double per_member =
          m.members > 0.0 ? (m.coordinator_us + m.aggregator_us) / m.members : 0.0;
      if (baseline == 0.0)
        baseline = per_member;
      std::printf("%-9s %5d %9.1f %9.2f %10.1f %10.1f %9.1f %8.1f %7.1f%% %12.2f\n",
                  algorithm.c_str(), workers, m.rounds_per_second, m.round_ms, m.coordinator_us,
                  m.aggregator_us, m.messages, m.members, 100.0 * m.control_share,
                  baseline > 0.0 ? per_member / baseline : 0.0);
      std::fflush(stdout);
    }
  }
  return 0;
}
