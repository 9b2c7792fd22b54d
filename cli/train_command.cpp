// `herd train`; see train_command.hpp.
#include "cli/train_command.hpp"

#include "actors/train_session.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/progress_printer.hpp"
#include "cli/run_support.hpp"
#include "cli/stop_signals.hpp"
#include "herd/config.hpp"
#include "herd/dataset.hpp"
#include "herd/metrics.hpp"
#include "herd/saved_model.hpp"
#include "monitoring/metrics_endpoint.hpp"

#include <chrono>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "checkpoint/format.hpp"

namespace herd::cli {

namespace {

// Everything `herd train` does; train_command() adds the last line of defence around it.
int run_train(const std::vector<std::string>& args);

} // namespace

std::string train_help() {
  std::ostringstream out;
  out << "usage: herd train [--config FILE] [--report FILE] [--resume PATH | --init-from PATH] "
         "[--section.key=value ...]\n\n"
         "Trains the configured model ([model], docs/models.md) with N worker actors in\n"
         "this process and prints a summary.\n\n"
         "  --config FILE, -c FILE  read settings from an INI file (e.g. config/quickstart.ini)\n"
         "  --report FILE           also write the run summary as JSON to FILE\n"
         "  --print-config          show the settings the run would use (the file, the\n"
         "                          overrides and the defaults; secrets left out) as INI,\n"
         "                          then exit; it checks the settings, not the model's\n"
         "                          layers, the backend's device or the data, which a run\n"
         "                          checks once it has loaded the data\n"
         "  --resume PATH           go on from a checkpoint: a file, or the newest in a\n"
         "                          directory (docs/checkpoints.md); the model, algorithm,\n"
         "                          workers, batch size and seed must be the checkpoint's\n"
         "  --init-from PATH        start a new run from a checkpoint's parameters (those\n"
         "                          the run kept: that reached its target where it stopped\n"
         "                          there, else with train.patience its best evaluation's,\n"
         "                          else its last): only the model must be the checkpoint's;\n"
         "                          any algorithm, workers, batch size or learning rate; the\n"
         "                          optimizer's state starts at zero and the run at round 0\n"
         "  --help, -h              show this help\n"
         "  --version               show the version\n\n"
         "Settings (in a file as [section] key = value; on the command line as\n"
         "--section.key=value, which overrides the file):\n"
      << config::describe_keys(keys_of("train"))
      << "\nTraining stops at train.target-accuracy, train.epochs, train.max-seconds or, with\n"
         "train.patience, a plateau, whichever comes first. Ctrl-C (or SIGTERM, SIGHUP) stops "
         "after the rounds in\n"
         "flight and prints the summary; before the run starts it ends herd at once; a\n"
         "second Ctrl-C aborts. With checkpoint.dir set, checkpoints are written every\n"
         "checkpoint.every-seconds / checkpoint.every-rounds and when the run stops\n"
         "(Ctrl-C included). A run resumed with --resume goes on counting: its epochs\n"
         "and train.max-seconds include the training its checkpoint holds.\n\n"
         "Exit status: 0 done, 1 the run failed (or its final checkpoint could not be\n"
         "written, interrupted or not), 2 bad input, 130 interrupted (by SIGINT, SIGTERM\n"
         "or SIGHUP).\n";
  return out.str();
}

int train_command(const std::vector<std::string>& args) {
  return run_guarded(
      "train", [&args] { return run_train(args); }, standard_output::progress);
}

namespace {

// "lr 0.05", the optimizer unless SGD, and the schedule's shape: "adamw lr 0.001 cosine to 0,
// warmup 1 epochs".
std::string describe_learning_rate(const config::train_section& train) {
  std::ostringstream out;
  if (train.optimizer != "sgd")
    out << train.optimizer << ' ';
  out << "lr " << train.lr;
  if (train.lr_schedule == "cosine")
    out << " cosine to " << train.lr_min;
  else if (train.lr_schedule == "step")
    out << " x" << train.lr_decay << " every " << train.lr_decay_epochs << " epochs";
  if (train.lr_warmup_epochs > 0.0)
    out << ", warmup " << train.lr_warmup_epochs << " epochs from lr "
        << train.lr * train.lr_warmup_start;
  return out.str();
}

int run_train(const std::vector<std::string>& args) {
  run_arguments parsed;
  try {
    parsed = parse_run_arguments(args, "train", {"--resume", "--init-from"});
    if (parsed.options.count("--resume") != 0 && parsed.options.count("--init-from") != 0)
      throw std::invalid_argument("--resume and --init-from exclude each other: --resume goes on "
                                  "with a run's whole state, --init-from starts a new run from "
                                  "its parameters");
  } catch (const std::invalid_argument& bad) {
    std::cerr << "herd train: " << bad.what() << '\n';
    return exit_bad_input;
  }
  if (parsed.help) {
    std::cout << fit_help(train_help());
    return exit_ok;
  }
  auto preparation = prepare_run("train", parsed);
  if (!preparation.run)
    return preparation.exit_status;
  auto& prepared = preparation.run;
  const auto& config = prepared->config;
  const auto& data = prepared->data;
  progress_printer printer(std::cout, progress_options_for(config));
  actors::session_options options;
  options.observer = &printer;
  options.metrics = prepared->metrics;
  // The process is herd's own: one BLAS thread per worker when several share the cores.
  options.blas_threads = actors::blas_threads_for(config, config.train.workers);
  const auto resume = parsed.options.find("--resume");
  const std::string resume_path = resume == parsed.options.end() ? "" : resume->second;
  if (!resume_path.empty()) {
    try {
      auto loaded = actors::load_checkpoint(config, *data, resume_path);
      announce_resume("train", loaded.file, *loaded.state, config);
      if (!prepared->resume_note.empty())
        std::cerr << "herd train: note: " << prepared->resume_note << '\n';
      options.resume = std::move(loaded.state);
      options.resume_path = resume_path;
    } catch (const checkpoint::checkpoint_error& unusable) {
      say_resume_refused("train", resume_path, unusable);
      if (unusable.problem_kind() == checkpoint::checkpoint_error::kind::other_shape) {
        if (parsed.config_file.empty())
          std::cerr << "herd train: the checkpoint's settings are not read back: to go on with "
                       "its run, give this one the same settings (that run's --config and "
                       "--section.key=value)\n";
        std::cerr << "herd train: to start a new run from its parameters instead (another "
                     "algorithm, worker count or batch size; the optimizer's state and the round "
                     "count start afresh), use --init-from "
                  << resume_path << '\n';
      }
      return exit_bad_input;
    }
  }
  if (const auto init = parsed.options.find("--init-from"); init != parsed.options.end()) {
    try {
      auto saved = checkpoint::read_model(init->second, *prepared->model);
      std::cout << "herd train: starting from " << saved.file << ": " << saved.parameters_origin
                << "; optimizer state from zero, round 0" << std::endl;
      options.initial_parameters = std::move(saved.parameters);
    } catch (const checkpoint::checkpoint_error& unusable) {
      std::cerr << "herd train: --init-from " << unusable.what() << '\n';
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

  std::ostringstream header;
  header << "herd train: " << config.train.algorithm << ", " << config.train.workers
         << (config.train.workers == 1 ? " worker" : " workers") << " x batch "
         << config.train.batch_size << ", " << describe_learning_rate(config.train) << ", "
         << describe_model(*prepared->model) << ", " << data->train.name << " ("
         << data->train.size() << " train / "
         << (data->validation.size() > 0
                 ? std::to_string(data->validation.size()) + " validation / "
                 : "")
         << data->test.size() << " test, loaded in " << std::fixed << std::setprecision(1)
         << prepared->load_seconds << " s)";
  std::cout << for_standard_output(header.str()) << std::endl;
  if (prepared->endpoint)
    std::cout << "herd train: Prometheus metrics at " << prepared->endpoint->url() << std::endl;

  // The last moment a signal means "no run": from here on it stops the run (await_run).
  if (interrupted_before_run("train"))
    return exit_interrupted;
  session->start();
  const int status = await_run(
      "train",
      {[&session](std::chrono::milliseconds timeout) { return session->wait_for(timeout); },
       [&session] { session->request_stop(); },
       {}},
      printer, config, parsed.report_file);
  return serve_final_metrics("train", *prepared, status);
}

} // namespace

} // namespace herd::cli
