// The `herd` executable end to end: help, bad input with exit code 2 and a message naming the
// problem, a short run with its JSON report, and stop signals (SIGINT, SIGTERM, SIGHUP) before
// and during a run.
#include "herd/dataset.hpp"
#include "models/npy.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <zlib.h>

#include "support/background_process.hpp"
#include "support/contract_keys.hpp"
#include "support/npy_file.hpp"
#include "support/read_file.hpp"
#include "support/subprocess.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::testing::background_process;
using herd::testing::run_process;
using namespace std::chrono_literals;
using testing::HasSubstr;
using testing::Not;

constexpr std::pair<int, const char*> stop_signals[] = {
    {SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}};

// Starts herd beside the test with the default action for SIGHUP, as from a terminal: a test run
// under nohup would hand its ignored SIGHUP down, and herd leaves an ignored SIGHUP ignored.
std::unique_ptr<background_process> start_herd(std::vector<std::string> args,
                                               const std::string& log) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  struct sigaction saved {};
  ::sigaction(SIGHUP, &default_action, &saved);
  args.insert(args.begin(), HERD_BINARY);
  auto process = std::make_unique<background_process>(args, log);
  ::sigaction(SIGHUP, &saved, nullptr);
  return process;
}

// True once process `pid` catches `signal` (/proc's SigCgt mask): herd installs its handlers
// first thing in main(), so this is the earliest moment a signal can mean "stop" rather than
// meet the default action (before main(), or in the child before exec). Polls without sleeping
// long, so that the signal comes as early as it can.
bool wait_until_catching(int pid, int signal, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string status_file = "/proc/" + std::to_string(pid) + "/status";
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream status(status_file);
    for (std::string line; std::getline(status, line);)
      if (line.rfind("SigCgt:", 0) == 0 &&
          (std::stoull(line.substr(7), nullptr, 16) >> (signal - 1) & 1) != 0)
        return true;
    std::this_thread::sleep_for(100us);
  }
  return false;
}

// The hidden files a report's writer makes beside it (".report.json.XXXXXX"); none may remain.
std::vector<std::string> temporary_files_in(const std::filesystem::path& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    if (entry.path().filename().string().rfind('.', 0) == 0)
      names.push_back(entry.path().filename().string());
  return names;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

class herd_cli : public testing::Test {
protected:
  static herd::testing::process_result
  herd(std::vector<std::string> args, std::optional<std::chrono::milliseconds> interrupt = {}) {
    args.insert(args.begin(), HERD_BINARY);
    return run_process(args, std::chrono::seconds(120), interrupt);
  }

  std::string path(const std::string& name) const { return dir_.file(name); }

  herd::testing::temp_directory dir_;
};

// A short run on generated data: no dataset package needed.
const std::vector<std::string> synthetic_run{"train", "--data.dataset=synthetic",
                                             "--train.workers=2", "--model.hidden=[32]",
                                             "--train.epochs=1"};

TEST_F(herd_cli, help_lists_commands_and_every_contract_key) {
  auto top = herd({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.output, HasSubstr("train"));
  EXPECT_THAT(top.output, HasSubstr("bench"));
  EXPECT_THAT(top.output, HasSubstr("simulate"));
  for (const char* command : {"evaluate", "predict", "export"}) {
    EXPECT_THAT(top.output, HasSubstr(std::string("  ") + command + " "));
    auto help = herd({command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_THAT(help.output, HasSubstr(std::string("usage: herd ") + command + " --checkpoint"));
    EXPECT_THAT(help.output, HasSubstr("--last"));
    EXPECT_THAT(help.output, HasSubstr("--data.path")) << command;
    // Their settings default to the checkpoint's, not to herd train's defaults (the words may
    // be wrapped onto two lines).
    const auto words = std::regex_replace(help.output, std::regex("\\s+"), " ");
    EXPECT_THAT(words, HasSubstr("default the checkpoint's")) << command;
    EXPECT_THAT(words, Not(HasSubstr("default \"fashion-mnist\""))) << command;
  }
  // The coordinator refuses async (its parameter server lives in one process): its help says so.
  EXPECT_THAT(herd({"coordinator", "--help"}).output, HasSubstr("async runs in one process only"));
  auto train = herd({"train", "--help"});
  EXPECT_EQ(train.exit_code, 0);
  for (const char* option : {"--config", "--report"})
    EXPECT_THAT(train.output, HasSubstr(option));
  // Each command lists the keys it uses; together they list every key.
  std::string every_help;
  for (const char* command : {"train", "coordinator", "node", "bench", "simulate"})
    every_help += herd({command, "--help"}).output;
  for (const char* key : herd::testing::contract_keys())
    EXPECT_THAT(every_help, HasSubstr(std::string("--") + key + " ")) << key;
}

// What a run across processes cannot do yet is refused before any data is loaded (the data
// directory here does not exist) and under --print-config, naming the key; the help says so.
TEST_F(herd_cli, the_coordinator_refuses_a_gpu_and_async_before_it_loads_data) {
  for (const std::string setting : {"--train.backend=cuda", "--train.algorithm=async"}) {
    const std::string key = setting.substr(2, setting.find('=') - 2);
    for (const bool print : {false, true}) {
      std::vector<std::string> args{"coordinator", setting, "--data.path=/nonexistent/herd-data"};
      if (print)
        args.push_back("--print-config");
      const auto run = herd(args);
      EXPECT_EQ(run.exit_code, 2) << setting << (print ? " --print-config" : "");
      EXPECT_THAT(run.output, HasSubstr(key + " = ")) << setting;
      EXPECT_THAT(run.output, Not(HasSubstr("/nonexistent/herd-data"))) << setting;
    }
  }
  const auto help =
      std::regex_replace(herd({"coordinator", "--help"}).output, std::regex("\\s+"), " ");
  EXPECT_THAT(help, HasSubstr("cuda runs in one process only"));
}

TEST_F(herd_cli, every_command_and_herd_version_show_the_version) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"version"},
        {"--version"},
        {"train", "--version"},
        {"coordinator", "--version"},
        {"node", "--version"},
        {"bench", "--version"},
        {"simulate", "--version"},
        {"devices", "--version"},
        {"evaluate", "--version"},
        {"predict", "--version"},
        {"export", "--version"},
        {"train", "--config", "/nonexistent", "--version"}}) {
    auto shown = herd(args);
    EXPECT_EQ(shown.exit_code, 0) << args.front() << ": " << shown.output;
    EXPECT_THAT(shown.output, HasSubstr("herd " HERD_PROJECT_VERSION "\n")) << args.front();
    EXPECT_THAT(shown.output, HasSubstr("CUDA")) << args.front();
  }
  EXPECT_EQ(herd({"frobnicate", "--version"}).exit_code, 2);
  // herd version takes no argument (it showed the version for any), and has a help.
  auto version_help = herd({"version", "--help"});
  EXPECT_EQ(version_help.exit_code, 0);
  EXPECT_THAT(version_help.output, HasSubstr("usage: herd version"));
  auto version_bad = herd({"version", "--frobnicate"});
  EXPECT_EQ(version_bad.exit_code, 2);
  EXPECT_THAT(version_bad.output, HasSubstr("herd version: unknown argument '--frobnicate'"));
  // Every line of it fits 80 columns.
  std::istringstream lines(herd({"--version"}).output);
  for (std::string line; std::getline(lines, line);)
    EXPECT_LE(line.size(), 80u) << line;
}

