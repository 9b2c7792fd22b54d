// A small, quick training run for the session tests: synthetic data, one epoch, seeded, no
// evaluation before the end, and progress reported often so that stop conditions bite soon.
#pragma once

#include "actors/train_session.hpp"
#include "herd/run_config.hpp"

#include <chrono>

namespace herd::testing {

inline config::run_config small_session_config(int workers, int batch) {
  config::run_config config;
  config.train.workers = workers;
  config.train.batch_size = batch;
  config.train.lr = 0.05;
  config.train.momentum = 0.9;
  config.train.weight_decay = 1e-4;
  config.train.epochs = 1;
  config.train.seed = 3;
  config.train.eval_every = 1000;
  config.data.dataset = "synthetic";
  config.model.hidden = {16};
  return config;
}

inline actors::session_options quick_session_options() {
  actors::session_options options;
  options.progress_interval = std::chrono::milliseconds(20);
  return options;
}

} // namespace herd::testing
