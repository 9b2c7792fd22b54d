// imbalance_model: which workers each kind slows, by how much, reproducibly; injected_delay:
// a stop cuts the wait short.
#include "actors/imbalance.hpp"

#include <chrono>
#include <cmath>
#include <future>
#include <gtest/gtest.h>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using herd::actors::imbalance_model;
using herd::actors::injected_delay;
using herd::config::imbalance_section;
using std::chrono::steady_clock;

double seconds_since(steady_clock::time_point start) {
  return std::chrono::duration<double>(steady_clock::now() - start).count();
}

imbalance_section random_kind(int k, double delay_ms, std::uint64_t seed = 7) {
  imbalance_section settings;
  settings.kind = "random";
  settings.k = k;
  settings.delay_ms = delay_ms;
  settings.seed = seed;
  return settings;
}

imbalance_section persistent_kind(std::vector<int> workers, double factor) {
  imbalance_section settings;
  settings.kind = "persistent";
  settings.workers = std::move(workers);
  settings.factor = factor;
  return settings;
}

imbalance_section lognormal_kind(double sigma, std::uint64_t seed = 11) {
  imbalance_section settings;
  settings.kind = "lognormal";
  settings.sigma = sigma;
  settings.seed = seed;
  return settings;
}

TEST(imbalance, none_never_slows_a_step) {
  const imbalance_model model(imbalance_section{}, 4);
  EXPECT_FALSE(model.active());
  for (int worker = 0; worker < 4; ++worker)
    EXPECT_EQ(model.extra_seconds(worker, 1, 0.25), 0.0);
  EXPECT_TRUE(model.delayed_workers(1).empty());
  EXPECT_EQ(model.describe(), "none");
}

TEST(imbalance, random_delays_exactly_k_distinct_workers_each_step) {
  for (int workers : {1, 2, 8, 13}) {
    for (int k : {1, workers / 2, workers}) {
      if (k < 1)
        continue;
      const imbalance_model model(random_kind(k, 40.0), workers);
      EXPECT_TRUE(model.active());
      for (std::uint64_t step = 1; step <= 200; ++step) {
        const auto delayed = model.delayed_workers(step);
        ASSERT_EQ(delayed.size(), static_cast<std::size_t>(k))
            << "P=" << workers << " step " << step;
        for (std::size_t i = 0; i < delayed.size(); ++i) {
          EXPECT_GE(delayed[i], 0);
          EXPECT_LT(delayed[i], workers);
          if (i > 0) {
            EXPECT_LT(delayed[i - 1], delayed[i]) << "ascending and distinct";
          }
        }
      }
    }
  }
}

TEST(imbalance, random_choice_is_the_same_on_every_call_and_every_worker) {
  const imbalance_model first(random_kind(3, 40.0, 42), 10);
  const imbalance_model second(random_kind(3, 40.0, 42), 10); // another worker's copy
  for (std::uint64_t step = 1; step <= 500; ++step) {
    const auto delayed = first.delayed_workers(step);
    EXPECT_EQ(first.delayed_workers(step), delayed);
    EXPECT_EQ(second.delayed_workers(step), delayed);
  }
}

TEST(imbalance, random_choice_is_pinned_for_a_given_seed) {
  // splitmix64 and a partial Fisher-Yates shuffle, no <random> distributions: these sets must not
  // change with the platform or the standard library (checked against an independent Python
  // rendering of the same generator).
  const imbalance_model model(random_kind(2, 40.0, 1), 8);
  EXPECT_EQ(model.delayed_workers(1), (std::vector<int>{1, 3}));
  EXPECT_EQ(model.delayed_workers(2), (std::vector<int>{2, 7}));
  EXPECT_EQ(model.delayed_workers(3), (std::vector<int>{0, 7}));
}