// A near miss of a command is answered with the command; an option is not called a command; a
// list that names an entry twice, or an option given twice, is refused; [async] is a setting only
// of the commands that run async.
TEST_F(herd_cli, near_misses_and_repeats_are_named) {
  auto typo = herd({"trian"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.output, HasSubstr("herd: unknown command 'trian'; did you mean train?"));
  EXPECT_THAT(herd({"--frobnicate"}).output, HasSubstr("herd: unknown option '--frobnicate'"));
  for (const char* command : {"bench", "simulate"}) {
    auto twice = herd({command, "--algorithms=sync,solo,sync"});
    EXPECT_EQ(twice.exit_code, 2) << command;
    EXPECT_THAT(twice.output, HasSubstr("--algorithms: sync is named twice")) << command;
  }
  EXPECT_THAT(herd({"bench", "--scenarios=none,none"}).output,
              HasSubstr("--scenarios: none is named twice"));
  auto print_twice = herd({"train", "--print-config", "--print-config"});
  EXPECT_EQ(print_twice.exit_code, 2);
  EXPECT_THAT(print_twice.output, HasSubstr("--print-config is given twice"));
  for (const char* command : {"simulate", "coordinator"}) {
    auto async = herd({command, "--async.lr=0.1"});
    EXPECT_EQ(async.exit_code, 2) << command;
    EXPECT_THAT(async.output, HasSubstr("does not use this setting")) << command;
  }
  EXPECT_EQ(herd({"train", "--async.lr=0.1", "--print-config"}).exit_code, 0);
  // An option where a value belongs is not taken for the value (a directory named
  // "--algorithms=sync", and the algorithms lost).
  const auto swallowed = herd({"simulate", "--out", "--algorithms=sync"});
  EXPECT_EQ(swallowed.exit_code, 2) << swallowed.output;
  EXPECT_THAT(swallowed.output,
              HasSubstr("--out needs a value, not the option after it (--algorithms=sync); a "
                        "value that starts with - goes after =, as --out=VALUE"));
  EXPECT_FALSE(std::filesystem::exists("--algorithms=sync"));
  EXPECT_THAT(herd({"train", "--report", "--train.workers=2"}).output,
              HasSubstr("--report needs a value"));
}

TEST_F(herd_cli, devices_lists_the_cpus_blas_gpus_and_what_the_build_supports) {
  auto devices = herd({"devices"});
  EXPECT_EQ(devices.exit_code, 0) << devices.output;
  for (const char* line : {"  cpu     ", "  memory  ", "  kernels ", "  blas    OpenBLAS",
                           "  cuda    ", "  nccl    ", "  tls     OpenSSL"})
    EXPECT_THAT(devices.output, HasSubstr(line)) << devices.output;
  EXPECT_THAT(devices.output, HasSubstr("cores usable"));
  EXPECT_EQ(herd({"devices", "--frobnicate"}).exit_code, 2);
  EXPECT_THAT(herd({"--help"}).output, HasSubstr("devices"));
}

// The run summary with each value on one line: a value too long for 80 columns goes on under its
// label, 20 columns in.
std::string unwrapped(std::string text) {
  const std::string continuation = "\n" + std::string(20, ' ');
  for (auto at = text.find(continuation); at != std::string::npos; at = text.find(continuation, at))
    text.replace(at, continuation.size(), " ");
  return text;
}

// Reads a file of the repository (the docs the tests hold to the code).
std::string repository_file(const std::string& path) {
  std::ifstream in(std::string(HERD_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every line of every command's help, the command list's included, fits 80 columns.
TEST_F(herd_cli, every_help_fits_80_columns) {
  for (const char* command : {"", "train", "coordinator", "node", "bench", "simulate", "evaluate",
                              "predict", "export", "devices"}) {
    const auto help = std::string(command).empty() ? herd({"--help"}) : herd({command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    std::istringstream lines(help.output);
    for (std::string line; std::getline(lines, line);)
      EXPECT_LE(line.size(), 80u) << "herd " << command << " --help: " << line;
  }
}

// A help text's entries as one line each: a line indented deeper than 2 goes on the one before.
std::vector<std::string> help_entries(const std::string& help) {
  std::vector<std::string> entries;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    const auto indent = line.find_first_not_of(' ');
    if (indent != std::string::npos && indent > 2 && !entries.empty())
      entries.back() += " " + line.substr(indent);
    else
      entries.push_back(line);
  }
  return entries;
}

TEST_F(herd_cli, the_documented_types_and_defaults_are_the_ones_help_shows) {
  std::string help;
  for (const char* command : {"train", "coordinator", "node", "bench", "simulate"})
    help += herd({command, "--help"}).output;
  // "  --train.lr   learning rate (real, default 0.05)"
  std::map<std::string, std::pair<std::string, std::string>> shown;
  const std::regex help_line(R"(^\s+--([a-z0-9.-]+)\s.*\(([^()]*), default (.*)\)\s*$)");
  for (const auto& line : help_entries(help))
    if (std::smatch m; std::regex_match(line, m, help_line))
      shown[m[1]] = {m[2], m[3]};
  ASSERT_GT(shown.size(), 40u) << help;
  // "| `train.lr` | real | 0.05 | learning rate (> 0) |"; a row may document several keys alike.
  const std::regex doc_row(
      R"(^\| (`[a-z0-9-]+\.[a-z0-9.-]+`(, `[a-z0-9.-]+`)*) \| ([^|]+?) \| `?([^|`]+?)`? \|.*)");
  const std::regex quoted_key("`([a-z0-9.-]+)`");
  std::istringstream rows(repository_file("docs/configuration.md"));
  int compared = 0;
  for (std::string row; std::getline(rows, row);) {
    std::smatch m;
    if (!std::regex_match(row, m, doc_row))
      continue;
    const std::string keys = m[1];
    for (std::sregex_iterator key_match(keys.begin(), keys.end(), quoted_key), end;
         key_match != end; ++key_match) {
      const std::string key = (*key_match)[1];
      ASSERT_EQ(shown.count(key), 1u)
          << "docs/configuration.md documents " << key << ", which no --help lists";
      EXPECT_EQ(m[3], shown[key].first) << key << ": the type";
      EXPECT_EQ(m[4], shown[key].second) << key << ": the default";
      ++compared;
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(compared), shown.size())
      << "every key --help lists is documented in docs/configuration.md";
  // The README's word on herd bench's defaults.
  const auto bench = herd({"bench", "--help"}).output;
  const std::regex bench_default(R"(--algorithms LIST\s+comma-separated \(default\s+([a-z,-]+);)");
  std::smatch algorithms;
  ASSERT_TRUE(std::regex_search(bench, algorithms, bench_default)) << bench;
  const auto stated = "(`--algorithms`, default " + algorithms[1].str() + ")";
  EXPECT_NE(repository_file("README.md").find(stated), std::string::npos)
      << "README.md should say " << stated;
}

// herd simulate: the table, results.json with one row per algorithm and P, and its refusals.
TEST_F(herd_cli, simulate_writes_a_row_per_algorithm_and_job_size) {
  const auto out = path("simulated");
  ::setenv("COLUMNS", "80", 1); // a table in a pipe keeps to $COLUMNS where it is set
  auto run = herd({"simulate", "--algorithms=sync,solo,wagma", "--simulate.workers=[2,16]",
                   "--simulate.steps=20", "--imbalance.kind=random", "--imbalance.k=2",
                   "--simulate.network=25gbe", "--simulate.alpha-us=5", "--out", out});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("steps/s"));
  // What ran, not only the names: the imbalance's settings; a preset whose link was replaced.
  EXPECT_THAT(run.output, HasSubstr("imbalance random (imbalance.k = 2, delay-ms = 10)"));
  // 20 step times hold few rounds of sync: said, with what to change.
  EXPECT_THAT(run.output, testing::ContainsRegex("note: [0-9]+ cells? finished fewer than 50 "
                                                 "rounds: sync at P = 2 \\([0-9]+\\)"));
  EXPECT_THAT(run.output, HasSubstr("undercounts the round the end cut off"));
  EXPECT_EQ(run.output.find("note:"), run.output.rfind("note:")) << "one note, not one a cell";
  EXPECT_THAT(run.output, HasSubstr("network custom (alpha 5 us, 3.125 GB/s: simulate.alpha-us "
                                    "over 25gbe)"));
  // The table keeps to 80 columns: its twelve columns
  // take two parts, each led by the algorithm and P.
  std::istringstream lines(run.output);
  int headers = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("algorithm ", 0) == 0 || line.rfind("sync ", 0) == 0 ||
        line.rfind("solo ", 0) == 0 || line.rfind("wagma ", 0) == 0) {
      EXPECT_LT(line.size(), 80u) << line;
      headers += line.rfind("algorithm ", 0) == 0;
    }
  EXPECT_EQ(headers, 2) << run.output;
  ::unsetenv("COLUMNS"); // and otherwise its rows whole, as a log keeps its lines
  const auto whole = herd({"simulate", "--algorithms=sync,solo,wagma", "--simulate.workers=[2,16]",
                           "--simulate.steps=20", "--out", path("simulated-whole")});
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  std::istringstream whole_lines(whole.output);
  headers = 0;
  for (std::string line; std::getline(whole_lines, line);)
    headers += line.rfind("algorithm ", 0) == 0;
  EXPECT_EQ(headers, 1) << whole.output;
  std::ifstream in(out + "/results.json");
  const auto written = nlohmann::json::parse(in);
  EXPECT_EQ(written["settings"]["network"], "custom");
  EXPECT_EQ(written["settings"]["network_preset"], "25gbe");
  EXPECT_DOUBLE_EQ(written["settings"]["alpha_seconds"].get<double>(), 5e-6);
  EXPECT_EQ(written["settings"]["imbalance"], "random (imbalance.k = 2, delay-ms = 10)");
  const auto& results = written["results"];
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(results[0]["algorithm"], "sync");
  EXPECT_EQ(results[5]["algorithm"], "wagma");
  EXPECT_EQ(results[5]["workers"], 16);
  EXPECT_GT(results[5]["steps_per_second"].get<double>(), 0.0);
  for (const auto& cell : results) // applied: what rounds took, in steps' worth of samples
    EXPECT_DOUBLE_EQ(cell["applied_steps_per_second"].get<double>(),
                     cell["samples_applied"].get<double>() / 32 /
                         cell["simulated_seconds"].get<double>());
  // The plots' data: each algorithm's applied steps/s, and its speedup over sync's at the same P
  // (sync's own is 1); a second image plots the speedup.
  for (const std::string name : {"sync", "solo"}) {
    std::ifstream data(out + "/throughput-" + name + ".dat");
    std::string header;
    std::getline(data, header);
    EXPECT_THAT(header, HasSubstr("applied_over_sync")) << name;
    for (std::size_t row = 0; row < 2; ++row) {
      int workers = 0;
      double applied = 0.0, steps = 0.0, idle = 0.0, over_sync = 0.0;
      data >> workers >> applied >> steps >> idle >> over_sync;
      const auto& sync_cell = results[row]; // sync at P = 2, then 16
      EXPECT_EQ(workers, sync_cell["workers"].get<int>()) << name;
      EXPECT_NEAR(over_sync, applied / sync_cell["applied_steps_per_second"].get<double>(),
                  1e-4 * over_sync)
          << name << " at P = " << workers;
    }
  }
  if (std::filesystem::exists(out + "/throughput.png")) { // gnuplot is there
    EXPECT_TRUE(std::filesystem::exists(out + "/speedup.png"));
  }
  auto help = herd({"simulate", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.output, HasSubstr("simulate.network"));
  auto algorithm = herd({"simulate", "--algorithms=gossip", "--out", out});
  EXPECT_EQ(algorithm.exit_code, 2);
  EXPECT_THAT(algorithm.output, HasSubstr("unknown algorithm 'gossip'"));
  auto network = herd({"simulate", "--simulate.network=\"token-ring\"", "--out", out});
  EXPECT_EQ(network.exit_code, 2);
  EXPECT_THAT(network.output, HasSubstr("simulate.network = \"token-ring\""));
  auto collective = herd({"simulate", "--simulate.collective=\"butterfly\"", "--out", out});
  EXPECT_EQ(collective.exit_code, 2);
  EXPECT_THAT(collective.output, HasSubstr("simulate.collective = \"butterfly\" (command line): "
                                           "unknown collective; allowed: ring, halving-doubling"));
  // Halving-doubling: a sync round over 1,024 workers pays 20 latencies, not 2,046; said in the
  // header and results.json.
  auto tree = herd({"simulate", "--algorithms=sync", "--simulate.workers=[1024]",
                    "--simulate.steps=20", "--simulate.collective=halving-doubling",
                    "--simulate.model-mb=0.000001", "--out", out});
  ASSERT_EQ(tree.exit_code, 0) << tree.output;
  EXPECT_THAT(tree.output, HasSubstr(", halving-doubling reductions of "));
  std::ifstream tree_file(out + "/results.json");
  const auto tree_results = nlohmann::json::parse(tree_file);
  EXPECT_EQ(tree_results["settings"]["collective"], "halving-doubling");
  // reduce_seconds counts the round the end cut off too: per finished round, a little over one
  // reduction of 2 log2(1024) alphas of 5 us (100 us), far from a ring's 2 x 1023 (10.2 ms).
  const auto& cell = tree_results["results"][0];
  ASSERT_GT(cell["rounds"].get<double>(), 0.0);
  const double per_round = cell["reduce_seconds"].get<double>() / cell["rounds"].get<double>();
  EXPECT_GE(per_round, 100e-6 * 0.999);
  EXPECT_LT(per_round, 1e-3);
  // Groups larger than a P of the sweep: both algorithms' capped at it, and said (wagma's group
  // used to refuse the whole sweep, preduce's shrank without a word).
  auto capped = herd({"simulate", "--algorithms=wagma,preduce", "--simulate.workers=[2,16]",
                      "--simulate.steps=20", "--wagma.group-size=16", "--preduce.group-size=4",
                      "--train.seed=3", "--out", out});
  EXPECT_EQ(capped.exit_code, 0) << capped.output;
  EXPECT_THAT(capped.output, HasSubstr("note: wagma.group-size = 16 is capped at P rounded up to "
                                       "a power of two for P = 2; preduce.group-size = 4 takes "
                                       "all P workers for P = 2"));
  // A seed that seeds nothing here (no --step-trace) is said so.
  EXPECT_THAT(capped.output,
              HasSubstr("note: train.seed seeds the draws from a --step-trace only"));
}

// Ctrl-C in a sweep whose last cell would run for many minutes (65,536 workers, 20,000 step times)
// ends that cell and keeps the ones done; it used to end the process and lose them all.
TEST_F(herd_cli, an_interrupted_simulation_writes_the_cells_it_finished) {
  const auto out = path("interrupted");
  auto run = herd({"simulate", "--algorithms=sync", "--simulate.workers=[2,4,65536]",
                   "--simulate.steps=20000", "--out", out},
                  std::chrono::milliseconds(3000));
  EXPECT_EQ(run.exit_code, 130) << run.output;
  EXPECT_THAT(run.output, HasSubstr("herd simulate: interrupted by SIGINT after 2 of 3 cells;\n"
                                    "  no plot of a partial sweep"));
  std::ifstream in(out + "/results.json");
  const auto results = nlohmann::json::parse(in);
  EXPECT_EQ(results["interrupted"], true);
  ASSERT_EQ(results["results"].size(), 2u);
  EXPECT_EQ(results["results"][1]["workers"], 4);
  EXPECT_FALSE(std::filesystem::exists(out + "/throughput.png"));
}

// herd simulate --step-trace: the workers replay a report's step-time histograms; a file that is
// not such a report exits 2 naming it.
TEST_F(herd_cli, simulate_replays_the_step_times_of_a_report) {
  // Measured worker 0 took 30 ms a step, worker 1 10 ms.
  nlohmann::json report;
  report["per_worker"] = nlohmann::json::array();
  for (double seconds : {0.030, 0.010})
    report["per_worker"].push_back(
        {{"step_histogram",
          {{{"lower_seconds", seconds}, {"upper_seconds", seconds * 1.001}, {"count", 40}}}}});
  std::ofstream(path("report.json")) << report.dump();
  const auto out = path("traced");
  auto run = herd({"simulate", "--algorithms=sync", "--simulate.workers=[2]", "--simulate.steps=50",
                   "--simulate.message-us=0", "--simulate.model-mb=0.000001", "--step-trace",
                   path("report.json"), "--out", out});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("step times drawn from the 2 worker(s) of"));
  std::ifstream in(out + "/results.json");
  const auto results = nlohmann::json::parse(in);
  // A barrier waits for the 30 ms worker: 2 steps per 30 ms.
  EXPECT_NEAR(results["results"][0]["steps_per_second"].get<double>(), 2 / 0.030, 2 / 0.030 * 0.03);
  EXPECT_NEAR(results["settings"]["step_seconds"].get<double>(), 0.020, 0.0001);
  EXPECT_EQ(results["settings"]["step_trace"], path("report.json"));
  // Drawn within a bar, seeded by train.seed: another seed, other times; the same, the same.
  report["per_worker"][0]["step_histogram"][0]["upper_seconds"] = 0.060;
  std::ofstream(path("wide.json")) << report.dump();
  const auto steps_per_second = [&](const std::string& seed) {
    auto seeded =
        herd({"simulate", "--algorithms=sync", "--simulate.workers=[2]", "--simulate.steps=50",
              "--step-trace", path("wide.json"), "--train.seed=" + seed, "--out", out});
    EXPECT_EQ(seeded.exit_code, 0) << seeded.output;
    std::ifstream file(out + "/results.json");
    return nlohmann::json::parse(file)["results"][0]["steps_per_second"].get<double>();
  };
  EXPECT_NE(steps_per_second("1"), steps_per_second("2"));
  EXPECT_EQ(steps_per_second("2"), steps_per_second("2"));

  std::ofstream(path("not-a-report.json")) << "{\"rounds\": 3}";
  auto wrong = herd({"simulate", "--step-trace", path("not-a-report.json"), "--out", out});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.output,
              HasSubstr("--step-trace " + path("not-a-report.json") + ": no per_worker list"));
  auto missing = herd({"simulate", "--step-trace", path("absent.json"), "--out", out});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr("absent.json: cannot read it"));
  // A directory opens, and reading it threw a library's error (exit 1); a FIFO waited for a
  // writer forever.
  const std::string folder = dir_.path().string();
  auto directory = herd({"simulate", "--step-trace", folder, "--out", out});
  EXPECT_EQ(directory.exit_code, 2) << directory.output;
  EXPECT_THAT(directory.output, HasSubstr("--step-trace " + folder +
                                          ": cannot read it (it is a directory, not a regular "
                                          "file); name the file a herd train --report wrote"));
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  auto pipe = herd({"simulate", "--step-trace", path("pipe"), "--out", out});
  EXPECT_EQ(pipe.exit_code, 2) << pipe.output;
  EXPECT_THAT(pipe.output, HasSubstr("it is a FIFO (named pipe), not a regular file"));
  // Anything after the report's JSON is refused, not ignored.
  std::ofstream(path("trailing.json")) << report.dump() << " garbage";
  auto trailing = herd({"simulate", "--step-trace", path("trailing.json"), "--out", out});
  EXPECT_EQ(trailing.exit_code, 2) << trailing.output;
  EXPECT_THAT(trailing.output, HasSubstr("trailing.json: not JSON (unreadable at byte"));
  EXPECT_THAT(trailing.output, Not(HasSubstr("json.exception"))) << "the library's own words";
  // Bars that are not bars: said in the report's terms, not the JSON library's.
  std::ofstream(path("no-bars.json")) << R"({"per_worker": [{"step_histogram": "x"}]})";
  auto no_bars = herd({"simulate", "--step-trace", path("no-bars.json"), "--out", out});
  EXPECT_EQ(no_bars.exit_code, 2) << no_bars.output;
  EXPECT_THAT(no_bars.output, HasSubstr("no-bars.json: worker 0: its step_histogram is not a list "
                                        "of bars {lower_seconds, upper_seconds, count}"));
  EXPECT_THAT(no_bars.output, Not(HasSubstr("json.exception")));
  // A negative count was read as 2^64 - 5 steps, and the run went on.
  report["per_worker"][0]["step_histogram"][0]["count"] = -5;
  std::ofstream(path("negative.json")) << report.dump();
  auto negative = herd({"simulate", "--step-trace", path("negative.json"), "--out", out});
  EXPECT_EQ(negative.exit_code, 2) << negative.output;
  EXPECT_THAT(negative.output, HasSubstr("worker 0: a bar's count -5 is not a whole number >= 0"));
  // Steps of no time reached an internal check that blamed simulate.step-ms.
  nlohmann::json instant;
  instant["per_worker"] = {
      {{"step_histogram", {{{"lower_seconds", 0}, {"upper_seconds", 0}, {"count", 5}}}}}};
  std::ofstream(path("instant.json")) << instant.dump();
  auto no_time = herd({"simulate", "--step-trace", path("instant.json"), "--out", out});
  EXPECT_EQ(no_time.exit_code, 2) << no_time.output;
  EXPECT_THAT(no_time.output, HasSubstr("its steps take no time on average"));
  EXPECT_THAT(no_time.output, Not(HasSubstr("check failed")));
  // ... nor steps of a subnormal time, which simulated no round and plotted nothing.
  instant["per_worker"][0]["step_histogram"][0]["upper_seconds"] = 5e-324;
  instant["per_worker"][0]["step_histogram"][0]["lower_seconds"] = 5e-324;
  std::ofstream(path("tiny.json")) << instant.dump();
  auto tiny = herd({"simulate", "--step-trace", path("tiny.json"), "--out", out});
  EXPECT_EQ(tiny.exit_code, 2) << tiny.output;
  EXPECT_THAT(tiny.output, HasSubstr("a step of less than a microsecond is no step of training"));
  // A trace refused leaves no --out directory behind (it was made before the trace was read).
  const auto fresh = path("never-made");
  auto absent = herd({"simulate", "--step-trace", path("absent.json"), "--out", fresh});
  EXPECT_EQ(absent.exit_code, 2) << absent.output;
  EXPECT_FALSE(std::filesystem::exists(fresh)) << absent.output;
  // simulate.step-ms given beside a trace went unused without a word.
  auto both = herd(
      {"simulate", "--step-trace", path("report.json"), "--simulate.step-ms=500", "--out", out});
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_THAT(both.output,
              HasSubstr("--simulate.step-ms: the steps take the times of --step-trace"));
}

// The staleness keys' bad values exit 2 before anything runs, naming what is allowed (and for an
// isolation guard that cannot be met, the bound).
TEST_F(herd_cli, bad_blend_missing_members_and_guard_settings_exit_2_with_what_is_allowed) {
  auto blend = herd({"train", "--train.algorithm=wagma", "--wagma.blend=mean"});
  EXPECT_EQ(blend.exit_code, 2);
  EXPECT_THAT(blend.output, HasSubstr("wagma.blend = \"mean\" (command line): unknown blend; "
                                      "allowed: herd, reference"));
  auto missing = herd({"train", "--train.algorithm=solo", "--solo.missing-members=skip"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr("allowed: renormalise, zero"));
  auto guard = herd(
      {"train", "--train.algorithm=preduce", "--train.workers=32", "--preduce.connect-every=16"});
  EXPECT_EQ(guard.exit_code, 2);
  EXPECT_THAT(guard.output, HasSubstr("takes at least 31 groups"));
  auto print = herd({"train", "--train.algorithm=wagma", "--wagma.blend=reference",
                     "--solo.missing-members=zero", "--print-config"});
  ASSERT_EQ(print.exit_code, 0) << print.output;
  EXPECT_THAT(print.output, HasSubstr("blend = \"reference\""));
  EXPECT_THAT(print.output, HasSubstr("missing-members = \"zero\""));
}

TEST_F(herd_cli, print_config_shows_the_effective_settings_and_runs_nothing) {
  auto shown = herd({"train", "--config", std::string(HERD_SOURCE_DIR) + "/config/quickstart.ini",
                     "--train.lr=0.02", "--print-config"});
  ASSERT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_THAT(shown.output, HasSubstr("[train]"));
  EXPECT_THAT(shown.output, HasSubstr("lr = 0.02"));            // the override
  EXPECT_THAT(shown.output, HasSubstr("algorithm = \"solo\"")); // the file
  EXPECT_THAT(shown.output, HasSubstr("eval-every = 100"));     // a default
  EXPECT_THAT(shown.output, testing::Not(HasSubstr("herd train:"))) << "nothing was loaded or run";
  // What it prints is a configuration that gives the same settings.
  {
    std::ofstream again(path("effective.ini"));
    again << shown.output;
  }
  auto reread = herd({"train", "--config", path("effective.ini"), "--print-config"});
  ASSERT_EQ(reread.exit_code, 0) << reread.output;
  EXPECT_EQ(reread.output, shown.output);
  // Only the keys herd train uses.
  EXPECT_THAT(shown.output, testing::Not(HasSubstr("[cluster]")));
  EXPECT_THAT(shown.output, testing::Not(HasSubstr("[simulate]")));
  auto coordinator = herd({"coordinator", "--train.lr=0.03",
                           "--cluster.token=secret-token-that-must-not-show", "--print-config"});
  EXPECT_EQ(coordinator.exit_code, 0) << coordinator.output;
  EXPECT_THAT(coordinator.output, HasSubstr("lr = 0.03"));
  EXPECT_THAT(coordinator.output, HasSubstr("[cluster]"));
  EXPECT_THAT(coordinator.output, testing::Not(HasSubstr("secret-token-that-must-not-show")));
  EXPECT_THAT(coordinator.output, HasSubstr("train.workers is the sum of the nodes'"));
  EXPECT_THAT(coordinator.output, testing::Not(HasSubstr("workers = 4"))); // train.workers
  EXPECT_THAT(coordinator.output, HasSubstr("; cluster.token is set and not shown"));
  EXPECT_THAT(coordinator.output, testing::Not(HasSubstr("\ntoken = "))) << "nor its key";
  // A token file's path is kept: the printed settings run as they are.
  const auto token_file = path("token");
  std::ofstream(token_file) << "0123456789abcdef0123456789abcdef\n";
  std::filesystem::permissions(token_file, std::filesystem::perms::owner_read |
                                               std::filesystem::perms::owner_write);
  auto with_file = herd({"coordinator", "--cluster.token-file=" + token_file, "--print-config"});
  EXPECT_EQ(with_file.exit_code, 0) << with_file.output;
  EXPECT_THAT(with_file.output, HasSubstr("token-file = \"" + token_file + "\""));
  EXPECT_THAT(with_file.output, testing::Not(HasSubstr("0123456789abcdef")));
}

// One file may serve several commands: what a command does not use is named once when a file
// sets it, and refused on the command line, naming the commands that use it.
TEST_F(herd_cli, a_setting_the_command_does_not_use_is_refused_and_a_file_one_named_once) {
  for (const std::vector<std::string>& refused :
       {std::vector<std::string>{"train", "--cluster.min-nodes=3"},
        {"coordinator", "--train.workers=8"},
        {"coordinator", "--simulate.steps=50"},
        {"bench", "--train.algorithm=sync"},
        {"simulate", "--data.path=/tmp"},
        {"node", "--coordinator", "127.0.0.1:1", "--train.lr=0.1"}}) {
    auto run = herd(refused);
    EXPECT_EQ(run.exit_code, 2) << refused.back() << ": " << run.output;
    const std::string key = refused.back().substr(2, refused.back().find('=') - 2);
    EXPECT_THAT(run.output, HasSubstr("--" + key + ": herd " + refused.front() +
                                      " does not use this setting (herd "))
        << run.output;
  }
  {
    std::ofstream file(path("shared.ini"));
    file << "[train]\nworkers = 2\n[cluster]\nmin-nodes = 3\n[simulate]\nsteps = 50\n";
  }
  auto train = herd({"train", "--config", path("shared.ini"), "--print-config"});
  EXPECT_EQ(train.exit_code, 0) << train.output;
  EXPECT_THAT(train.output,
              HasSubstr("shared.ini sets what herd train does not use, ignored here: "
                        "simulate.steps (herd simulate), cluster.min-nodes (herd coordinator)"));
  EXPECT_THAT(train.output, HasSubstr("workers = 2"));
  // On loopback: the default, 0.0.0.0, needs a cluster token, which --print-config checks too.
  auto coordinator = herd({"coordinator", "--listen", "127.0.0.1:7070", "--config",
                           path("shared.ini"), "--print-config"});
  EXPECT_EQ(coordinator.exit_code, 0) << coordinator.output;
  EXPECT_THAT(coordinator.output, HasSubstr("ignored here: train.workers (herd bench"));
  EXPECT_THAT(coordinator.output, HasSubstr("min-nodes = 3"));
}

TEST_F(herd_cli, unknown_command_and_argument_exit_2) {
  auto command = herd({"frobnicate"});
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_THAT(command.output, HasSubstr("unknown command 'frobnicate'"));
  auto argument = herd({"train", "--frobnicate"});
  EXPECT_EQ(argument.exit_code, 2);
  EXPECT_THAT(argument.output, HasSubstr("unknown argument '--frobnicate'"));
  EXPECT_THAT(argument.output, HasSubstr("settings are written --section.key=value"));
  // A file given without --config is pointed to it.
  const std::string file = std::string(HERD_SOURCE_DIR) + "/config/quickstart.ini";
  auto positional = herd({"train", file});
  EXPECT_EQ(positional.exit_code, 2);
  EXPECT_THAT(positional.output, HasSubstr("a file of settings is given with --config: herd "
                                           "train --config " +
                                           file));
  // An option given twice is refused: the last one would silently win.
  auto twice = herd({"train", "--config", "a.ini", "-c", "b.ini"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_THAT(twice.output, HasSubstr("--config is given twice (a.ini, then b.ini); give it once"));
  auto reports = herd({"train", "--report", "r.json", "--report=r2.json"});
  EXPECT_EQ(reports.exit_code, 2);
  EXPECT_THAT(reports.output, HasSubstr("--report is given twice (r.json, then r2.json)"));
}

TEST_F(herd_cli, bad_config_value_exits_2_naming_key_and_value) {
  auto result = herd({"train", "--train.workers=0", "--train.lr=-0.1"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("train.workers = 0"));
  EXPECT_THAT(result.output, HasSubstr("train.lr = -0.1"));
}

TEST_F(herd_cli, bad_config_file_exits_2_naming_file_and_key) {
  const auto file = path("bad.ini");
  std::ofstream(file) << "[train]\nworkers = 4\nalgorithim = \"sync\"\n";
  auto result = herd({"train", "--config", file});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("unknown key train.algorithim"));
  EXPECT_THAT(result.output, HasSubstr(file));
  EXPECT_THAT(result.output, HasSubstr("did you mean train.algorithm?"));
}

TEST_F(herd_cli, missing_dataset_exits_2_and_says_what_to_install) {
  auto result = herd({"train", "--data.path=" + path("no-such-dir")});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("apt-get install dataset-fashion-mnist"));
}

TEST_F(herd_cli, corrupt_idx_file_exits_2_naming_the_file) {
  // Four files with the right names; the training images are not IDX at all.
  for (const char* name :
       {"train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    std::ofstream(path(name)) << "placeholder";
  const auto corrupt = path("train-images-idx3-ubyte.gz");
  gzFile out = gzopen(corrupt.c_str(), "wb");
  const char garbage[] = "this is not an IDX file at all, just some bytes";
  gzwrite(out, garbage, sizeof garbage);
  gzclose(out);
  auto result = herd({"train", "--data.path=" + dir_.path().string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("train-images-idx3-ubyte"));
  EXPECT_THAT(result.output, HasSubstr("magic"));
  EXPECT_THAT(result.output, testing::Not(HasSubstr("terminate")));
}

// The user's own data: .npy files written here, two classes of 8 features apart by sign.
std::vector<std::string> write_npy_dataset(const herd::testing::temp_directory& dir,
                                           std::uint64_t train_labels = 400,
                                           std::int64_t first_label = 0) {
  auto write_split = [&](const std::string& name, std::uint64_t n, std::uint64_t labels) {
    std::vector<float> features(n * 8);
    std::vector<std::int64_t> classes(labels);
    for (std::uint64_t i = 0; i < n; ++i)
      for (std::uint64_t j = 0; j < 8; ++j)
        features[i * 8 + j] =
            (i % 2 ? 1.0f : -1.0f) + 0.1f * static_cast<float>((i * 7 + j * 3) % 5);
    for (std::uint64_t i = 0; i < labels; ++i)
      classes[i] = first_label + static_cast<std::int64_t>(i % 2);
    herd::testing::write_npy(dir.file(name + "_x.npy"), "<f4", {n, 8}, features);
    herd::testing::write_npy(dir.file(name + "_y.npy"), "<i8", {labels}, classes);
  };
  write_split("train", 400, train_labels);
  write_split("test", 100, 100);
  return {"--data.dataset=npy", "--data.train-features=" + dir.file("train_x.npy"),
          "--data.train-labels=" + dir.file("train_y.npy"),
          "--data.test-features=" + dir.file("test_x.npy"),
          "--data.test-labels=" + dir.file("test_y.npy")};
}

TEST_F(herd_cli, trains_on_npy_files) {
  std::vector<std::string> args{"train", "--train.workers=2", "--model.hidden=[16]",
                                "--train.epochs=2", "--train.batch-size=16"};
  for (const auto& arg : write_npy_dataset(dir_))
    args.push_back(arg);
  const auto report_path = path("report.json");
  args.insert(args.end(), {"--report", report_path});
  auto result = herd(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream in(report_path);
  const auto report = nlohmann::json::parse(in);
  EXPECT_GT(report["final_test_accuracy"].get<double>(), 0.9) << result.output;
  EXPECT_THAT(result.output, Not(HasSubstr("no training sample")));

  // A file that is not there is named with its key, where the key was set, and (a relative path)
  // the directory it was looked for in.
  const auto settings = path("typo.ini");
  std::ofstream(settings) << "[data]\ndataset = \"npy\"\ntrain-features = \"" +
                                 path("train_x.npy") + "\"\ntrain-labels = \"" +
                                 path("train_y.npy") + "\"\ntest-features = \"" +
                                 path("test_x.npy") + "\"\ntest-labels = \"test_yy.npy\"\n";
  auto typo = herd({"train", "--config", settings, "--train.epochs=1"});
  EXPECT_EQ(typo.exit_code, 2) << typo.output;
  EXPECT_THAT(typo.output,
              HasSubstr("test_yy.npy: no such file (data.test-labels = \"test_yy.npy\", in " +
                        settings + ", line 6; a relative path is read from the working "
                        "directory, " +
                        std::filesystem::current_path().string() + ")"));

  // Labels 1 and 2: a model of 3 classes, whose class 0 nothing trains; a note says why.
  std::vector<std::string> one_based{"train", "--train.workers=2", "--model.hidden=[16]",
                                     "--train.epochs=1", "--train.batch-size=16"};
  for (const auto& arg : write_npy_dataset(dir_, 400, 1))
    one_based.push_back(arg);
  auto counted_from_one = herd(one_based);
  ASSERT_EQ(counted_from_one.exit_code, 0) << counted_from_one.output;
  EXPECT_THAT(counted_from_one.output,
              HasSubstr("note: class 0 has no training sample; the model has a class for every "
                        "label from 0 to the largest (2): labels that start at 1 are 1-based; "
                        "subtract 1 from them"));
}

// Token rows of the user's own: herd evaluate reads the test set, and checks its rows as training
// does (a bad one failed inside a kernel with exit 1); herd predict checks what the model reads of
// a row, not the part it cuts off (as training cuts texts at data.max-length).
TEST_F(herd_cli, evaluate_and_predict_check_token_rows_as_training_does) {
  // Rows of 3 to 5 tokens, padded to `width`.
  auto tokens = [&](const std::string& name, std::uint64_t n, std::uint64_t width = 6) {
    std::vector<float> rows(n * width, -1.0f);
    std::vector<std::int64_t> labels(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      labels[i] = static_cast<std::int64_t>(i % 2);
      for (std::uint64_t t = 0; t < 3 + i % 3; ++t)
        rows[i * width + t] = static_cast<float>((i % 2) * 5 + (i + t) % 5);
    }
    herd::testing::write_npy(path(name + "_x.npy"), "<f4", {n, width}, rows);
    herd::testing::write_npy(path(name + "_y.npy"), "<i8", {n}, labels);
  };
  tokens("train", 64);
  tokens("test", 16);
  auto run = herd(
      {"train", "--data.dataset=npy", "--data.train-features=" + path("train_x.npy"),
       "--data.train-labels=" + path("train_y.npy"), "--data.test-features=" + path("test_x.npy"),
       "--data.test-labels=" + path("test_y.npy"),
       "--model.layers=embedding 10 4, conv1d-max 4 2, relu, dense 2", "--train.workers=2",
       "--train.batch-size=8", "--train.epochs=1", "--checkpoint.dir=" + path("ckpt")});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // The same texts in a narrower file are padded to the model's 6: the same results.
  tokens("narrow", 16, 5);
  const auto whole = herd({"evaluate", "--checkpoint", path("ckpt")});
  const auto narrow = herd(
      {"evaluate", "--checkpoint", path("ckpt"), "--data.test-features=" + path("narrow_x.npy")});
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  ASSERT_EQ(narrow.exit_code, 0) << narrow.output;
  const auto results = [](const std::string& output) {
    return output.substr(output.find("  test accuracy"));
  };
  EXPECT_EQ(results(narrow.output), results(whole.output));
  std::vector<float> bad(16 * 6, 1.0f);
  bad[3 * 6 + 2] = 3.5f;
  herd::testing::write_npy(path("bad_x.npy"), "<f4", {16, 6}, bad);
  const auto evaluated =
      herd({"evaluate", "--checkpoint", path("ckpt"), "--data.test-features=" + path("bad_x.npy")});
  EXPECT_EQ(evaluated.exit_code, 2) << evaluated.output;
  EXPECT_THAT(evaluated.output, HasSubstr("data.test-features: " + path("bad_x.npy") +
                                          ": sample 3, position 2: 3.5 is not a token id"));
  // An id the model's 10 cannot hold, past its 6 steps: cut with a note, not refused.
  herd::testing::write_npy(path("long_x.npy"), "<f4", {1, 8},
                           std::vector<float>{1, 2, 3, 4, 5, 6, 7, 20});
  const auto predicted =
      herd({"predict", "--checkpoint", path("ckpt"), "--input", path("long_x.npy")});
  EXPECT_EQ(predicted.exit_code, 0) << predicted.output;
  EXPECT_THAT(predicted.output, HasSubstr("cut to their first 6"));
  herd::testing::write_npy(path("inside_x.npy"), "<f4", {1, 8},
                           std::vector<float>{1, 2, 20, 4, -1, -1, -1, -1});
  const auto refused =
      herd({"predict", "--checkpoint", path("ckpt"), "--input", path("inside_x.npy")});
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("sample 0, position 2: 20 is not a token id"));
}

TEST_F(herd_cli, npy_without_a_file_key_or_with_mismatched_counts_exits_2) {
  auto files = write_npy_dataset(dir_);
  std::vector<std::string> args{"train", files[0], files[1], files[2], files[3]};
  auto missing = herd(args); // no data.test-labels
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr("data.test-labels"));
  EXPECT_THAT(missing.output, HasSubstr("required with data.dataset = npy"));

  files = write_npy_dataset(dir_, 399);
  args = {"train", "--train.workers=1", "--model.hidden=[16]", "--train.epochs=1"};
  args.insert(args.end(), files.begin(), files.end());
  auto mismatch = herd(args);
  EXPECT_EQ(mismatch.exit_code, 2);
  EXPECT_THAT(mismatch.output, HasSubstr(path("train_x.npy") + ": 400 samples, but " +
                                         path("train_y.npy") + " has 399 labels"));
  // Named by the key of the file it leads with, as a file that cannot be read is.
  EXPECT_THAT(mismatch.output,
              HasSubstr("(data.train-features = \"" + path("train_x.npy") + "\", command line)"));
  EXPECT_THAT(mismatch.output, testing::Not(HasSubstr("terminate")));
}

TEST_F(herd_cli, batch_larger_than_a_shard_exits_2) {
  auto args = synthetic_run;
  args.push_back("--train.batch-size=5000");
  auto result = herd(args);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("train.batch-size = 5000"));
}

TEST_F(herd_cli, short_run_prints_a_summary_and_writes_the_json_report) {
  auto args = synthetic_run;
  const auto report_path = path("report.json");
  args.insert(args.end(), {"--report", report_path});
  auto result = herd(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("Herd run summary"));
  EXPECT_THAT(result.output, HasSubstr("evaluation at round")); // log lines, not a terminal
  EXPECT_THAT(result.output, testing::Not(HasSubstr("isolation guard"))) << "preduce only";
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good()) << report_path;
  const auto report = nlohmann::json::parse(in);
  for (const char* field :
       {"algorithm", "workers", "data_plane", "backend", "imbalance", "steps", "rounds", "samples",
        "wall_seconds", "time_to_target_seconds", "final_test_accuracy", "final_train_loss",
        "samples_per_second", "per_worker", "evaluations", "stop_reason", "config"})
    EXPECT_TRUE(report.contains(field)) << field;
  EXPECT_EQ(report["algorithm"], "sync");
  EXPECT_EQ(report["workers"], 2);
  EXPECT_EQ(report["data_plane"], "local");
  EXPECT_EQ(report["backend"], "local");
  EXPECT_EQ(report["imbalance"], "none");
  EXPECT_EQ(report["stop_reason"], "epochs");
  EXPECT_TRUE(report["time_to_target_seconds"].is_null());
  EXPECT_EQ(report["per_worker"].size(), 2u);
  EXPECT_GT(report["per_worker"][0]["steps"].get<int>(), 0);
  EXPECT_GT(report["final_test_accuracy"].get<double>(), 0.5);
  EXPECT_GT(report["samples_per_second"].get<double>(), 0.0);
  EXPECT_THAT(temporary_files_in(dir_.path()), testing::IsEmpty());
}

TEST_F(herd_cli, a_partial_run_reports_the_waiting_a_barrier_would_have_imposed) {
  auto args = synthetic_run;
  const auto report_path = path("solo.json");
  args.insert(args.end(),
              {"--train.algorithm=solo", "--imbalance.kind=persistent", "--imbalance.workers=[1]",
               "--imbalance.factor=30", "--report", report_path});
  auto result = herd(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(unwrapped(result.output), HasSubstr("a synchronous barrier would have imposed"));
  EXPECT_THAT(unwrapped(result.output),
              HasSubstr("imbalance persistent: worker 1 runs 30x slower"));
  std::ifstream in(report_path);
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["algorithm"], "solo");
  const auto& waiting = report["waiting"];
  EXPECT_GT(waiting["steps_compared"].get<int>(), 0);
  EXPECT_GT(waiting["barrier_seconds"].get<double>(), 0.0);
  EXPECT_NEAR(waiting["avoided_seconds"].get<double>(),
              waiting["barrier_seconds"].get<double>() - waiting["waited_seconds"].get<double>(),
              1e-9);
  EXPECT_GT(report["rounds_partial"].get<int>(), 0);
  for (const char* field : {"fresh", "stale", "none"})
    EXPECT_TRUE(report["contributions"].contains(field)) << field;
  // The slowed worker is the one a barrier never makes wait.
  const auto& workers = report["per_worker"];
  EXPECT_LT(workers[1]["barrier_wait_seconds"].get<double>(),
            workers[0]["barrier_wait_seconds"].get<double>());
}

TEST_F(herd_cli, a_preduce_run_reports_its_isolation_guard) {
  // Four workers in groups of two, two of them slowed: fast pairs form more often than slow ones.
  const auto report_path = path("preduce.json");
  auto result =
      herd({"train", "--data.dataset=synthetic", "--train.workers=4", "--model.hidden=[32]",
            "--train.epochs=1", "--train.algorithm=preduce", "--preduce.connect-every=4",
            "--imbalance.kind=persistent", "--imbalance.workers=[2,3]", "--imbalance.factor=3",
            "--report", report_path});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("Herd run summary"));
  std::smatch line;
  ASSERT_TRUE(std::regex_search(
      result.output, line,
      std::regex(R"(isolation guard +([0-9]+) group\(s\) built across disconnected workers)")))
      << result.output;
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good()) << report_path;
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["algorithm"], "preduce");
  EXPECT_EQ(report["workers"], 4);
  EXPECT_EQ(report["stop_reason"], "epochs");
  ASSERT_TRUE(report.contains("isolation_interventions"));
  ASSERT_TRUE(report["isolation_interventions"].is_number_unsigned())
      << report["isolation_interventions"];
  const auto interventions = report["isolation_interventions"].get<std::uint64_t>();
  EXPECT_EQ(std::to_string(interventions), line[1].str()) << "the summary and the report agree";
  // The fast pair keeps meeting itself, so within 4 groups the guard has to join it to the slow
  // workers (0 only if every period happened to connect everyone on its own).
  EXPECT_GT(interventions, 0u);
  EXPECT_LE(interventions, report["rounds_partial"].get<std::uint64_t>());
  EXPECT_GT(report["rounds_partial"].get<int>(), 0);
  EXPECT_EQ(report["rounds_full_sync"], 0) << "preduce.sync-every = 0: groups only";
  EXPECT_THAT(report["config"].get<std::string>(), HasSubstr("[preduce]\ngroup-size = 2\n"));
  EXPECT_THAT(report["config"].get<std::string>(), HasSubstr("connect-every = 4\n"));
  // The report's settings read back into herd train as they are, with no note on keys it does
  // not use (herd simulate's, the cluster's).
  const auto settings = path("from-report.ini");
  std::ofstream(settings) << report["config"].get<std::string>();
  const auto again = herd({"train", "--config", settings, "--print-config"});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, Not(HasSubstr("note:")));
  EXPECT_THAT(report["config"].get<std::string>(), Not(HasSubstr("[simulate]")));
  // The evaluated model is the mean of the replicas; it must have learned.
  EXPECT_GT(report["final_test_accuracy"].get<double>(), 0.5);
  EXPECT_THAT(temporary_files_in(dir_.path()), testing::IsEmpty());
  // preduce.connect-every = 0 turns the guard off: the same run builds no group by it.
  const auto unguarded_path = path("unguarded.json");
  const auto unguarded =
      herd({"train", "--data.dataset=synthetic", "--train.workers=4", "--model.hidden=[32]",
            "--train.epochs=1", "--train.algorithm=preduce", "--preduce.connect-every=0",
            "--imbalance.kind=persistent", "--imbalance.workers=[2,3]", "--imbalance.factor=3",
            "--report", unguarded_path});
  ASSERT_EQ(unguarded.exit_code, 0) << unguarded.output;
  std::ifstream unguarded_in(unguarded_path);
  EXPECT_EQ(nlohmann::json::parse(unguarded_in)["isolation_interventions"], 0);
}

