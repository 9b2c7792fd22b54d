// train.lr-schedule: how the learning rate changes over a run, as a factor of train.lr at the
// run's epochs (samples applied / training set). The group coordinator evaluates it when it
// begins a round and the round carries the factor to everyone who applies it, so every replica
// of a gradient algorithm steps with the same rate and a resumed run goes on where it was.
#pragma once

#include "herd/run_config.hpp"

#include <string>

namespace herd::models {

class lr_schedule {
public:
  struct settings {
    std::string kind = "constant"; // constant | cosine | step
    double warmup_epochs = 0.0;    // from warmup_start x to 1 x, linearly, over these epochs
    double warmup_start = 0.1;     // the factor at epoch 0 of a warmup
    double min_factor = 0.0;       // cosine: the factor at total_epochs (train.lr-min / train.lr)
    double decay = 0.1;            // step: the factor's multiplier at every period
    double decay_epochs = 0.0;     // step: the period
    double total_epochs = 1.0;     // cosine: where it ends (train.epochs)
  };

  explicit lr_schedule(const settings& given);
  /// The schedule of a run's [train] settings (validated: see config::validate).
  static lr_schedule of(const config::train_section& train);

  /// The factor of train.lr at `epochs` of training: the warmup's ramp, then the schedule's own
  /// value, which begins at the warmup's end (cosine runs from there to total_epochs, step counts
  /// its periods from there), so the factor is 1 at the warmup's end.
  float factor(double epochs) const;
  /// True when the factor is 1 at every epoch (constant, no warmup).
  bool constant() const;

private:
  settings settings_;
};

} // namespace herd::models
