// What `herd train` and `herd coordinator` share around a run; see run_support.hpp.
#include "cli/run_support.hpp"

#include "actors/checkpoint_state.hpp"
#include "actors/run_parts.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/report.hpp"
#include "cli/run_notes.hpp"
#include "cli/stop_signals.hpp"
#include "cli/train_command.hpp"
#include "herd/config.hpp"
#include "monitoring/process_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <system_error>
#include <thread>
#include <unistd.h>

#include "checkpoint/format.hpp"

namespace herd::cli {

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
    } else if (arg == "--print-config") {
      if (parsed.print_config)
        throw std::invalid_argument("--print-config is given twice");
      parsed.print_config = true;
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
      auto options = own_options;
      options.insert(options.end(), {"--config", "--report", "--print-config", "--help"});
      if (const auto near = near_option(arg, options); !near.empty())
        throw std::invalid_argument(message + near + " (see herd " + command + " --help)");
      std::error_code unknown;
      if (!arg.empty() && arg.front() != '-' && std::filesystem::is_regular_file(arg, unknown))
        message +=
            "; a file of settings is given with --config: herd " + command + " --config " + arg;
      else
        message += "; settings are written --section.key=value (see herd " + command + " --help)";
      throw std::invalid_argument(message);
    }
  }
  return parsed;
}

namespace {

// `herd train --resume PATH` without checkpoint.dir set: the resumed run saves its checkpoints
// where it resumes from (PATH, or the directory of a file); a run that went on saving nothing would
// lose what it trains, with only a "changed since the checkpoint" line to say so. A checkpoint.dir
// set to "" on purpose stays; a PATH that does not exist is left to the resume's own refusal. Says
// what it did, or nothing.
std::string resume_saves_where_it_resumes(config::run_config& config, const run_arguments& parsed,
                                          const config::value_origins& origins) {
  const auto resume = parsed.options.find("--resume");
  if (resume == parsed.options.end() || config.checkpoint.enabled() ||
      origins.count("checkpoint.dir") != 0)
    return {};
  std::error_code failed;
  const std::filesystem::path path(resume->second);
  std::filesystem::path directory;
  if (std::filesystem::is_directory(path, failed)) {
    if (checkpoint::list(path.string()).empty())
      return {}; // the resume says the directory holds none
    directory = path;
  } else if (checkpoint::is_checkpoint_file(path.string())) // not a report given by mistake
    directory = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  else
    return {};
  config.checkpoint.dir = directory.string();
  return "checkpoint.dir = \"" + config.checkpoint.dir +
         "\", where --resume found the checkpoint: the run saves there too";
}

} // namespace

