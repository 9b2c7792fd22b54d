// `herd bench`; see bench_command.hpp.
//
// Evaluation during the runs would compete with training for cores and distort the comparison,
// so each run takes parameter snapshots every --snapshot-ms and evaluates them after its workers
// stopped (train_session's snapshot_interval); the time to the target is the wall time of the
// first snapshot at or above it.
#include "cli/bench_command.hpp"

#include "actors/train_session.hpp"
#include "cli/bench_plots.hpp"
#include "cli/bench_table.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/json_text.hpp"
#include "cli/progress_printer.hpp"
#include "cli/report.hpp"
#include "cli/stop_signals.hpp"
#include "cli/text_table.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

namespace herd::cli {

namespace {

const std::vector<std::string> known_scenarios{"none", "random", "persistent", "lognormal"};

// The scenarios' settings, which the help text states from here.
constexpr double persistent_slowdown = 3.0;   // imbalance.factor of the persistent scenario
constexpr double lognormal_sigma = 0.5;       // imbalance.sigma of the lognormal scenario
constexpr int random_delay_step_times = 4;    // the random scenario's delay, in step times
constexpr double calibration_seconds = 5.0;   // sync without imbalance, to measure a step

struct bench_arguments {
  std::string config_file;
  std::vector<std::string> overrides;
  config::value_origins origins; // where each setting came from, once loaded
  std::vector<std::string> algorithms{"sync",  "solo",  "majority", "preduce",
                                      "wagma", "async", "local-sgd"};
  std::vector<std::string> scenarios{"none", "random", "persistent"};
  int repeat = 1;
  std::string out_dir = "bench-results";
  // What --out will hold, checked before the first run: hours of runs must not end in a file
  // that cannot be written.
  std::vector<std::string> outputs{"results.csv", "results.json", "plot.gp"};
  std::optional<double> random_delay_ms; // default: random_delay_step_times undelayed steps
  int snapshot_ms = 100;
  bool help = false;
};

int parse_positive(const std::string& name, const std::string& text) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 1 || value > 1000000)
    throw std::invalid_argument(name + " = " + text +
                                ": expected a whole number from 1 to 1000000");
  return static_cast<int>(value);
}

// Throws std::invalid_argument with a message for the user.
bench_arguments parse_arguments(const std::vector<std::string>& args) {
  bench_arguments parsed;
  for (argument_reader reader(args); !reader.done(); reader.next()) {
    const std::string& arg = reader.current();
    if (arg == "--help" || arg == "-h") {
      parsed.help = true;
    } else if (reader.is("--config") || arg == "-c") {
      parsed.config_file = reader.value(arg == "-c" ? "-c" : "--config");
    } else if (reader.is("--algorithms")) {
      parsed.algorithms = split_list(reader.value("--algorithms"));
    } else if (reader.is("--scenarios")) {
      parsed.scenarios = split_list(reader.value("--scenarios"));
    } else if (reader.is("--repeat")) {
      parsed.repeat = parse_positive("--repeat", reader.value("--repeat"));
    } else if (reader.is("--out")) {
      parsed.out_dir = reader.value("--out");
    } else if (reader.is("--snapshot-ms")) {
      parsed.snapshot_ms = parse_positive("--snapshot-ms", reader.value("--snapshot-ms"));
    } else if (reader.is("--random-delay-ms")) {
      const std::string text = reader.value("--random-delay-ms");
      char* end = nullptr;
      const double delay = std::strtod(text.c_str(), &end);
      if (*end != '\0' || !(delay > 0.0 && delay <= 60000.0))
        throw std::invalid_argument("--random-delay-ms = " + text +
                                    ": expected milliseconds in (0, 60000] (0 would make the "
                                    "random scenario the none one)");
      parsed.random_delay_ms = delay;
    } else if (reader.is_setting()) {
      parsed.overrides.push_back(arg);
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "' (see herd bench --help)");
    }
  }
  if (parsed.algorithms.empty())
    throw std::invalid_argument("--algorithms: name at least one algorithm");
  for (const auto& algorithm : parsed.algorithms)
    if (std::find(config::known_algorithms().begin(), config::known_algorithms().end(),
                  algorithm) == config::known_algorithms().end())
      throw std::invalid_argument("--algorithms: unknown algorithm '" + algorithm +
                                  "'; allowed: " + join(config::known_algorithms()));
  refuse_repeats("--algorithms", parsed.algorithms);
  if (parsed.scenarios.empty())
    throw std::invalid_argument("--scenarios: name at least one scenario");
  refuse_repeats("--scenarios", parsed.scenarios);
  for (const auto& scenario : parsed.scenarios)
    if (std::find(known_scenarios.begin(), known_scenarios.end(), scenario) ==
        known_scenarios.end())
      throw std::invalid_argument("--scenarios: unknown scenario '" + scenario +
                                  "'; allowed: " + join(known_scenarios));
  return parsed;
}

