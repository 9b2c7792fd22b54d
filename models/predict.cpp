// Predictions from any parameters; see herd/predict.hpp.
#include "herd/predict.hpp"

#include "herd/ops.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace herd::models {

std::vector<float> predict(const model& model, const std::vector<float>& parameters,
                           const float* samples, std::size_t count, std::size_t batch_size) {
  if (parameters.size() != model.parameter_count())
    throw std::invalid_argument("predict: " + std::to_string(parameters.size()) +
                                " parameters given for the model \"" + model.name() + "\" (" +
                                model.describe() + "), which has " +
                                std::to_string(model.parameter_count()));
  if (batch_size == 0)
    throw std::invalid_argument("predict: a batch size of 0 samples; it must be at least 1");
  const std::size_t inputs = elements(model.input_shape());
  // A model answers NaN or infinite inputs with probabilities that look like any others.
  for (std::size_t i = 0; inputs > 0 && i < count * inputs; ++i)
    if (!std::isfinite(samples[i]))
      throw std::invalid_argument("predict: sample " + std::to_string(i / inputs) +
                                  " holds a value that is not a finite number at position " +
                                  std::to_string(i % inputs) + "; samples must be finite");
  const std::size_t classes = model.classes();
  std::vector<float> probabilities(count * classes);
  const auto& ops = kernels::cpu_ops();
  const auto work = model.make_workspace();
  tensor batch;
  tensor batch_probabilities;
  for (std::size_t first = 0; first < count; first += batch_size) {
    const std::size_t rows = std::min(batch_size, count - first);
    batch.reshape({rows, inputs});
    std::copy_n(samples + first * inputs, rows * inputs, batch.data());
    model.probabilities(ops, parameters.data(), batch, batch_probabilities, *work);
    if (batch_probabilities.rows() != rows || batch_probabilities.cols() != classes)
      throw std::logic_error("predict: " + model.name() + "::probabilities gave " +
                             batch_probabilities.shape_string() + " for " + std::to_string(rows) +
                             " rows of " + std::to_string(classes) + " classes");
    std::copy_n(batch_probabilities.data(), rows * classes, probabilities.data() + first * classes);
  }
  return probabilities;
}

std::vector<float> predict(const model& model, const std::vector<float>& parameters,
                           const std::vector<float>& samples, std::size_t batch_size) {
  const std::size_t inputs = elements(model.input_shape());
  if (inputs == 0 || samples.size() % inputs != 0)
    throw std::invalid_argument(
        "predict: " + std::to_string(samples.size()) + " sample values given for the model \"" +
        model.name() + "\", which takes " + std::to_string(inputs) + " (" +
        shape_text(model.input_shape()) + ") per sample: not a whole number of samples");
  return predict(model, parameters, samples.data(), samples.size() / inputs, batch_size);
}

} // namespace herd::models