run_preparation prepare_run(const std::string& command, const run_arguments& parsed,
                            const settings_check& check) {
  const auto bad_input = [] { return run_preparation{std::nullopt, exit_bad_input}; };
  const auto interrupted = [] { return run_preparation{std::nullopt, exit_interrupted}; };
  prepared_run run;
  config::value_origins origins;
  try {
    run.config = load_for_command(command, parsed.config_file, parsed.overrides,
                                  parsed.command_overrides, &origins);
    if (!parsed.report_file.empty())
      check_report_path(parsed.report_file, parsed.config_file, &run.config);
    if (check) {
      auto checked = run.config; // --print-config shows the settings as they were given
      check(checked);
      if (!parsed.print_config)
        run.config = std::move(checked);
    }
  } catch (const config::invalid_config& invalid) {
    print_config_errors(command, invalid);
    return bad_input();
  } catch (const std::invalid_argument& bad) {
    std::cerr << "herd " << command << ": " << bad.what() << '\n';
    return bad_input();
  }
  // herd train only: a coordinator's checkpoint.dir is the nodes' too, on machines of their own.
  const auto saves_where_it_resumes =
      command == "train" ? resume_saves_where_it_resumes(run.config, parsed, origins)
                         : std::string();
  if (!saves_where_it_resumes.empty() && parsed.print_config)
    std::cerr << "herd " << command << ": note: " << saves_where_it_resumes << '\n';
  if (!parsed.print_config)
    for (const auto& note : unused_settings_notes(run.config, origins))
      std::cerr << "herd " << command << ": note: " << note << '\n';
  if (parsed.print_config) { // the settings as they would run (secrets left out), nothing loaded
    if (command == "coordinator")
      std::cout << "; herd coordinator: train.workers is the sum of the nodes' --workers once\n"
                   "; the cluster forms\n";
    // The token itself is left out; the path of its file is no more secret than the TLS key's,
    // and kept, so that the printed settings run as they are.
    // Its key is left out too: `token = ""` under that comment read as a token that was lost.
    auto shown = run.config;
    auto scope = keys_of(command);
    if (!shown.cluster.token.empty()) {
      std::cout << "; cluster.token is set and not shown: give it again, or use "
                   "cluster.token-file\n";
      scope.uses = [uses = scope.uses](const std::string& key) {
        return key != "cluster.token" && (!uses || uses(key));
      };
    }
    shown.cluster.token.clear();
    std::cout << config::to_ini(shown, scope);
    return run_preparation{std::nullopt, with_output_written(command, exit_ok)};
  }
  const auto resume = parsed.options.find("--resume");
  if (auto problem = checkpoint_dir_problem(
          run.config, resume == parsed.options.end() ? std::string() : resume->second);
      !problem.empty()) { // not under --print-config: the check makes the directory
    std::cerr << "herd " << command << ": " << problem
              << (saves_where_it_resumes.empty()
                      ? ""
                      : " (checkpoint.dir was not set: a resumed run saves where --resume found "
                        "its checkpoint)")
              << '\n';
    return bad_input();
  }
  run.resume_note = saves_where_it_resumes;
  if (interrupted_before_run(command))
    return interrupted();
  const auto load_start = std::chrono::steady_clock::now();
  // Read on a thread of its own, so that a stop signal meanwhile ends the command at once.
  run_unless_stopped(command,
                     [&] { run.data = load_data_or_report(command, run.config, &origins); });
  if (interrupted_before_run(command)) // loading may have taken seconds
    return interrupted();
  if (!run.data)
    return bad_input();
  run.load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  // The workers of a coordinator are the nodes' (checked once they joined); herd train's are
  // known, and its batch is checked here, where the message can say which file set it.
  if (command != "coordinator") {
    if (auto errors = config::validate_against_data(run.config, run.data->train.size(), origins);
        !errors.empty()) {
      print_config_errors(command, config::invalid_config(std::move(errors)));
      return bad_input();
    }
    if (auto note = epoch_coverage_note(run.config, run.data->train.size()); !note.empty())
      std::cerr << "herd " << command << ": note: " << note << '\n';
  }
  if (auto note = missing_classes_note(run.data->train); !note.empty())
    std::cerr << "herd " << command << ": note: " << note << '\n';
  if (auto note = bucket_note(run.config); !note.empty())
    std::cerr << "herd " << command << ": note: " << note << '\n';
  run.model = make_model_or_report(command, run.config, *run.data);
  if (!run.model)
    return bad_input();
  if (auto note = bucket_layout_note(run.config, *run.model); !note.empty())
    std::cerr << "herd " << command << ": note: " << note << '\n';
  // Before the session: a port in use is bad input, found before any training.
  if (run.config.metrics.port != 0) {
    run.metrics = std::make_shared<monitoring::registry>();
    run.run_finished =
        &run.metrics
             ->add_gauge("herd_run_finished", "1 once the process's run has ended without failing: "
                                              "it exits as asked, not by a crash")
             .add({{"job", run.config.metrics.job}});
    // Which run at an address is the newest: HerdProcessDown reads the newest's end only.
    run.metrics
        ->add_gauge("herd_run_start_time_seconds",
                    "Unix time at which the process started its run (set once)")
        .add({{"job", run.config.metrics.job}})
        .set(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                 .count());
  }
  try {
    run.endpoint = open_metrics_endpoint(run.config, run.metrics);
  } catch (const std::invalid_argument& bad) {
    std::cerr << "herd " << command << ": " << bad.what() << '\n';
    return bad_input();
  }
  return {std::move(run), exit_ok};
}

namespace {

// What an existing regular file at `path` holds when it is data a report must not replace: a
// NumPy array, an IDX dataset, or a gzip-compressed file (Fashion-MNIST's downloads); else empty.
std::string data_held_by(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) // nor opens a FIFO, which would block
    return {};
  std::ifstream in(path, std::ios::binary);
  unsigned char head[6] = {};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  const auto read = in.gcount();
  if (read == 6 && std::memcmp(head, "\x93NUMPY", 6) == 0)
    return "a NumPy array (.npy)";
  // IDX: two zero bytes, the element type (0x08 unsigned bytes to 0x0E doubles), the dimensions.
  const std::set<unsigned char> idx_types{0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E};
  if (read >= 4 && head[0] == 0 && head[1] == 0 && idx_types.count(head[2]) > 0 && head[3] >= 1 &&
      head[3] <= 4)
    return "an IDX dataset";
  if (read >= 2 && head[0] == 0x1f && head[1] == 0x8b)
    return "gzip-compressed data";
  return {};
}

} // namespace

