// The model a checkpoint holds; see checkpoint_model.hpp.
#include "cli/checkpoint_model.hpp"

#include "actors/train_session.hpp"
#include "checkpoint/format.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "policy/policy.hpp"

#include <iostream>

namespace herd::cli {

std::optional<checkpoint_model> load_checkpoint_model(const std::string& command,
                                                      const checkpoint_choice& choice) {
  checkpoint_model loaded;
  try {
    loaded.file = checkpoint::resolve(choice.path);
    loaded.state = actors::decode_payload(checkpoint::read_file(loaded.file).payload, loaded.file);
    const std::string origin = loaded.file + " (the settings it was taken with)";
    loaded.config = config::from_ini(loaded.state.settings, origin, choice.settings);
    // data.* settings say where the run's dataset is now; another dataset is prepared otherwise
    // (Fashion-MNIST normalised with its training set's mean, .npy values as they are), and the
    // model would answer other inputs without a word.
    if (const auto trained_on = config::from_ini(loaded.state.settings, origin).data.dataset;
        trained_on != loaded.config.data.dataset)
      throw config::invalid_config(
          {{"data.dataset", "data.dataset = " + loaded.config.data.dataset +
                                " (command line): the checkpoint's run trained on " + trained_on +
                                ", whose samples are prepared otherwise; data.* settings may say "
                                "where that dataset is now (data.path, data.train-features, ...), "
                                "not name another"}});
  } catch (const config::invalid_config& invalid) {
    print_config_errors(command, invalid);
    return std::nullopt;
  } catch (const std::exception& bad) { // checkpoint_error names the file and the problem
    std::cerr << "herd " << command << ": " << bad.what() << '\n';
    return std::nullopt;
  }
  loaded.data = load_data_or_report(command, loaded.config);
  if (!loaded.data)
    return std::nullopt;
  try {
    loaded.model = actors::make_model(loaded.config, loaded.data->train);
    // herd evaluate reads the test set: its token rows are checked as a run's are.
    actors::check_token_input(*loaded.model, loaded.data->test, false, loaded.config,
                              loaded.config.model.layers.empty() ? "model.preset" : "model.layers");
    // The same checks as a resume: the structure the file names and the tensors' sizes.
    loaded.state = actors::load_for_resume(
        loaded.file,
        actors::structure_of(loaded.config, *loaded.model, loaded.data->train.size()),
        loaded.model->parameter_count());
    const bool mean = policy::make_policy(loaded.config)->exchanges_models();
    auto chosen = actors::parameters_to_serve(loaded.state, loaded.file, choice.last, mean);
    loaded.parameters = std::move(chosen.values);
    loaded.parameters_origin = std::move(chosen.origin);
  } catch (const config::invalid_config& invalid) {
    print_config_errors(command, invalid);
    return std::nullopt;
  } catch (const checkpoint::checkpoint_error& unusable) {
    std::cerr << "herd " << command << ": " << unusable.what() << '\n';
    return std::nullopt;
  }
  return loaded;
}

std::optional<checkpoint_model>
start_checkpoint_command(const std::string& command, const std::vector<std::string>& args,
                         const std::function<std::string()>& help,
                         const std::function<bool(argument_reader&)>& own_option,
                         const std::function<void()>& check_own, int& status) {
  checkpoint_choice choice;
  bool help_asked = false;
  const std::string see = " (see herd " + command + " --help)";
  try {
    for (argument_reader reader(args); !reader.done(); reader.next()) {
      const std::string& arg = reader.current();
      if (arg == "--help" || arg == "-h")
        help_asked = true;
      else if (arg == "--last")
        choice.last = true;
      else if (reader.is("--checkpoint"))
        choice.path = reader.value("--checkpoint", " (a checkpoint file or directory)");
      else if (reader.is_setting())
        choice.settings.push_back(arg);
      else if (!own_option(reader))
        throw std::invalid_argument("unknown argument '" + arg + "'" + see);
    }
    if (!help_asked) {
      if (choice.path.empty())
        throw std::invalid_argument("--checkpoint PATH is required" + see);
      check_own();
      check_settings(command, choice.settings);
    }
  } catch (const std::exception& bad) {
    std::cerr << "herd " << command << ": " << bad.what() << '\n';
    status = 2;
    return std::nullopt;
  }
  if (help_asked) {
    std::cout << fit_help(help());
    status = 0;
    return std::nullopt;
  }
  auto loaded = load_checkpoint_model(command, choice);
  status = loaded ? 0 : 2;
  return loaded;
}

std::string checkpoint_options_help() {
  return "  --checkpoint PATH  a checkpoint file, or a directory (its newest checkpoint)\n"
         "  --last             use the workers' last parameters (under model averaging their\n"
         "                     mean) even where the run stopped at its target accuracy; by\n"
         "                     default such a run's parameters that reached it are used\n";
}

} // namespace herd::cli
