// `herd simulate`; see simulate_command.hpp. Each (algorithm, P) cell is one herd::sim run of
// simulate.steps step times; the cells are independent, so they run one after another here.
#include "cli/simulate_command.hpp"

#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/json_text.hpp"
#include "cli/progress_printer.hpp"
#include "cli/report.hpp"
#include "cli/step_trace_file.hpp"
#include "cli/stop_signals.hpp"
#include "cli/text_table.hpp"
#include "cli/train_command.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>
#include <utility>

#include "sim/simulation.hpp"

namespace herd::cli {

namespace {

// Every algorithm but async, whose parameter server the simulator does not model.
std::vector<std::string> simulated_algorithms() {
  auto known = config::known_algorithms();
  known.erase(std::remove(known.begin(), known.end(), "async"), known.end());
  return known;
}

struct simulate_arguments {
  std::string config_file;
  std::vector<std::string> overrides;
  config::value_origins origins; // where each setting came from, once loaded
  std::vector<std::string> algorithms{"sync", "solo", "majority", "preduce", "wagma"};
  std::string out_dir = "simulate-results";
  std::vector<std::string> outputs{"results.json", "plot.gp"}; // checked before the first cell
  std::string step_trace; // a herd train --report whose step times the workers replay
  bool help = false;
};

struct cell {
  sim::result result;
  double wall_seconds = 0.0; // what simulating it took here
};

// Throws std::invalid_argument with a message for the user.
simulate_arguments parse_arguments(const std::vector<std::string>& args) {
  simulate_arguments parsed;
  for (argument_reader reader(args); !reader.done(); reader.next()) {
    const std::string& arg = reader.current();
    if (arg == "--help" || arg == "-h") {
      parsed.help = true;
    } else if (reader.is("--config") || arg == "-c") {
      parsed.config_file = reader.value(arg == "-c" ? "-c" : "--config");
    } else if (reader.is("--algorithms")) {
      parsed.algorithms = split_list(reader.value("--algorithms"));
    } else if (reader.is("--out")) {
      parsed.out_dir = reader.value("--out");
    } else if (reader.is("--step-trace")) {
      parsed.step_trace = reader.value("--step-trace");
    } else if (reader.is_setting()) {
      parsed.overrides.push_back(arg);
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "' (see herd simulate --help)");
    }
  }
  if (parsed.algorithms.empty())
    throw std::invalid_argument("--algorithms: name at least one algorithm");
  const auto known = simulated_algorithms();
  for (const auto& algorithm : parsed.algorithms) {
    if (algorithm == "async")
      throw std::invalid_argument("--algorithms: async is not simulated (herd simulate has no "
                                  "model of its parameter server); run it with herd train or "
                                  "herd bench");
    if (std::find(known.begin(), known.end(), algorithm) == known.end())
      throw std::invalid_argument("--algorithms: unknown algorithm '" + algorithm +
                                  "'; allowed: " + join(known));
  }
  refuse_repeats("--algorithms", parsed.algorithms);
  return parsed;
}

std::vector<int> job_sizes(const config::run_config& job) {
  auto sizes =
      job.simulate.workers.empty() ? std::vector<int>{job.train.workers} : job.simulate.workers;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// sync's applied steps per second at each P, for the speedup column.
std::map<int, double> sync_pace(const std::vector<cell>& cells) {
  std::map<int, double> pace;
  for (const auto& c : cells)
    if (c.result.algorithm == "sync")
      pace[c.result.workers] = c.result.applied_per_second;
  return pace;
}

// Which job sizes of the sweep take smaller groups than the settings ask (a group takes at most
// P workers); empty when none does or the algorithm is not simulated.
std::string capped_groups_note(const config::run_config& job, const std::vector<int>& sizes,
                               const std::vector<std::string>& algorithms) {
  const auto simulated = [&algorithms](const std::string& name) {
    return std::find(algorithms.begin(), algorithms.end(), name) != algorithms.end();
  };
  std::vector<std::string> wagma, preduce;
  for (int size : sizes) {
    if (sim::for_workers(job, size).wagma.group_size < job.wagma.group_size)
      wagma.push_back(std::to_string(size));
    if (job.preduce.group_size > size)
      preduce.push_back(std::to_string(size));
  }
  std::string note;
  if (simulated("wagma") && !wagma.empty())
    note = "wagma.group-size = " + std::to_string(job.wagma.group_size) +
           " is capped at P rounded up to a power of two for P = " + join(wagma);
  if (simulated("preduce") && !preduce.empty())
    note += (note.empty() ? "" : "; ") + std::string("preduce.group-size = ") +
            std::to_string(job.preduce.group_size) +
            " takes all P workers for P = " + join(preduce);
  return note;
}

// One note for every cell of fewer than 50 rounds, which lose much to the round the run's end cuts
// off (its steps count, its samples do not): sync at large P holds a few dozen rounds in the
// default 200 step times. Empty when there is none.
std::string few_rounds_note(const std::vector<cell>& cells) {
  constexpr std::uint64_t few_rounds = 50;
  std::vector<std::string> named;
  bool none_finished = false;
  for (const auto& c : cells)
    if (c.result.rounds < few_rounds) {
      named.push_back(c.result.algorithm + " at P = " + std::to_string(c.result.workers) + " (" +
                      std::to_string(c.result.rounds) + ")");
      none_finished = none_finished || c.result.rounds == 0;
    }
  if (named.empty())
    return "";
  return std::to_string(named.size()) + (named.size() == 1 ? " cell" : " cells") +
         " finished fewer than " + std::to_string(few_rounds) + " rounds: " + join(named) +
         "; applied/s undercounts the round the end cut off" +
         (none_finished ? " (none finished: no step was applied)" : "") +
         "; raise simulate.steps for a steadier figure";
}

void print_table(std::ostream& out, const std::vector<cell>& cells, std::size_t columns) {
  const auto sync = sync_pace(cells);
  text_table table(2);
  table.add_column("algorithm", text_table::align::left);
  for (const char* header : {"P", "steps/s", "applied/s", "vs sync", "idle", "waited/bar", "group",
                             "staleness", "rounds/s", "late", "host s"})
    table.add_column(header);
  for (const auto& c : cells) {
    const auto& r = c.result;
    const auto base = sync.find(r.workers);
    const std::string speedup = base != sync.end() && base->second > 0.0
                                    ? fixed(r.applied_per_second / base->second, 2) + "x"
                                    : "-";
    const std::string waited =
        r.barrier_seconds > 0.0 ? fixed(r.waited_seconds / r.barrier_seconds, 2) : "-";
    const std::string staleness = fixed(r.mean_staleness, 2) + " (" +
                                  std::to_string(r.max_staleness) + ") " +
                                  (r.staleness_unit == "steps" ? "st" : "rd");
    const double late = r.steps > 0 ? 100.0 * r.late_steps / r.steps : 0.0;
    table.add_row({r.algorithm, std::to_string(r.workers), fixed(r.steps_per_second, 1),
                   fixed(r.applied_per_second, 1), speedup, fixed(100.0 * r.idle_fraction, 1) + "%",
                   waited, fixed(r.mean_group_size, 1), staleness, fixed(r.rounds / r.seconds, 1),
                   fixed(late, 1) + "%", fixed(c.wall_seconds, 2)});
  }
  out << '\n' << table.render(columns);
  // Lines of at most 80 columns: the legend under a table read in a terminal.
  out << "\nsteps/s: local steps of all workers per simulated second; applied/s: the steps'\n"
         "worth of samples that rounds took into the model per second (a late gradient\n"
         "that was discarded is not applied); vs sync: applied/s over sync's at the same\n"
         "P; idle: time between steps over P x the simulated time; waited/bar: idle time\n"
         "over what a barrier would have imposed on the same steps (sync's exceeds 1: its\n"
         "reductions and messages are idle time too, not a barrier's); group: mean\n"
         "members per round; staleness: mean (max), in rounds (rd, gradients) or steps\n"
         "(st, models); late: steps whose round closed without them; host s: what\n"
         "simulating the cell took here. -: not measured (no barrier time without\n"
         "imbalance; no vs sync without sync in --algorithms).\n";
}

// The imbalance every cell shares, with its settings (a cell caps imbalance.k and the slow
// workers at its own P): "random (imbalance.k = 2, delay-ms = 320)".
std::string imbalance_text(const config::imbalance_section& imbalance) {
  std::ostringstream text;
  text << imbalance.kind;
  if (imbalance.kind == "random")
    text << " (imbalance.k = " << imbalance.k << ", delay-ms = " << imbalance.delay_ms << ")";
  else if (imbalance.kind == "persistent") {
    text << " (imbalance.workers = [";
    for (std::size_t i = 0; i < imbalance.workers.size(); ++i)
      text << (i ? ", " : "") << imbalance.workers[i];
    text << "], factor = " << imbalance.factor << ")";
  } else if (imbalance.kind == "lognormal")
    text << " (imbalance.sigma = " << imbalance.sigma << ")";
  return text.str();
}

// simulate.alpha-us or bandwidth-gbs replace the preset's link: the preset's name no longer says
// what ran.
bool link_overridden(const config::simulate_section& simulate) {
  return simulate.alpha_us > 0.0 || simulate.bandwidth_gbs > 0.0;
}

// "25gbe (alpha 25 us, 3.125 GB/s)"; with the link set, "custom (alpha 5 us, 10 GB/s:
// simulate.alpha-us and bandwidth-gbs)", naming the preset only where it still gives a value.
std::string network_text(const config::simulate_section& simulate,
                         const sim::reduction_model& model) {
  std::ostringstream text;
  const bool alpha = simulate.alpha_us > 0.0, bandwidth = simulate.bandwidth_gbs > 0.0;
  text << (alpha || bandwidth ? "custom" : simulate.network) << " (alpha "
       << model.alpha_seconds * 1e6 << " us, " << model.bytes_per_second / 1e9 << " GB/s";
  if (alpha && bandwidth)
    text << ": simulate.alpha-us and bandwidth-gbs";
  else if (alpha || bandwidth)
    text << ": simulate." << (alpha ? "alpha-us" : "bandwidth-gbs") << " over " << simulate.network;
  text << ')';
  return text.str();
}

nlohmann::json to_json(const std::vector<cell>& cells, const config::run_config& job,
                       const sim::settings& how, const std::string& step_trace, bool interrupted) {
  nlohmann::json out;
  out["interrupted"] = interrupted; // a stop signal ended the sweep: `results` has the cells done
  out["settings"] = {
      {"step_seconds", how.step_seconds},
      {"step_trace", step_trace.empty() ? nlohmann::json() : nlohmann::json(step_trace)},
      {"simulated_seconds", how.duration_seconds},
      {"message_seconds", how.message_seconds},
      {"aggregators", how.aggregators},
      {"network", link_overridden(job.simulate) ? "custom" : job.simulate.network},
      {"network_preset", job.simulate.network},
      {"collective", job.simulate.collective},
      {"imbalance", imbalance_text(job.imbalance)},
      {"alpha_seconds", how.reduction.alpha_seconds},
      {"bytes_per_second", how.reduction.bytes_per_second},
      {"model_bytes", how.reduction.bytes}};
  out["config"] = config::to_ini(config::without_secrets(job));
  out["results"] = nlohmann::json::array();
  for (const auto& c : cells) {
    const auto& r = c.result;
    out["results"].push_back(
        {{"algorithm", r.algorithm},
         {"workers", r.workers},
         {"simulated_seconds", r.seconds},
         {"steps", r.steps},
         {"steps_per_second", r.steps_per_second},
         {"samples_applied", r.samples_applied},
         {"applied_steps_per_second", r.applied_per_second},
         {"late_steps", r.late_steps},
         {"idle_fraction", r.idle_fraction},
         {"waited_seconds", r.waited_seconds},
         {"barrier_seconds", r.barrier_seconds},
         {"rounds", r.rounds},
         {"rounds_full_sync", r.rounds_full_sync},
         {"mean_group_size", r.mean_group_size},
         {"max_group_size", r.max_group_size},
         {"mean_staleness", r.mean_staleness},
         {"max_staleness", r.max_staleness},
         {"staleness_unit", r.staleness_unit},
         {"contributions", {{"fresh", r.fresh}, {"stale", r.stale}, {"none", r.none}}},
         {"reduce_seconds", r.reduce_seconds},
         {"events", r.events},
         {"host_seconds", c.wall_seconds}});
  }
  return out;
}

// One data file per algorithm and a script for throughput.png, applied steps/s against P (log-log),
// and, with sync among the algorithms, speedup.png: applied steps/s over sync's at the same P (a
// log-log plot of throughput squeezes a 2-9x speedup into a sliver).
bool plot(const std::filesystem::path& dir, const std::vector<cell>& cells,
          const std::vector<std::string>& algorithms, std::string scenario) {
  // As written inside gnuplot's double quotes (a --step-trace path may hold a quote), and in lines
  // that fit the image: the network on a line of its own.
  std::string quoted;
  for (char c : scenario) {
    if (c == '"' || c == '\\')
      quoted += '\\';
    quoted += c;
  }
  scenario = quoted;
  if (const auto at = scenario.find("; network "); at != std::string::npos)
    scenario.replace(at, 2, "\\n");
  std::map<int, double> sync; // applied steps/s of sync's cell at each P
  for (const auto& c : cells)
    if (c.result.algorithm == "sync")
      sync[c.result.workers] = c.result.applied_per_second;
  std::ostringstream script;
  script << "# Applied steps per second against the number of workers, one line per algorithm;\n"
            "# simulate wrote this. Run it in this directory (gnuplot plot.gp): the data files\n"
            "# are beside it.\n"
            "set terminal pngcairo size 900,560\nset output 'throughput.png'\n"
            "set title \"simulated throughput: steps applied per second\\n"
         << scenario
         << "\" noenhanced\n"
            "set xlabel 'workers (P)'\n"
            "set ylabel 'steps applied per second, all workers'\nset logscale x 2\n"
            "set logscale y 10\nset format y '%.0s%c'\n" // 1k, 10k, 1M: not 1.04858x10^6
            "set key top left\nset grid\nset offsets graph 0.03, graph 0.03, graph 0.05, 0\nplot ";
  // Its own colour and dashes: two algorithms with the same numbers stay visible, one over the
  // other.
  const auto lines = [&algorithms](int column) {
    std::ostringstream plotted;
    for (std::size_t i = 0; i < algorithms.size(); ++i)
      plotted << (i ? ", " : "") << "'throughput-" << algorithms[i] << ".dat' using 1:" << column
              << " with linespoints lw 2 lc " << plot_colour(i) << " dt " << i + 1 << " title '"
              << algorithms[i] << "'";
    return plotted.str();
  };
  for (const auto& algorithm : algorithms) {
    std::ostringstream data;
    data << "# workers applied_steps_per_second steps_per_second idle_fraction "
            "applied_over_sync\n";
    for (const auto& c : cells)
      if (c.result.algorithm == algorithm) {
        const auto base = sync.find(c.result.workers);
        data << c.result.workers << ' ' << c.result.applied_per_second << ' '
             << c.result.steps_per_second << ' ' << c.result.idle_fraction << ' ';
        if (base != sync.end() && base->second > 0.0)
          data << c.result.applied_per_second / base->second << '\n';
        else
          data << "NaN\n"; // no sync cell at this P: no point
      }
    write_file_atomically((dir / ("throughput-" + algorithm + ".dat")).string(), data.str());
  }
  script << lines(2) << '\n';
  if (!sync.empty())
    script << "set output 'speedup.png'\n"
              "set title \"simulated speedup: steps applied per second over sync's at the same "
              "P\\n"
           << scenario
           << "\" noenhanced\n"
              "set ylabel 'applied steps per second / sync'\nunset logscale y\n"
              "set format y '%gx'\nset yrange [0:*]\nplot "
           << lines(5) << '\n';
  return run_gnuplot(dir.string(), script.str());
}

int run_simulate(const std::vector<std::string>& raw);

} // namespace

std::string simulate_help() {
  std::ostringstream out;
  out << "usage: herd simulate [--config FILE] [options] [--section.key=value ...]\n\n"
         "Simulates the configured job on a virtual clock: the real grouping policies and the\n"
         "workers' send-buffer rules, with step times from simulate.step-ms and [imbalance] and\n"
         "reductions from an alpha-beta model of the data plane (simulate.network, a ring or\n"
         "halving-doubling: simulate.collective). For each algorithm and each\n"
         "job size in simulate.workers it prints the steps finished and applied per second\n"
         "(a late gradient that was discarded is not applied), the speedup over sync in\n"
         "applied steps, idle time against a barrier's, group sizes, staleness and rounds,\n"
         "and writes results.json and throughput.png (with gnuplot) to the output directory.\n"
         "See docs/simulation.md.\n\n"
         "  --config FILE, -c FILE   the job: the same file as herd train's, plus [simulate]\n"
         "  --algorithms LIST        comma-separated (default sync,solo,majority,preduce,wagma;\n"
         "                           allowed: "
      << join(simulated_algorithms())
      << ")\n"
         "  --out DIR                output directory (default simulate-results)\n"
         "  --step-trace REPORT      step times drawn from the measured ones of a herd train\n"
         "                           --report (each worker's step_histogram; simulated worker\n"
         "                           i replays measured worker i mod their number; seeded by\n"
         "                           train.seed) instead of simulate.step-ms; [imbalance] adds\n"
         "                           on top (set imbalance.kind = none to replay as measured)\n"
         "  --help, -h               show this help\n"
         "  --version                show the version\n\n"
         "--algorithms takes the place of train.algorithm; each algorithm runs with its own\n"
         "section's settings. A sweep uses one [imbalance] for every P: imbalance.k is\n"
         "capped at P and the persistent kind's imbalance.workers keeps the indices below P.\n"
         "wagma.group-size must fit the largest P; a smaller P caps it (rounded up to a power\n"
         "of two), as it caps preduce.group-size, and a note names the sizes capped.\n\n"
         "Settings (in a file as [section] key = value; on the command line as\n"
         "--section.key=value, which overrides the file):\n"
      << config::describe_keys(keys_of("simulate"))
      << "\nOn a terminal a line says which cell runs. Ctrl-C (SIGTERM, SIGHUP) ends the cell\n"
         "under way and writes the table and results.json of those done, marked interrupted,\n"
         "without a plot.\n\nExit status: 0 done, 1 the output could not be written, 2 bad input, 130\n"
         "interrupted.\n";
  return out.str();
}

int simulate_command(const std::vector<std::string>& args) {
  return run_guarded("simulate", [&args] { return run_simulate(args); });
}

namespace {

// Whether `key` was set on the command line.
bool given_on_the_command_line(const simulate_arguments& args, const std::string& key) {
  return std::any_of(args.overrides.begin(), args.overrides.end(),
                     [prefix = "--" + key + "="](const std::string& setting) {
                       return setting.rfind(prefix, 0) == 0;
                     });
}

// The --step-trace, read and checked before --out is made; null without one.
std::shared_ptr<const sim::step_trace> read_step_trace(const simulate_arguments& args,
                                                       const config::run_config& job) {
  if (args.step_trace.empty()) {
    if (given_on_the_command_line(args, "train.seed"))
      std::cerr << "herd simulate: note: train.seed seeds the draws from a --step-trace only; "
                   "the imbalance's draws take imbalance.seed\n";
    return nullptr;
  }
  // The trace's mean takes simulate.step-ms's place: one given with it would go unused.
  if (given_on_the_command_line(args, "simulate.step-ms"))
    throw std::invalid_argument("--simulate.step-ms: the steps take the times of --step-trace "
                                "(its mean is simulate.steps' unit); give one of the two");
  if (job.simulate.step_ms != config::run_config{}.simulate.step_ms)
    std::cerr << "herd simulate: note: " << args.config_file
              << "'s simulate.step-ms is not used: the steps take the times of --step-trace\n";
  return load_step_trace(args.step_trace);
}

int run_simulate(const std::vector<std::string>& raw) {
  simulate_arguments args;
  config::run_config job;
  std::shared_ptr<const sim::step_trace> trace;
  if (const auto ended = start_job_command<simulate_arguments>(
          "simulate", args, job, [&raw] { return parse_arguments(raw); }, simulate_help,
          [&trace](const simulate_arguments& parsed, const config::run_config& loaded) {
            trace = read_step_trace(parsed, loaded);
          }))
    return *ended;
  auto how = sim::settings_of(job.simulate);
  if (trace) {
    how.trace = trace;
    // simulate.steps counts the trace's mean step times.
    how.step_seconds = how.trace->mean_seconds();
    how.duration_seconds = job.simulate.steps * how.step_seconds;
    how.trace_seed = job.train.seed;
  }
  const auto sizes = job_sizes(job);
  // What every cell shares: in the header and under the plot's title.
  std::ostringstream scenario;
  if (how.trace)
    scenario << "step times drawn from the " << how.trace->workers() << " worker(s) of "
             << args.step_trace << " (mean " << fixed(how.step_seconds * 1e3, 2) << " ms), "
             << job.simulate.steps << " mean step time" << (job.simulate.steps == 1 ? "" : "s");
  else
    scenario << "steps of " << job.simulate.step_ms << " ms, " << job.simulate.steps << " step time"
             << (job.simulate.steps == 1 ? "" : "s");
  scenario << "; imbalance " << imbalance_text(job.imbalance) << "; network "
           << network_text(job.simulate, how.reduction) << ", " << job.simulate.collective
           << " reductions of " << job.simulate.model_mb << " MB";
  std::vector<std::string> size_names;
  for (int size : sizes)
    size_names.push_back(std::to_string(size));
  std::cout << for_standard_output("herd simulate: " + join(args.algorithms) +
                                   " at P = " + join(size_names) + "; " + scenario.str())
            << std::endl;

  if (auto note = capped_groups_note(job, sizes, args.algorithms); !note.empty())
    std::cerr << for_terminal("herd simulate: note: " + note, STDERR_FILENO) << '\n';
  // Ctrl-C ends the cell under way (checked every few thousand events) and keeps those done.
  how.stopped = [] { return stop_signalled(); };
  const std::size_t total = args.algorithms.size() * sizes.size();
  // On a terminal, one line that says which cell runs (a large one takes minutes); none in a log.
  // Cleared however the loop ends, an unexpected error's message included.
  const bool show_progress = ::isatty(STDERR_FILENO) == 1;
  struct progress_line {
    bool shown;
    void clear() {
      if (std::exchange(shown, false))
        std::cerr << "\r\x1b[K" << std::flush;
    }
    ~progress_line() { clear(); }
  } line{show_progress};
  const auto clear_progress = [&line] { line.clear(); };
  std::vector<cell> cells;
  bool interrupted = false;
  for (std::size_t a = 0; a < args.algorithms.size() && !interrupted; ++a) {
    const auto& algorithm = args.algorithms[a];
    for (std::size_t s = 0; s < sizes.size() && !interrupted; ++s) {
      auto config = sim::for_workers(job, sizes[s]);
      config.train.algorithm = algorithm;
      if (show_progress)
        std::cerr << "\rsimulating " << algorithm << " at P = " << sizes[s] << " (cell "
                  << cells.size() + 1 << " of " << total << ")\x1b[K" << std::flush;
      const auto start = std::chrono::steady_clock::now();
      try {
        cell c{sim::simulate(config, how), 0.0};
        c.wall_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        cells.push_back(std::move(c));
      } catch (const sim::interrupted&) {
        interrupted = true;
      } catch (const std::invalid_argument& misfit) {
        clear_progress();
        std::cerr << "herd simulate: " << algorithm << " with " << sizes[s]
                  << " workers: " << misfit.what() << '\n';
        return exit_bad_input;
      }
      interrupted = interrupted || stop_signalled();
    }
  }
  clear_progress();
  if (interrupted) {
    // Two lines where one would wrap at 80 columns mid-word.
    std::cout << "herd simulate: interrupted by " << stop_signal_name() << " after " << cells.size()
              << " of " << total << " cells"
              << (cells.empty() ? "; nothing written" : ";\n  no plot of a partial sweep") << '\n';
    if (cells.empty())
      return exit_interrupted;
  }
  print_table(std::cout, cells, standard_output_table_width());
  // A cell of few rounds loses much to the one the run's end cuts off (its steps count, its
  // samples do not): sync at large P holds a few dozen rounds in the default 200 step times.
  if (auto note = few_rounds_note(cells); !note.empty())
    std::cout << for_terminal("note: " + note, STDOUT_FILENO) << '\n';
  const std::filesystem::path dir(args.out_dir);
  write_file_atomically((dir / "results.json").string(),
                        json_text(to_json(cells, job, how, args.step_trace, interrupted)));
  std::cout << "\nwrote " << (dir / "results.json").string() << '\n';
  if (interrupted) { // an earlier sweep's plot beside these results would not be of them
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ignored)) {
      const auto name = entry.path().filename().string();
      const bool plotted =
          name == "throughput.png" || name == "speedup.png" || name == "plot.gp" ||
          (name.rfind("throughput-", 0) == 0 && entry.path().extension() == ".dat");
      if (plotted && std::filesystem::remove(entry.path(), ignored))
        std::cout << "removed " << entry.path().string() << " (an earlier sweep's plot)\n";
    }
    return exit_interrupted;
  }
  if (plot(dir, cells, args.algorithms, scenario.str())) {
    std::cout << "wrote " << (dir / "throughput.png").string() << '\n';
    if (std::find(args.algorithms.begin(), args.algorithms.end(), "sync") != args.algorithms.end())
      std::cout << "wrote " << (dir / "speedup.png").string() << '\n';
  }
  return exit_ok;
}

} // namespace

} // namespace herd::cli