TEST(imbalance, lognormal_multipliers_are_pinned_for_a_given_seed) {
  // Box-Muller on two splitmix64 uniforms; the values were computed independently (Python).
  // The tolerance allows for last-bit differences between maths libraries.
  const imbalance_model model(lognormal_kind(0.5, 11), 3);
  EXPECT_NEAR(model.extra_seconds(0, 1, 1.0), 0.11917067147615779, 1e-12);
  EXPECT_EQ(model.extra_seconds(0, 2, 1.0), 0.0); // m < 1
  EXPECT_NEAR(model.extra_seconds(1, 1, 1.0), 0.7853424745684681, 1e-12);
  EXPECT_NEAR(model.extra_seconds(1, 2, 1.0), 1.0400990608619196, 1e-12);
  EXPECT_EQ(model.extra_seconds(2, 1, 1.0), 0.0);
  EXPECT_NEAR(model.extra_seconds(2, 2, 1.0), 0.2891347855825528, 1e-12);
}

TEST(imbalance, random_choice_varies_across_steps_and_seeds) {
  const imbalance_model model(random_kind(2, 40.0, 5), 8);
  const imbalance_model other_seed(random_kind(2, 40.0, 6), 8);
  std::set<std::vector<int>> seen;
  int same_as_other_seed = 0;
  for (std::uint64_t step = 1; step <= 200; ++step) {
    seen.insert(model.delayed_workers(step));
    same_as_other_seed += model.delayed_workers(step) == other_seed.delayed_workers(step);
  }
  EXPECT_EQ(seen.size(), 28u);       // every one of the C(8, 2) pairs turns up in 200 steps
  EXPECT_LT(same_as_other_seed, 30); // about 200 / 28 by chance
}

TEST(imbalance, random_delays_every_worker_about_k_over_p_of_the_steps) {
  constexpr int workers = 8;
  constexpr int k = 2;
  constexpr int steps = 10000;
  const imbalance_model model(random_kind(k, 320.0, 2024), workers);
  std::vector<int> times_delayed(workers, 0);
  for (std::uint64_t step = 1; step <= steps; ++step)
    for (int worker : model.delayed_workers(step))
      ++times_delayed[static_cast<std::size_t>(worker)];
  for (int worker = 0; worker < workers; ++worker) // 0.02 is about 4.6 standard deviations
    EXPECT_NEAR(times_delayed[static_cast<std::size_t>(worker)] / double{steps},
                double{k} / workers, 0.02)
        << "worker " << worker;
}

TEST(imbalance, random_extra_is_the_delay_for_chosen_workers_and_zero_for_the_others) {
  const imbalance_model model(random_kind(2, 40.0), 6);
  for (std::uint64_t step = 1; step <= 50; ++step) {
    const auto delayed = model.delayed_workers(step);
    for (int worker = 0; worker < 6; ++worker) {
      const bool chosen = std::find(delayed.begin(), delayed.end(), worker) != delayed.end();
      // Independent of how long the step really took.
      EXPECT_DOUBLE_EQ(model.extra_seconds(worker, step, 0.5), chosen ? 0.04 : 0.0);
      EXPECT_DOUBLE_EQ(model.extra_seconds(worker, step, 0.0), chosen ? 0.04 : 0.0);
    }
  }
}

TEST(imbalance, persistent_slows_only_the_listed_workers_by_factor) {
  const imbalance_model model(persistent_kind({2, 0}, 3.0), 4);
  EXPECT_TRUE(model.active());
  for (std::uint64_t step : {1u, 2u, 1000u}) {
    EXPECT_DOUBLE_EQ(model.extra_seconds(0, step, 0.5), 1.0);
    EXPECT_DOUBLE_EQ(model.extra_seconds(1, step, 0.5), 0.0);
    EXPECT_DOUBLE_EQ(model.extra_seconds(2, step, 0.25), 0.5);
    EXPECT_DOUBLE_EQ(model.extra_seconds(3, step, 0.5), 0.0);
  }
  EXPECT_TRUE(model.delayed_workers(1).empty());
  const imbalance_model unchanged(persistent_kind({1}, 1.0), 4);
  EXPECT_EQ(unchanged.extra_seconds(1, 1, 0.5), 0.0);
}