TEST_F(herd_cli, bench_help_and_bad_arguments) {
  auto help = herd({"bench", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* text : {"--algorithms", "--scenarios", "persistent", "lognormal", "--repeat"})
    EXPECT_THAT(help.output, HasSubstr(text));
  auto scenario = herd({"bench", "--scenarios=none,sideways"});
  EXPECT_EQ(scenario.exit_code, 2);
  EXPECT_THAT(scenario.output, HasSubstr("unknown scenario 'sideways'"));
  auto algorithm = herd({"bench", "--algorithms=sync,fast"});
  EXPECT_EQ(algorithm.exit_code, 2);
  EXPECT_THAT(algorithm.output, HasSubstr("unknown algorithm 'fast'"));
  auto repeat = herd({"bench", "--repeat=0"});
  EXPECT_EQ(repeat.exit_code, 2);
  EXPECT_THAT(repeat.output, HasSubstr("--repeat"));
  // A random scenario without a delay is the none one: refused, saying so.
  auto no_delay = herd({"bench", "--random-delay-ms=0"});
  EXPECT_EQ(no_delay.exit_code, 2);
  EXPECT_THAT(no_delay.output, HasSubstr("(0 would make the random scenario the none one)"));
  // Names in a list, spaced as a shell user may quote them.
  auto spaced = herd({"bench", "--algorithms=sync, fast"});
  EXPECT_THAT(spaced.output, HasSubstr("unknown algorithm 'fast'"));
  // An output that cannot be written is refused before the first run, naming --out.
  const auto blocked = path("blocked");
  std::filesystem::create_directories(blocked + "/results.csv");
  const std::vector<std::string> quick{"--data.dataset=synthetic", "--train.epochs=1",
                                       "--algorithms=sync", "--scenarios=none"};
  auto args = quick;
  args.insert(args.begin(), "bench");
  args.insert(args.end(), {"--out", blocked});
  auto refused = herd(args);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("--out " + blocked + ": cannot write " + blocked +
                                        "/results.csv: is a directory"));
  EXPECT_THAT(refused.output, Not(HasSubstr("[1/1]"))) << "a run started";
  const auto file = path("a-file");
  std::ofstream(file) << "x";
  args = {"simulate", "--out", file + "/sub"};
  auto not_a_directory = herd(args);
  EXPECT_EQ(not_a_directory.exit_code, 2) << not_a_directory.output;
  EXPECT_THAT(not_a_directory.output,
              HasSubstr("--out " + file + "/sub: cannot make this directory"));
}

