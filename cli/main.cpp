// The `herd` executable: dispatches to its commands.
#include "cli/bench_command.hpp"
#include "cli/cluster_commands.hpp"
#include "cli/command_support.hpp"
#include "cli/devices_command.hpp"
#include "cli/evaluate_command.hpp"
#include "cli/export_command.hpp"
#include "cli/predict_command.hpp"
#include "cli/simulate_command.hpp"
#include "cli/stop_signals.hpp"
#include "cli/train_command.hpp"
#include "config/front_end.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

const char* usage =
    "usage: herd <command> [options]\n\n"
    "Herd trains neural networks with actors that do not wait for stragglers.\n\n"
    "commands:\n"
    "  train        train in this process with N worker actors (herd train --help)\n"
    "  coordinator  host a run across processes and hosts (herd coordinator --help)\n"
    "  node         join a coordinator's run with N workers (herd node --help)\n"
    "  bench        compare algorithms under imbalance scenarios (herd bench --help)\n"
    "  simulate     simulate the job at any scale on a virtual clock (herd simulate --help)\n"
    "  evaluate     test accuracy of a checkpoint's model, per class (herd evaluate --help)\n"
    "  predict      class probabilities of new samples under a checkpoint's model\n"
    "               (herd predict --help)\n"
    "  export       a checkpoint's model as .npy tensors and JSON (herd export --help)\n"
    "  devices      what this machine offers and this build can use: CPUs, BLAS, GPUs\n"
    "  version      show the version (also --version, after any command)\n\n"
    "options:\n"
    "  --help, -h      show this help\n"
    "  --version       show the version\n";

const std::vector<std::string> commands{"train",    "coordinator", "node",   "bench",   "simulate",
                                        "evaluate", "predict",     "export", "devices", "version"};

// "herd: unknown command 'trian'; did you mean train?" for a near miss.
std::string unknown_command(const std::string& command) {
  std::string message = "herd: unknown ";
  message += command.rfind('-', 0) == 0 ? "option '" : "command '";
  message += command + "'";
  std::size_t best = 3; // suggest only near misses
  std::string closest;
  for (const auto& name : commands)
    if (const auto distance = herd::config::edit_distance(command, name); distance < best) {
      best = distance;
      closest = name;
    }
  if (!closest.empty())
    message += "; did you mean " + closest + "?";
  return message + "\n\n";
}

} // namespace

int main(int argc, char** argv) {
  // Before anything else: a Ctrl-C during argument parsing, configuration or loading must end a
  // training command with 130, not be lost (herd bench keeps the runs it finished).
  const std::string first = argc > 1 ? argv[1] : "";
  if (first == "train" || first == "coordinator" || first == "node" || first == "bench" ||
      first == "simulate") {
    herd::cli::install_stop_signals();
    herd::cli::keep_running_when_output_closes();
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << herd::cli::fit_help(usage);
    return herd::cli::exit_bad_input;
  }
  const std::string command = args.front();
  args.erase(args.begin());
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << herd::cli::fit_help(usage);
    return herd::cli::exit_ok;
  }
  const bool known = command != "version" &&
                     std::find(commands.begin(), commands.end(), command) != commands.end();
  if (command == "version" && !args.empty() &&
      !(args.size() == 1 && args[0] == "--version")) { // it takes no other argument
    const bool help = args.size() == 1 && (args[0] == "--help" || args[0] == "-h");
    (help ? std::cout : std::cerr)
        << (help ? "" : "herd version: unknown argument '" + args[0] + "'\n\n")
        << herd::cli::fit_help("usage: herd version\n\nShows Herd's version and the CUDA devices "
                               "this build sees (also herd --version, and --version after any "
                               "command).\n");
    return help ? herd::cli::exit_ok : herd::cli::exit_bad_input;
  }
  if (command == "--version" || command == "version" ||
      (known && std::find(args.begin(), args.end(), "--version") != args.end())) {
    std::istringstream lines(herd::cli::version_text()); // each line wrapped on its own
    for (std::string line; std::getline(lines, line);)
      std::cout << herd::cli::fit_help(line + "\n");
    return herd::cli::exit_ok;
  }
  if (command == "devices")
    return herd::cli::devices_command(args);
  if (command == "train")
    return herd::cli::train_command(args);
  if (command == "coordinator")
    return herd::cli::coordinator_command(args);
  if (command == "node")
    return herd::cli::node_command(args);
  if (command == "bench")
    return herd::cli::bench_command(args);
  if (command == "simulate")
    return herd::cli::simulate_command(args);
  if (command == "evaluate")
    return herd::cli::evaluate_command(args);
  if (command == "predict")
    return herd::cli::predict_command(args);
  if (command == "export")
    return herd::cli::export_command(args);
  std::cerr << unknown_command(command) << herd::cli::fit_help(usage);
  return herd::cli::exit_bad_input;
}
