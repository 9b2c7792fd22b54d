// `herd evaluate`; see evaluate_command.hpp.
#include "cli/evaluate_command.hpp"

#include "actors/checkpoint_state.hpp"
#include "actors/train_session.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/train_command.hpp"
#include "kernels/ops.hpp"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "checkpoint/format.hpp"
#include "policy/policy.hpp"

namespace herd::cli {

namespace {

struct evaluate_arguments {
  std::string checkpoint;
  std::vector<std::string> settings; // --data.key=value
  bool help = false;
};

evaluate_arguments parse(const std::vector<std::string>& args) {
  evaluate_arguments parsed;
  for (argument_reader reader(args); !reader.done(); reader.next()) {
    const std::string& arg = reader.current();
    if (arg == "--help" || arg == "-h")
      parsed.help = true;
    else if (reader.is("--checkpoint"))
      parsed.checkpoint = reader.value("--checkpoint", " (a checkpoint file or directory)");
    else if (reader.is_setting())
      parsed.settings.push_back(arg);
    else
      throw std::invalid_argument("unknown argument '" + arg + "' (see herd evaluate --help)");
  }
  if (!parsed.help && parsed.checkpoint.empty())
    throw std::invalid_argument("--checkpoint PATH is required (see herd evaluate --help)");
  check_settings("evaluate", parsed.settings);
  return parsed;
}

// The samples of `data` whose label is `label`.
models::dataset of_class(const models::dataset& data, std::int32_t label) {
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < data.size(); ++i)
    if (data.labels[i] == label)
      rows.push_back(i);
  models::dataset subset;
  subset.classes = data.classes;
  subset.name = data.name;
  subset.sample_shape = data.sample_shape;
  if (rows.empty())
    return subset;
  const std::size_t features = data.features();
  subset.images = models::tensor({rows.size(), features});
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::copy_n(data.images.data() + rows[r] * features, features,
                subset.images.data() + r * features);
    subset.labels.push_back(label);
  }
  return subset;
}

int run_evaluate(const std::vector<std::string>& args) {
  evaluate_arguments parsed;
  actors::run_checkpoint state;
  std::string file;
  config::run_config config;
  try {
    parsed = parse(args);
    if (parsed.help) {
      std::cout << evaluate_help();
      return exit_ok;
    }
    file = checkpoint::resolve(parsed.checkpoint);
    state = actors::decode_payload(checkpoint::read_file(file).payload, file);
    config = config::load_text(state.settings, file + " (the settings it was taken with)",
                               parsed.settings);
  } catch (const config::invalid_config& invalid) {
    print_config_errors("evaluate", invalid);
    return exit_bad_input;
  } catch (const std::exception& bad) { // checkpoint_error names the file and the problem
    std::cerr << "herd evaluate: " << bad.what() << '\n';
    return exit_bad_input;
  }
  const auto data = load_data_or_report("evaluate", config);
  if (!data)
    return exit_bad_input;
  std::shared_ptr<const models::model> model;
  std::vector<float> parameters;
  try {
    model = actors::make_model(config, data->train);
    // The same checks as a resume: the structure the file names and the tensors' sizes.
    state = actors::load_for_resume(file, actors::structure_of(config, *model, data->train.size()),
                                    model->parameter_count());
    parameters = actors::model_parameters(state, policy::make_policy(config)->exchanges_models());
  } catch (const config::invalid_config& invalid) {
    print_config_errors("evaluate", invalid);
    return exit_bad_input;
  } catch (const checkpoint::checkpoint_error& unusable) {
    std::cerr << "herd evaluate: " << unusable.what() << '\n';
    return exit_bad_input;
  }
  const auto& ops = kernels::cpu_ops();
  auto work = model->make_workspace();
  const std::size_t batch = 1000;
  const auto whole = model->evaluate(ops, parameters.data(), data->test, batch, *work);
  const auto& counters = state.coordinator.counters;
  std::printf("herd evaluate: %s (round %llu, epoch %.2f of a %s run with %zu workers)\n"
              "  model           %s\n"
              "  test set        %s, %zu samples\n"
              "  test accuracy   %.4f\n"
              "  test loss       %.4f\n"
              "  per class       accuracy  samples\n",
              file.c_str(), static_cast<unsigned long long>(counters.rounds), counters.epochs(),
              config.train.algorithm.c_str(), state.workers.size(), model->describe().c_str(),
              data->test.name.c_str(), whole.samples, whole.accuracy(), whole.mean_loss);
  for (int label = 0; label < data->test.classes; ++label) {
    const auto subset = of_class(data->test, label);
    if (subset.size() == 0) {
      std::printf("  %14d         -        0\n", label);
      continue;
    }
    const auto per_class = model->evaluate(ops, parameters.data(), subset, batch, *work);
    std::printf("  %14d    %.4f  %7zu\n", label, per_class.accuracy(), per_class.samples);
  }
  return exit_ok;
}

} // namespace

std::string evaluate_help() {
  std::ostringstream out;
  out << "usage: herd evaluate --checkpoint PATH [--data.key=value ...]\n\n"
         "Evaluates the model a checkpoint holds on its run's test set: test accuracy and loss,\n"
         "and the accuracy of each class. The model (under model averaging, the mean of the\n"
         "replicas) and the dataset are those of the run the checkpoint was taken in; the\n"
         "data settings below point to where the dataset is now.\n\n"
         "  --checkpoint PATH  a checkpoint file, or a directory (its newest checkpoint)\n"
         "  --help, -h         show this help\n"
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