// Ctrl-C in herd bench stops the run under way and keeps the runs that finished: the table,
// results.csv and results.json of those (it used to end at once and write nothing).
TEST_F(herd_cli, an_interrupted_bench_writes_the_runs_it_finished) {
  const auto out = path("bench");
  // An earlier bench's plot there would not match these results: it goes.
  std::filesystem::create_directories(out);
  std::ofstream(out + "/accuracy-none.png") << "an earlier plot";
  background_process bench({HERD_BINARY, "bench", "--data.dataset=synthetic", "--train.workers=2",
                            "--model.hidden=[16]", "--train.epochs=1000", "--train.max-seconds=1",
                            "--algorithms=sync,solo", "--scenarios=none", "--repeat=3", "--out",
                            out},
                           path("bench.log"));
  // The second run starts once the first has finished: interrupt that one.
  for (int wait = 0; wait < 600 && bench.output().find("[2/6]") == std::string::npos; ++wait)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(bench.output().find("[2/6]"), std::string::npos) << bench.output();
  ::kill(bench.pid(), SIGINT);
  EXPECT_EQ(bench.wait(std::chrono::seconds(60)), 130) << bench.output();
  EXPECT_THAT(bench.output(), HasSubstr("interrupted by SIGINT after 1 finished run(s)"));
  std::ifstream json(out + "/results.json");
  ASSERT_TRUE(json.good()) << bench.output();
  const auto results = nlohmann::json::parse(json);
  ASSERT_EQ(results["runs"].size(), 1u);
  EXPECT_EQ(results["runs"][0]["algorithm"], "sync");
  EXPECT_EQ(results["interrupted"], true);
  ASSERT_EQ(results["table"].size(), 1u) << "only the cell that ran";
  EXPECT_EQ(results["table"][0]["runs"], 1) << "of the 3 asked for";
  EXPECT_FALSE(std::filesystem::exists(out + "/accuracy-none.png"));
}

// Runs that train.max-seconds stopped before their epochs are marked: their final accuracies are
// not at equal epochs with the others'. Each run says why it stopped.
TEST_F(herd_cli, bench_marks_the_runs_max_seconds_cut_short) {
  const auto out = path("capped");
  auto result = herd({"bench", "--data.dataset=synthetic", "--train.workers=2",
                      "--model.hidden=[16]", "--train.epochs=100000", "--train.max-seconds=0.3",
                      "--algorithms=sync", "--scenarios=none", "--out", out});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("* train.max-seconds stopped some of its runs"));
  std::ifstream json(out + "/results.json");
  const auto results = nlohmann::json::parse(json);
  EXPECT_EQ(results["runs"][0]["stop_reason"], "max-seconds");
  EXPECT_LT(results["runs"][0]["epochs"].get<double>(), 100000.0);
  EXPECT_EQ(results["table"][0]["cut_short"], 1);
}

TEST_F(herd_cli, bench_writes_its_table_as_csv_json_and_plots) {
  const auto out = path("bench");
  auto result =
      herd({"bench", "--data.dataset=synthetic", "--train.workers=2", "--model.hidden=[16]",
            "--train.epochs=1", "--train.target-accuracy=0.3", "--algorithms=sync,solo",
            "--scenarios=none,random", "--snapshot-ms=20", "--repeat=2", "--out", out});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr(" ms = 4 undelayed step times"));
  std::ifstream csv(out + "/results.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);)
    lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << "a header and one row per scenario and algorithm";
  EXPECT_EQ(lines[0].rfind("scenario,algorithm,seconds_to_target,", 0), 0u);
  EXPECT_EQ(lines[1].rfind("none,sync,", 0), 0u);
  EXPECT_EQ(lines[4].rfind("random,solo,", 0), 0u);
  std::ifstream json(out + "/results.json");
  const auto results = nlohmann::json::parse(json);
  ASSERT_EQ(results["runs"].size(), 8u);
  EXPECT_GT(results["random_delay_ms"].get<double>(), 0.0);
  for (const auto& run : results["runs"]) {
    EXPECT_FALSE(run["accuracy_over_time"].empty()) << run["algorithm"];
    // Each repetition its own seeds, train.seed and imbalance.seed (both 1 here) plus r.
    EXPECT_EQ(run["train_seed"].get<int>(), 1 + run["repetition"].get<int>()) << run;
    EXPECT_EQ(run["imbalance_seed"].get<int>(), 1 + run["repetition"].get<int>()) << run;
  }
  EXPECT_EQ(results["table"][0]["speedup_vs_sync"].get<double>(), 1.0);
  // Times within 20 snapshots (0.4 s at 20 ms) are coarse, and the table says so under it.
  bool coarse = false;
  for (const auto& row : results["table"])
    coarse = coarse ||
             (row["seconds_to_target"].is_number() && row["seconds_to_target"].get<double>() < 0.4);
  EXPECT_EQ(result.output.find("times to the target are read from snapshots every 20 ms "
                               "(--snapshot-ms): those under 0.4 s") != std::string::npos,
            coarse)
      << result.output;
  // The plotted curves against the runs' own reports: every point on a run's own clock (within
  // its wall time), the median, least and greatest of the repetitions begun by then, those that
  // had ended at their final accuracy.
  for (const std::string scenario : {"none", "random"}) {
    for (const std::string algorithm : {"sync", "solo"}) {
      std::vector<nlohmann::json> repetitions;
      for (const auto& run : results["runs"])
        if (run["scenario"] == scenario && run["algorithm"] == algorithm)
          repetitions.push_back(run);
      ASSERT_EQ(repetitions.size(), 2u);
      std::ifstream curve(out + "/curve-" + scenario + "-" + algorithm + ".dat");
      ASSERT_TRUE(curve.good()) << scenario << "/" << algorithm;
      std::string header;
      std::getline(curve, header);
      int points = 0;
      for (double t, mid, low, high, n; curve >> t >> mid >> low >> high >> n; ++points) {
        std::vector<double> values;
        double longest = 0.0;
        for (const auto& run : repetitions) {
          longest = std::max(longest, run["wall_seconds"].get<double>());
          const auto& points_of_run = run["accuracy_over_time"];
          std::optional<double> latest;
          for (const auto& point : points_of_run)
            if (point[0].get<double>() <= t)
              latest = point[1].get<double>();
          if (latest)
            values.push_back(*latest);
        }
        EXPECT_LE(t, longest + 1e-6) << "a point after the runs ended";
        ASSERT_EQ(values.size(), static_cast<std::size_t>(n))
            << scenario << "/" << algorithm << " t=" << t;
        std::sort(values.begin(), values.end());
        EXPECT_NEAR(low, values.front(), 1e-6);
        EXPECT_NEAR(high, values.back(), 1e-6);
        EXPECT_NEAR(mid, values.size() == 2 ? (values[0] + values[1]) / 2 : values[0], 1e-6);
      }
      EXPECT_GT(points, 0) << scenario << "/" << algorithm;
    }
  }
  std::ifstream speedups(out + "/speedup.dat");
  std::string none_row;
  while (std::getline(speedups, none_row) && none_row.rfind('#', 0) == 0)
    continue; // the header
  EXPECT_EQ(none_row.rfind("none 1 1 1 ", 0), 0u) << "sync over itself: " << none_row;
  // The bars are the table's speedups (solo's is the table's second row).
  std::istringstream fields(none_row.substr(none_row.find(' ')));
  double sync_bar = 0.0, sync_low = 0.0, sync_high = 0.0, solo_bar = 0.0;
  fields >> sync_bar >> sync_low >> sync_high >> solo_bar;
  const auto& solo_row = results["table"][1];
  ASSERT_EQ(solo_row["algorithm"], "solo");
  ASSERT_FALSE(solo_row["speedup_vs_sync"].is_null()) << "solo reaches 0.3 in every run";
  EXPECT_NEAR(solo_bar, solo_row["speedup_vs_sync"].get<double>(), 1e-4) << none_row;
  for (const auto& run : results["runs"]) // why each stopped, and where
    EXPECT_EQ(run["stop_reason"], "epochs") << run["algorithm"];
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    EXPECT_GT(std::filesystem::file_size(out + "/accuracy-none.png"), 1000u);
    EXPECT_GT(std::filesystem::file_size(out + "/accuracy-random.png"), 1000u);
    EXPECT_GT(std::filesystem::file_size(out + "/speedup.png"), 1000u);
  } else {
    EXPECT_THAT(result.output, HasSubstr("gnuplot is not installed"));
  }
}

TEST_F(herd_cli, a_metrics_port_in_use_is_refused_before_training) {
  // Hold a listening socket on a port, as another process would.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string port = std::to_string(ntohs(address.sin_port));
  auto args = synthetic_run;
  args.push_back("--metrics.port=" + port);
  auto result = herd(args);
  ::close(holder);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("metrics.port = " + port));
  EXPECT_THAT(result.output, HasSubstr("cannot serve metrics on 127.0.0.1:" + port));
  EXPECT_THAT(result.output, testing::Not(HasSubstr("Herd run summary")));
  auto unbindable = synthetic_run;
  unbindable.insert(unbindable.end(), {"--metrics.port=9", "--metrics.bind=no-such-host.invalid"});
  auto bind_result = herd(unbindable);
  EXPECT_EQ(bind_result.exit_code, 2) << bind_result.output;
  EXPECT_THAT(bind_result.output, HasSubstr("metrics.bind = \"no-such-host.invalid\""));
  EXPECT_THAT(bind_result.output, HasSubstr("does not resolve"));
  auto window = herd({"train", "--metrics.window-seconds=0"});
  EXPECT_EQ(window.exit_code, 2);
  EXPECT_THAT(window.output, HasSubstr("metrics.window-seconds = 0"));
}

TEST_F(herd_cli, unwritable_report_path_is_refused_before_training) {
  auto args = synthetic_run;
  args.insert(args.end(), {"--report", path("missing-dir/report.json")});
  auto result = herd(args);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("missing-dir/report.json"));
  EXPECT_THAT(result.output, HasSubstr("does not exist"));
  EXPECT_THAT(result.output, testing::Not(HasSubstr("Herd run summary")));
  auto directory = herd({"train", "--report", dir_.path().string()});
  EXPECT_EQ(directory.exit_code, 2);
  EXPECT_THAT(directory.output, HasSubstr("is a directory"));
}

