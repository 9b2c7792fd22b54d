// `herd export`; see export_command.hpp.
#include "cli/export_command.hpp"

#include "cli/checkpoint_model.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/json_text.hpp"
#include "cli/report.hpp"
#include "cli/train_command.hpp"
#include "herd/sequential.hpp"
#include "models/npy.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

namespace herd::cli {

namespace {

// "03-dense-weight.npy": the layer's place (from 1), its kind, the tensor's name.
std::string tensor_file(std::size_t layer, const std::string& description,
                        const std::string& tensor) {
  const auto place = std::to_string(layer);
  return std::string(place.size() < 2 ? "0" : "") + place + "-" +
         description.substr(0, description.find(' ')) + "-" + tensor + ".npy";
}

// Writes each layer's tensors beside the description, and returns the description.
// Tensor files in `directory` named as an export names them (NN-layer-tensor.npy) that
// `layers` (this export's) does not name: an earlier export's, which a loader that reads every
// .npy file would take for this model's.
std::vector<std::string> stale_tensor_files(const std::string& directory,
                                            const nlohmann::json& layers) {
  std::set<std::string> named;
  for (const auto& layer : layers)
    for (const auto& tensor : layer.at("tensors"))
      named.insert(tensor.at("file").get<std::string>());
  std::vector<std::string> stale;
  std::error_code failed;
  for (const auto& entry : std::filesystem::directory_iterator(directory, failed)) {
    const auto name = entry.path().filename().string();
    if (name.size() > 7 && std::isdigit(static_cast<unsigned char>(name[0])) &&
        std::isdigit(static_cast<unsigned char>(name[1])) && name[2] == '-' &&
        entry.path().extension() == ".npy" && named.count(name) == 0)
      stale.push_back(name);
  }
  std::sort(stale.begin(), stale.end());
  return stale;
}

nlohmann::json write_tensors(const checkpoint_model& loaded, const std::string& directory) {
  const auto& model = dynamic_cast<const models::sequential&>(*loaded.model);
  nlohmann::json layers = nlohmann::json::array();
  std::size_t written = 0;
  for (std::size_t i = 0; i < model.layers().size(); ++i) {
    const auto& layer = *model.layers()[i];
    auto tensors = layer.parameter_tensors();
    if (tensors.empty() && layer.parameter_count() > 0) // a layer that does not say: flat
      tensors.push_back({"parameters", {layer.parameter_count()}});
    const float* at = loaded.parameters.data() + model.parameter_offset(i);
    nlohmann::json described = nlohmann::json::array();
    for (const auto& tensor : tensors) {
      const auto file = tensor_file(i + 1, layer.describe(), tensor.name);
      write_file_atomically(directory + "/" + file, models::npy_bytes(at, tensor.dims));
      described.push_back({{"name", tensor.name}, {"shape", tensor.dims}, {"file", file}});
      at += models::elements(tensor.dims);
      written += models::elements(tensor.dims);
    }
    layers.push_back({{"layer", layer.describe()},
                      {"input_shape", layer.input_shape()},
                      {"output_shape", layer.output_shape()},
                      {"tensors", described}});
  }
  if (written != model.parameter_count())
    throw std::logic_error("export: the layers' tensors hold " + std::to_string(written) +
                           " values, the model " + std::to_string(model.parameter_count()));
  return layers;
}

// How new inputs are prepared, in words, for model.json.
std::string preparation_words(const checkpoint_model& loaded) {
  const auto* layers = dynamic_cast<const models::sequential*>(loaded.model.get());
  if (layers != nullptr && layers->takes_tokens())
    return "token ids as they are (no normalisation), each row padded at its end with -1; "
           "conv1d-max windows are centred in its widest one, zero-padded by half of it on "
           "both sides, and its max runs over each row's own length (docs/models.md)";
  return loaded.input_normalisation.scaled_bytes
             ? "bytes divided by 255, then x' = (x - mean) / stddev"
             : "the values as given: x' = (x - mean) / stddev";
}

int run_export(const std::vector<std::string>& args) {
  std::string directory;
  int status = exit_ok;
  const auto loaded = start_checkpoint_command(
      "export", args, export_help,
      [&directory](argument_reader& reader) {
        if (!reader.is("--out"))
          return false;
        directory = reader.value("--out", " (a directory)");
        return true;
      },
      [&directory] {
        if (directory.empty())
          throw std::invalid_argument("--out DIR is required (see herd export --help)");
      },
      false, status);
  if (!loaded)
    return status;
  try { // made once the checkpoint proved readable
    prepare_output_directory(directory, {"model.json"});
  } catch (const std::exception& bad) {
    std::cerr << "herd export: " << bad.what() << '\n';
    return exit_bad_input;
  }
  const auto& counters = loaded->state.coordinator.counters;
  const auto& norm = loaded->input_normalisation;
  const auto* layers = dynamic_cast<const models::sequential*>(loaded->model.get());
  nlohmann::json description = {
      {"checkpoint", loaded->file},
      {"round", counters.rounds},
      {"epoch", counters.epochs()},
      {"parameters", loaded->parameters_origin},
      {"model", loaded->model->describe()},
      {"input_shape", loaded->model->input_shape()},
      {"takes_tokens", layers != nullptr && layers->takes_tokens()},
      {"classes", loaded->model->classes()},
      {"input_normalisation",
       {{"mean", norm.mean},
        {"stddev", norm.stddev},
        {"scaled_bytes", norm.scaled_bytes},
        {"applies_to", preparation_words(*loaded)}}},
      {"output", "scores (logits), one per class; softmax gives the probabilities"},
      {"layers", nullptr}};
  try {
    description["layers"] = write_tensors(*loaded, directory);
    // Last: a directory with model.json holds a whole export.
    write_file_atomically(directory + "/model.json", json_text(description));
  } catch (const std::runtime_error& unwritten) { // the path and the system's reason
    std::cerr << "herd export: " << unwritten.what() << '\n';
    return exit_bad_input;
  }
  std::cerr << "herd export: " << loaded->file << ", " << loaded->parameters_origin << ": "
            << loaded->model->parameter_count() << " parameters to " << directory
            << " (model.json and a .npy file per tensor)\n";
  if (const auto stale = stale_tensor_files(directory, description["layers"]); !stale.empty()) {
    std::string names;
    for (const auto& name : stale)
      names += (names.empty() ? "" : ", ") + name;
    std::cerr << "herd export: note: " << directory << " also holds " << stale.size()
              << " tensor file(s) of an earlier export that model.json does not name (" << names
              << "); remove them if a loader reads every .npy file there\n";
  }
  return exit_ok;
}

} // namespace

std::string export_help() {
  std::ostringstream out;
  out << "usage: herd export --checkpoint PATH --out DIR [--last] [--data.key=value ...]\n\n"
         "Writes the model a checkpoint holds for use outside Herd: one .npy file (float32) per\n"
         "parameter tensor, named after its layer's place and kind (01-dense-weight.npy), and\n"
         "model.json: the model's layers with their input and output shapes and their tensors'\n"
         "names, shapes and files, the input shape, the classes, and the normalisation new\n"
         "inputs take. Layouts are PyTorch's where it has the layer: dense weight {out, in}\n"
         "(y = x W^T + b), conv weight {filters, channels, kernel_h, kernel_w}, embedding\n"
         "weight {vocab, dim}; conv1d-max holds per width w a weight {filters, w, channels}\n"
         "and one bias {widths, filters}. The model ends in scores; softmax gives\n"
         "probabilities. The parameters are those herd predict uses.\n\n"
      << checkpoint_options_help()
      << "  --out DIR          the directory to write (made if missing; files of the same\n"
         "                     names are replaced; model.json is written last)\n"
         "  --help, -h         show this help\n"
         "  --version          show the version\n\n"
         "Settings (on the command line as --section.key=value; they replace the\n"
         "checkpoint's; only a checkpoint written before format version 6 reads its data):\n"
      << config::describe_keys(keys_of("export"))
      << "\nExit status: 0 done, 2 bad input (a missing or damaged checkpoint, a directory\n"
         "that cannot be written).\n";
  return out.str();
}

int export_command(const std::vector<std::string>& args) {
  return run_guarded("export", [&args] { return run_export(args); });
}

} // namespace herd::cli
