// The [train] section's optimizer and learning-rate schedule checks of validate(); see checker.hpp.
#include "config/checker.hpp"

#include <cmath>
#include <tuple>

namespace herd::config::validation {

// An optimizer's own keys are refused under the other unless at their defaults, as a schedule's.
void check_optimizer(checker& check, const train_section& train) {
  check.require_one_of(known_optimizers(), "train.optimizer", train.optimizer, "optimizer");
  const train_section defaults;
  const bool adamw = train.optimizer == "adamw";
  check.require(!adamw || train.momentum == defaults.momentum, "train.momentum", train.momentum,
                "only train.optimizer = sgd uses it (adamw's is train.adam-beta1)");
  check.require(train.momentum >= 0.0 && train.momentum < 1.0, "train.momentum", train.momentum,
                "must lie in [0, 1)");
  for (const auto& [key, value, default_value] :
       {std::tuple{"train.adam-beta1", train.adam_beta1, defaults.adam_beta1},
        std::tuple{"train.adam-beta2", train.adam_beta2, defaults.adam_beta2}}) {
    check.require(adamw || value == default_value, key, value,
                  "only train.optimizer = adamw uses it");
    // As the float the optimizer computes with: 0.99999999 is 1 there.
    check.require(std::isfinite(value) && value >= 0.0 && static_cast<float>(value) < 1.0f, key,
                  value, "must lie in [0, 1) as a float (below 0.99999994)");
  }
  check.require(adamw || train.adam_eps == defaults.adam_eps, "train.adam-eps", train.adam_eps,
                "only train.optimizer = adamw uses it");
  check.require(std::isfinite(train.adam_eps) && train.adam_eps >= 1e-30 && train.adam_eps <= 1.0,
                "train.adam-eps", train.adam_eps, "must lie in [1e-30, 1]");
}

// A schedule's own keys are refused under a schedule that does not use them unless they are at
// their defaults (which --print-config and checkpoints write out): a value set for nothing is more
// likely a forgotten train.lr-schedule than a wish.
void check_lr_schedule(checker& check, const train_section& train) {
  check.require_one_of(known_lr_schedules(), "train.lr-schedule", train.lr_schedule, "schedule");
  const std::string epochs = std::to_string(train.epochs);
  check.require(std::isfinite(train.lr_warmup_epochs) && train.lr_warmup_epochs >= 0.0 &&
                    (train.lr_warmup_epochs < static_cast<double>(train.epochs) ||
                     train.epochs < 1), // train.epochs's own check says what is wrong
                "train.lr-warmup-epochs", train.lr_warmup_epochs,
                "must lie in [0, train.epochs) (0 = no warmup; train.epochs is " + epochs + ")");
  const train_section defaults;
  check.require(train.lr_warmup_epochs > 0.0 || train.lr_warmup_start == defaults.lr_warmup_start,
                "train.lr-warmup-start", train.lr_warmup_start,
                "only a warmup uses it: set train.lr-warmup-epochs too");
  check.require(std::isfinite(train.lr_warmup_start) && train.lr_warmup_start >= 0.0 &&
                    train.lr_warmup_start <= 1.0,
                "train.lr-warmup-start", train.lr_warmup_start, "must lie in [0, 1]");
  // Whether `schedule` is the run's; refuses `key` (`value`) set for another schedule.
  const auto used_by = [&](const std::string& key, const char* schedule, double value,
                           double default_value) {
    const bool unused = train.lr_schedule != schedule;
    check.require(!unused || value == default_value, key, value,
                  "only train.lr-schedule = " + std::string(schedule) + " uses it");
    return !unused;
  };
  if (used_by("train.lr-min", "cosine", train.lr_min, defaults.lr_min)) {
    std::ostringstream bound;
    bound << "must lie in [0, train.lr] (train.lr is " << train.lr << ")";
    check.require(std::isfinite(train.lr_min) && train.lr_min >= 0.0 &&
                      (train.lr_min <= train.lr || !(train.lr > 0.0)),
                  "train.lr-min", train.lr_min, bound.str());
  }
  if (used_by("train.lr-decay", "step", train.lr_decay, defaults.lr_decay))
    check.require(std::isfinite(train.lr_decay) && train.lr_decay > 0.0 && train.lr_decay < 1.0,
                  "train.lr-decay", train.lr_decay, "must lie in (0, 1)");
  if (used_by("train.lr-decay-epochs", "step", train.lr_decay_epochs, defaults.lr_decay_epochs))
    check.require(std::isfinite(train.lr_decay_epochs) && train.lr_decay_epochs >= 0.001,
                  "train.lr-decay-epochs", train.lr_decay_epochs,
                  "train.lr-schedule = step needs a period of at least 0.001 epochs");
}

} // namespace herd::config::validation
