// A checkpoint's model outside a run: the settings it was taken with and the parameters to
// serve (models::predict, herd/predict.hpp) or to start another job from
// (job_options::initial_parameters). What `herd evaluate` and `herd predict` read. With
// herd/sequential.hpp (build_model) and herd/predict.hpp besides this header:
//
//   auto settings = herd::checkpoint::saved_settings("ckpt");   // a file, or a directory
//   auto inputs = herd::checkpoint::saved_inputs("ckpt");       // no training data needed
//   auto model = herd::models::build_model({settings.model.preset, settings.model.layers,
//                                           settings.model.hidden},
//                                          inputs.sample_shape, inputs.classes);
//   auto saved = herd::checkpoint::read_model("ckpt", *model);
//   // samples prepared as the training data were: inputs.normalisation.apply(value)
//   auto probabilities = herd::models::predict(*model, saved.parameters, samples, count);
#pragma once

#include "herd/checkpoint_error.hpp"
#include "herd/dataset.hpp"
#include "herd/model.hpp"
#include "herd/run_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace herd::checkpoint {

/// The settings the checkpoint at `path` (a file, or a directory: its newest) was taken with.
/// Throws checkpoint_error naming the file and the problem: none there, not a checkpoint, damaged,
/// or settings this version of Herd does not read.
config::run_config saved_settings(const std::string& path);

/// What a checkpoint's model takes, as its run's training set had it: what building the model
/// (models::build_model) and preparing new samples need besides the settings.
struct model_inputs {
  std::vector<std::size_t> sample_shape; // one sample's shape (dataset::input_shape())
  std::size_t classes = 0;               // the classes the model scores
  /// What was done to the source's values (Fashion-MNIST: pixels / 255, then this); give new
  /// samples the same. The identity for .npy and synthetic data.
  models::normalisation normalisation;
};

/// What the checkpoint at `path` (a file, or a directory: its newest) says its model takes.
/// Throws checkpoint_error naming the file and the problem: what saved_settings() throws for, or
/// a checkpoint of format version 5, which does not say (load its run's dataset:
/// models::load_dataset(saved_settings(path))).
model_inputs saved_inputs(const std::string& path);

struct saved_model {
  std::string file;          // the checkpoint read (a directory's newest)
  config::run_config config; // the settings it was taken with
  std::uint64_t rounds = 0;  // rounds its run had finished
  std::vector<float> parameters;
  /// Which parameters, in words: "the parameters that reached the target (test accuracy 0.8538
  /// at round 900)", "the parameters of the best evaluation (validation accuracy 0.8712 at round
  /// 1400)" or "the workers' last parameters (round 912)".
  std::string parameters_origin;
};

/// Reads the checkpoint at `path` for `model`, which must describe itself as the checkpoint's
/// model did (the model its settings build, or the same object of your own class the run
/// trained). The parameters are those that reached the run's target accuracy where the run
/// stopped there, else those of its best evaluation where it ran with train.patience, unless
/// `last`; otherwise the workers' last ones (under model averaging,
/// preduce, wagma and local-sgd, the mean of the replicas). Throws checkpoint_error naming the
/// file and the problem: what saved_settings() throws for, a checkpoint of another model (both
/// descriptions named), tensors of another size, or a cluster's checkpoint asked for its
/// workers' parameters (they are in the parts its nodes wrote to their own disks).
saved_model read_model(const std::string& path, const models::model& model, bool last = false);

} // namespace herd::checkpoint
