// `herd evaluate`; see evaluate_command.hpp.
#include "cli/evaluate_command.hpp"

#include "cli/checkpoint_model.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/json_text.hpp"
#include "cli/report.hpp"
#include "cli/run_support.hpp"
#include "cli/train_command.hpp"
#include "herd/ops.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace herd::cli {

namespace {

// The most classes whose confusion matrix is printed; more go to the --report file only.
constexpr int printed_confusion_classes = 10;

struct evaluate_options {
  std::string report; // --report FILE.json; "": none
};

// What the model makes of each test sample, counted: confusion[true][predicted].
struct class_counts {
  std::vector<std::vector<std::size_t>> confusion;

  std::size_t samples(std::size_t label) const {
    return std::accumulate(confusion[label].begin(), confusion[label].end(), std::size_t{0});
  }
  std::size_t predicted_as(std::size_t label) const {
    std::size_t total = 0;
    for (const auto& row : confusion)
      total += row[label];
    return total;
  }
  // Of its samples, the share predicted right (its accuracy, or recall); -1 without samples.
  double recall(std::size_t label) const {
    const auto n = samples(label);
    return n == 0 ? -1.0 : static_cast<double>(confusion[label][label]) / static_cast<double>(n);
  }
  // Of the samples predicted as it, the share that are; -1 when none was.
  double precision(std::size_t label) const {
    const auto n = predicted_as(label);
    return n == 0 ? -1.0 : static_cast<double>(confusion[label][label]) / static_cast<double>(n);
  }
};

// Predicts every sample of `test` (the class of highest probability, as evaluation scores it) in
// batches, token texts padded per batch as training pads them.
class_counts count_classes(const models::model& model, const float* parameters,
                           const models::dataset& test, std::size_t batch) {
  const std::size_t classes = model.classes();
  class_counts counts;
  counts.confusion.assign(classes, std::vector<std::size_t>(classes, 0));
  const auto& ops = kernels::cpu_ops();
  auto work = model.make_workspace();
  std::vector<std::size_t> indices(batch);
  models::tensor x;
  models::tensor probs;
  for (std::size_t first = 0; first < test.size(); first += batch) {
    const std::size_t rows = std::min(batch, test.size() - first);
    std::iota(indices.begin(), indices.begin() + static_cast<std::ptrdiff_t>(rows), first);
    models::gather_rows(test, indices.data(), rows, x);
    model.probabilities(ops, parameters, x, probs, *work);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* p = probs.row(r);
      const auto predicted = static_cast<std::size_t>(std::max_element(p, p + classes) - p);
      ++counts.confusion[static_cast<std::size_t>(test.labels[first + r])][predicted];
    }
  }
  return counts;
}

// "0.8750", or "-" for a share of nothing.
std::string share(double value) {
  if (value < 0)
    return "-";
  char text[16];
  std::snprintf(text, sizeof text, "%.4f", value);
  return text;
}

// The test set in words: the files of a .npy dataset, else the dataset's name.
std::string test_set_words(const checkpoint_model& loaded) {
  const auto& data = loaded.config.data;
  return data.dataset == "npy" ? data.test_features + ", " + data.test_labels : loaded.test->name;
}

// Class `c` as a row's label in a column of 14: its number at the right ("             3"), or
// where the classes have names its number and name from the left ("3 Dress       ", the numbers
// aligned: " 3 Dress" among 10 or more classes).
std::string class_label(std::size_t c, const std::vector<std::string>& names) {
  std::string number = std::to_string(c);
  if (names.empty())
    return std::string(number.size() < 14 ? 14 - number.size() : 0, ' ') + number;
  const auto digits = std::to_string(names.size() - 1).size();
  number.insert(0, digits > number.size() ? digits - number.size() : 0, ' ');
  std::string label = number + " " + names[c];
  label.append(label.size() < 14 ? 14 - label.size() : 0, ' ');
  return label;
}

void print_confusion(const class_counts& counts, const std::vector<std::string>& names) {
  const std::size_t classes = counts.confusion.size();
  std::size_t largest = classes - 1;
  for (const auto& row : counts.confusion)
    largest = std::max(largest, *std::max_element(row.begin(), row.end()));
  const int width = std::max(4, static_cast<int>(std::to_string(largest).size()) + 1);
  std::printf("  confusion       rows: the true class, columns: the predicted one\n%16s", "");
  for (std::size_t c = 0; c < classes; ++c)
    std::printf("%*zu", width, c);
  std::printf("\n");
  for (std::size_t t = 0; t < classes; ++t) {
    std::printf("  %s", class_label(t, names).c_str());
    for (std::size_t c = 0; c < classes; ++c)
      std::printf("%*zu", width, counts.confusion[t][c]);
    std::printf("\n");
  }
}

