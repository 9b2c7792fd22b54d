// `herd evaluate`; see evaluate_command.hpp.
#include "cli/evaluate_command.hpp"

#include "cli/checkpoint_model.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/train_command.hpp"
#include "herd/ops.hpp"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace herd::cli {

namespace {

// The samples of `data` whose label is `label`.
models::dataset of_class(const models::dataset& data, std::int32_t label) {
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < data.size(); ++i)
    if (data.labels[i] == label)
      rows.push_back(i);
  return models::subset(data, rows);
}

int run_evaluate(const std::vector<std::string>& args) {
  int status = exit_ok;
  const auto loaded = start_checkpoint_command(
      "evaluate", args, evaluate_help, [](argument_reader&) { return false; }, [] {}, status);
  if (!loaded)
    return status;
  const auto& ops = kernels::cpu_ops();
  const auto& model = *loaded->model;
  const auto& test = loaded->data->test;
  const float* parameters = loaded->parameters.data();
  auto work = model.make_workspace();
  const std::size_t batch = 1000;
  const auto whole = model.evaluate(ops, parameters, test, batch, *work);
  const auto& counters = loaded->state.coordinator.counters;
  std::printf("herd evaluate: %s (round %llu, epoch %.2f of a %s run with %zu workers)\n"
              "  parameters      %s\n"
              "  model           %s\n"
              "  test set        %s, %zu samples\n"
              "  test accuracy   %.4f\n"
              "  test loss       %.4f\n"
              "  per class       accuracy  samples\n",
              loaded->file.c_str(), static_cast<unsigned long long>(counters.rounds),
              counters.epochs(), loaded->config.train.algorithm.c_str(),
              loaded->state.workers.size(), loaded->parameters_origin.c_str(),
              model.describe().c_str(), test.name.c_str(), whole.samples, whole.accuracy(),
              whole.mean_loss);
  for (int label = 0; label < test.classes; ++label) {
    const auto subset = of_class(test, label);
    if (subset.size() == 0) {
      std::printf("  %14d         -        0\n", label);
      continue;
    }
    const auto per_class = model.evaluate(ops, parameters, subset, batch, *work);
    std::printf("  %14d    %.4f  %7zu\n", label, per_class.accuracy(), per_class.samples);
  }
  return exit_ok;
}

} // namespace

std::string evaluate_help() {
  std::ostringstream out;
  out << "usage: herd evaluate --checkpoint PATH [--last] [--data.key=value ...]\n\n"
         "Evaluates the model a checkpoint holds on its run's test set: test accuracy and loss,\n"
         "and the accuracy of each class. The model and the dataset are those of the run the\n"
         "checkpoint was taken in; the data settings below point to where the dataset is now.\n\n"
      << checkpoint_options_help()
      << "  --help, -h         show this help\n"
         "  --version          show the version\n\n"
         "Settings (on the command line as --section.key=value; they replace the\n"
         "checkpoint's):\n"
      << config::describe_keys(keys_of("evaluate"))
      << "\nExit status: 0 done, 2 bad input (a missing or damaged checkpoint, a dataset\n"
         "that is not there or does not fit the model).\n";
  return out.str();
}

int evaluate_command(const std::vector<std::string>& args) {
  return run_guarded("evaluate", [&args] { return run_evaluate(args); });
}

} // namespace herd::cli
