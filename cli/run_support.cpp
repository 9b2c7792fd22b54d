// What `herd train` and `herd coordinator` share around a run; see run_support.hpp.
#include "cli/run_support.hpp"

#include "cli/command_support.hpp"
#include "cli/report.hpp"
#include "cli/train_command.hpp"
#include "config/loader.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <unistd.h>

namespace herd::cli {

namespace {

std::atomic<int> interrupts{0};

extern "C" void on_interrupt(int signal) {
  // A second Ctrl-C (or SIGTERM) while stopping ends the process at once.
  if (interrupts.fetch_add(1) >= 1) {
    std::signal(signal, SIG_DFL);
    std::raise(signal);
  }
}

} // namespace

run_arguments parse_run_arguments(const std::vector<std::string>& args, const std::string& command,
                                  const std::vector<std::string>& own_options) {
  run_arguments parsed;
  const std::string file_hint = " (a file name)";
  for (argument_reader reader(args); !reader.done(); reader.next()) {
    const std::string& arg = reader.current();
    const auto own = std::find_if(own_options.begin(), own_options.end(),
                                  [&reader](const std::string& name) { return reader.is(name); });
    if (arg == "--help" || arg == "-h") {
      parsed.help = true;
    } else if (reader.is("--config") || arg == "-c") {
      parsed.config_file = reader.value(arg == "-c" ? "-c" : "--config", file_hint);
    } else if (reader.is("--report")) {
      parsed.report_file = reader.value("--report", file_hint);
    } else if (own != own_options.end()) {
      parsed.options[*own] = reader.value(*own);
    } else if (reader.is_setting()) {
      parsed.overrides.push_back(arg);
    } else {
      std::string message = "unknown argument '" + arg + "'";
      message += "; settings are written --section.key=value (see herd " + command + " --help)";
      throw std::invalid_argument(message);
    }
  }
  return parsed;
}

std::optional<prepared_run> prepare_run(const std::string& command, const run_arguments& parsed) {
  prepared_run run;
  try {
    run.config = config::load(parsed.config_file, parsed.overrides);
    if (!parsed.report_file.empty())
      check_report_path(parsed.report_file);
  } catch (const config::invalid_config& invalid) {
    print_config_errors(command, invalid);
    return std::nullopt;
  } catch (const std::invalid_argument& bad) {
    std::cerr << "herd " << command << ": " << bad.what() << '\n';
    return std::nullopt;
  }
  const auto load_start = std::chrono::steady_clock::now();
  run.data = load_data_or_report(command, run.config);
  if (!run.data)
    return std::nullopt;
  run.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  // Before the session: a port in use is bad input, found before any training.
  if (run.config.metrics.port != 0)
    run.metrics = std::make_shared<monitoring::registry>();
  try {
    run.endpoint = open_metrics_endpoint(run.config, run.metrics);
  } catch (const std::invalid_argument& bad) {
    std::cerr << "herd " << command << ": " << bad.what() << '\n';
    return std::nullopt;
  }
  return run;
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

std::unique_ptr<monitoring::metrics_endpoint>
open_metrics_endpoint(const config::run_config& config,
                      const std::shared_ptr<monitoring::registry>& registry) {
  if (config.metrics.port == 0 || !registry)
    return nullptr;
  try {
    return std::make_unique<monitoring::metrics_endpoint>(
        config.metrics.bind, config.metrics.port,
        [registry] { return monitoring::expose(*registry); });
  } catch (const std::exception& failure) {
    throw std::invalid_argument("metrics.port = " + std::to_string(config.metrics.port) + ": " +
                                failure.what());
  }
}

int await_run(const std::string& command, const run_handle& run, progress_printer& printer,
              const config::run_config& config, const std::string& report_file) {
  interrupts = 0;
  // SIGTERM (systemctl stop, kill) stops the run like Ctrl-C: the summary and report still come.
  auto previous_handler = std::signal(SIGINT, on_interrupt);
  auto previous_terminate_handler = std::signal(SIGTERM, on_interrupt);
  bool stop_requested = false;
  std::optional<actors::run_summary> summary;
  while (!(summary = run.wait_for(std::chrono::milliseconds(100)))) {
    if (interrupts.load() > 0 && !stop_requested) {
      stop_requested = true;
      printer.on_notice("interrupted: stopping after the rounds in flight "
                        "(Ctrl-C again to abort)");
      run.request_stop();
    }
  }
  std::signal(SIGINT, previous_handler);
  std::signal(SIGTERM, previous_terminate_handler);
  printer.finish();

  if (!summary->started) { // nothing ran: no summary to show, only why
    std::cerr << "herd " << command << ": " << summary->error << '\n';
    return summary->stop_reason == "interrupted" ? exit_interrupted : exit_run_failed;
  }
  print_summary(std::cout, *summary);
  if (!report_file.empty()) {
    try {
      write_file_atomically(report_file, report_json(*summary, config));
      std::cout << "\nreport written to " << report_file << '\n';
    } catch (const std::exception& failure) {
      std::cerr << "herd " << command << ": " << failure.what() << '\n';
      return exit_run_failed;
    }
  }
  if (summary->stop_reason == "error" || !summary->error.empty())
    return exit_run_failed;
  if (summary->stop_reason == "interrupted")
    return exit_interrupted;
  return exit_ok;
}

} // namespace herd::cli
