// bench_policies: what the group coordinator's decisions cost per arrival as P grows, without
// actors. Each grouping policy is driven through whole steps of P arrivals, every round it starts
// finished at once with every member fresh; the wait ledger, which every run keeps beside its
// policy, gets each arrival's two reports. Prints nanoseconds per arrival at each P (the median
// of the repetitions) and the ratio to the smallest P: about 1 when the work per arrival does not
// grow with P; a ratio that grows like P means a step of P workers costs P^2.
//
//   bench_policies [--workers=16,256,4096] [--steps=20] [--repetitions=5]
//                  [--policies=sync,solo,majority,preduce,wagma,ledger]
#include "herd/config.hpp"
#include "monitoring/wait_ledger.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "bench/bench_flags.hpp"
#include "policy/policy.hpp"

namespace {

using namespace herd;
using clock_type = std::chrono::steady_clock;

struct options {
  std::vector<int> workers{16, 256, 4096};
  int steps = 20;
  int repetitions = 5;
  std::vector<std::string> policies{"sync", "solo", "majority", "preduce", "wagma", "ledger"};
};

options parse(int argc, char** argv) {
  options parsed;
  for (int i = 1; i < argc; ++i) {
    const auto [key, value] = bench::split_flag(argv[i]);
    if (key == "--workers") {
      parsed.workers = bench::int_list("bench_policies", key, value);
    } else if (key == "--steps") {
      parsed.steps = bench::int_flag("bench_policies", key, value);
    } else if (key == "--repetitions") {
      parsed.repetitions = bench::int_flag("bench_policies", key, value);
    } else if (key == "--policies") {
      parsed.policies = bench::list_flag(value);
    } else {
      std::cerr << "usage: bench_policies [--workers=16,256,4096] [--steps=20] [--repetitions=5] "
                   "[--policies=sync,solo,majority,preduce,wagma,ledger]\n";
      std::exit(2);
    }
  }
  return parsed;
}

// Seconds for `steps` steps of `workers` arrivals through the policy of `algorithm`.
double drive_policy(const std::string& algorithm, int workers, int steps) {
  config::run_config config;
  config.train.algorithm = algorithm;
  config.train.workers = workers;
  auto grouping = policy::make_policy(config);
  std::vector<std::uint64_t> step(static_cast<std::size_t>(workers), 0);
  auto finish = [&](std::vector<policy::group_decision> decisions) {
    std::deque<policy::group_decision> running(decisions.begin(), decisions.end());
    while (!running.empty()) {
      policy::group_outcome outcome;
      outcome.members = running.front().members;
      running.pop_front();
      for (int member : outcome.members)
        outcome.contributions.push_back(
            {member, policy::freshness::fresh, step[static_cast<std::size_t>(member)]});
      for (auto& next : grouping->on_group_done(outcome))
        running.push_back(std::move(next));
    }
  };
  std::vector<int> live(static_cast<std::size_t>(workers));
  std::iota(live.begin(), live.end(), 0);
  finish(grouping->set_live_workers(live));
  double now = 0.0;
  const auto start = clock_type::now();
  for (int s = 1; s <= steps; ++s)
    for (int worker = 0; worker < workers; ++worker) {
      step[static_cast<std::size_t>(worker)] = static_cast<std::uint64_t>(s);
      now += 1e-6;
      finish(grouping->on_ready({worker, static_cast<std::uint64_t>(s), now, 1e-3}));
    }
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// The same for the wait ledger: each arrival reports its step and the wait before it.
double drive_ledger(int workers, int steps) {
  monitoring::wait_ledger ledger(workers);
  const auto start = clock_type::now();
  for (int s = 1; s <= steps; ++s)
    for (int worker = 0; worker < workers; ++worker) {
      ledger.step_finished(worker, static_cast<std::uint64_t>(s), 1e-3);
      if (s > 1)
        ledger.waited_after(worker, static_cast<std::uint64_t>(s - 1), 0.0);
    }
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace

int main(int argc, char** argv) {
  auto opts = parse(argc, argv);
  std::sort(opts.workers.begin(), opts.workers.end());
  if (opts.workers.empty() || opts.workers.front() < 1 || opts.steps < 2 || opts.repetitions < 1) {
    std::cerr << "bench_policies: --workers must be positive, --steps at least 2, "
                 "--repetitions at least 1\n";
    return 2;
  }
  std::printf("bench_policies: %d steps of P arrivals, median of %d; ns per arrival, and its "
              "ratio to P = %d (1: constant per arrival)\n",
              opts.steps, opts.repetitions, opts.workers.front());
  std::printf("%-9s %6s %14s %8s\n", "policy", "P", "ns/arrival", "ratio");
  for (const auto& name : opts.policies) {
    double baseline = 0.0;
    for (int workers : opts.workers) {
      std::vector<double> runs;
      try {
        for (int r = 0; r < opts.repetitions; ++r)
          runs.push_back(name == "ledger" ? drive_ledger(workers, opts.steps)
                                          : drive_policy(name, workers, opts.steps));
      } catch (const std::exception& failure) {
        std::cerr << "bench_policies: " << name << ": " << failure.what() << "\n";
        return 2;
      }
      const double per_arrival =
          1e9 * median(runs) / (static_cast<double>(workers) * static_cast<double>(opts.steps));
      if (baseline == 0.0)
        baseline = per_arrival;
      std::printf("%-9s %6d %14.1f %8.2f\n", name.c_str(), workers, per_arrival,
                  per_arrival / baseline);
      std::fflush(stdout);
    }
  }
  return 0;
}
