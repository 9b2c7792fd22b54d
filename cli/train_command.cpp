// `herd train`; see train_command.hpp.
#include "cli/train_command.hpp"

#include "actors/train_session.hpp"
#include "cli/command_support.hpp"
#include "cli/progress_printer.hpp"
#include "cli/report.hpp"
#include "config/loader.hpp"
#include "models/dataset.hpp"
#include "monitoring/metrics.hpp"
#include "monitoring/metrics_endpoint.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace herd::cli {

namespace {

std::atomic<int> interrupts{0};

extern "C" void on_interrupt(int) {
  // A second Ctrl-C while stopping ends the process at once.
  if (interrupts.fetch_add(1) >= 1) {
    std::signal(SIGINT, SIG_DFL);
    std::raise(SIGINT);
  }
}

struct train_arguments {
  std::string config_file;
  std::string report_file;
  std::vector<std::string> overrides;
  bool help = false;
};

// Throws std::invalid_argument with a message for the user.
train_arguments parse_arguments(const std::vector<std::string>& args) {
  train_arguments parsed;
  const std::string file_hint = " (a file name)";
  for (argument_reader reader(args); !reader.done(); reader.next()) {
    const std::string& arg = reader.current();
    if (arg == "--help" || arg == "-h") {
      parsed.help = true;
    } else if (reader.is("--config") || arg == "-c") {
      parsed.config_file = reader.value(arg == "-c" ? "-c" : "--config", file_hint);
    } else if (reader.is("--report")) {
      parsed.report_file = reader.value("--report", file_hint);
    } else if (reader.is_setting()) {
      parsed.overrides.push_back(arg);
    } else {
      throw std::invalid_argument("unknown argument '" + arg +
                                  "'; settings are written --section.key=value "
                                  "(see herd train --help)");
    }
  }
  return parsed;
}

// A report that cannot be written should be known before the run, not after it.
void check_report_path(const std::string& path) {
  const std::filesystem::path report(path);
  if (std::filesystem::is_directory(report))
    throw std::invalid_argument("--report " + path + ": is a directory; name a file");
  const auto directory = report.has_parent_path() ? report.parent_path() : ".";
  if (!std::filesystem::is_directory(directory))
    throw std::invalid_argument("--report " + path + ": directory " + directory.string() +
                                " does not exist");
  if (::access(directory.c_str(), W_OK) != 0)
    throw std::invalid_argument("--report " + path + ": cannot write in " + directory.string() +
                                ": " + std::strerror(errno));
}

// Everything `herd train` does; train_command() adds the last line of defence around it.
int run_train(const std::vector<std::string>& args);

} // namespace

std::string train_help() {
  std::ostringstream out;
  out << "usage: herd train [--config FILE] [--report FILE] [--section.key=value ...]\n\n"
         "Trains an MLP with N worker actors in this process and prints a summary.\n\n"
         "  --config FILE, -c FILE  read settings from an INI file (e.g. config/quickstart.ini)\n"
         "  --report FILE           also write the run summary as JSON to FILE\n"
         "  --help, -h              show this help\n\n"
         "Settings (in a file as [section] key = value; on the command line as\n"
         "--section.key=value, which overrides the file):\n"
      << config::describe_keys()
      << "\nTraining stops at train.target-accuracy, train.epochs or train.max-seconds,\n"
         "whichever comes first. Ctrl-C stops after the rounds in flight and prints the\n"
         "summary; a second Ctrl-C aborts.\n\n"
         "Exit status: 0 done, 1 the run failed, 2 bad input, 130 interrupted.\n";
  return out.str();
}

int train_command(const std::vector<std::string>& args) {
  return run_guarded("train", [&args] { return run_train(args); });
}

namespace {

int run_train(const std::vector<std::string>& args) {
  train_arguments parsed;
  config::run_config config;
  try {
    parsed = parse_arguments(args);
    if (parsed.help) {
      std::cout << train_help();
      return exit_ok;
    }
    config = config::load(parsed.config_file, parsed.overrides);
    if (!parsed.report_file.empty())
      check_report_path(parsed.report_file);
  } catch (const config::invalid_config& invalid) {
    print_config_errors("train", invalid);
    return exit_bad_input;
  } catch (const std::invalid_argument& bad) {
    std::cerr << "herd train: " << bad.what() << '\n';
    return exit_bad_input;
  }

  const auto load_start = std::chrono::steady_clock::now();
  const auto data = load_data_or_report("train", config);
  if (!data)
    return exit_bad_input;
  const double load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();

  const bool interactive = ::isatty(STDOUT_FILENO) != 0;
  progress_printer printer(std::cout, interactive, config.train.epochs);
  actors::session_options options;
  options.observer = &printer;
  // Before the session: a port in use is bad input, found before any training.
  std::unique_ptr<monitoring::metrics_endpoint> endpoint;
  if (config.metrics.port != 0) {
    options.metrics = std::make_shared<monitoring::registry>();
    try {
      endpoint = std::make_unique<monitoring::metrics_endpoint>(
          config.metrics.bind, config.metrics.port,
          [metrics = options.metrics] { return monitoring::expose(*metrics); });
    } catch (const std::exception& failure) {
      std::cerr << "herd train: metrics.port = " << config.metrics.port << ": " << failure.what()
                << '\n';
      return exit_bad_input;
    }
  }
  std::optional<actors::train_session> session;
  try {
    session.emplace(config, data, options);
  } catch (const config::invalid_config& invalid) {
    print_config_errors("train", invalid);
    return exit_bad_input;
  }

  const auto sizes = actors::mlp_layer_sizes(config, data->train);
  std::cout << "herd train: " << config.train.algorithm << ", " << config.train.workers
            << " workers x batch " << config.train.batch_size << ", lr " << config.train.lr
            << ", MLP " << describe_model(sizes) << ", " << data->train.name << " ("
            << data->train.size() << " train / " << data->test.size() << " test, loaded in "
            << std::fixed << std::setprecision(1) << load_seconds << " s)" << std::endl;
  std::cout.unsetf(std::ios::fixed);
  if (endpoint)
    std::cout << "herd train: Prometheus metrics at http://" << endpoint->bind_address() << ':'
              << endpoint->port() << "/metrics" << std::endl;

  interrupts = 0;
  auto previous_handler = std::signal(SIGINT, on_interrupt);
  session->start();
  bool stop_requested = false;
  std::optional<actors::run_summary> summary;
  while (!(summary = session->wait_for(std::chrono::milliseconds(100)))) {
    if (interrupts.load() > 0 && !stop_requested) {
      stop_requested = true;
      printer.on_notice("interrupted: stopping after the rounds in flight "
                        "(Ctrl-C again to abort)");
      session->request_stop();
    }
  }
  std::signal(SIGINT, previous_handler);
  printer.finish();

  print_summary(std::cout, *summary);
  if (!parsed.report_file.empty()) {
    try {
      write_file_atomically(parsed.report_file, report_json(*summary, config));
      std::cout << "\nreport written to " << parsed.report_file << '\n';
    } catch (const std::exception& failure) {
      std::cerr << "herd train: " << failure.what() << '\n';
      return exit_run_failed;
    }
  }
  if (summary->stop_reason == "error" || !summary->error.empty())
    return exit_run_failed;
  if (summary->stop_reason == "interrupted")
    return exit_interrupted;
  return exit_ok;
}

} // namespace

} // namespace herd::cli