// A report that cannot be written should be known before the run, not after it; and a report
// must never replace the run's own settings, its data, nor a checkpoint (the one --resume,
// --init-from or herd evaluate reads, a tab completion away).
void check_report_path(const std::string& path, const std::string& config_file,
                       const config::run_config* config) {
  if (!config_file.empty() && same_file(path, config_file))
    throw std::invalid_argument("--report " + path + " is the --config file " + config_file +
                                ": the report would replace it; name another file");
  if (config != nullptr) {
    const auto& data = config->data;
    for (const auto& [key, file] : {std::pair{"data.train-features", data.train_features},
                                    std::pair{"data.train-labels", data.train_labels},
                                    std::pair{"data.test-features", data.test_features},
                                    std::pair{"data.test-labels", data.test_labels},
                                    std::pair{"data.validation-features", data.validation_features},
                                    std::pair{"data.validation-labels", data.validation_labels}})
      if (!file.empty() && same_file(path, file))
        throw std::invalid_argument("--report " + path + " is the run's " + key + " file " + file +
                                    ": the report would replace it; name another file");
  }
  if (checkpoint::is_checkpoint_file(path))
    throw std::invalid_argument("--report " + path +
                                " is a checkpoint: the report would replace it; name another file");
  if (const auto held = data_held_by(path); !held.empty())
    throw std::invalid_argument("--report " + path + " holds " + held +
                                ": the report would replace it; name another file");
  try {
    check_writable(path);
  } catch (const std::runtime_error& failure) {
    throw std::invalid_argument(std::string("--report ") + failure.what());
  }
}

std::unique_ptr<monitoring::metrics_endpoint>
open_metrics_endpoint(const config::run_config& config,
                      const std::shared_ptr<monitoring::registry>& registry) {
  if (config.metrics.port == 0 || !registry)
    return nullptr;
  try {
    // The run's families, then the process's own (CPU, memory, descriptors), read at the scrape.
    return std::make_unique<monitoring::metrics_endpoint>(
        config.metrics.bind, config.metrics.port, [registry] {
          std::ostringstream text;
          monitoring::serialize(text, registry->collect());
          monitoring::serialize(text, monitoring::process_families());
          return text.str();
        });
  } catch (const std::exception& failure) {
    // Either key may be at fault (a port in use, an address that does not resolve): both named.
    throw std::invalid_argument("metrics.bind = \"" + config.metrics.bind + "\", metrics.port = " +
                                std::to_string(config.metrics.port) + ": " + failure.what());
  }
}

int await_run(const std::string& command, const run_handle& run, progress_printer& printer,
              const config::run_config& config, const std::string& report_file) {
  bool stop_requested = false;
  std::optional<actors::run_summary> summary;
  while (!(summary = run.wait_for(std::chrono::milliseconds(100)))) {
    if (stop_signalled() && !stop_requested) {
      stop_requested = true;
      const std::string again =
          stop_signal_name() == "SIGINT" ? "Ctrl-C again" : "a second " + stop_signal_name();
      if (!run.started || run.started())
        // Once training has ended the final evaluation (and checkpoint) is what runs to its end.
        printer.on_notice("interrupted by " + stop_signal_name() +
                          ": stopping after the rounds in flight, or the final evaluation once "
                          "training has ended (" +
                          again + " aborts)");
      printer.stopping();
      run.request_stop();
    }
  }
  printer.finish();

  if (!summary->started) { // nothing ran: no summary to show, only why
    std::cerr << "herd " << command << ": " << summary->error << '\n';
    return summary->stop_reason == actors::stop_cause::interrupted ? exit_interrupted
                                                                   : exit_run_failed;
  }
  print_summary(std::cout, *summary);
  if (!config.checkpoint.enabled()) // the final checkpoint line says where it is otherwise
    std::cout
        << "\nmodel not saved: set checkpoint.dir to keep it (for herd predict and --resume)\n";
  if (!report_file.empty()) {
    const auto report = report_json(*summary, config, keys_of(command));
    try {
      write_file_atomically(report_file, report);
      std::cout << "\nreport written to " << report_file << '\n';
    } catch (const std::exception& failure) {
      // Checked before the run, gone since (its directory removed, a disk full): the report is
      // not lost with it, but kept in the temporary directory.
      std::cerr << "herd " << command << ": --report " << report_file << ": " << failure.what()
                << '\n';
      const auto kept = std::filesystem::temp_directory_path() /
                        ("herd-report-" + std::to_string(::getpid()) + ".json");
      try {
        write_file_atomically(kept.string(), report);
        std::cerr << "herd " << command << ": the report is saved in " << kept.string()
                  << " instead\n";
      } catch (const std::exception&) {
        std::cerr << "herd " << command << ": nor could it be saved in " << kept.string() << '\n';
      }
      return exit_run_failed;
    }
  }
  if (summary->stop_reason == actors::stop_cause::error || !summary->error.empty())
    return exit_run_failed;
  // The run's end state is lost: a script that resumes from it must not go on. Before an
  // interruption's 130, which a service manager counts as a clean stop (a stop signal is when a
  // final checkpoint matters most).
  if (!summary->final_checkpoint_error.empty())
    return exit_run_failed;
  if (summary->stop_reason == actors::stop_cause::interrupted)
    return exit_interrupted;
  return exit_ok;
}

