// Herd's public prediction API: class probabilities for a batch of samples from a model and any
// parameters: a job's final ones (job::final_parameters), a checkpoint's (checkpoint::read_model,
// herd/saved_model.hpp), or a snapshot's. Computes on the CPU, on the caller's thread; what
// `herd predict` runs. The model interface it takes: include/herd/model.hpp.
#pragma once

#include "herd/model.hpp"

#include <cstddef>
#include <vector>

namespace herd::models {

/// The class probabilities `model` with `parameters` gives `count` samples: a count x
/// model.classes() row-major matrix, each row summing to 1 (its argmax is the predicted class, as
/// evaluation scores it). `samples` holds count x elements(model.input_shape()) floats, row-major,
/// in host memory, prepared as the model's training data was (the dataset's
/// input_normalisation applied). Runs in batches of `batch_size` samples.
///
/// Throws std::invalid_argument naming both sizes when `parameters` is not
/// model.parameter_count() floats, when batch_size is 0, and naming the sample and the position
/// when a sample holds a value that is not a finite number (NaN, infinite).
std::vector<float> predict(const model& model, const std::vector<float>& parameters,
                           const float* samples, std::size_t count, std::size_t batch_size = 1000);

/// The same for samples held in a vector: count = samples.size() / elements(model.input_shape()).
/// Throws std::invalid_argument naming both sizes when samples.size() is not a whole number of
/// samples.
std::vector<float> predict(const model& model, const std::vector<float>& parameters,
                           const std::vector<float>& samples, std::size_t batch_size = 1000);

} // namespace herd::models