// The imbalance of a scenario for a job of `workers` workers (docs/benchmarks.md).
config::imbalance_section scenario_imbalance(const std::string& scenario, int workers,
                                             double random_delay_ms,
                                             const config::imbalance_section& base) {
  config::imbalance_section imbalance = base; // keeps the seed
  imbalance.kind = scenario;
  const int quarter = std::max(1, workers / 4);
  if (scenario == "random") {
    imbalance.k = quarter;
    imbalance.delay_ms = random_delay_ms;
  } else if (scenario == "persistent") {
    imbalance.workers.clear();
    for (int w = 0; w < quarter; ++w)
      imbalance.workers.push_back(w);
    imbalance.factor = persistent_slowdown;
  } else if (scenario == "lognormal") {
    imbalance.sigma = lognormal_sigma;
  }
  return imbalance;
}

// A run's notices ("snapshots ... thinned", "worker 2 lost"), kept to print after its line.
class notice_keeper final : public actors::run_observer {
public:
  void on_notice(std::string_view text) override {
    std::lock_guard<std::mutex> guard(mutex_);
    notices_.emplace_back(text);
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> guard(mutex_);
    return std::exchange(notices_, {});
  }

private:
  std::mutex mutex_;
  std::vector<std::string> notices_;
};

actors::run_summary run_one(const config::run_config& config,
                            const std::shared_ptr<const models::train_test_split>& data,
                            int snapshot_ms, notice_keeper* notices = nullptr) {
  actors::session_options options;
  options.observer = notices;
  // Snapshots are taken at progress ticks: two ticks per snapshot interval keep them on time.
  options.progress_interval = std::chrono::milliseconds(std::clamp(snapshot_ms / 2, 5, 100));
  options.snapshot_interval = std::chrono::milliseconds(snapshot_ms);
  options.blas_threads = actors::blas_threads_for(config, config.train.workers);
  actors::train_session session(config, data, options);
  session.start();
  // Ctrl-C (SIGTERM, SIGHUP) stops the run as herd train stops: its summary says "interrupted".
  bool stop_requested = false;
  for (;;) {
    if (auto summary = session.wait_for(std::chrono::milliseconds(100)))
      return *summary;
    if (stop_signalled() && !stop_requested) {
      session.request_stop();
      stop_requested = true;
    }
  }
}

// How long one step takes a worker in an undelayed run, waiting included: wall time over steps
// per worker. (Not the bare compute time: on a machine with fewer cores than workers, steps share
// cores, and the step period is what a worker experiences.)
double step_period_seconds(const actors::run_summary& summary) {
  if (summary.steps == 0)
    return 0.0;
  return summary.wall_seconds * static_cast<double>(summary.workers) /
         static_cast<double>(summary.steps);
}

int run_bench(const std::vector<std::string>& args);

} // namespace