int serve_final_metrics(const std::string& command, const prepared_run& run, int status) {
  if (!run.endpoint)
    return status;
  run_has_ended();
  // A failed run stays unfinished: its process going away is worth a page.
  if (status == exit_ok || status == exit_interrupted)
    run.run_finished->set(1.0);
  const double linger = run.config.metrics.linger_seconds;
  if (linger <= 0.0 || stopped_after_run())
    return status;
  // One line within 80 columns; a stop signal (Ctrl-C) ends the wait, as a user would try.
  std::cout << "herd " << command << ": serving the final metrics " << linger
            << " s more (metrics.linger-seconds)" << std::endl;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(linger);
  while (std::chrono::steady_clock::now() < deadline && !stopped_after_run())
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return status;
}

std::string checkpoint_dir_problem(const config::run_config& config,
                                   const std::string& resume_path) {
  if (!config.checkpoint.enabled())
    return {};
  return checkpoint::run_directory_problem(config.checkpoint.dir, resume_path, "--resume");
}

std::optional<intact_checkpoint> intact_before(const std::string& path,
                                               const checkpoint::checkpoint_error& unusable) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error))
    return std::nullopt;
  try {
    checkpoint::read_file(unusable.file());
    return std::nullopt; // it reads: not damaged, and an older one would be refused alike
  } catch (const checkpoint::checkpoint_error&) {
  }
  const auto files = checkpoint::list(path);
  for (auto older = files.rbegin(); older != files.rend(); ++older) {
    if (*older >= unusable.file())
      continue;
    try {
      return intact_checkpoint{*older, checkpoint::read_file(*older).head.rounds};
    } catch (const checkpoint::checkpoint_error&) {
    }
  }
  return std::nullopt;
}

void say_resume_refused(const std::string& command, const std::string& resume_path,
                        const checkpoint::checkpoint_error& unusable) {
  std::cerr << "herd " << command << ": cannot resume from " << unusable.what() << '\n';
  if (const auto intact = intact_before(resume_path, unusable))
    std::cerr << "herd " << command << ": the newest intact checkpoint there is " << intact->file
              << " (round " << intact->rounds << "): move the damaged one away, or --resume "
              << intact->file
              << " --checkpoint.dir=DIR (in this directory the damaged, newer one is in the way)\n";
}

void announce_resume(const std::string& command, const std::string& file,
                     const actors::run_checkpoint& state, const config::run_config& config) {
  // "2.06", "1", "1234.5": never 1.23e+03.
  const auto number = [](double value) {
    return value == std::floor(value) && std::abs(value) < 1e15
               ? std::to_string(static_cast<long long>(value))
               : fixed(value, 2);
  };
  const auto as_set = [](double value) { // "0.5", "3600": as a setting is written
    std::ostringstream text;
    text << std::setprecision(15) << value;
    return text.str();
  };
  const auto& counters = state.coordinator.counters;
  const double epochs = counters.epochs();
  std::cout << "herd " << command << ": resuming from " << file << " (round " << counters.rounds
            << ", epoch " << number(epochs) << ")" << std::endl;
  for (const auto& line : actors::changed_settings(state.settings, config))
    std::cout << "herd " << command << ": changed since the checkpoint: " << line << std::endl;
  const double trained = state.coordinator.elapsed_seconds;
  if (epochs >= static_cast<double>(config.train.epochs))
    std::cout << "herd " << command << ": the checkpoint is at epoch " << number(epochs)
              << ", and train.epochs = " << config.train.epochs
              << ": the run trains no further (raise train.epochs to go on)" << std::endl;
  else if (config.train.max_seconds > 0.0 && trained >= config.train.max_seconds)
    std::cout << "herd " << command << ": the checkpoint is at " << fixed(trained, 1)
              << " s of training, and train.max-seconds = " << as_set(config.train.max_seconds)
              << ": the run trains no further (raise train.max-seconds to go on)" << std::endl;
}

} // namespace herd::cli
