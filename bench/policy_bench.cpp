// bench_policies: what the group coordinator's decisions cost per arrival as P grows, without
// actors. Each grouping policy is driven through whole steps of P arrivals, every round it starts
// finished at once with every member fresh; the wait ledger, which every run keeps beside its
// policy, gets each arrival's two reports; `bookkeeping` is the rest of what the coordinator does
// with a step report: the run's counters (with their wait ledger) and the Prometheus metrics.
// Prints nanoseconds per arrival at each P (the median of the repetitions) and the ratio to the
// smallest P: about 1 when the work per arrival does not grow with P; a ratio that grows like P
// means a step of P workers costs P^2.
//
// `scores` is different: what the straggler scores cost the coordinator at each progress tick (four
// a second), P workers with 256, 1024 or 4096 steps each in the window; milliseconds per tick.
//
// In a run, the workers' computation between two steps evicts the coordinator's per-worker state
// from the caches; --evict-mb=M streams through M MiB between steps (untimed) to do the same, so
// that what is measured is the cache misses as much as the instructions.
//
//   bench_policies [--workers=16,256,4096] [--steps=20] [--repetitions=5] [--evict-mb=0]
//                  [--policies=sync,solo,majority,preduce,wagma,ledger,bookkeeping,scores]
#include "actors/run_counters.hpp"
#include "herd/config.hpp"
#include "herd/metrics.hpp"
#include "monitoring/straggler_stats.hpp"
#include "monitoring/training_metrics.hpp"
#include "monitoring/wait_ledger.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <iostream>
#include <numeric>
#include <stdexcept>
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
  int evict_mb = 0;
  std::vector<std::string> policies{"sync",  "solo",   "majority",    "preduce",
                                    "wagma", "ledger", "bookkeeping", "scores"};
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
    } else if (key == "--evict-mb") {
      parsed.evict_mb = bench::int_flag("bench_policies", key, value);
    } else {
      std::cerr << "usage: bench_policies [--workers=16,256,4096] [--steps=20] [--repetitions=5] "
                   "[--evict-mb=0] [--policies=sync,solo,majority,preduce,wagma,ledger,"
                   "bookkeeping,scores]\n";
      std::exit(2);
    }
  }
  return parsed;
}

// The time of the steps' arrivals only: between two steps it writes `evict_mb` MiB (untimed), as
// the workers' computation would, so that the next step finds its state out of the caches.
class step_clock {
public:
  explicit step_clock(int evict_mb) : evicting_(static_cast<std::size_t>(evict_mb) << 20) {}
  template <class Arrivals>
  void step(Arrivals arrivals) {
    for (std::size_t at = 0; at < evicting_.size(); at += 64)
      ++evicting_[at];
    const auto start = clock_type::now();
    arrivals();
    seconds_ += std::chrono::duration<double>(clock_type::now() - start).count();
  }
  double seconds() const { return seconds_; }

private:
  std::vector<unsigned char> evicting_;
  double seconds_ = 0.0;
};

// Seconds for `steps` steps of `workers` arrivals through the policy of `algorithm`.
double drive_policy(const std::string& algorithm, int workers, int steps, step_clock clock) {
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
  for (int s = 1; s <= steps; ++s)
    clock.step([&] {
      for (int worker = 0; worker < workers; ++worker) {
        step[static_cast<std::size_t>(worker)] = static_cast<std::uint64_t>(s);
        now += 1e-6;
        finish(grouping->on_ready({worker, static_cast<std::uint64_t>(s), now, 1e-3}));
      }
    });
  return clock.seconds();
}

// The same for the wait ledger: each arrival reports its step and the wait before it.
double drive_ledger(int workers, int steps, step_clock clock) {
  monitoring::wait_ledger ledger(workers);
  for (int s = 1; s <= steps; ++s)
    clock.step([&] {
      for (int worker = 0; worker < workers; ++worker) {
        ledger.step_finished(worker, static_cast<std::uint64_t>(s), 1e-3);
        if (s > 1)
          ledger.waited_after(worker, static_cast<std::uint64_t>(s - 1), 0.0);
      }
    });
  return clock.seconds();
}