TEST_F(herd_cli, config_path_that_is_a_directory_exits_2) {
  auto result = herd({"train", "--config", dir_.path().string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("it is a directory"));
}

TEST_F(herd_cli, a_model_too_large_for_memory_is_refused_before_allocating) {
  auto result = herd({"train", "--data.dataset=synthetic", "--model.hidden=65536,65536"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("model.hidden: the model has"));
  EXPECT_THAT(result.output, HasSubstr("parameters (layer 4, dense 65536, holds 4.3e+09)"));
  EXPECT_THAT(result.output, HasSubstr("GiB"));
  // Few parameters (about 330,000), but batches of 4096 give each 16384 x 28 x 28 values in the
  // first layer: some 200 GiB of activations, named with the layer that gives them.
  auto wide =
      herd({"train", "--data.dataset=synthetic", "--train.workers=1", "--train.batch-size=4096",
            "--model.layers=conv 16384 3 pad 1, maxpool 28, flatten, dense 10"});
  EXPECT_EQ(wide.exit_code, 2) << wide.output;
  EXPECT_THAT(wide.output, HasSubstr("model.layers: 1 worker with batches of 4096 and an "
                                     "evaluator's of 1000 need about"));
  EXPECT_THAT(wide.output, HasSubstr("for activations (layer 1, conv 16384 3x3 pad 1, gives "
                                     "12845056 values per sample)"));
  EXPECT_THAT(wide.output, HasSubstr("a smaller train.batch-size"));
}

// [model] is checked against the data's shape (1x28x28 here) before anything runs.
TEST_F(herd_cli, a_model_that_does_not_fit_the_data_or_an_unknown_preset_exits_2) {
  auto unfit =
      herd({"train", "--data.dataset=synthetic", "--model.layers=dense 64, relu, dense 10"});
  EXPECT_EQ(unfit.exit_code, 2);
  EXPECT_THAT(unfit.output, HasSubstr("herd train: model.layers: layer 1 of 3 (dense 64) is given "
                                      "1x28x28 by the data's samples"));
  auto unknown = herd({"bench", "--data.dataset=synthetic", "--model.preset=resnet"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.output, HasSubstr("unknown preset; the presets are: mlp"));
  auto layers = herd({"train", "--data.dataset=synthetic", "--train.workers=2",
                      "--model.layers=flatten, dense 16, relu, dense 10", "--train.epochs=1"});
  EXPECT_EQ(layers.exit_code, 0) << layers.output;
  EXPECT_THAT(
      layers.output,
      HasSubstr("sequential 1x28x28: flatten, dense 16, relu, dense 10 (12730 parameters)"));
}

// --report over the run's own training data replaced it with JSON, and the next run failed on
// "bad magic": a report never replaces a data file the run names, nor any file that holds data.
TEST_F(herd_cli, a_report_never_replaces_the_runs_data_nor_any_data_file) {
  const auto write_bytes = [this](const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  };
  const auto features = write_bytes("x.npy", std::string("\x93NUMPY\x01\x00", 8) + "rest");
  const auto idx = write_bytes("images-idx3-ubyte", std::string("\x00\x00\x08\x03", 4) + "rest");
  const auto gzipped = write_bytes("labels.gz", std::string("\x1f\x8b\x08", 3) + "rest");
  auto named = herd({"train", "--data.dataset=npy", "--data.train-features=" + features,
                     "--data.train-labels=y.npy", "--data.test-features=tx.npy",
                     "--data.test-labels=ty.npy", "--report", features});
  EXPECT_EQ(named.exit_code, 2) << named.output;
  EXPECT_THAT(named.output, HasSubstr("--report " + features +
                                      " is the run's data.train-features "
                                      "file " +
                                      features + ": the report would replace it"));
  const std::vector<std::pair<std::string, std::string>> held{
      {features, "holds a NumPy array (.npy)"},
      {idx, "holds an IDX dataset"},
      {gzipped, "holds gzip-compressed data"}};
  for (const auto& [file, what] : held) {
    auto over = herd({"train", "--data.dataset=synthetic", "--report", file});
    EXPECT_EQ(over.exit_code, 2) << over.output;
    EXPECT_THAT(over.output, HasSubstr("--report " + file + " " + what +
                                       ": the report would replace it; name another file"));
  }
  EXPECT_EQ(herd::testing::read_file(features), std::string("\x93NUMPY\x01\x00", 8) + "rest");
  EXPECT_EQ(herd::testing::read_file(idx), std::string("\x00\x00\x08\x03", 4) + "rest");
}

TEST_F(herd_cli, a_diverging_run_stops_with_an_error_and_exit_1) {
  const auto report_path = path("diverged.json");
  auto result = herd({"train", "--data.dataset=synthetic", "--train.lr=1000", "--train.epochs=50",
                      "--train.target-accuracy=0.5", "--report", report_path});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("training diverged"));
  EXPECT_THAT(result.output, HasSubstr("try a smaller train.lr, and check that the features are "
                                       "scaled"));
  EXPECT_THAT(result.output, Not(HasSubstr("-nan")));
  // Parameters that are not numbers have no accuracy to report (an argmax over NaN scores would
  // give the share of one class).
  EXPECT_THAT(result.output, HasSubstr("none (the parameters are not numbers: the run diverged)"));
  std::ifstream in(report_path);
  const auto report = nlohmann::json::parse(in);
  EXPECT_TRUE(report["final_test_accuracy"].is_null()) << report.dump(2);
  EXPECT_TRUE(report["final_test_loss"].is_null()) << report.dump(2);
  // Nor do the evaluations of such parameters, in the log or the report.
  for (const auto& evaluation : report["evaluations"]) {
    if (evaluation["test_loss"].is_null()) {
      EXPECT_TRUE(evaluation["test_accuracy"].is_null()) << report.dump(2);
    }
  }
  EXPECT_THAT(result.output, Not(HasSubstr("test loss nan")));
  // and reach no target: a NaN accuracy is not above it (herd bench would rank the run fastest).
  EXPECT_TRUE(report["time_to_target_seconds"].is_null()) << report.dump(2);
  EXPECT_EQ(report["stop_reason"], "error");
}

// A report whose directory went away during the run is not lost: it is kept in the temporary
// directory, and the message names --report and where it went.
TEST_F(herd_cli, a_report_that_cannot_be_written_at_the_end_is_kept_elsewhere) {
  const auto gone = path("gone");
  std::filesystem::create_directories(gone);
  auto herd = start_herd({"train", "--data.dataset=synthetic", "--train.epochs=100000",
                          "--model.hidden=[16]", "--train.max-seconds=3",
                          "--train.eval-every=1000000", "--report", gone + "/r.json"},
                         path("gone.log"));
  ASSERT_TRUE(herd->wait_for_output("epoch", 120s)) << herd->output();
  std::filesystem::remove_all(gone);
  EXPECT_EQ(herd->wait(120s), std::optional<int>(1)) << herd->output();
  const auto output = herd->output();
  EXPECT_THAT(output, HasSubstr("--report " + gone + "/r.json"));
  std::smatch kept;
  ASSERT_TRUE(std::regex_search(output, kept, std::regex("the report is saved in (\\S+) instead")))
      << output;
  std::ifstream in(kept[1].str());
  ASSERT_TRUE(in.good()) << kept[1].str();
  EXPECT_EQ(nlohmann::json::parse(in)["stop_reason"], "max-seconds");
  std::filesystem::remove(kept[1].str());
}

TEST_F(herd_cli, ctrl_c_stops_cleanly_with_a_summary_and_report) {
  const auto report_path = path("interrupted.json");
  auto herd = start_herd({"train", "--data.dataset=synthetic", "--train.epochs=100000",
                          "--model.hidden=[32]", "--report", report_path},
                         path("interrupted.log"));
  // Once the run is going: a Ctrl-C before it starts ends herd without a run (tested below).
  ASSERT_TRUE(herd->wait_for_output("evaluation at round", 120s)) << herd->output();
  ::kill(herd->pid(), SIGINT);
  EXPECT_EQ(herd->wait(120s), std::optional<int>(130))
      << "SIGINT killed herd instead of stopping it\n"
      << herd->output();
  const auto output = herd->output();
  EXPECT_THAT(output, HasSubstr("interrupted"));
  EXPECT_THAT(output, HasSubstr("Herd run summary"));
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good());
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["stop_reason"], "interrupted");
  EXPECT_GT(report["rounds"].get<int>(), 0);
}

TEST_F(herd_cli, a_stop_signal_before_the_run_ends_herd_with_130_and_no_training) {
  // Sent the moment the handlers are in: during argument parsing, configuration or loading. No
  // run starts, whatever the command and the signal; before, the train run went on to its end.
  const auto report_path = path("never.json");
  const std::string no_coordinator =
      "--coordinator=127.0.0.1:" + std::to_string(herd::testing::free_loopback_port());
  const std::vector<std::vector<std::string>> commands{
      {"train", "--data.dataset=synthetic", "--train.epochs=100000", "--report", report_path},
      {"coordinator", "--listen=127.0.0.1:0", "--data.dataset=synthetic", "--report", report_path},
      {"node", no_coordinator}};
  for (const auto& args : commands) {
    for (const auto& [signal, name] : stop_signals) {
      SCOPED_TRACE("herd " + args.front() + ", " + name);
      auto herd = start_herd(args, path("before.log"));
      ASSERT_TRUE(wait_until_catching(herd->pid(), signal, 60s)) << herd->output();
      ::kill(herd->pid(), signal);
      const auto status = herd->wait(60s);
      const auto output = herd->output();
      EXPECT_EQ(status, std::optional<int>(130)) << output;
      EXPECT_THAT(output, testing::Not(HasSubstr("Herd run summary")));
      EXPECT_FALSE(std::filesystem::exists(report_path));
      if (args.front() == "train") {
        EXPECT_THAT(output, HasSubstr(std::string("herd train: interrupted by ") + name +
                                      " before the run started; nothing was trained"));
        EXPECT_THAT(output, testing::Not(HasSubstr(" x batch "))) << "no session started";
      }
    }
  }
}

TEST_F(herd_cli, sighup_mid_run_stops_with_a_summary_and_report) {
  // A closed terminal or ssh session: before, SIGHUP killed herd with neither.
  const auto report_path = path("hangup.json");
  auto herd = start_herd({"train", "--data.dataset=synthetic", "--train.epochs=100000",
                          "--model.hidden=[32]", "--report", report_path},
                         path("hangup.log"));
  ASSERT_TRUE(herd->wait_for_output("evaluation at round", 120s)) << herd->output();
  ::kill(herd->pid(), SIGHUP);
  EXPECT_EQ(herd->wait(120s), std::optional<int>(130)) << herd->output();
  const auto output = herd->output();
  EXPECT_THAT(output, HasSubstr("interrupted by SIGHUP: stopping after the rounds in flight, or "
                                "the final evaluation once training has ended (a second SIGHUP "
                                "aborts)"));
  EXPECT_THAT(output, HasSubstr("Herd run summary"));
  EXPECT_THAT(output, HasSubstr("report written to " + report_path));
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good());
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["stop_reason"], "interrupted");
  EXPECT_GT(report["rounds"].get<int>(), 0);
  EXPECT_THAT(temporary_files_in(dir_.path()), testing::IsEmpty());
}

TEST_F(herd_cli, sigterm_during_a_long_injected_delay_stops_promptly_with_a_summary_and_report) {
  // Every step delays one of the two workers by a minute (the most imbalance.delay-ms allows);
  // the stop must not wait it out.
  const auto report_path = path("terminated.json");
  auto herd = start_herd({"train", "--data.dataset=synthetic", "--train.workers=2",
                          "--model.hidden=[32]", "--train.epochs=100000", "--imbalance.kind=random",
                          "--imbalance.delay-ms=60000", "--report", report_path},
                         path("terminated.log"));
  ASSERT_TRUE(herd->wait_for_output("] epoch ", 120s)) << herd->output(); // the run is going
  std::this_thread::sleep_for(200ms); // well into the first delay
  const auto signalled = std::chrono::steady_clock::now();
  ::kill(herd->pid(), SIGTERM);
  // A bound on a hang (the delay is 60 s), not a speed claim.
  EXPECT_EQ(herd->wait(30s), std::optional<int>(130)) << herd->output();
  EXPECT_LT(seconds_since(signalled), 30.0);
  const auto output = herd->output();
  EXPECT_THAT(output, HasSubstr("interrupted by SIGTERM"));
  EXPECT_THAT(output, HasSubstr("Herd run summary"));
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good());
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["stop_reason"], "interrupted");
  EXPECT_THAT(report["imbalance"].get<std::string>(), HasSubstr("60000 ms"));
}

TEST_F(herd_cli, max_seconds_ends_a_run_whose_injected_delay_outlasts_it) {
  // Before, the run waited out the 60 s delay of the step under way.
  const auto report_path = path("bounded.json");
  const auto start = std::chrono::steady_clock::now();
  auto result =
      herd({"train", "--data.dataset=synthetic", "--train.workers=2", "--model.hidden=[32]",
            "--train.epochs=100000", "--train.max-seconds=3", "--imbalance.kind=random",
            "--imbalance.delay-ms=60000", "--report", report_path});
  const double seconds = seconds_since(start);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_LT(seconds, 30.0) << "a bound on a hang (the delay is 60 s), not a speed claim";
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good());
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["stop_reason"], "max-seconds");
  EXPECT_LT(report["wall_seconds"].get<double>(), 30.0);
  // The delay cut short counts as the time it really took, a part of the 60 s.
  for (const auto& worker : report["per_worker"])
    EXPECT_LT(worker["compute_seconds"].get<double>(), 30.0) << worker;
}

TEST_F(herd_cli, a_report_path_naming_the_config_file_is_refused_and_the_file_kept) {
  const auto config = path("run.ini");
  const std::string settings = "[data]\ndataset = \"synthetic\"\n[train]\nworkers = 2\n";
  std::ofstream(config) << settings;
  for (const auto& report : {config, (dir_.path() / "." / "run.ini").string()}) {
    auto result = herd({"train", "--config", config, "--report", report});
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_THAT(result.output, HasSubstr("--report " + report + " is the --config file " + config));
    EXPECT_THAT(result.output, testing::Not(HasSubstr("Herd run summary")));
  }
  std::ifstream in(config);
  std::ostringstream kept;
  kept << in.rdbuf();
  EXPECT_EQ(kept.str(), settings) << "the settings file must not be touched";
}

// Settings another setting leaves unused were accepted without a word; they are said (not
// refused: one file serves several runs), naming where each was given.
TEST_F(herd_cli, settings_another_one_leaves_unused_are_named_at_the_start) {
  const auto result =
      herd({"train", "--data.dataset=synthetic", "--model.hidden=[8]", "--train.workers=2",
            "--train.epochs=1", "--train.eval-every=5", "--train.eval-every-epochs=1",
            "--train.device=3", "--data.max-bytes=1000000000", "--metrics.bind=999.1.1.1",
            "--imbalance.delay-ms=50", "--imbalance.factor=3", "--checkpoint.every-rounds=10",
            "--data.max-texts=500"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("note: imbalance.delay-ms (command line) is not used: only "
                                       "imbalance.kind = random reads it, and this run's is none"));
  EXPECT_THAT(result.output, HasSubstr("note: imbalance.factor (command line) is not used: only "
                                       "imbalance.kind = persistent reads it"));
  EXPECT_THAT(result.output, HasSubstr("note: checkpoint.every-rounds (command line) is not used: "
                                       "no checkpoint.dir is set"));
  EXPECT_THAT(result.output, HasSubstr("note: data.max-texts (command line) is not used: it is for "
                                       "data.dataset = fortunes, and this run's is synthetic"));
  // A file's scenario turned off on the command line for a baseline run goes unsaid.
  const auto scenario = path("scenario.ini");
  std::ofstream(scenario) << "[imbalance]\nkind = \"random\"\nk = 1\ndelay-ms = 6\n";
  const auto baseline =
      herd({"train", "--config", scenario, "--data.dataset=synthetic", "--model.hidden=[8]",
            "--train.workers=2", "--train.epochs=1", "--imbalance.kind=none"});
  ASSERT_EQ(baseline.exit_code, 0) << baseline.output;
  EXPECT_THAT(baseline.output, Not(HasSubstr("is not used")));
  EXPECT_THAT(result.output, HasSubstr("note: metrics.bind (command line) is not used: "
                                       "metrics.port = 0 serves no metrics"));
  EXPECT_THAT(result.output, HasSubstr("note: train.eval-every = 5 (command line) is not used: "
                                       "train.eval-every-epochs sets when the evaluations come"));
  EXPECT_THAT(result.output, HasSubstr("note: train.device = 3 (command line) is not used: it "
                                       "picks a GPU, and train.backend = cpu"));
  EXPECT_THAT(result.output, HasSubstr("note: data.max-bytes (command line) is not used: "
                                       "data.dataset = synthetic is generated"));
  // Left at their defaults, nothing is said. (The dataset's notes name the command too.)
  const auto plain =
      herd({"train", "--data.dataset=synthetic", "--model.hidden=[8]", "--train.workers=2",
            "--train.epochs=1", "--train.eval-every-epochs=1", "--data.validation-fraction=0.1"});
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_THAT(plain.output, Not(HasSubstr("is not used")));
  EXPECT_THAT(plain.output, HasSubstr("herd train: validation: 600 samples held out"));
  // Nor when a file writes every key at its default, as a report's config and --print-config do.
  const auto printed = herd({"train", "--print-config"});
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  const auto every_key = path("every-key.ini");
  std::ofstream(every_key) << printed.output;
  const auto read_back =
      herd({"train", "--config", every_key, "--data.dataset=synthetic", "--model.hidden=[8]",
            "--train.workers=2", "--train.epochs=1"});
  ASSERT_EQ(read_back.exit_code, 0) << read_back.output;
  EXPECT_THAT(read_back.output, Not(HasSubstr("is not used")));
}

TEST_F(herd_cli, a_report_path_under_proc_is_refused_before_training) {
  // /proc/self is a directory root may write to by its mode bits, yet no file can be made there:
  // before, this was found only after the run (which then failed with exit status 1).
  auto args = synthetic_run;
  args.insert(args.end(), {"--report", "/proc/self/nope"});
  auto result = herd(args);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr("--report /proc/self/nope: cannot create a file in /proc/self"));
  EXPECT_THAT(result.output, testing::Not(HasSubstr(" x batch "))) << "no session started";
  EXPECT_THAT(result.output, testing::Not(HasSubstr("Herd run summary")));
}

} // namespace

