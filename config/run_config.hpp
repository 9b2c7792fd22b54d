// The typed configuration of one training run. Plain data: the loader fills it from INI files
// and command-line overrides (config/loader.hpp), validate() checks it, everything else reads it.
// Key names (section.key) are a contract that scripts and docs rely on: see docs/configuration.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace herd::config {

struct train_section {
  std::string algorithm = "sync"; // train.algorithm
  int workers = 4;                // train.workers
  int batch_size = 32;            // train.batch-size: per worker
  double lr = 0.05;               // train.lr
  double momentum = 0.9;          // train.momentum
  double weight_decay = 0.0;      // train.weight-decay
  int epochs = 3;                 // train.epochs
  double target_accuracy = 0.0;   // train.target-accuracy: 0 = no target
  double max_seconds = 0.0;       // train.max-seconds: 0 = no limit
  std::uint64_t seed = 1;         // train.seed
  int eval_every = 100;           // train.eval-every: rounds between test evaluations
  int blas_threads = 0;           // train.blas-threads: 0 = one per worker thread
};

struct data_section {
  std::string dataset = "fashion-mnist";                  // data.dataset
  std::string path = "/usr/share/datasets/fashion-mnist"; // data.path
};

struct model_section {
  std::vector<int> hidden{256, 128}; // model.hidden
};

struct metrics_section {
  int port = 0; // metrics.port: 0 = off
};

struct run_config {
  train_section train;
  data_section data;
  model_section model;
  metrics_section metrics;
};

/// The algorithms this build implements (train.algorithm).
const std::vector<std::string>& known_algorithms();

/// The datasets data.dataset accepts.
const std::vector<std::string>& known_datasets();

} // namespace herd::config