std::string bench_help() {
  std::ostringstream out;
  out << "usage: herd bench [--config FILE] [options] [--section.key=value ...]\n\n"
         "Runs the configured job under each algorithm for each imbalance scenario, one run\n"
         "after another in this process, and prints a table: seconds to train.target-accuracy,\n"
         "final test accuracy (and its difference from sync), samples/s, speedup over sync in\n"
         "the same scenario, and the workers' idle time against what a synchronous barrier\n"
         "would have imposed on the same steps. Writes results.csv, results.json,\n"
         "accuracy-<scenario>.png (accuracy against each run's own wall time: the median over\n"
         "the repetitions, a band from least to greatest) and, with train.target-accuracy set,\n"
         "speedup.png (the table's speedup over sync, whiskers from the repetitions' own\n"
         "ratios), with their data files\n"
         "(gnuplot), to the output directory.\n\n"
         "  --config FILE, -c FILE   the job (e.g. config/bench.ini); its [imbalance] section is\n"
         "                           replaced by each scenario's, except the seed\n"
         "  --algorithms LIST        comma-separated (default\n"
         "                           sync,solo,majority,preduce,wagma,async,local-sgd;\n"
         "                           allowed: "
      << join(config::known_algorithms())
      << ")\n"
         "  --scenarios LIST         comma-separated (default none,random,persistent;\n"
         "                           allowed: "
      << join(known_scenarios)
      << ")\n"
         "  --repeat N               runs per cell (default 1); the table shows medians;\n"
         "                           repetition r runs with train.seed + r and\n"
         "                           imbalance.seed + r\n"
         "  --out DIR                output directory (default bench-results)\n"
         "  --random-delay-ms MS     the random scenario's delay (default: "
      << random_delay_step_times
      << " undelayed step\n"
         "                           times: sync's wall time per step per worker, measured\n"
         "                           without imbalance)\n"
         "  --snapshot-ms MS         parameter snapshots for the accuracy curve (default 100);\n"
         "                           they are evaluated after each run, not during it; past\n"
         "                           512 MB of them every second one goes and the interval\n"
         "                           doubles\n"
         "  --help, -h               show this help\n"
         "  --version                show the version\n\n"
         "Scenarios (P workers, a quarter of them = max(1, P/4)):\n"
         "  none        no injected imbalance\n"
         "  random      each step a quarter of the workers, chosen by a shared seeded generator,\n"
         "              are delayed by --random-delay-ms\n"
         "  persistent  workers 0 .. P/4-1 run "
      << persistent_slowdown
      << "x slower\n"
         "  lognormal   every step time multiplied by max(1, LogNormal(0, "
      << lognormal_sigma
      << "))\n\n"
         "Every run trains train.epochs epochs (it does not stop at the target), so final\n"
         "accuracies compare at equal epochs. Ctrl-C (SIGTERM, SIGHUP) stops the run under way\n"
         "and writes the table, results.csv and results.json of the runs that finished, without\n"
         "plots (exit status 130); a second signal ends at once.\n\n"
         "Settings (in a file as [section] key = value; on the command line as\n"
         "--section.key=value, which overrides the file):\n"
      << config::describe_keys(keys_of("bench"));
  return out.str();
}

int bench_command(const std::vector<std::string>& args) {
  return run_guarded(
      "bench", [&args] { return run_bench(args); }, standard_output::progress);
}