namespace {

// Checkpoints as a user meets them: Ctrl-C writes one, --resume goes on from it and says what
// changed, and a damaged one or one of another shape ends herd with 2 naming the file and why.
// herd evaluate on a run's final checkpoint measures what the run's final evaluation measured.
TEST_F(herd_cli, evaluate_measures_a_checkpoints_model_overall_and_per_class) {
  const auto checkpoints = path("ckpt");
  auto run =
      herd({"train", "--data.dataset=synthetic", "--model.hidden=[32]", "--train.workers=2",
            "--train.epochs=1", "--checkpoint.dir=" + checkpoints, "--report", path("run.json")});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream report_file(path("run.json"));
  const auto report = nlohmann::json::parse(report_file);
  char accuracy[32];
  std::snprintf(accuracy, sizeof accuracy, "%.4f", report["final_test_accuracy"].get<double>());

  auto evaluated = herd({"evaluate", "--checkpoint", checkpoints});
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  EXPECT_THAT(evaluated.output, HasSubstr(std::string("  test accuracy   ") + accuracy + "\n"));
  EXPECT_THAT(evaluated.output, HasSubstr("of a sync run with 2 workers"));
  EXPECT_THAT(evaluated.output, HasSubstr("flatten, dense 32, relu, dense 10"));
  // One row per class of the synthetic problem: its label, accuracy, precision and samples.
  const std::regex class_row(R"( +[0-9] +[01]\.[0-9]{4} +([01]\.[0-9]{4}|-) +[0-9]+)");
  std::istringstream lines(evaluated.output);
  int rows = 0;
  for (std::string line; std::getline(lines, line);)
    rows += std::regex_match(line, class_row) ? 1 : 0;
  EXPECT_EQ(rows, 10) << evaluated.output;

  EXPECT_EQ(herd({"evaluate"}).exit_code, 2);
  auto missing = herd({"evaluate", "--checkpoint", path("nothing-here")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr(path("nothing-here")));
  auto not_data = herd({"evaluate", "--checkpoint", checkpoints, "--train.lr=0.1"});
  EXPECT_EQ(not_data.exit_code, 2);
  EXPECT_THAT(not_data.output, HasSubstr("herd evaluate does not use this setting"));
  // data.* says where the run's dataset is now, not which: another is prepared otherwise.
  auto other_data = herd({"evaluate", "--checkpoint", checkpoints, "--data.dataset=fashion-mnist"});
  EXPECT_EQ(other_data.exit_code, 2) << other_data.output;
  EXPECT_THAT(other_data.output, HasSubstr("data.dataset = fashion-mnist (command line): the "
                                           "checkpoint's run trained on synthetic"));
  // That reason alone: merged first, the settings of .npy files were refused for the training
  // files they lacked, which evaluate never reads.
  auto npy = herd({"evaluate", "--checkpoint", checkpoints, "--data.dataset=npy",
                   "--data.test-features=x.npy", "--data.test-labels=y.npy"});
  EXPECT_EQ(npy.exit_code, 2) << npy.output;
  EXPECT_THAT(npy.output, HasSubstr("data.dataset = npy (command line): the checkpoint's run "
                                    "trained on synthetic"));
  EXPECT_THAT(npy.output, Not(HasSubstr("must name the .npy file"))) << npy.output;
  // A report never replaces a checkpoint (the one it reads, a tab completion away).
  std::string newest;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints))
    newest = std::max(newest, entry.path().string());
  const auto before = herd::testing::read_file(newest);
  auto over = herd({"evaluate", "--checkpoint", newest, "--report", newest});
  EXPECT_EQ(over.exit_code, 2) << over.output;
  EXPECT_THAT(over.output,
              HasSubstr("--report " + newest + " is a checkpoint: the report would replace it"));
  auto resumed_over = herd({"train", "--data.dataset=synthetic", "--model.hidden=[32]",
                            "--train.workers=2", "--resume", newest, "--report", newest});
  EXPECT_EQ(resumed_over.exit_code, 2) << resumed_over.output;
  EXPECT_THAT(resumed_over.output, HasSubstr(" is a checkpoint: the report would replace it"));
  EXPECT_EQ(herd::testing::read_file(newest), before) << "the checkpoint must not be touched";
  {
    std::ofstream garbage(path("garbage.ckpt"));
    garbage << "not a checkpoint";
  }
  auto damaged = herd({"evaluate", "--checkpoint", path("garbage.ckpt")});
  EXPECT_EQ(damaged.exit_code, 2);
  EXPECT_THAT(damaged.output, HasSubstr(path("garbage.ckpt")));
  // A coordinator resumes only what a coordinator wrote: herd train's workers are in the file, and
  // no node holds a part of it.
  const std::vector<std::string> coordinator{"coordinator",         "--listen",
                                             "127.0.0.1:0",         "--data.dataset=synthetic",
                                             "--model.hidden=[32]", "--resume"};
  auto args = coordinator;
  args.push_back(checkpoints);
  auto one_process = herd(args);
  EXPECT_EQ(one_process.exit_code, 2) << one_process.output;
  EXPECT_THAT(one_process.output, HasSubstr("herd coordinator: cannot resume from " + checkpoints));
  EXPECT_THAT(one_process.output,
              HasSubstr("was written by herd train (one process): resume it with herd train "
                        "--resume"));
  args.back() = path("garbage.ckpt");
  auto garbage = herd(args);
  EXPECT_EQ(garbage.exit_code, 2) << garbage.output;
  EXPECT_THAT(garbage.output, HasSubstr(path("garbage.ckpt") + ": not a Herd checkpoint"));
}

// Resumed from a checkpoint that has trained train.epochs already, a run evaluates and ends: it
// says so, rather than showing "epoch 2.50/1" and ending.
// A run without checkpoint.dir says its model is not saved; one resumed without it saves where
// it resumed from (it used to train on and save nothing), unless checkpoint.dir is set, to ""
// too, and a file given to --resume saves beside it.
TEST_F(herd_cli, a_resumed_run_saves_where_it_resumed_from_unless_told_otherwise) {
  const auto checkpoints = path("kept");
  const std::vector<std::string> run = {"train", "--data.dataset=synthetic", "--model.hidden=[8]",
                                        "--train.workers=2", "--train.epochs=1"};
  auto first = run;
  first.push_back("--checkpoint.dir=" + checkpoints);
  const auto trained = herd(first);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_THAT(trained.output, Not(HasSubstr("model not saved")));
  const auto count = [&checkpoints] {
    return std::distance(std::filesystem::directory_iterator(checkpoints),
                         std::filesystem::directory_iterator());
  };
  ASSERT_EQ(count(), 1);

  auto resumed = run;
  resumed.back() = "--train.epochs=2";
  resumed.insert(resumed.end(), {"--resume", checkpoints});
  const auto going_on = herd(resumed);
  EXPECT_EQ(going_on.exit_code, 0) << going_on.output;
  EXPECT_THAT(going_on.output, HasSubstr("note: checkpoint.dir = \"" + checkpoints +
                                         "\", where --resume found the checkpoint"));
  EXPECT_THAT(going_on.output, Not(HasSubstr("model not saved")));
  EXPECT_EQ(count(), 2) << going_on.output;

  const auto newest = [&checkpoints] {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(checkpoints))
      names.push_back(entry.path().string());
    return *std::max_element(names.begin(), names.end());
  };
  resumed[4] = "--train.epochs=3";
  resumed.back() = newest();
  const auto from_file = herd(resumed);
  EXPECT_EQ(from_file.exit_code, 0) << from_file.output;
  EXPECT_EQ(count(), 3) << from_file.output;

  resumed[4] = "--train.epochs=4";
  resumed.back() = newest();
  resumed.push_back("--checkpoint.dir=");
  const auto unsaved = herd(resumed);
  EXPECT_EQ(unsaved.exit_code, 0) << unsaved.output;
  EXPECT_THAT(unsaved.output, Not(HasSubstr("where --resume found")));
  EXPECT_THAT(unsaved.output, HasSubstr("model not saved: set checkpoint.dir to keep it"));
  EXPECT_EQ(count(), 3) << unsaved.output;

  // A file that is no checkpoint (a report given by mistake) is refused without a note that the
  // run would save beside it.
  std::ofstream(path("report.json")) << "{}\n";
  resumed.pop_back();
  resumed.back() = path("report.json");
  const auto report = herd(resumed);
  EXPECT_EQ(report.exit_code, 2) << report.output;
  EXPECT_THAT(report.output, HasSubstr("not a Herd checkpoint"));
  EXPECT_THAT(report.output, Not(HasSubstr("where --resume found")));

  // Nor is a checkpoint of another shape: the run that would save there never starts.
  resumed.back() = newest();
  resumed[3] = "--train.workers=3";
  const auto other_shape = herd(resumed);
  EXPECT_EQ(other_shape.exit_code, 2) << other_shape.output;
  EXPECT_THAT(other_shape.output, HasSubstr("another shape"));
  EXPECT_THAT(other_shape.output, Not(HasSubstr("where --resume found")));
}

// --init-from: a new run (another algorithm and worker count) from a checkpoint's parameters.
// With a learning rate too small to move them, it ends where the checkpoint's run did; without
// --init-from, near chance.
TEST_F(herd_cli, init_from_starts_a_new_run_from_a_checkpoints_parameters) {
  const auto checkpoints = path("trained");
  const auto accuracy_of = [this](const std::string& name) {
    std::ifstream in(path(name));
    return nlohmann::json::parse(in)["final_test_accuracy"].get<double>();
  };
  auto trained = herd({"train", "--data.dataset=synthetic", "--model.hidden=[16]",
                       "--train.workers=2", "--train.epochs=2", "--checkpoint.dir=" + checkpoints,
                       "--report", path("trained.json")});
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const double reached = accuracy_of("trained.json");
  ASSERT_GT(reached, 0.5) << trained.output;

  const std::vector<std::string> still = {"train",
                                          "--data.dataset=synthetic",
                                          "--model.hidden=[16]",
                                          "--train.workers=4",
                                          "--train.algorithm=solo",
                                          "--train.epochs=1",
                                          "--train.lr=1e-9"};
  auto from_it = still;
  from_it.insert(from_it.end(), {"--report", path("from.json"), "--init-from", checkpoints});
  auto started = herd(from_it);
  ASSERT_EQ(started.exit_code, 0) << started.output;
  EXPECT_THAT(started.output, HasSubstr("herd train: starting from " + checkpoints + "/"));
  EXPECT_THAT(started.output, HasSubstr("optimizer state from zero, round 0"));
  EXPECT_NEAR(accuracy_of("from.json"), reached, 0.02) << started.output;
  auto fresh = still;
  fresh.insert(fresh.end(), {"--report", path("fresh.json")});
  ASSERT_EQ(herd(fresh).exit_code, 0);
  EXPECT_LT(accuracy_of("fresh.json"), 0.5);

  // Refused: with --resume; a checkpoint of another model; and a resume of another shape points
  // to --init-from.
  auto both = herd({"train", "--data.dataset=synthetic", "--model.hidden=[16]", "--resume",
                    checkpoints, "--init-from", checkpoints});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.output, HasSubstr("--resume and --init-from exclude each other"));
  auto other_model = herd({"train", "--data.dataset=synthetic", "--model.hidden=[8]",
                           "--train.epochs=1", "--init-from", checkpoints});
  EXPECT_EQ(other_model.exit_code, 2) << other_model.output;
  EXPECT_THAT(other_model.output, HasSubstr("herd train: --init-from " + checkpoints + "/"));
  auto reshaped = herd({"train", "--data.dataset=synthetic", "--model.hidden=[16]",
                        "--train.workers=4", "--train.epochs=3", "--resume", checkpoints});
  EXPECT_EQ(reshaped.exit_code, 2) << reshaped.output;
  EXPECT_THAT(reshaped.output, HasSubstr("use --init-from " + checkpoints));
  // Without --config the reason may be settings left out: the checkpoint's are not read back.
  EXPECT_THAT(reshaped.output, HasSubstr("herd train: the checkpoint's settings are not read "
                                         "back: to go on with its run, give this one the same "
                                         "settings"));
  const auto settings = path("reshaped.ini");
  std::ofstream(settings) << "[train]\nworkers = 4\n";
  auto from_file = herd({"train", "--config", settings, "--data.dataset=synthetic",
                         "--model.hidden=[16]", "--train.epochs=3", "--resume", checkpoints});
  EXPECT_EQ(from_file.exit_code, 2) << from_file.output;
  EXPECT_THAT(from_file.output, Not(HasSubstr("are not read back")));
}

TEST_F(herd_cli, a_resume_with_no_epoch_left_says_the_run_trains_no_further) {
  const auto checkpoints = path("done");
  const std::vector<std::string> run = {"train",
                                        "--data.dataset=synthetic",
                                        "--model.hidden=[8]",
                                        "--train.workers=2",
                                        "--train.epochs=1",
                                        "--checkpoint.dir=" + checkpoints};
  ASSERT_EQ(herd(run).exit_code, 0);
  auto again = run;
  again.back() = "--checkpoint.dir=" + path("again");
  again.insert(again.end(), {"--resume", checkpoints});
  const auto resumed = herd(again);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("the checkpoint is at epoch 1, and train.epochs = 1: the "
                                        "run trains no further (raise train.epochs to go on)"));
  // Nor does it write a copy of the checkpoint it resumed from, which would push an older one
  // out of checkpoint.keep.
  EXPECT_THAT(resumed.output, HasSubstr("no final checkpoint: the newest, the checkpoint it "
                                        "resumed from, holds this state"));
  EXPECT_FALSE(std::filesystem::exists(path("again")) && !std::filesystem::is_empty(path("again")))
      << resumed.output;
  // Nor past train.max-seconds: a run stopped by its time limit, resumed with a smaller one, used
  // to train another quarter second (a check period) before it stopped.
  std::vector<std::string> timed = {"train",
                                    "--data.dataset=synthetic",
                                    "--model.hidden=[8]",
                                    "--train.workers=2",
                                    "--train.epochs=1000",
                                    "--train.max-seconds=1",
                                    "--checkpoint.dir=" + path("timed")};
  ASSERT_EQ(herd(timed).exit_code, 0);
  timed.back() = "--checkpoint.dir=" + path("timed-again");
  timed[5] = "--train.max-seconds=0.5";
  timed.insert(timed.end(), {"--resume", path("timed"), "--report", path("timed.json")});
  const auto out_of_time = herd(timed);
  EXPECT_EQ(out_of_time.exit_code, 0) << out_of_time.output;
  EXPECT_THAT(out_of_time.output, HasSubstr("train.max-seconds = 0.5: the run trains no further "
                                            "(raise train.max-seconds to go on)"));
  std::smatch at;
  ASSERT_TRUE(std::regex_search(out_of_time.output, at,
                                std::regex(R"(resuming from .* \(round ([0-9]+),)")))
      << out_of_time.output;
  std::ifstream report_file(path("timed.json"));
  const auto report = nlohmann::json::parse(report_file);
  EXPECT_EQ(report["stop_reason"], "max-seconds");
  // The rounds in flight at the checkpoint finish; none starts.
  EXPECT_LE(report["rounds"].get<std::uint64_t>(), std::stoull(at[1].str()) + 2)
      << out_of_time.output;
}

