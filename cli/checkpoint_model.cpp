// The model a checkpoint holds; see checkpoint_model.hpp.
#include "cli/checkpoint_model.hpp"

#include "actors/train_session.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/run_support.hpp"
#include "herd/data.hpp"
#include "herd/sequential.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <utility>

#include "checkpoint/format.hpp"
#include "policy/policy.hpp"

namespace herd::cli {

namespace {

// A data error about a path the checkpoint's settings gave (not this command line) says so, and
// which key to give: a relative path is as the run was given it, relative to where it ran.
std::string with_path_origin(const models::data_error& problem, const config::run_config& config,
                             const std::vector<std::string>& given) {
  const auto key = data_key_of(config, problem.file());
  if (key.empty())
    return problem.what();
  const std::string option = "--" + key + "=";
  const bool on_command_line = std::any_of(
      given.begin(), given.end(), [&](const auto& arg) { return arg.rfind(option, 0) == 0; });
  if (on_command_line)
    return problem.what();
  return problem.what() + std::string(" (") + key + " = \"" + problem.file() +
         "\" is the checkpoint's setting, as its run was given it; give " + option +
         "PATH for where the file is now)";
}

// The run's test set made into what the model reads, and checked: token rows as wide as the
// model's sequences (a .npy file may be narrower or wider than the training file), dense samples
// of the model's layout, labels among its classes. Throws config::invalid_config naming the key.
std::shared_ptr<const models::dataset> fitted_test_set(std::shared_ptr<const models::dataset> test,
                                                       const models::model& model,
                                                       const models::normalisation& normalisation,
                                                       const config::run_config& config,
                                                       const std::string& command) {
  const bool files = config.data.dataset == "npy";
  // Pixels are normalised as the run's were (the checkpoint's record), not with the statistics of
  // the training file found now: another copy of the dataset, or a checkpoint written before the
  // validation set was left out of them.
  const auto& now = test->input_normalisation;
  if (!test->ragged() && now.scaled_bytes && normalisation.scaled_bytes &&
      (now.mean != normalisation.mean || now.stddev != normalisation.stddev)) {
    std::ostringstream note;
    note << "herd " << command << ": the test set is normalised with the run's pixel statistics "
         << "(mean " << normalisation.mean << ", stddev " << normalisation.stddev
         << "), not those of the training file now (mean " << now.mean << ", stddev " << now.stddev
         << ")";
    std::cerr << note.str() << '\n';
    test = std::make_shared<const models::dataset>(models::renormalised(*test, normalisation));
  }
  const auto* layers = dynamic_cast<const models::sequential*>(&model);
  if (layers != nullptr && layers->takes_tokens() && !test->ragged() &&
      test->features() != models::elements(model.input_shape())) {
    auto fitted = std::make_shared<models::dataset>(*test);
    std::size_t cut = 0;
    fitted->images = model_token_rows(test->images, *layers, cut);
    fitted->sample_shape.clear();
    if (cut > 0)
      std::cerr << "herd " << command << ": "
                << cut_note(cut, files ? config.data.test_features : test->name,
                            fitted->images.cols())
                << '\n';
    test = std::move(fitted);
  }
  const std::string key = files ? "data.test-features" : "data.dataset";
  const std::string name = files ? config.data.test_features : "the dataset " + test->name;
  if (const auto note = bytes_note(!test->ragged() && test->input_normalisation.scaled_bytes, name,
                                   normalisation);
      !note.empty())
    std::cerr << "herd " << command << ": " << note << '\n';
  // Values read as floats may be unscaled bytes; a set made from bytes is scaled and normalised.
  if (!test->ragged() && !test->input_normalisation.scaled_bytes)
    if (const auto problem = unscaled_problem(test->images, normalisation); !problem.empty())
      throw config::invalid_config({{key, key + ": " + name + " holds " + problem}});
  if (const auto problem = layout_problem(test->input_shape(), model.input_shape());
      !problem.empty())
    throw config::invalid_config({{key, key + ": " + name + " holds samples of " + problem}});
  if (test->classes > 0 && static_cast<std::size_t>(test->classes) > model.classes()) {
    const std::string labels_key = files ? "data.test-labels" : "data.dataset";
    throw config::invalid_config(
        {{labels_key, labels_key + ": " + (files ? config.data.test_labels : name) +
                          " holds labels up to " + std::to_string(test->classes - 1) +
                          ", but the checkpoint's model scores classes 0 to " +
                          std::to_string(model.classes() - 1)}});
  }
  return test;
}

} // namespace

std::string layout_problem(const models::shape& given, const models::shape& wanted) {
  if (models::elements(given) != models::elements(wanted))
    return models::shape_text(given) + " but the checkpoint's model takes " +
           models::shape_text(wanted) + " (" + std::to_string(models::elements(wanted)) +
           " values each)";
  // Extents of 1 say nothing, wherever they are (a grey image without its channel, or with it
  // last): dropping one leaves every value in its place. Flat samples are read in the model's
  // order, and a flat model reads whatever order it was trained on.
  const auto squeezed = [](models::shape dims) {
    dims.erase(std::remove(dims.begin(), dims.end(), std::size_t{1}), dims.end());
    return dims;
  };
  const auto given_dims = squeezed(given);
  const auto wanted_dims = squeezed(wanted);
  if (given_dims.size() == 1 || wanted_dims.size() == 1 || given_dims == wanted_dims)
    return {};
  // Channels last (PIL, Keras, OpenCV) against the model's channels first: the commonest case.
  const bool channels_last = given.size() == 3 && wanted.size() == 3 &&
                             given == models::shape{wanted[1], wanted[2], wanted[0]};
  return models::shape_text(given) + " but the checkpoint's model takes " +
         models::shape_text(wanted) +
         ": as many values in another layout, which the model would read wrongly" +
         (channels_last ? " (channels last; transpose them to channels first, in numpy "
                          "x.transpose(0, 3, 1, 2))"
                        : "") +
         "; flat samples (n x " + std::to_string(models::elements(wanted)) +
         ") are read in the model's order";
}

std::string unscaled_problem(const models::tensor& values, const models::normalisation& norm) {
  // Normalised Fashion-MNIST reaches about 2.0 (white); unscaled bytes go to 255.
  constexpr float highest_scaled = 1.5f;
  if ((!norm.scaled_bytes && norm.identity()) || values.empty())
    return {};
  const auto [smallest, largest] =
      std::minmax_element(values.data(), values.data() + values.size());
  std::ostringstream text;
  if (*smallest < -0.01f) { // normalised already: herd would normalise them a second time
    text << "values down to " << *smallest
         << ", but the model takes values scaled to [0, 1] (byte / 255), as its training data "
            "were before herd normalised them: give them before normalisation, as uint8 bytes "
            "or floats divided by 255 (herd normalises them as it did in training)";
    return text.str();
  }
  if (*largest <= highest_scaled)
    return {};
  text << "values up to " << *largest
       << ", but the model takes values scaled to [0, 1] (byte / 255), as its training data "
          "were: give raw bytes as uint8 (herd scales them), or floats divided by 255"
       << (norm.identity() ? "" : ", not normalised (herd does that)");
  return text.str();
}

std::string bytes_note(bool bytes, const std::string& source, const models::normalisation& norm) {
  if (!bytes || norm.scaled_bytes)
    return {};
  return "note: " + source +
         " holds uint8 values, which herd divides by 255, but the checkpoint's model was "
         "trained on values that were not bytes: unless those were already scaled to [0, 1], "
         "give these as float32, as they were";
}

std::string cut_note(std::size_t cut, const std::string& source, std::size_t width) {
  return std::to_string(cut) + " sample(s) of " + source + " longer than the model's " +
         std::to_string(width) + " tokens: cut to their first " + std::to_string(width) +
         ", all the model reads";
}

models::tensor model_token_rows(const models::tensor& given, const models::sequential& model,
                                std::size_t& cut) {
  const std::size_t width = models::elements(model.input_shape());
  models::tensor rows({given.rows(), width});
  cut = 0;
  for (std::size_t r = 0; r < given.rows(); ++r) {
    const float* in = given.row(r);
    const auto length = static_cast<std::size_t>(
        std::find_if(in, in + given.cols(), [](float v) { return v < 0; }) - in);
    cut += length > width ? 1 : 0;
    const std::size_t kept = std::min(given.cols(), width);
    std::copy(in, in + kept, rows.row(r));
    std::fill(rows.row(r) + kept, rows.row(r) + width, -1.0f);
  }
  return rows;
}

// The value of the last --data.dataset=VALUE among `settings` (quotes taken off), or empty.
std::string dataset_given(const std::vector<std::string>& settings) {
  const std::string option = "--data.dataset=";
  std::string value;
  for (const auto& setting : settings)
    if (setting.rfind(option, 0) == 0)
      value = setting.substr(option.size());
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
    value = value.substr(1, value.size() - 2);
  return value;
}

std::optional<checkpoint_model> load_checkpoint_model(const std::string& command,
                                                      const checkpoint_choice& choice) {
  checkpoint_model loaded;
  try {
    loaded.file = checkpoint::resolve(choice.path);
    loaded.state = actors::read_run_checkpoint(loaded.file);
    const std::string origin = loaded.file + " (the settings it was taken with)";
    // data.* settings say where the run's dataset is now; another dataset is prepared otherwise
    // (Fashion-MNIST normalised with its training set's mean, .npy values as they are), and the
    // model would answer other inputs without a word. Checked first: merged, the settings of the
    // other dataset are refused for what they lack (training files evaluate never reads).
    const auto trained_on = config::from_ini(loaded.state.settings, origin).data.dataset;
    if (const auto asked = dataset_given(choice.settings); !asked.empty() && asked != trained_on)
      throw config::invalid_config(
          {{"data.dataset", "data.dataset = " + asked +
                                " (command line): the checkpoint's run trained on " + trained_on +
                                ", whose samples are prepared otherwise; data.* settings may say "
                                "where that dataset is now (data.path, data.train-features, ...), "
                                "not name another"}});
    loaded.config = config::from_ini(loaded.state.settings, origin, choice.settings);
  } catch (const config::invalid_config& invalid) {
    print_config_errors(command, invalid);
    return std::nullopt;
  } catch (const checkpoint::checkpoint_error& unusable) { // names the file and the problem
    std::cerr << "herd " << command << ": " << unusable.what() << '\n';
    if (const auto intact = intact_before(choice.path, unusable))
      std::cerr << "herd " << command << ": the newest intact checkpoint there is " << intact->file
                << " (round " << intact->rounds << "): --checkpoint " << intact->file
                << " reads it\n";
    return std::nullopt;
  } catch (const std::exception& bad) {
    std::cerr << "herd " << command << ": " << bad.what() << '\n';
    return std::nullopt;
  }
  // What the model is built from: the checkpoint's account of its inputs, or for a checkpoint of
  // format version 5, which has none, the run's training set.
  actors::model_inputs inputs = loaded.state.inputs;
  try {
    const auto note = data_notes_of(command);
    if (inputs.known()) {
      // Fashion-MNIST's test files alone, normalised as the run's were (the checkpoint says how).
      if (choice.test_set) {
        const auto recorded = actors::shaped_like(inputs).input_normalisation;
        loaded.test = models::load_test_dataset(loaded.config, note, &recorded);
      }
    } else {
      const auto data = models::load_dataset(loaded.config, note);
      inputs = actors::inputs_of(data->train);
      if (choice.test_set)
        loaded.test = {data, &data->test};
    }
  } catch (const models::data_error& bad) {
    std::cerr << "herd " << command << ": " << with_path_origin(bad, loaded.config, choice.settings)
              << '\n';
    return std::nullopt;
  } catch (const config::invalid_config& invalid) {
    print_config_errors(command, invalid);
    return std::nullopt;
  }
  const auto shape = actors::shaped_like(inputs);
  loaded.input_normalisation = shape.input_normalisation;
  try {
    loaded.model = actors::make_model(loaded.config, shape);
    loaded.class_names = models::class_names(loaded.config);
    if (loaded.class_names.size() != loaded.model->classes())
      loaded.class_names.clear();
    if (loaded.test) {
      loaded.test = fitted_test_set(loaded.test, *loaded.model, loaded.input_normalisation,
                                    loaded.config, command);
      // Its token rows are checked as a run's are.
      actors::check_token_input(*loaded.model, *loaded.test, actors::data_role::test, loaded.config,
                                loaded.config.model.layers.empty() ? "model.preset"
                                                                   : "model.layers");
    }
    // The model's description and every tensor's size, against the file.
    loaded.state = actors::load_for_model(loaded.file, *loaded.model);
    const bool mean = policy::make_policy(loaded.config)->exchanges_models();
    auto chosen = actors::parameters_to_serve(loaded.state, loaded.file, choice.last, mean,
                                              loaded.config.data.has_validation_set());
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
                         const std::function<void()>& check_own, bool test_set, int& status) {
  checkpoint_choice choice;
  choice.test_set = test_set;
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
        throw std::invalid_argument("unknown argument '" + arg + "'" +
                                    near_option(arg, options_of_help(help())) + see);
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
         "                     mean); by default the run's kept ones: those that reached its\n"
         "                     target where it stopped there, else with train.patience those\n"
         "                     of its best evaluation\n";
}

} // namespace herd::cli