namespace {

// The table, results.csv and results.json of the runs done.
void write_results(const std::vector<bench_run>& runs, const bench_arguments& args,
                   const config::run_config& job, const std::optional<double>& delay_ms,
                   bool interrupted) {
  const auto rows = make_table(runs, args.scenarios, args.algorithms);
  print_table(std::cout, rows, job.train.target_accuracy, args.snapshot_ms,
              standard_output_table_width());
  const std::filesystem::path dir(args.out_dir);
  write_file_atomically((dir / "results.csv").string(), csv(rows));
  write_file_atomically((dir / "results.json").string(),
                        json_text(to_json(rows, runs, job, delay_ms.value_or(0.0), interrupted)));
  std::cout << "\nwrote " << (dir / "results.csv").string() << ", "
            << (dir / "results.json").string() << '\n';
}

// A stop signal: the runs that finished are kept (the one it stopped is not: it trained less
// than the others), without plots, which compare whole tables; an earlier bench's plots in the
// directory go, since they would not match these results. Exit status 130.
int interrupted_bench(const std::vector<bench_run>& runs, const bench_arguments& args,
                      const config::run_config& job, const std::optional<double>& delay_ms) {
  std::cout << "herd bench: interrupted by " << stop_signal_name() << " after " << runs.size()
            << " finished run(s)" << (runs.empty() ? "; nothing written" : "") << '\n';
  if (runs.empty())
    return exit_interrupted;
  write_results(runs, args, job, delay_ms, true);
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(args.out_dir, ignored)) {
    const auto name = entry.path().filename().string();
    const auto extension = entry.path().extension();
    const bool plot = name == "plot.gp" || name == "speedup.png" || name == "speedup.dat" ||
                      (name.rfind("accuracy-", 0) == 0 && extension == ".png") ||
                      (name.rfind("curve-", 0) == 0 && extension == ".dat");
    if (plot && std::filesystem::remove(entry.path(), ignored))
      std::cout << "removed " << entry.path().string() << " (an earlier bench's plot)\n";
  }
  return exit_interrupted;
}

