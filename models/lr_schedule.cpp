// The learning-rate schedules; see lr_schedule.hpp.
#include "models/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace herd::models {

namespace {
constexpr double pi = 3.14159265358979323846;
} // namespace

lr_schedule::lr_schedule(const settings& given) : settings_(given) {}

lr_schedule lr_schedule::of(const config::train_section& train) {
  settings made;
  made.kind = train.lr_schedule;
  made.warmup_epochs = train.lr_warmup_epochs;
  made.warmup_start = train.lr_warmup_start;
  made.min_factor = train.lr > 0.0 ? train.lr_min / train.lr : 0.0;
  made.decay = train.lr_decay;
  made.decay_epochs = train.lr_decay_epochs;
  made.total_epochs = static_cast<double>(train.epochs);
  return lr_schedule(made);
}

float lr_schedule::factor(double epochs) const {
  const double e = std::max(0.0, epochs);
  const double warmup = settings_.warmup_epochs;
  double ramp = 1.0;
  if (warmup > 0.0 && e < warmup)
    ramp = settings_.warmup_start + (1.0 - settings_.warmup_start) * e / warmup;
  double value = 1.0;
  if (settings_.kind == "cosine") {
    const double span = settings_.total_epochs - warmup;
    const double done = span > 0.0 ? std::clamp((e - warmup) / span, 0.0, 1.0) : 1.0;
    const double m = settings_.min_factor;
    value = m + (1.0 - m) * 0.5 * (1.0 + std::cos(pi * done));
  } else if (settings_.kind == "step" && settings_.decay_epochs > 0.0) {
    value =
        std::pow(settings_.decay, std::floor(std::max(0.0, e - warmup) / settings_.decay_epochs));
  }
  return static_cast<float>(ramp * value);
}

bool lr_schedule::constant() const {
  return settings_.kind == "constant" && settings_.warmup_epochs <= 0.0;
}

} // namespace herd::models
