// `herd predict`; see predict_command.hpp.
#include "cli/predict_command.hpp"

#include "cli/checkpoint_model.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/report.hpp"
#include "cli/train_command.hpp"
#include "herd/predict.hpp"
#include "herd/sequential.hpp"
#include "models/npy.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace herd::cli {

namespace {

struct predict_options {
  std::string input;
  std::string output; // "": CSV on stdout
};

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// --input and --output, as start_checkpoint_command offers them.
bool read_option(argument_reader& reader, predict_options& options) {
  if (reader.is("--input"))
    options.input = reader.value("--input", " (a .npy file of samples)");
  else if (reader.is("--output"))
    options.output = reader.value("--output", " (a .csv or .npy file)");
  else
    return false;
  return true;
}

void check(const predict_options& options) {
  if (options.input.empty())
    throw std::invalid_argument("--input FILE.npy is required (see herd predict --help)");
  if (!options.output.empty() && !ends_with(options.output, ".csv") &&
      !ends_with(options.output, ".npy"))
    throw std::invalid_argument("--output " + options.output +
                                ": the file must end in .csv or .npy (the format it is written in)");
}

// Rows of token ids for a model that takes tokens, checked as the run's were
// (models::check_token_rows) and made as wide as the model's sequences (model_token_rows: `cut`
// counts the rows cut). Throws data_error naming the file, the sample and the place.
models::tensor token_rows(const std::string& path, const models::npy_samples& samples,
                          const models::sequential& model, std::size_t& cut) {
  if (samples.bytes)
    throw models::data_error(path + " holds uint8 values, which herd scales as pixels and which "
                                    "cannot hold the padding -1; write the token ids as int32, int64 or float32");
  auto rows = model_token_rows(samples.values, model, cut);
  // What the model reads, as training checks texts up to data.max-length: a cut part is not.
  models::check_token_rows(rows, model.vocabulary(), path);
  return rows;
}

// The samples of `path`, made into what the model was trained on: the shape it takes, and the
// training data's normalisation. Throws data_error naming the file.
models::tensor model_inputs(const std::string& path, const checkpoint_model& loaded) {
  const auto* layers = dynamic_cast<const models::sequential*>(loaded.model.get());
  if (layers == nullptr || !layers->takes_tokens()) { // the header says the shape: before reading
    const auto header = models::read_npy_header(path);
    if (header.shape.size() >= 2)
      if (const auto problem = layout_problem({header.shape.begin() + 1, header.shape.end()},
                                              loaded.model->input_shape());
          !problem.empty())
        throw models::data_error(path + " holds samples of " + problem);
  }
  auto samples = models::read_npy_samples(path, loaded.config.data.max_bytes);
  if (layers != nullptr && layers->takes_tokens()) {
    std::size_t cut = 0;
    auto rows = token_rows(path, samples, *layers, cut);
    if (cut > 0)
      std::cerr << "herd predict: " << cut_note(cut, path, rows.cols()) << '\n';
    return rows;
  }
  const auto given = samples.sample_shape.empty()
                         ? models::shape{samples.values.cols()}
                         : models::shape(samples.sample_shape.begin(), samples.sample_shape.end());
  if (const auto problem = layout_problem(given, loaded.model->input_shape()); !problem.empty())
    throw models::data_error(path + " holds samples of " + problem);
  const auto norm = loaded.input_normalisation;
  if (const auto note = bytes_note(samples.bytes, path, norm); !note.empty())
    std::cerr << "herd predict: " << note << '\n';
  if (const auto problem = unscaled_problem(samples.values, norm); !problem.empty())
    throw models::data_error(path + " holds " + problem);
  if (!norm.identity())
    for (std::size_t i = 0; i < samples.values.size(); ++i)
      samples.values[i] = norm.apply(samples.values[i]);
  return std::move(samples.values);
}

// A header, then per sample the classes' probabilities and the predicted class; with the
// classes' names (`names`, by label; empty: none), that class's name too.
std::string csv(const models::tensor& probs, const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t c = 0; c < probs.cols(); ++c)
    text += (c ? ",class_" : "class_") + std::to_string(c);
  text += names.empty() ? ",predicted\n" : ",predicted,predicted_name\n";
  char number[32];
  for (std::size_t r = 0; r < probs.rows(); ++r) {
    const float* row = probs.row(r);
    for (std::size_t c = 0; c < probs.cols(); ++c) {
      std::snprintf(number, sizeof number, c ? ",%.6g" : "%.6g", row[c]);
      text += number;
    }
    const auto predicted =
        static_cast<std::size_t>(std::max_element(row, row + probs.cols()) - row);
    text += "," + std::to_string(predicted) + (names.empty() ? "" : "," + names[predicted]) + "\n";
  }
  return text;
}