int run_bench(const std::vector<std::string>& raw) {
  bench_arguments args;
  config::run_config job;
  if (const auto ended = start_job_command<bench_arguments>(
          "bench", args, job, [&raw] { return parse_arguments(raw); }, bench_help))
    return *ended;
  const auto data = load_data_or_report("bench", job, &args.origins);
  if (interrupted_before_run("bench"))
    return exit_interrupted;
  if (!data)
    return exit_bad_input;
  const auto model = make_model_or_report("bench", job, *data);
  if (!model)
    return exit_bad_input;
  std::cout << "herd bench: " << job.train.workers << " workers x batch " << job.train.batch_size
            << ", " << describe_model(*model) << ", " << job.train.epochs
            << (job.train.epochs == 1 ? " epoch of " : " epochs of ") << data->train.name
            << ", target "
            << (job.train.target_accuracy > 0.0
                    ? format(job.train.target_accuracy, 2)
                    : std::string("none (set train.target-accuracy for the time to it and "
                                  "speedup.png)"))
            << "; algorithms " << join(args.algorithms) << "; scenarios " << join(args.scenarios)
            << "; " << args.repeat << " run(s) each\n";

  // The order of runs: scenario by scenario, `none` first, sync first within each, so that the
  // random scenario's delay can come from sync's undelayed step time.
  std::vector<std::string> scenarios = args.scenarios;
  std::stable_partition(scenarios.begin(), scenarios.end(),
                        [](const std::string& s) { return s == "none"; });
  std::vector<std::string> algorithms = args.algorithms;
  std::stable_partition(algorithms.begin(), algorithms.end(),
                        [](const std::string& a) { return a == "sync"; });
  const bool needs_delay =
      std::find(scenarios.begin(), scenarios.end(), "random") != scenarios.end();
  std::optional<double> delay_ms = args.random_delay_ms;
  // The delay comes from the median step period over sync's runs without imbalance (one run
  // alone can meet a noisy neighbour), or from a calibration run when the table has none.
  auto calibrate = [&](std::vector<double> periods) {
    const double period = median(std::move(periods)).value_or(0.0);
    delay_ms = random_delay_step_times * 1e3 * period;
    std::cout << "random scenario: delay " << std::fixed << std::setprecision(2) << *delay_ms
              << " ms = " << random_delay_step_times
              << " undelayed step times (sync without imbalance: " << 1e3 * period
              << " ms per step per worker, median of its runs)\n";
    std::cout.unsetf(std::ios::fixed);
  };
  const bool calibrated_by_table = scenarios.front() == "none" && algorithms.front() == "sync";
  if (needs_delay && !delay_ms && !calibrated_by_table) {
    auto calibration = job;
    calibration.train.algorithm = "sync";
    calibration.imbalance.kind = "none";
    calibration.train.max_seconds = calibration_seconds;
    std::cout << "calibrating the random scenario's delay: sync without imbalance for "
              << calibration_seconds << " s\n";
    const auto calibrated = run_one(calibration, data, args.snapshot_ms);
    if (calibrated.stop_reason == actors::stop_cause::interrupted)
      return interrupted_bench({}, args, job, delay_ms);
    calibrate({step_period_seconds(calibrated)});
  }

  std::vector<bench_run> runs;
  const std::size_t total =
      scenarios.size() * algorithms.size() * static_cast<std::size_t>(args.repeat);
  // Repetitions interleave the algorithms, so that a noisy neighbour on a shared machine slows
  // all of them alike rather than one algorithm's runs.
  for (const auto& scenario : scenarios) {
    for (int repetition = 0; repetition < args.repeat; ++repetition) {
      for (const auto& algorithm : algorithms) {
        auto config = job;
        config.train.algorithm = algorithm;
        config.imbalance =
            scenario_imbalance(scenario, job.train.workers, delay_ms.value_or(0.0), job.imbalance);
        // Each repetition its own initialisation, batch order and delays (all algorithms of one
        // repetition the same), so that repetitions measure the spread of results, not timing
        // noise alone: with one seed, sync's repetitions ended identical.
        const auto step = static_cast<std::uint64_t>(repetition);
        config.train.seed = job.train.seed + step;
        config.imbalance.seed = job.imbalance.seed + step;
        std::cout << "[" << runs.size() + 1 << "/" << total << "] " << scenario << " / "
                  << algorithm << " ..." << std::flush;
        if (stop_signalled())
          return interrupted_bench(runs, args, job, delay_ms);
        notice_keeper notices;
        auto summary = run_one(config, data, args.snapshot_ms, &notices);
        bench_run result{scenario,           algorithm,         repetition,
                         std::move(summary), config.train.seed, config.imbalance.seed};
        if (result.summary.stop_reason == actors::stop_cause::interrupted) {
          std::cout << " interrupted" << std::endl;
          return interrupted_bench(runs, args, job, delay_ms);
        }
        const auto& s = result.summary;
        std::cout << " " << std::fixed << std::setprecision(1) << s.wall_seconds << " s, "
                  << (s.time_to_target_seconds
                          ? "target at " + format(s.time_to_target_seconds, 1) + " s"
                          : std::string(job.train.target_accuracy > 0.0 ? "target not reached"
                                                                        : "no target"))
                  << ", final accuracy " << format(s.final_test_accuracy, 4) << ", "
                  << std::setprecision(0) << s.samples_per_second << " samples/s" << std::endl;
        std::cout.unsetf(std::ios::fixed);
        for (const auto& notice : notices.take())
          std::cout << "  " << notice << std::endl;
        if (!s.error.empty()) {
          std::cerr << "herd bench: " << scenario << " / " << algorithm << " failed: " << s.error
                    << '\n';
          return exit_run_failed;
        }
        runs.push_back(std::move(result));
      }
    }
    if (scenario == "none" && needs_delay && !delay_ms) {
      std::vector<double> periods;
      for (const auto& run : runs)
        if (run.algorithm == "sync")
          periods.push_back(step_period_seconds(run.summary));
      calibrate(std::move(periods));
    }
  }

  write_results(runs, args, job, delay_ms, false);
  const auto plots = plot_bench(std::filesystem::path(args.out_dir), runs, args.scenarios,
                                args.algorithms, args.repeat, job.train.target_accuracy);
  for (const auto& png : plots.written)
    std::cout << "wrote " << png << '\n';
  if (!plots.no_speedup.empty())
    std::cout << "no speedup.png: " << plots.no_speedup << '\n';
  return exit_ok;
}

} // namespace

} // namespace herd::cli