TEST(imbalance, lognormal_is_never_negative_and_reproducible) {
  const imbalance_model model(lognormal_kind(0.5), 4);
  const imbalance_model copy(lognormal_kind(0.5), 4);
  EXPECT_TRUE(model.active());
  EXPECT_TRUE(model.delayed_workers(1).empty());
  int differs_between_workers = 0;
  for (std::uint64_t step = 1; step <= 2000; ++step) {
    for (int worker = 0; worker < 4; ++worker) {
      const double extra = model.extra_seconds(worker, step, 0.1);
      EXPECT_GE(extra, 0.0);
      EXPECT_TRUE(std::isfinite(extra));
      EXPECT_EQ(model.extra_seconds(worker, step, 0.1), extra);
      EXPECT_EQ(copy.extra_seconds(worker, step, 0.1), extra);
    }
    differs_between_workers +=
        model.extra_seconds(0, step, 0.1) != model.extra_seconds(1, step, 0.1);
  }
  // Workers draw independently: they agree only when both multipliers are below 1 (extra 0).
  EXPECT_GT(differs_between_workers, 1400);
}

// slows() says before a step runs whether any time will be added to it: what gradient buckets
// decide from (a delayed step of a partial algorithm is not announced early).
TEST(imbalance, slows_says_ahead_of_the_step_whether_it_is_delayed_at_all) {
  const std::vector<imbalance_section> kinds{imbalance_section{},       random_kind(2, 40.0),
                                             random_kind(2, 0.0),       persistent_kind({1}, 3.0),
                                             persistent_kind({1}, 1.0), lognormal_kind(0.5)};
  for (const auto& kind : kinds) {
    const imbalance_model model(kind, 5);
    int slowed = 0;
    for (std::uint64_t step = 1; step <= 200; ++step) {
      for (int worker = 0; worker < 5; ++worker) {
        const bool delayed = model.extra_seconds(worker, step, 0.003) > 0.0;
        EXPECT_EQ(model.slows(worker, step), delayed)
            << kind.kind << " worker " << worker << " step " << step;
        slowed += delayed ? 1 : 0;
      }
    }
    // Each kind slows what it says: none of the 1,000 steps, or 2 in 5, 1 in 5, about half.
    const bool none = kind.kind == "none" || (kind.kind == "random" && kind.delay_ms == 0.0) ||
                      (kind.kind == "persistent" && kind.factor == 1.0);
    if (none)
      EXPECT_EQ(slowed, 0) << kind.kind;
    else if (kind.kind == "random")
      EXPECT_EQ(slowed, 400);
    else if (kind.kind == "persistent")
      EXPECT_EQ(slowed, 200);
    else
      EXPECT_NEAR(slowed, 500, 80);
  }
}

TEST(imbalance, lognormal_slows_half_the_steps_by_a_half_normal_log_factor) {
  // m = exp(sigma * z): m > 1 exactly when z > 0, and then log(m) is sigma times a half-normal,
  // whose mean is sigma * sqrt(2 / pi).
  constexpr double sigma = 0.5;
  constexpr double compute_seconds = 0.2;
  constexpr int steps = 10000;
  const imbalance_model model(lognormal_kind(sigma, 99), 3);
  int slowed = 0;
  double log_factor_total = 0.0;
  for (std::uint64_t step = 1; step <= steps; ++step) {
    const double extra = model.extra_seconds(1, step, compute_seconds);
    if (extra > 0.0) {
      ++slowed;
      log_factor_total += std::log1p(extra / compute_seconds);
    }
  }
  EXPECT_NEAR(slowed / double{steps}, 0.5, 0.02);
  EXPECT_NEAR(log_factor_total / slowed, sigma * std::sqrt(2.0 / 3.14159265358979323846), 0.02);
  // The extra time scales with the step's real time.
  EXPECT_DOUBLE_EQ(model.extra_seconds(1, 17, 2 * compute_seconds),
                   2 * model.extra_seconds(1, 17, compute_seconds));
}

TEST(imbalance, lognormal_with_zero_sigma_never_slows) {
  const imbalance_model model(lognormal_kind(0.0), 2);
  for (std::uint64_t step = 1; step <= 100; ++step)
    EXPECT_EQ(model.extra_seconds(step % 2, step, 1.0), 0.0);
}