int run_predict(const std::vector<std::string>& args) {
  predict_options parsed;
  int status = exit_ok;
  const auto loaded = start_checkpoint_command(
      "predict", args, predict_help,
      [&parsed](argument_reader& reader) { return read_option(reader, parsed); },
      [&parsed] { check(parsed); }, false, status);
  if (!loaded)
    return status;
  models::tensor inputs;
  try {
    inputs = model_inputs(parsed.input, *loaded);
    if (!parsed.output.empty()) {
      for (const auto& [option, file] : {std::pair{"--input", parsed.input},
                                         std::pair{"--checkpoint", loaded->file}})
        if (same_file(parsed.output, file))
          throw std::invalid_argument("--output " + parsed.output + " is the " + option +
                                      " file " + file +
                                      ": the probabilities would replace it; name another file");
      check_writable(parsed.output);
    }
  } catch (const std::exception& bad) {
    std::cerr << "herd predict: " << bad.what() << '\n';
    return exit_bad_input;
  }
  models::tensor probs({inputs.rows(), loaded->model->classes()});
  const auto values =
      models::predict(*loaded->model, loaded->parameters, inputs.data(), inputs.rows());
  std::copy(values.begin(), values.end(), probs.data());
  std::cerr << "herd predict: " << inputs.rows()
            << (inputs.rows() == 1 ? " sample of " : " samples of ") << parsed.input << " through "
            << loaded->file << ", " << loaded->parameters_origin << '\n';
  if (parsed.output.empty()) {
    std::cout << csv(probs, loaded->class_names);
    return exit_ok;
  }
  write_file_atomically(parsed.output, ends_with(parsed.output, ".npy")
                                           ? models::npy_bytes(probs)
                                           : csv(probs, loaded->class_names));
  std::cerr << "herd predict: wrote " << parsed.output << '\n';
  return exit_ok;
}

} // namespace

std::string predict_help() {
  std::ostringstream out;
  out << "usage: herd predict --checkpoint PATH --input FILE.npy [--output FILE.csv|FILE.npy]\n"
         "                    [--last] [--data.key=value ...]\n\n"
         "Gives the class probabilities of new samples under the model a checkpoint holds. The\n"
         "input is a .npy array of n samples of the model's input shape (n x 1 x 28 x 28, also\n"
         "without the 1 or with it last, or flat: n x 784; channels first, as C x H x W: another\n"
         "layout of as many values is refused): float32, float64, int32, int64, or uint8 (scaled "
         "to [0, 1]).\n"
         "Samples are\n"
         "prepared as the run's\n"
         "training data were: for Fashion-MNIST, values in [0, 1] (pixel / 255; floats above 1.5\n"
         "are refused as unscaled pixels) normalised with\n"
         "the training set's mean and deviation; .npy datasets' values are used as they are. For\n"
         "a model of texts, each row is a text's token ids (int32, int64 or float32; textcnn's\n"
         "are its bytes, 0 to 255; an embedding layer of V ids takes 0 to V - 1) padded at the\n"
         "end with -1; a row\n"
         "is padded or cut to the model's sequence length. The checkpoint says what the model\n"
         "takes and how its inputs were prepared, so no training data are read (a checkpoint\n"
         "written by Herd before format version 6 does not, and the run's dataset is loaded).\n\n"
      << checkpoint_options_help()
      << "  --input FILE.npy   the samples\n"
         "  --output FILE      write the probabilities to FILE: .csv (a header, one row per\n"
         "                     sample: the classes' probabilities, the predicted class and,\n"
         "                     for Fashion-MNIST and the fortunes, its name) or\n"
         "                     .npy (n x classes float32); without it, CSV on stdout\n"
         "  --help, -h         show this help\n"
         "  --version          show the version\n\n"
         "Settings (on the command line as --section.key=value; they replace the\n"
         "checkpoint's; only a checkpoint written before format version 6 reads its data):\n"
      << config::describe_keys(keys_of("predict"))
      << "\nExit status: 0 done, 1 the output could not be written (a full disk), 2 bad\n"
         "input (a missing or damaged checkpoint or input file, samples of another shape\n"
         "than the model takes).\n";
  return out.str();
}

int predict_command(const std::vector<std::string>& args) {
  return run_guarded("predict", [&args] { return run_predict(args); });
}

} // namespace herd::cli
