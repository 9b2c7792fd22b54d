// The learning-rate schedules' factors at chosen epochs, against the formulas the docs give.
#include "models/lr_schedule.hpp"

#include <cmath>
#include <gtest/gtest.h>

namespace {

using herd::models::lr_schedule;

lr_schedule make(const std::string& kind, double warmup = 0.0) {
  lr_schedule::settings s;
  s.kind = kind;
  s.warmup_epochs = warmup;
  s.min_factor = 0.02;
  s.decay = 0.5;
  s.decay_epochs = 2.0;
  s.total_epochs = 10.0;
  return lr_schedule(s);
}

TEST(lr_schedule, constant_is_one_everywhere) {
  const auto schedule = make("constant");
  EXPECT_TRUE(schedule.constant());
  for (double e : {0.0, 0.5, 9.99, 10.0, 12.0})
    EXPECT_EQ(schedule.factor(e), 1.0f) << e;
}

TEST(lr_schedule, cosine_falls_from_one_to_the_minimum_at_the_last_epoch) {
  const auto schedule = make("cosine");
  EXPECT_FALSE(schedule.constant());
  EXPECT_FLOAT_EQ(schedule.factor(0.0), 1.0f);
  EXPECT_FLOAT_EQ(schedule.factor(5.0), 0.02f + 0.98f * 0.5f); // halfway: halfway down
  EXPECT_FLOAT_EQ(schedule.factor(2.5),
                  static_cast<float>(0.02 + 0.98 * 0.5 * (1.0 + std::cos(M_PI / 4))));
  EXPECT_FLOAT_EQ(schedule.factor(10.0), 0.02f);
  EXPECT_FLOAT_EQ(schedule.factor(11.0), 0.02f); // rounds that run past the end keep the minimum
  for (double e = 0.0; e < 10.0; e += 0.25)
    EXPECT_GT(schedule.factor(e), schedule.factor(e + 0.25)) << e;
}

TEST(lr_schedule, step_multiplies_by_the_decay_every_period) {
  const auto schedule = make("step");
  EXPECT_EQ(schedule.factor(0.0), 1.0f);
  EXPECT_EQ(schedule.factor(1.999), 1.0f);
  EXPECT_EQ(schedule.factor(2.0), 0.5f);
  EXPECT_EQ(schedule.factor(5.9), 0.25f);
  EXPECT_EQ(schedule.factor(6.0), 0.125f);
}

TEST(lr_schedule, warmup_ramps_from_a_tenth_and_cosine_starts_at_its_end) {
  const auto schedule = make("cosine", 2.0);
  EXPECT_FLOAT_EQ(schedule.factor(0.0), 0.1f);
  EXPECT_FLOAT_EQ(schedule.factor(1.0), 0.55f);
  EXPECT_FLOAT_EQ(schedule.factor(2.0), 1.0f);
  EXPECT_FLOAT_EQ(schedule.factor(6.0), 0.02f + 0.98f * 0.5f); // halfway from 2 to 10
  EXPECT_FLOAT_EQ(schedule.factor(10.0), 0.02f);
  const auto constant_warm = make("constant", 4.0);
  EXPECT_FALSE(constant_warm.constant());
  EXPECT_FLOAT_EQ(constant_warm.factor(3.0), 0.1f + 0.9f * 0.75f);
  EXPECT_EQ(constant_warm.factor(4.0), 1.0f);
  // Under step the periods count from the warmup's end too: the peak is reached whatever the
  // period.
  const auto step_warm = make("step", 3.0);
  EXPECT_FLOAT_EQ(step_warm.factor(2.0), 0.1f + 0.9f * 2.0f / 3.0f);
  EXPECT_EQ(step_warm.factor(3.0), 1.0f);
  EXPECT_EQ(step_warm.factor(4.999), 1.0f);
  EXPECT_EQ(step_warm.factor(5.0), 0.5f);
}

TEST(lr_schedule, a_warmup_starts_from_the_factor_it_is_given) {
  auto settings = lr_schedule::settings{};
  settings.kind = "constant";
  settings.warmup_epochs = 2.0;
  settings.warmup_start = 0.0;
  const lr_schedule from_zero(settings);
  EXPECT_EQ(from_zero.factor(0.0), 0.0f);
  EXPECT_FLOAT_EQ(from_zero.factor(0.5), 0.25f);
  EXPECT_EQ(from_zero.factor(2.0), 1.0f);
  settings.warmup_start = 0.5;
  const lr_schedule from_half(settings);
  EXPECT_FLOAT_EQ(from_half.factor(0.0), 0.5f);
  EXPECT_FLOAT_EQ(from_half.factor(1.0), 0.75f);
  herd::config::train_section train;
  train.lr_warmup_epochs = 1.0;
  train.lr_warmup_start = 0.25;
  EXPECT_FLOAT_EQ(lr_schedule::of(train).factor(0.0), 0.25f);
  EXPECT_FLOAT_EQ(lr_schedule::of(train).factor(0.5), 0.625f);
}

TEST(lr_schedule, of_a_train_section_takes_its_keys) {
  herd::config::train_section train;
  train.lr = 0.2;
  train.lr_schedule = "cosine";
  train.lr_min = 0.02;
  train.epochs = 4;
  const auto schedule = lr_schedule::of(train);
  EXPECT_FLOAT_EQ(schedule.factor(4.0), 0.1f); // 0.02 / 0.2
  EXPECT_FLOAT_EQ(schedule.factor(2.0), 0.55f);
  train.lr_schedule = "step";
  train.lr_decay = 0.3;
  train.lr_decay_epochs = 1.5;
  train.lr_warmup_epochs = 0.0;
  EXPECT_FLOAT_EQ(lr_schedule::of(train).factor(3.1), 0.09f);
}

} // namespace