TEST(imbalance, describe_names_the_kind_and_its_settings_compactly) {
  EXPECT_EQ(imbalance_model(random_kind(2, 40.0), 8).describe(),
            "random: 2 of 8 workers delayed 40 ms per step");
  EXPECT_EQ(imbalance_model(random_kind(1, 2.5), 4).describe(),
            "random: 1 of 4 workers delayed 2.5 ms per step");
  EXPECT_EQ(imbalance_model(persistent_kind({1, 0}, 3.0), 4).describe(),
            "persistent: workers 0, 1 run 3x slower");
  EXPECT_EQ(imbalance_model(persistent_kind({3}, 1.5), 4).describe(),
            "persistent: worker 3 runs 1.5x slower");
  EXPECT_EQ(imbalance_model(lognormal_kind(0.5), 4).describe(),
            "lognormal: step times x max(1, LogNormal(0, 0.5))");
}

TEST(imbalance, rejects_settings_that_cannot_be_applied) {
  EXPECT_THROW(imbalance_model(random_kind(9, 40.0), 8), std::invalid_argument);
  EXPECT_THROW(imbalance_model(random_kind(0, 40.0), 8), std::invalid_argument);
  EXPECT_THROW(imbalance_model(random_kind(1, -1.0), 8), std::invalid_argument);
  EXPECT_THROW(imbalance_model(persistent_kind({0}, 0.5), 8), std::invalid_argument);
  EXPECT_THROW(imbalance_model(persistent_kind({8}, 2.0), 8), std::invalid_argument);
  EXPECT_THROW(imbalance_model(lognormal_kind(-0.1), 8), std::invalid_argument);
  EXPECT_THROW(imbalance_model(imbalance_section{}, 0), std::invalid_argument);
  imbalance_section typo;
  typo.kind = "randon";
  EXPECT_THROW(imbalance_model(typo, 8), std::invalid_argument);
  const imbalance_model model(random_kind(2, 40.0), 8);
  EXPECT_THROW(model.extra_seconds(8, 1, 0.1), std::invalid_argument);
  EXPECT_THROW(model.extra_seconds(-1, 1, 0.1), std::invalid_argument);
}

// The bounds below are on a hang (a minute-long delay), not on speed: a loaded machine may be
// slow to wake a thread, never a minute slow.

// delay->wait(seconds) on a thread of its own, detached: a wait that cancel() fails to end
// makes its test fail instead of hang (the thread shares the delay, so it may outlive the test).
std::future<bool> wait_in_background(std::shared_ptr<injected_delay> delay, double seconds) {
  std::promise<bool> waited;
  auto result = waited.get_future();
  std::thread([delay, seconds, waited = std::move(waited)]() mutable {
    waited.set_value(delay->wait(seconds));
  }).detach();
  return result;
}

TEST(injected_delay, a_delay_nobody_cancels_waits_its_whole_time) {
  injected_delay delay;
  const auto start = steady_clock::now();
  EXPECT_TRUE(delay.wait(0.05));
  EXPECT_GE(seconds_since(start), 0.05);
  EXPECT_TRUE(delay.wait(0.0)) << "no delay to wait";
  EXPECT_FALSE(delay.cancelled());
}

TEST(injected_delay, cancel_ends_a_long_wait_under_way) {
  auto delay = std::make_shared<injected_delay>();
  auto waited = wait_in_background(delay, 60.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the wait has begun, most likely
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  delay->cancel();
  ASSERT_EQ(waited.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "cancel() did not wake the wait";
  EXPECT_FALSE(waited.get()) << "a cut-short wait says so";
}

TEST(injected_delay, every_wait_after_a_cancel_returns_at_once) {
  // A stop that comes between two waits (before the step's delay begins) still counts.
  auto delay = std::make_shared<injected_delay>();
  delay->cancel();
  EXPECT_TRUE(delay->cancelled());
  auto waited = wait_in_background(delay, 60.0);
  ASSERT_EQ(waited.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_FALSE(waited.get());
}

TEST(injected_delay, an_absurdly_long_delay_still_waits_and_is_cancelled) {
  // 1e300 s would overflow a time_point; the wait must neither return at once nor hang.
  auto delay = std::make_shared<injected_delay>();
  auto waited = wait_in_background(delay, 1e300);
  EXPECT_EQ(waited.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  delay->cancel();
  ASSERT_EQ(waited.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_FALSE(waited.get());
}

} // namespace