// An epoch takes whole batches from equal shards: with many workers and few samples each it
// leaves out much of the training set, and herd train says how much before it starts.
TEST_F(herd_cli, an_epoch_that_leaves_out_much_of_the_data_is_noted) {
  auto many = herd({"train", "--data.dataset=synthetic", "--model.hidden=[8]", "--train.workers=64",
                    "--train.batch-size=64", "--train.epochs=1"});
  ASSERT_EQ(many.exit_code, 0) << many.output;
  EXPECT_THAT(many.output,
              HasSubstr("note: an epoch takes 4096 of the 6000 training samples (68%): each of "
                        "the 64 workers' shards of 93 samples gives 1 whole batch(es) of 64"));
  auto few = herd({"train", "--data.dataset=synthetic", "--model.hidden=[8]", "--train.workers=2",
                   "--train.epochs=1"});
  ASSERT_EQ(few.exit_code, 0) << few.output;
  EXPECT_THAT(few.output, Not(HasSubstr("an epoch takes"))); // 5952 of 6000
}

// comm.bucket-mb where it changes nothing (an algorithm that exchanges models) is said, not
// refused; where it works (sync, and the partial algorithms) the start says where the gradient is
// cut, and the summary counts the rounds that began while a member's backward still ran.
TEST_F(herd_cli, gradient_buckets_are_counted_where_rounds_reduce_gradients_and_noted_elsewhere) {
  auto preduce =
      herd({"train", "--data.dataset=synthetic", "--model.hidden=[8]", "--train.workers=2",
            "--train.epochs=1", "--train.algorithm=preduce", "--comm.bucket-mb=1"});
  ASSERT_EQ(preduce.exit_code, 0) << preduce.output;
  EXPECT_THAT(preduce.output,
              HasSubstr("herd train: note: comm.bucket-mb changes nothing under train.algorithm = "
                        "preduce: only the algorithms whose rounds reduce gradients (sync, solo, "
                        "majority, quorum) begin a round while backward runs"));
  EXPECT_THAT(preduce.output, Not(HasSubstr("gradient buckets")));
  EXPECT_THAT(preduce.output, Not(HasSubstr("cuts the gradient")));
  // sync: 784-64-64-10 (55,050 floats) in buckets of 4 KiB, cut where the second layer's first
  // whole block begins (51,200); solo: 784-1024-10, whose last layer's 10,250 floats are fewer
  // than 1 MiB.
  const std::map<std::string, std::pair<std::string, std::string>> runs = {
      {"sync",
       {"--model.hidden=[64,64]",
        "herd train: note: comm.bucket-mb = 0.004 cuts the gradient of 55050 floats where the "
        "model's layers begin into 2 buckets, reduced from its end as backward finishes them: "
        "3850, 51200 floats"}},
      {"solo",
       {"--model.hidden=[1024]",
        "herd train: note: comm.bucket-mb = 1 cuts the gradient of 814090 floats where the "
        "model's layers begin into 1 bucket: the layers that backward finishes before the first "
        "hold fewer floats than that"}}};
  for (const auto& [algorithm, expected] : runs) {
    auto run = herd({"train", "--data.dataset=synthetic", expected.first, "--train.workers=2",
                     "--train.epochs=1", "--train.algorithm=" + algorithm, "--imbalance.kind=none",
                     algorithm == "sync" ? "--comm.bucket-mb=0.004" : "--comm.bucket-mb=1"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_THAT(run.output, Not(HasSubstr("comm.bucket-mb changes nothing")));
    EXPECT_THAT(run.output, HasSubstr(expected.second)) << algorithm;
    EXPECT_TRUE(std::regex_search(
        run.output, std::regex("gradient buckets +[1-9][0-9]* of [0-9]+ rounds began while a "
                               "member's backward still ran")))
        << algorithm << ": " << run.output;
  }
}

// herd predict gives, for every sample of a .npy file, the probabilities whose argmax is what
// herd evaluate scores: on the run's own test set written as .npy, the predicted classes reach
// exactly evaluate's accuracy; CSV (file or stdout) and .npy outputs hold the same values.
TEST_F(herd_cli, predict_gives_the_probabilities_that_evaluate_scores) {
  const auto checkpoints = path("ckpt");
  auto run = herd({"train", "--data.dataset=synthetic", "--model.hidden=[32]", "--train.workers=2",
                   "--train.epochs=1", "--train.seed=5", "--checkpoint.dir=" + checkpoints});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto evaluated = herd({"evaluate", "--checkpoint", checkpoints});
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  std::smatch found;
  ASSERT_TRUE(std::regex_search(evaluated.output, found, std::regex("test accuracy   ([0-9.]+)")));
  const std::string evaluate_accuracy = found[1];

  // The test set herd train drew for data.dataset = synthetic with this seed.
  const auto split = herd::models::make_synthetic_split(6000, 1000, 784, 10, 5);
  const auto& test = split.test;
  std::vector<float> features(test.images.data(), test.images.data() + test.images.size());
  herd::testing::write_npy(path("samples.npy"), "<f4", {test.size(), 784}, features);

  auto as_csv = herd({"predict", "--checkpoint", checkpoints, "--input", path("samples.npy"),
                      "--output", path("probabilities.csv")});
  ASSERT_EQ(as_csv.exit_code, 0) << as_csv.output;
  EXPECT_THAT(as_csv.output, HasSubstr("1000 samples of " + path("samples.npy")));
  EXPECT_THAT(as_csv.output, HasSubstr("the workers' last parameters"));
  std::ifstream csv_file(path("probabilities.csv"));
  std::stringstream csv_text;
  csv_text << csv_file.rdbuf();
  std::istringstream lines(csv_text.str());
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "class_0,class_1,class_2,class_3,class_4,class_5,class_6,class_7,class_8,"
                  "class_9,predicted");
  std::vector<float> from_csv;
  std::size_t rows = 0;
  std::size_t correct = 0;
  for (; std::getline(lines, line); ++rows) {
    std::istringstream cells(line);
    std::vector<double> row;
    for (std::string cell; std::getline(cells, cell, ',');)
      row.push_back(std::stod(cell));
    ASSERT_EQ(row.size(), 11u) << line;
    double sum = 0.0;
    for (int c = 0; c < 10; ++c) {
      sum += row[c];
      from_csv.push_back(static_cast<float>(row[c]));
    }
    EXPECT_NEAR(sum, 1.0, 1e-4) << line;
    const auto predicted = static_cast<int>(row[10]);
    EXPECT_EQ(predicted, std::max_element(row.begin(), row.begin() + 10) - row.begin()) << line;
    correct += predicted == test.labels[rows] ? 1 : 0;
  }
  ASSERT_EQ(rows, test.size());
  char accuracy[32];
  std::snprintf(accuracy, sizeof accuracy, "%.4f", static_cast<double>(correct) / rows);
  EXPECT_EQ(accuracy, evaluate_accuracy);

  auto to_stdout = herd({"predict", "--checkpoint", checkpoints, "--input", path("samples.npy")});
  ASSERT_EQ(to_stdout.exit_code, 0);
  EXPECT_THAT(to_stdout.output, HasSubstr(csv_text.str()));

  auto as_npy = herd({"predict", "--checkpoint", checkpoints, "--input", path("samples.npy"),
                      "--output", path("probabilities.npy")});
  ASSERT_EQ(as_npy.exit_code, 0) << as_npy.output;
  const auto written = herd::models::read_npy_samples(path("probabilities.npy"));
  ASSERT_EQ(written.values.rows(), test.size());
  ASSERT_EQ(written.values.cols(), 10u);
  for (std::size_t i = 0; i < from_csv.size(); ++i)
    ASSERT_NEAR(written.values[i], from_csv[i], 1e-6f + 1e-5f * from_csv[i]) << i;

  // Bad input exits 2 naming the file or the option.
  herd::testing::write_npy(path("narrow.npy"), "<f4", {5, 7}, std::vector<float>(35, 0.5f));
  auto narrow = herd({"predict", "--checkpoint", checkpoints, "--input", path("narrow.npy")});
  EXPECT_EQ(narrow.exit_code, 2);
  EXPECT_THAT(narrow.output, HasSubstr(path("narrow.npy") + " holds samples of 7"));
  EXPECT_THAT(narrow.output, HasSubstr("takes 1x28x28"));
  // As many values in another layout: refused (layout_problem's own test has channels last);
  // a grey image without its channel, or with it last, is the same layout.
  herd::testing::write_npy(path("nhwc.npy"), "<f4", {5, 28, 28, 1}, std::vector<float>(3920, 0.5f));
  auto nhwc = herd({"predict", "--checkpoint", checkpoints, "--input", path("nhwc.npy")});
  EXPECT_EQ(nhwc.exit_code, 0) << nhwc.output;
  herd::testing::write_npy(path("wide.npy"), "<f4", {5, 14, 56}, std::vector<float>(3920, 0.5f));
  auto wide = herd({"predict", "--checkpoint", checkpoints, "--input", path("wide.npy")});
  EXPECT_EQ(wide.exit_code, 2) << wide.output;
  EXPECT_THAT(wide.output, HasSubstr("as many values in another layout"));
  EXPECT_THAT(wide.output, Not(HasSubstr("transpose")));
  herd::testing::write_npy(path("grey.npy"), "<f4", {5, 28, 28}, std::vector<float>(3920, 0.5f));
  auto grey = herd({"predict", "--checkpoint", checkpoints, "--input", path("grey.npy")});
  EXPECT_EQ(grey.exit_code, 0) << grey.output;
  EXPECT_THAT(grey.output, Not(HasSubstr("uint8")));
  // Bytes for a model trained on floats: divided by 255 as always, with a note that its training
  // values were not bytes.
  herd::testing::write_npy(path("bytes.npy"), "|u1", {5, 784}, std::vector<std::uint8_t>(3920, 9));
  auto from_bytes = herd({"predict", "--checkpoint", checkpoints, "--input", path("bytes.npy")});
  EXPECT_EQ(from_bytes.exit_code, 0) << from_bytes.output;
  EXPECT_THAT(from_bytes.output,
              HasSubstr(path("bytes.npy") + " holds uint8 values, which herd divides "
                                            "by 255, but the checkpoint's model was "
                                            "trained on values that were not bytes"));
  auto no_input = herd({"predict", "--checkpoint", checkpoints});
  EXPECT_EQ(no_input.exit_code, 2);
  EXPECT_THAT(no_input.output, HasSubstr("--input FILE.npy is required"));
  auto bad_output = herd({"predict", "--checkpoint", checkpoints, "--input", path("samples.npy"),
                          "--output", path("p.txt")});
  EXPECT_EQ(bad_output.exit_code, 2);
  EXPECT_THAT(bad_output.output, HasSubstr("must end in .csv or .npy"));
  auto missing = herd({"predict", "--checkpoint", checkpoints, "--input", path("absent.npy")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr(path("absent.npy")));
  // The probabilities never replace the samples they are of (here by another name of the file).
  auto bytes_of = [](const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  };
  const auto samples_before = bytes_of(path("samples.npy"));
  auto over_input = herd({"predict", "--checkpoint", checkpoints, "--input", path("samples.npy"),
                          "--output", dir_.path().string() + "/./samples.npy"});
  EXPECT_EQ(over_input.exit_code, 2);
  EXPECT_THAT(over_input.output, HasSubstr("is the --input file"));
  EXPECT_EQ(bytes_of(path("samples.npy")), samples_before);
}

// train.eval-every-epochs evaluates at the same epochs whatever rounds mean to the algorithm:
// sync's rounds take every worker, solo's one, so train.eval-every would differ by 4 times. Every
// step takes 2 ms, so that an epoch outlasts an evaluation even on a loaded machine (an
// evaluation that outlasts the epochs comes late, as documented).
TEST_F(herd_cli, eval_every_epochs_evaluates_at_the_same_epochs_under_every_algorithm) {
  const std::regex evaluation("evaluation at round [0-9]+ \\(epoch ([0-9.]+)\\)");
  for (const char* algorithm : {"sync", "solo"}) {
    const auto run = herd({"train", "--data.dataset=synthetic", "--model.hidden=[16]",
                           "--train.workers=4", "--train.epochs=3", "--train.eval-every-epochs=1",
                           "--imbalance.kind=random", "--imbalance.k=4", "--imbalance.delay-ms=2",
                           std::string("--train.algorithm=") + algorithm});
    ASSERT_EQ(run.exit_code, 0) << run.output;
    std::vector<double> epochs;
    for (std::sregex_iterator at(run.output.begin(), run.output.end(), evaluation), end; at != end;
         ++at)
      epochs.push_back(std::stod((*at)[1]));
    // Two as the epochs pass 1 and 2, and the final one at 3 (solo's rounds overshoot a little).
    ASSERT_EQ(epochs.size(), 3u) << algorithm << "\n" << run.output;
    for (std::size_t i = 0; i < epochs.size(); ++i) {
      EXPECT_GE(epochs[i], static_cast<double>(i + 1)) << algorithm;
      EXPECT_LT(epochs[i], static_cast<double>(i + 1) + 0.1) << algorithm;
    }
  }
}

// A run that stops at its target keeps the parameters that reached it: evaluate scores those by
// default (the accuracy that stopped the run), and the workers' last ones with --last.
TEST_F(herd_cli, evaluate_scores_the_parameters_that_reached_the_target) {
  const auto checkpoints = path("ckpt");
  // Epochs to spare: the run stops at the first evaluation at 0.5 or above (round 20 or so), but
  // under a heavy load the evaluator answered only after three epochs' rounds had run.
  auto run = herd({"train", "--data.dataset=synthetic", "--model.hidden=[32]", "--train.workers=2",
                   "--train.epochs=30", "--train.target-accuracy=0.5", "--train.eval-every=10",
                   "--checkpoint.dir=" + checkpoints, "--report", path("run.json")});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream report_file(path("run.json"));
  const auto report = nlohmann::json::parse(report_file);
  ASSERT_EQ(report["stop_reason"], "target-accuracy") << run.output;
  char accuracy[32];
  std::snprintf(accuracy, sizeof accuracy, "%.4f", report["final_test_accuracy"].get<double>());
  auto target = herd({"evaluate", "--checkpoint", checkpoints});
  ASSERT_EQ(target.exit_code, 0) << target.output;
  EXPECT_THAT(target.output, HasSubstr(std::string("  test accuracy   ") + accuracy + "\n"));
  EXPECT_THAT(target.output, HasSubstr("the parameters that reached the target (test accuracy " +
                                       std::string(accuracy)));
  auto last = herd({"evaluate", "--checkpoint", checkpoints, "--last"});
  ASSERT_EQ(last.exit_code, 0) << last.output;
  EXPECT_THAT(last.output, HasSubstr("the workers' last parameters (round "));
}

// A final checkpoint that cannot be written (here its directory became a file; a full disk in
// life) loses the run's end state: the summary and the report say so, and the exit status is 1,
// also where a stop signal ended the run (its 130 counts as a clean stop to a service manager).
TEST_F(herd_cli, a_final_checkpoint_that_cannot_be_written_fails_the_run) {
  for (const bool interrupted : {false, true}) {
    const std::string label = interrupted ? "interrupted" : "max-seconds";
    const auto checkpoints = path("gone-" + label);
    const auto report_file = path("run-" + label + ".json");
    auto herd_run =
        start_herd({"train", "--data.dataset=synthetic", "--model.hidden=[32]", "--train.workers=2",
                    "--train.eval-every=2000", "--train.epochs=100000",
                    interrupted ? "--train.max-seconds=600" : "--train.max-seconds=4",
                    "--checkpoint.dir=" + checkpoints, "--checkpoint.every-seconds=0", "--report",
                    report_file},
                   path(label + ".log"));
    ASSERT_TRUE(herd_run->wait_for_output("evaluation at round", 120s)) << herd_run->output();
    std::filesystem::remove_all(checkpoints);
    std::ofstream(checkpoints) << "not a directory";
    if (interrupted)
      ::kill(herd_run->pid(), SIGINT);
    ASSERT_EQ(herd_run->wait(120s), std::optional<int>(1)) << label << "\n" << herd_run->output();
    EXPECT_THAT(herd_run->output(), HasSubstr("herd: final checkpoint not written: "));
    EXPECT_THAT(herd_run->output(), HasSubstr("  final checkpoint  NOT WRITTEN: "));
    EXPECT_THAT(herd_run->output(), HasSubstr(std::string("  stopped by        ") + label));
    std::ifstream in(report_file);
    const auto report = nlohmann::json::parse(in);
    EXPECT_TRUE(report["final_checkpoint_error"].is_string()) << report.dump();
    EXPECT_TRUE(report["error"].is_null());
  }
}

// Two runs started into one empty checkpoint.dir deleted each other's checkpoints (each keeps its
// newest checkpoint.keep, whichever run wrote them), final ones included: the second is refused
// while the first runs, naming it, and the first's checkpoints are its own.
TEST_F(herd_cli, a_second_run_into_the_checkpoint_dir_of_a_running_one_is_refused_naming_it) {
  const auto checkpoints = path("shared");
  const std::vector<std::string> run{"train", "--data.dataset=synthetic", "--model.hidden=[8]",
                                     "--train.workers=2", "--checkpoint.dir=" + checkpoints};
  auto args = run;
  args.push_back("--train.epochs=100000");
  auto first = start_herd(args, path("first.log"));
  ASSERT_TRUE(first->wait_for_output("epoch", 120s)) << first->output();
  auto other = run;
  other.push_back("--train.seed=7");
  const auto second = herd(other);
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_THAT(second.output,
              HasSubstr("checkpoint.dir = " + checkpoints +
                        ": a running job of another process (pid " + std::to_string(first->pid()) +
                        ") writes its checkpoints there"));
  ::kill(first->pid(), SIGINT);
  ASSERT_EQ(first->wait(120s), std::optional<int>(130)) << first->output();
  // Its final checkpoint is there, alone (the lock's file went with the run).
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints))
    names.push_back(entry.path().filename().string());
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].rfind("herd-", 0), 0u) << names[0];
}