std::string report_json(const checkpoint_model& loaded, const models::evaluation& whole,
                        const class_counts& counts) {
  const auto& counters = loaded.state.coordinator.counters;
  nlohmann::json per_class = nlohmann::json::array();
  const auto number_or_null = [](double value) {
    return value < 0 ? nlohmann::json(nullptr) : nlohmann::json(value);
  };
  for (std::size_t c = 0; c < counts.confusion.size(); ++c)
    per_class.push_back(
        {{"class", c},
         {"name", c < loaded.class_names.size() ? nlohmann::json(loaded.class_names[c])
                                                : nlohmann::json(nullptr)},
         {"samples", counts.samples(c)},
         {"predicted", counts.predicted_as(c)},
         {"accuracy", number_or_null(counts.recall(c))},
         {"precision", number_or_null(counts.precision(c))}});
  const nlohmann::json report = {{"checkpoint", loaded.file},
                                 {"round", counters.rounds},
                                 {"epoch", counters.epochs()},
                                 {"algorithm", loaded.config.train.algorithm},
                                 {"parameters", loaded.parameters_origin},
                                 {"model", loaded.model->describe()},
                                 {"test_set", test_set_words(loaded)},
                                 {"samples", whole.samples},
                                 {"test_accuracy", whole.accuracy()},
                                 {"test_loss", whole.mean_loss},
                                 {"classes", per_class},
                                 {"confusion", counts.confusion}};
  return json_text(report);
}

int run_evaluate(const std::vector<std::string>& args) {
  evaluate_options options;
  int status = exit_ok;
  const auto loaded = start_checkpoint_command(
      "evaluate", args, evaluate_help,
      [&options](argument_reader& reader) {
        if (!reader.is("--report"))
          return false;
        options.report = reader.value("--report", " (a .json file)");
        return true;
      },
      [&options] {
        if (!options.report.empty())
          check_report_path(options.report, {});
      },
      true, status);
  if (!loaded)
    return status;
  const auto& ops = kernels::cpu_ops();
  const auto& model = *loaded->model;
  const auto& test = *loaded->test;
  const float* parameters = loaded->parameters.data();
  auto work = model.make_workspace();
  const std::size_t batch = 1000;
  const auto whole = model.evaluate(ops, parameters, test, batch, *work);
  const auto counts = count_classes(model, parameters, test, batch);
  const auto& counters = loaded->state.coordinator.counters;
  // The checkpoint's path makes the first line long: broken to a terminal's width.
  std::cout << for_standard_output("herd evaluate: " + loaded->file + " (round " +
                                   std::to_string(counters.rounds) + ", epoch " +
                                   fixed(counters.epochs(), 2) + " of a " +
                                   loaded->config.train.algorithm + " run with " +
                                   std::to_string(loaded->config.train.workers) +
                                   (loaded->config.train.workers == 1 ? " worker)" : " workers)"))
            << std::endl;
  std::printf("  parameters      %s\n"
              "  model           %s\n"
              "  test set        %s, %zu samples\n"
              "  test accuracy   %.4f\n"
              "  test loss       %.4f\n"
              "  per class       accuracy  precision  samples\n",
              loaded->parameters_origin.c_str(), model.describe().c_str(),
              test_set_words(*loaded).c_str(), whole.samples, whole.accuracy(), whole.mean_loss);
  for (std::size_t c = 0; c < counts.confusion.size(); ++c)
    std::printf("  %s  %8s  %9s  %7zu\n", class_label(c, loaded->class_names).c_str(),
                share(counts.recall(c)).c_str(), share(counts.precision(c)).c_str(),
                counts.samples(c));
  if (counts.confusion.size() <= static_cast<std::size_t>(printed_confusion_classes))
    print_confusion(counts, loaded->class_names);
  else
    std::printf("  confusion       %zu classes: %s\n", counts.confusion.size(),
                options.report.empty() ? "give --report FILE.json for the matrix"
                                       : "in the --report file");
  if (!options.report.empty()) {
    write_file_atomically(options.report, report_json(*loaded, whole, counts));
    std::cerr << "herd evaluate: wrote " << options.report << '\n';
  }
  return exit_ok;
}

} // namespace

std::string evaluate_help() {
  std::ostringstream out;
  out << "usage: herd evaluate --checkpoint PATH [--last] [--report FILE.json]\n"
         "                     [--data.key=value ...]\n\n"
         "Evaluates the model a checkpoint holds on its run's test set: test accuracy and loss;\n"
         "for each class its accuracy (of its samples, the share predicted right) and precision\n"
         "(of the samples predicted as it, the share that are); and the confusion matrix (up to\n"
         "10 classes; all of it in the report). The model and the dataset are those of the run\n"
         "the checkpoint was taken in; the data settings below point to where the test set is\n"
         "now, or to another labelled set of the same kind (data.test-features and\n"
         "data.test-labels of a .npy dataset: only those two files are read).\n\n"
      << checkpoint_options_help()
      << "  --report FILE      also write the results to FILE as JSON: overall, per class,\n"
         "                     and the confusion matrix (rows: true classes, columns:\n"
         "                     predicted)\n"
         "  --help, -h         show this help\n"
         "  --version          show the version\n\n"
         "Settings (on the command line as --section.key=value; they replace the\n"
         "checkpoint's; of a .npy dataset only data.test-features and data.test-labels are\n"
         "read, unless the checkpoint was written before format version 6):\n"
      << config::describe_keys(keys_of("evaluate"))
      << "\nExit status: 0 done, 1 the output could not be written (a full disk), 2 bad\n"
         "input (a missing or damaged checkpoint, a dataset that is not there or does not\n"
         "fit the model).\n";
  return out.str();
}

int evaluate_command(const std::vector<std::string>& args) {
  return run_guarded("evaluate", [&args] { return run_evaluate(args); });
}

} // namespace herd::cli