// The same for the rest of a step report's bookkeeping in the coordinator: the run's counters,
// their wait ledger included, and the metrics, as its step book (actors/step_book.hpp) does it
// for each kept report when it books them.
double drive_bookkeeping(int workers, int steps, step_clock clock) {
  actors::run_counters counters(workers, 60000);
  counters.set_workers(static_cast<std::size_t>(workers));
  monitoring::training_metrics::identity who;
  who.workers = workers;
  monitoring::training_metrics metrics(std::make_shared<monitoring::registry>(), who);
  double now = 0.0;
  for (int s = 1; s <= steps; ++s)
    clock.step([&] {
      for (int worker = 0; worker < workers; ++worker) {
        const auto step = static_cast<std::uint64_t>(s);
        // Times that vary, so that the histograms' buckets do too.
        const double compute = 1e-3 * (1.0 + 0.01 * ((worker * 7 + s) % 50));
        const double wait = 1e-4 * ((worker + s * 3) % 40);
        now += 1e-6;
        counters.step_finished(worker, step, compute, wait, 0.5, 8, false);
        metrics.step_finished(worker, step, now, compute, wait, 8, false);
      }
    });
  return clock.seconds();
}

// Seconds for one computation of the straggler scores of `workers` workers with `steps` steps each
// in the window.
double score_once(int workers, int steps) {
  monitoring::straggler_stats stats(workers, 1e9);
  double now = 0.0;
  for (int s = 0; s < steps; ++s)
    for (int worker = 0; worker < workers; ++worker) {
      now += 1e-6;
      stats.step_finished(worker, now, 1e-3 * (1.0 + 0.01 * ((worker * 7 + s) % 50)));
    }
  const auto start = clock_type::now();
  const auto scores = stats.compute(now);
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  // Read, so the computation is not optimised away; every worker has steps, so there is one.
  if (!scores.imbalance_ratio)
    throw std::logic_error("no imbalance ratio from " + std::to_string(workers) + " workers of " +
                           std::to_string(steps) + " steps");
  return seconds;
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
  if (opts.workers.empty() || opts.workers.front() < 1 || opts.steps < 2 || opts.repetitions < 1 ||
      opts.evict_mb < 0) {
    std::cerr << "bench_policies: --workers must be positive, --steps at least 2, "
                 "--repetitions at least 1, --evict-mb at least 0\n";
    return 2;
  }
  std::printf("bench_policies: %d steps of P arrivals, median of %d, %d MiB written between "
              "steps; ns per arrival, and its ratio to P = %d (1: constant per arrival)\n",
              opts.steps, opts.repetitions, opts.evict_mb, opts.workers.front());
  std::printf("%-11s %6s %14s %8s\n", "policy", "P", "ns/arrival", "ratio");
  for (const auto& name : opts.policies) {
    if (name == "scores")
      continue; // below, in a table of its own
    double baseline = 0.0;
    for (int workers : opts.workers) {
      std::vector<double> runs;
      try {
        for (int r = 0; r < opts.repetitions; ++r) {
          const step_clock clock(opts.evict_mb);
          runs.push_back(name == "ledger"        ? drive_ledger(workers, opts.steps, clock)
                         : name == "bookkeeping" ? drive_bookkeeping(workers, opts.steps, clock)
                                                 : drive_policy(name, workers, opts.steps, clock));
        }
      } catch (const std::exception& failure) {
        std::cerr << "bench_policies: " << name << ": " << failure.what() << "\n";
        return 2;
      }
      const double per_arrival =
          1e9 * median(runs) / (static_cast<double>(workers) * static_cast<double>(opts.steps));
      if (baseline == 0.0)
        baseline = per_arrival;
      std::printf("%-11s %6d %14.1f %8.2f\n", name.c_str(), workers, per_arrival,
                  per_arrival / baseline);
      std::fflush(stdout);
    }
  }
  if (std::find(opts.policies.begin(), opts.policies.end(), "scores") != opts.policies.end()) {
    std::printf("scores: the straggler scores at one progress tick, median of %d\n",
                opts.repetitions);
    std::printf("%-11s %6s %14s %8s\n", "policy", "P", "steps/worker", "ms/tick");
    for (int workers : opts.workers)
      for (int steps : {256, 1024, 4096}) {
        std::vector<double> runs;
        for (int r = 0; r < opts.repetitions; ++r)
          runs.push_back(score_once(workers, steps));
        std::printf("%-11s %6d %14d %8.2f\n", "scores", workers, steps, 1e3 * median(runs));
        std::fflush(stdout);
      }
  }
  return 0;
}