// `herd train | head` ended the run by SIGPIPE at the first progress line after head left: exit
// 141, no report, no final checkpoint. The run goes on, says so on standard error, and ends as
// it would have.
TEST_F(herd_cli, a_closed_output_pipe_does_not_end_the_run_without_its_report) {
  const auto report = path("piped.json");
  const auto errors = path("piped.err");
  const std::string command = std::string("bash -c '") + HERD_BINARY +
                              " train --data.dataset=synthetic --model.hidden=[8] "
                              "--train.workers=2 --train.epochs=8 --train.eval-every=20 --report " +
                              report + " 2> " + errors +
                              " | head -c 1 > /dev/null; exit ${PIPESTATUS[0]}'";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status)) << command;
  EXPECT_EQ(WEXITSTATUS(status), 0) << herd::testing::read_file(errors);
  EXPECT_THAT(herd::testing::read_file(report), HasSubstr("\"stop_reason\": \"epochs\""));
  EXPECT_THAT(herd::testing::read_file(errors),
              HasSubstr("herd: cannot write standard output (its reader went "
                        "away): the run goes on"));
}

// Standard output on a full disk (/dev/full): where it carries the result (settings printed for a
// file, a prediction's CSV), the command says so and exits 1 rather than 0 with nothing written;
// a run goes on without its progress lines and says why.
TEST_F(herd_cli, a_result_that_cannot_be_written_to_standard_output_fails_the_command) {
  if (!std::filesystem::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full here";
  const auto errors = path("full.err");
  const auto run = [&](const std::string& args) {
    const std::string command = std::string(HERD_BINARY) + " " + args + " > /dev/full 2> " + errors;
    const int status = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(status)) << command;
    return WEXITSTATUS(status);
  };
  EXPECT_EQ(run("train --print-config"), 1);
  EXPECT_THAT(herd::testing::read_file(errors),
              HasSubstr("herd train: cannot write standard output (No space left on device): "
                        "what it printed is incomplete"));
  EXPECT_EQ(run("train --data.dataset=synthetic --model.hidden=[8] --train.workers=2 "
                "--train.epochs=1"),
            0);
  EXPECT_THAT(herd::testing::read_file(errors),
              HasSubstr("herd: cannot write standard output (a write to it failed: its disk "
                        "may be full): the run goes on"));
}

TEST_F(herd_cli, ctrl_c_writes_a_checkpoint_that_resume_goes_on_from) {
  const auto checkpoints = path("ckpt");
  const std::vector<std::string> run{"train",
                                     "--data.dataset=synthetic",
                                     "--model.hidden=[32]",
                                     "--train.workers=2",
                                     "--train.eval-every=50",
                                     "--checkpoint.dir=" + checkpoints,
                                     "--checkpoint.every-seconds=0"};
  auto args = run;
  args.push_back("--train.epochs=100000");
  auto herd_run = start_herd(args, path("first.log"));
  ASSERT_TRUE(herd_run->wait_for_output("evaluation at round", 120s)) << herd_run->output();
  ::kill(herd_run->pid(), SIGINT);
  ASSERT_EQ(herd_run->wait(120s), std::optional<int>(130)) << herd_run->output();
  EXPECT_THAT(herd_run->output(), HasSubstr("herd: final checkpoint " + checkpoints + "/herd-"));
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints))
    files.push_back(entry.path());
  ASSERT_EQ(files.size(), 1u);

  // Resumed with a different learning rate and a short run: it goes on and ends.
  args = run;
  args.insert(args.end(), {"--train.lr=0.02", "--train.epochs=100000", "--train.max-seconds=1",
                           "--resume", checkpoints});
  auto resumed = herd(args);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("herd train: resuming from " + files[0].string()));
  EXPECT_THAT(
      resumed.output,
      HasSubstr("changed since the checkpoint: train.lr: 0.05 in the checkpoint, 0.02 now"));
  EXPECT_THAT(resumed.output, HasSubstr("Herd run summary"));
  EXPECT_THAT(resumed.output, HasSubstr("stopped by        max-seconds")) << "it went on";

  // A new run into that directory would prune the resumed run's checkpoints: refused, and so is
  // a run into it that resumes from a checkpoint elsewhere. Nothing is deleted.
  auto listing = [&checkpoints] {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(checkpoints))
      names.insert(entry.path().filename().string());
    return names;
  };
  const auto held = listing();
  ASSERT_EQ(held.size(), 2u);
  args = run;
  args.push_back("--train.epochs=1");
  auto fresh = herd(args);
  EXPECT_EQ(fresh.exit_code, 2) << fresh.output;
  EXPECT_THAT(fresh.output,
              HasSubstr("checkpoint.dir = " + checkpoints + " holds 2 checkpoints of another run"));
  EXPECT_THAT(fresh.output, HasSubstr("resume that run with --resume " + checkpoints));
  const auto elsewhere = path("elsewhere.ckpt");
  std::filesystem::copy_file(files[0], elsewhere);
  args = run;
  args.insert(args.end(), {"--train.max-seconds=1", "--resume", elsewhere});
  auto crossed = herd(args);
  EXPECT_EQ(crossed.exit_code, 2) << crossed.output;
  EXPECT_THAT(crossed.output, HasSubstr("this run resumes from " + elsewhere));
  EXPECT_EQ(listing(), held);

  // Back to the first checkpoint, with the resumed run's newer one beside it: refused, whether
  // checkpoint.dir names the directory or --resume chose it (said so); nothing is deleted. Into
  // another directory the run branches from there.
  const std::vector<std::string> without_dir{"train",
                                             "--data.dataset=synthetic",
                                             "--model.hidden=[32]",
                                             "--train.workers=2",
                                             "--train.epochs=100000",
                                             "--train.max-seconds=1"};
  args = run;
  args.insert(args.end(), {"--train.max-seconds=1", "--resume", files[0].string()});
  auto back_in_dir = herd(args);
  EXPECT_EQ(back_in_dir.exit_code, 2) << back_in_dir.output;
  EXPECT_THAT(back_in_dir.output, HasSubstr("holds 1 checkpoint newer than " + files[0].string()));
  args = without_dir;
  args.insert(args.end(), {"--resume", files[0].string()});
  auto back_chosen = herd(args);
  EXPECT_EQ(back_chosen.exit_code, 2) << back_chosen.output;
  EXPECT_THAT(back_chosen.output, HasSubstr("(checkpoint.dir was not set: a resumed run saves "
                                            "where --resume found its checkpoint)"));
  EXPECT_THAT(back_chosen.output, Not(HasSubstr("the run saves there too")));
  EXPECT_EQ(listing(), held);
  const auto branch = path("branch");
  args = without_dir;
  args.insert(args.end(), {"--resume", files[0].string(), "--checkpoint.dir=" + branch});
  auto branched = herd(args);
  EXPECT_EQ(branched.exit_code, 0) << branched.output;
  EXPECT_EQ(listing(), held);
  ASSERT_TRUE(std::filesystem::is_directory(branch)) << branched.output;
  EXPECT_FALSE(std::filesystem::is_empty(branch)) << "the branch saved its checkpoints there";

  // Another worker count: refused, naming the key.
  args = run;
  args.insert(args.end(), {"--train.workers=4", "--resume", checkpoints});
  auto other = herd(args);
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_THAT(other.output, HasSubstr("train.workers: the checkpoint has 2, this run 4"));

  // The newest file, truncated: refused, naming it and the problem.
  std::string newest;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints))
    newest = std::max(newest, entry.path().string());
  std::filesystem::resize_file(newest, std::filesystem::file_size(newest) - 100);
  args = run;
  args.insert(args.end(), {"--resume", checkpoints});
  auto truncated = herd(args);
  EXPECT_EQ(truncated.exit_code, 2) << truncated.output;
  EXPECT_THAT(truncated.output,
              HasSubstr("herd train: cannot resume from " + newest + ": truncated"));
  // ... and the newest intact one before it is named, to resume from instead.
  std::string intact;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints))
    if (entry.path().string() < newest)
      intact = std::max(intact, entry.path().string());
  ASSERT_FALSE(intact.empty());
  EXPECT_THAT(truncated.output, HasSubstr("herd train: the newest intact checkpoint there is " +
                                          intact + " (round "));
  EXPECT_THAT(truncated.output, HasSubstr("move the damaged one away, or --resume " + intact +
                                          " --checkpoint.dir=DIR"));
  // Resumed from there into its own directory, the run would prune the newer, damaged one.
  args = run;
  args.insert(args.end(), {"--resume", intact});
  auto back = herd(args);
  EXPECT_EQ(back.exit_code, 2) << back.output;
  EXPECT_THAT(back.output, HasSubstr("holds 1 checkpoint newer than " + intact +
                                     " (the newest: " + newest + "), which this run would delete"));
  EXPECT_TRUE(std::filesystem::exists(newest));
  // herd evaluate names it as well.
  auto evaluated = herd({"evaluate", "--checkpoint", checkpoints});
  EXPECT_EQ(evaluated.exit_code, 2) << evaluated.output;
  EXPECT_THAT(evaluated.output, HasSubstr("herd evaluate: the newest intact checkpoint there is " +
                                          intact + " (round "));
  EXPECT_THAT(evaluated.output, HasSubstr("--checkpoint " + intact + " reads it"));
}

// scripts/bench-cluster runs both layouts of a job and prints their per-round medians and the
// ratio, the cluster once for each number of connections asked for (which its nodes then use);
// a run that fails ends it with status 1 and the failed run's log named.
TEST(bench_cluster, prints_both_layouts_and_their_ratio_and_names_a_failed_run) {
  const std::string script = std::string(HERD_SOURCE_DIR) + "/scripts/bench-cluster";
  std::vector<std::string> argv{script,
                                "--binary",
                                HERD_BINARY,
                                "--nodes=2",
                                "--repetitions=1",
                                "--algorithms=solo",
                                "--connections=1,2",
                                "--port=" + std::to_string(herd::testing::free_loopback_port()),
                                "--",
                                "--data.dataset=synthetic",
                                "--train.epochs=1"};
  const auto measured = run_process(argv, 300s);
  ASSERT_EQ(measured.exit_code, 0) << measured.output;
  EXPECT_THAT(measured.output, HasSubstr("run  2 of 3: solo     2 nodes x 1"));
  EXPECT_THAT(measured.output, HasSubstr("run  3 of 3: solo     2 nodes x 1, 2 conn"));
  // Each layout's median round, and the cluster's over one process's.
  std::smatch one, two;
  const std::string row = " +([0-9.]+) +[0-9.]+ +([0-9.]+)x";
  ASSERT_TRUE(std::regex_search(measured.output, one, std::regex("solo +one process" + row)))
      << measured.output;
  ASSERT_TRUE(std::regex_search(measured.output, two, std::regex("solo +2 nodes x 1" + row)))
      << measured.output;
  EXPECT_EQ(one[2].str(), "1.00");
  EXPECT_NEAR(std::stod(two[2].str()), std::stod(two[1].str()) / std::stod(one[1].str()), 0.01);
  EXPECT_TRUE(std::regex_search(measured.output, std::regex("solo +2 nodes x 1, 2 conn" + row)))
      << measured.output;
  EXPECT_THAT(measured.output, HasSubstr("goal: at most 1.5x one process's round"));
  EXPECT_THAT(measured.output, HasSubstr("rounds other than sync's are not the same rounds"));
  // The nodes of the second cluster connected twice to each other (its log names where
  // local-cluster put the nodes' logs).
  std::smatch logs, node_logs;
  ASSERT_TRUE(std::regex_search(measured.output, logs, std::regex("logs and reports in (\\S+)")))
      << measured.output;
  const std::string second_cluster =
      herd::testing::read_file(logs[1].str() + "/solo-cluster-2-1.log");
  ASSERT_TRUE(std::regex_search(second_cluster, node_logs, std::regex("node logs in (\\S+)")))
      << second_cluster;
  EXPECT_THAT(herd::testing::read_file(node_logs[1].str() + "/node-0.log"),
              HasSubstr("2 connections to each peer"));

  argv.push_back("--train.lr=-1");
  const auto failed = run_process(argv, 120s);
  EXPECT_EQ(failed.exit_code, 1) << failed.output;
  EXPECT_THAT(failed.output, testing::ContainsRegex("run 1 of 3 \\(solo, one process\\) failed "
                                                    "with status 2; see .*solo-one-1.log"));
}

// With --bucket-mb each layout runs once per bucket size, the last column compares each with the
// same layout without buckets, and the runs really use them (their reports count the rounds that
// began while backward ran).
TEST(bench_cluster, compares_gradient_bucket_sizes_within_each_layout) {
  const std::string script = std::string(HERD_SOURCE_DIR) + "/scripts/bench-cluster";
  const auto measured = run_process(
      {script, "--binary", HERD_BINARY, "--nodes=2", "--repetitions=1", "--algorithms=sync",
       "--bucket-mb=0,0.25", "--port=" + std::to_string(herd::testing::free_loopback_port()), "--",
       "--data.dataset=synthetic", "--train.epochs=1", "--imbalance.kind=none",
       "--model.hidden=[1024]"},
      300s);
  ASSERT_EQ(measured.exit_code, 0) << measured.output;
  EXPECT_THAT(measured.output, HasSubstr("run  4 of 4: sync     2 nodes x 1, 0.25 MiB"));
  const std::string row = " +([0-9.]+) +[0-9.]+ +[0-9.]+x +([0-9.]+)x";
  std::smatch whole, bucketed;
  ASSERT_TRUE(std::regex_search(measured.output, whole, std::regex("sync +2 nodes x 1" + row)))
      << measured.output;
  ASSERT_TRUE(
      std::regex_search(measured.output, bucketed, std::regex("sync +2 nodes x 1, 0.25 MiB" + row)))
      << measured.output;
  EXPECT_EQ(whole[2].str(), "1.00");
  const double ratio = std::stod(bucketed[1].str()) / std::stod(whole[1].str());
  EXPECT_NEAR(std::stod(bucketed[2].str()), ratio, 0.01 + 0.005 * ratio); // of rounded times
  std::smatch logs;
  ASSERT_TRUE(std::regex_search(measured.output, logs, std::regex("logs and reports in (\\S+)")))
      << measured.output;
  for (const std::string run : {"sync-one-b0.25-1", "sync-cluster-1-b0.25-1"}) {
    const auto report =
        nlohmann::json::parse(herd::testing::read_file(logs[1].str() + "/" + run + ".json"));
    EXPECT_GT(report["rounds_in_backward"], 0) << run;
  }
  const auto report =
      nlohmann::json::parse(herd::testing::read_file(logs[1].str() + "/sync-one-1.json"));
  EXPECT_EQ(report["rounds_in_backward"], 0);
  // Each row ends with the run's seconds and final test accuracy (medians of one run: its own).
  std::smatch ending;
  ASSERT_TRUE(
      std::regex_search(measured.output, ending,
                        std::regex("sync +one process +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9.]+x "
                                   "+([0-9.]+) +([0-9.]+)\\n")))
      << measured.output;
  EXPECT_NEAR(std::stod(ending[1].str()), report["wall_seconds"].get<double>(), 0.051);
  EXPECT_NEAR(std::stod(ending[2].str()), report["final_test_accuracy"].get<double>(), 0.00006);
}

} // namespace
