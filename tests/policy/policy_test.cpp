// Grouping policies as plain classes: exhaustive small cases and property tests over random
// arrival orders (fixed seeds), no actor system.
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <numeric>
#include <optional>
#include <random>
#include <string>

#include "policy/policy.hpp"
#include "policy/preduce.hpp"
#include "policy/wagma.hpp"
#include "support/arrivals.hpp"

namespace {

using herd::policy::freshness;
using herd::policy::group_decision;
using herd::policy::group_outcome;
using herd::policy::quorum_policy;
using herd::policy::round_kind;
using herd::testing::iota;
using herd::testing::ready;

// Every member of `round` gave what `fresh_steps` says (0 = nothing fresh).
group_outcome outcome(const group_decision& round, const std::vector<std::uint64_t>& fresh_steps) {
  group_outcome done;
  done.members = round.members;
  for (int member : round.members) {
    const std::uint64_t step = fresh_steps[static_cast<std::size_t>(member)];
    done.contributions.push_back({member, step > 0 ? freshness::fresh : freshness::none, step});
  }
  return done;
}

std::size_t ceil_half(int workers) {
  return static_cast<std::size_t>((workers + 1) / 2);
}

// -- sync ---------------------------------------------------------------------------------------

TEST(sync_policy, activates_only_when_every_live_worker_is_ready_for_every_p_and_order) {
  std::mt19937_64 rng(17);
  for (int workers = 1; workers <= 16; ++workers) {
    auto policy = herd::policy::make_sync_policy();
    EXPECT_TRUE(policy->set_live_workers(iota(workers)).empty());
    for (std::uint64_t step = 1; step <= 5; ++step) {
      auto order = iota(workers);
      std::shuffle(order.begin(), order.end(), rng);
      for (int i = 0; i < workers; ++i) {
        const auto decisions = policy->on_ready(ready(order[static_cast<std::size_t>(i)], step));
        if (i + 1 < workers) {
          ASSERT_TRUE(decisions.empty()) << "P=" << workers << " after " << i + 1 << " arrivals";
        } else {
          ASSERT_EQ(decisions.size(), 1u) << "P=" << workers;
          EXPECT_EQ(decisions[0].members, iota(workers));
          EXPECT_EQ(decisions[0].kind, round_kind::full_sync);
          EXPECT_EQ(decisions[0].fresh_arrivals, static_cast<std::size_t>(workers));
          const std::vector<std::uint64_t> steps(static_cast<std::size_t>(workers), step);
          EXPECT_TRUE(policy->on_group_done(outcome(decisions[0], steps)).empty());
        }
      }
    }
  }
}

TEST(sync_policy, duplicate_arrival_does_not_count_twice) {
  auto policy = herd::policy::make_sync_policy();
  policy->set_live_workers({0, 1, 2});
  EXPECT_TRUE(policy->on_ready(ready(0)).empty());
  EXPECT_TRUE(policy->on_ready(ready(0)).empty());
  EXPECT_TRUE(policy->on_ready(ready(1)).empty());
  EXPECT_EQ(policy->on_ready(ready(2)).size(), 1u);
}

TEST(sync_policy, losing_the_last_missing_worker_completes_the_round_without_it) {
  auto policy = herd::policy::make_sync_policy();
  policy->set_live_workers({0, 1, 2, 3});
  policy->on_ready(ready(0));
  policy->on_ready(ready(2));
  policy->on_ready(ready(3));
  const auto decisions = policy->set_live_workers({0, 2, 3});
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].members, (std::vector<int>{0, 2, 3}));
  policy->on_group_done(outcome(decisions[0], {1, 0, 1, 1}));
  // A late arrival from the lost worker is ignored.
  EXPECT_TRUE(policy->on_ready(ready(1, 2)).empty());
  policy->on_ready(ready(0, 2));
  policy->on_ready(ready(2, 2));
  EXPECT_EQ(policy->on_ready(ready(3, 2)).size(), 1u);
}

TEST(sync_policy, a_worker_lost_while_its_round_runs_is_not_counted_when_the_round_ends) {
  auto policy = herd::policy::make_sync_policy();
  policy->set_live_workers({0, 1, 2});
  policy->on_ready(ready(0));
  policy->on_ready(ready(1));
  const auto decisions = policy->on_ready(ready(2));
  ASSERT_EQ(decisions.size(), 1u);
  // Worker 2 is lost while the round runs; the round still took its gradient.
  EXPECT_TRUE(policy->set_live_workers({0, 1}).empty());
  EXPECT_TRUE(policy->on_group_done(outcome(decisions[0], {1, 1, 1})).empty());
  // The next round waits for both live workers, not one.
  EXPECT_TRUE(policy->on_ready(ready(0, 2)).empty()) << "a round after one of two arrivals";
  const auto next = policy->on_ready(ready(1, 2));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].members, (std::vector<int>{0, 1}));
  EXPECT_EQ(next[0].fresh_arrivals, 2u);
}

TEST(sync_policy, readiness_of_a_lost_worker_is_forgotten) {
  auto policy = herd::policy::make_sync_policy();
  policy->set_live_workers({0, 1});
  policy->on_ready(ready(1));
  EXPECT_TRUE(policy->set_live_workers({0}).empty());
  const auto decisions = policy->on_ready(ready(0));
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].members, std::vector<int>{0});
}

TEST(sync_policy, a_worker_that_comes_back_counts_from_the_steps_of_the_state_it_took) {
  auto policy = herd::policy::make_sync_policy();
  policy->set_live_workers({0, 1});
  policy->on_ready(ready(0, 50));
  const auto first = policy->on_ready(ready(1, 50));
  ASSERT_EQ(first.size(), 1u);
  policy->on_group_done(outcome(first[0], {50, 50}));
  EXPECT_TRUE(policy->set_live_workers({0}).empty());
  // A node joins in worker 1's place with a peer's state at step 10: its next step is 11.
  EXPECT_TRUE(policy->set_live_workers({0, 1}).empty());
  EXPECT_TRUE(policy->on_ready(ready(0, 51)).empty());
  const auto second = policy->on_ready(ready(1, 11));
  ASSERT_EQ(second.size(), 1u) << "the returning worker's arrival counts";
  EXPECT_EQ(second[0].members, (std::vector<int>{0, 1}));
}

// -- the quorum family --------------------------------------------------------------------------

TEST(quorum_policy, solo_activates_at_the_first_arrival_with_every_live_worker_as_member) {
  for (int workers = 1; workers <= 16; ++workers) {
    quorum_policy solo("solo", 0.0, 0);
    solo.set_live_workers(iota(workers));
    const int first = workers / 2;
    const auto decisions = solo.on_ready(ready(first));
    ASSERT_EQ(decisions.size(), 1u) << "P=" << workers;
    EXPECT_EQ(decisions[0].members, iota(workers));
    EXPECT_EQ(decisions[0].fresh_arrivals, 1u);
    EXPECT_EQ(decisions[0].kind, workers == 1 ? round_kind::full_sync : round_kind::partial);
  }
}

TEST(quorum_policy, majority_needs_ceil_half_of_the_live_workers) {
  for (int workers = 1; workers <= 16; ++workers) {
    quorum_policy majority("majority", 0.5, 0);
    majority.set_live_workers(iota(workers));
    EXPECT_EQ(majority.threshold(), ceil_half(workers)) << "P=" << workers;
    for (std::size_t i = 0; i + 1 < ceil_half(workers); ++i)
      ASSERT_TRUE(majority.on_ready(ready(static_cast<int>(i))).empty());
    const auto decisions = majority.on_ready(ready(static_cast<int>(ceil_half(workers)) - 1));
    ASSERT_EQ(decisions.size(), 1u) << "P=" << workers;
    EXPECT_EQ(decisions[0].fresh_arrivals, ceil_half(workers));
  }
}

TEST(quorum_policy, threshold_is_ceil_of_fraction_times_live_workers) {
  for (int workers = 1; workers <= 16; ++workers) {
    for (double fraction : {0.1, 0.25, 0.3, 0.5, 0.75, 0.9, 1.0}) {
      quorum_policy quorum("quorum", fraction, 0);
      quorum.set_live_workers(iota(workers));
      const auto expected = static_cast<std::size_t>(
          std::max(1.0, std::ceil(fraction * static_cast<double>(workers) - 1e-9)));
      EXPECT_EQ(quorum.threshold(), expected) << "P=" << workers << " fraction=" << fraction;
    }
  }
}

TEST(quorum_policy, an_arrival_the_round_already_took_does_not_count_for_the_next) {
  // Worker 1 finished before the aggregator asked it, so it gave round 0 a fresh gradient of
  // step 1, but its arrival reached the coordinator only after round 0 was done.
  quorum_policy solo("solo", 0.0, 0);
  solo.set_live_workers({0, 1});
  const auto first = solo.on_ready(ready(0, 1));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(solo.on_group_done(outcome(first[0], {1, 1})).empty());
  EXPECT_TRUE(solo.on_ready(ready(1, 1)).empty()) << "step 1 of worker 1 was consumed";
  EXPECT_EQ(solo.on_ready(ready(1, 2)).size(), 1u);
}

TEST(quorum_policy, at_most_one_round_is_in_flight) {
  quorum_policy solo("solo", 0.0, 0);
  solo.set_live_workers({0, 1, 2});
  const auto first = solo.on_ready(ready(0));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(solo.on_ready(ready(1)).empty());
  EXPECT_TRUE(solo.on_ready(ready(2)).empty());
  // Round 0 took only worker 0's gradient: workers 1 and 2 are pending, the next round is due.
  const auto second = solo.on_group_done(outcome(first[0], {1, 0, 0}));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].fresh_arrivals, 2u);
}

TEST(quorum_policy, quorum_of_one_is_sync) {
  quorum_policy quorum("quorum", 1.0, 32);
  quorum.set_live_workers(iota(5));
  EXPECT_EQ(quorum.threshold(), 5u);
  for (int worker = 0; worker < 4; ++worker)
    EXPECT_TRUE(quorum.on_ready(ready(worker)).empty());
  const auto decisions = quorum.on_ready(ready(4));
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].kind, round_kind::full_sync);
}

// A scripted cluster driving a policy: workers finish steps in a random order, arrivals may be
// delivered after the round that took them is done, and rounds complete at random times. It checks
// every decision against the policy's definition.
struct simulation {
  int workers;
  double fraction;
  int sync_every;
  std::mt19937_64 rng;

  void run(int rounds_wanted) {
    quorum_policy policy("quorum", fraction, sync_every);
    policy.set_live_workers(iota(workers));
    const auto p = static_cast<std::size_t>(workers);
    std::vector<std::uint64_t> step(p, 0);        // steps finished
    std::vector<bool> computing(p, true);         // else: holding a fresh gradient
    std::vector<std::uint64_t> delivered(p, 0);   // latest arrival the policy has seen
    std::vector<std::uint64_t> consumed(p, 0);    // latest step a round took
    std::vector<std::uint64_t> undelivered(p, 0); // an arrival still in the mail
    std::optional<group_decision> in_flight;
    std::vector<std::uint64_t> taken(p, 0); // what the in-flight round took
    int rounds = 0;

    auto pending = [&] {
      std::size_t count = 0;
      for (std::size_t w = 0; w < p; ++w)
        count += delivered[w] > consumed[w] ? 1 : 0;
      return count;
    };
    auto expected_threshold = [&] {
      if (sync_every > 0 && (rounds + 1) % sync_every == 0)
        return p;
      return static_cast<std::size_t>(
          std::max(1.0, std::ceil(fraction * static_cast<double>(workers) - 1e-9)));
    };
    auto check = [&](const std::vector<group_decision>& decisions) {
      ASSERT_LE(decisions.size(), 1u);
      if (decisions.empty()) {
        // Not due: a round is in flight, or too few fresh arrivals.
        ASSERT_TRUE(in_flight || pending() < expected_threshold())
            << "P=" << workers << " round " << rounds << ": due but not activated";
        return;
      }
      ASSERT_FALSE(in_flight) << "a second round in flight";
      ASSERT_GE(pending(), expected_threshold());
      ASSERT_EQ(decisions[0].fresh_arrivals, pending());
      ASSERT_EQ(decisions[0].members, iota(workers));
      const bool full = sync_every > 0 && (rounds + 1) % sync_every == 0;
      if (full) {
        ASSERT_EQ(decisions[0].kind, round_kind::full_sync) << "round " << rounds;
      } else if (expected_threshold() < p) {
        ASSERT_EQ(decisions[0].kind, round_kind::partial) << "round " << rounds;
      }
      in_flight = decisions[0];
      // The aggregator asks every member now: whoever holds a fresh gradient gives it.
      for (std::size_t w = 0; w < p; ++w)
        taken[w] = computing[w] ? 0 : step[w];
      ++rounds;
    };

    while (rounds < rounds_wanted) {
      const int choice = static_cast<int>(rng() % 3);
      if (choice == 0) { // a computing worker finishes a step
        std::vector<std::size_t> busy;
        for (std::size_t w = 0; w < p; ++w)
          if (computing[w] && undelivered[w] == 0)
            busy.push_back(w);
        if (busy.empty())
          continue;
        const std::size_t w = busy[rng() % busy.size()];
        computing[w] = false;
        undelivered[w] = ++step[w];
      } else if (choice == 1) { // an arrival reaches the coordinator
        std::vector<std::size_t> mail;
        for (std::size_t w = 0; w < p; ++w)
          if (undelivered[w] != 0)
            mail.push_back(w);
        if (mail.empty())
          continue;
        const std::size_t w = mail[rng() % mail.size()];
        const std::uint64_t s = undelivered[w];
        undelivered[w] = 0;
        if (s > consumed[w])
          delivered[w] = std::max(delivered[w], s);
        check(policy.on_ready(ready(static_cast<int>(w), s)));
        ASSERT_FALSE(testing::Test::HasFatalFailure());
      } else if (in_flight) { // the round in flight completes
        std::vector<std::uint64_t> steps = taken;
        for (std::size_t w = 0; w < p; ++w)
          if (taken[w] > 0) {
            consumed[w] = taken[w];
            computing[w] = true; // it applied the result and computes again
          }
        const auto decided = policy.on_group_done(outcome(*in_flight, steps));
        in_flight.reset();
        check(decided);
        ASSERT_FALSE(testing::Test::HasFatalFailure());
      }
    }
  }
};

TEST(quorum_policy, decisions_follow_the_definition_over_random_arrival_orders) {
  std::mt19937_64 seeds(2024);
  for (int workers = 1; workers <= 16; ++workers) {
    for (double fraction : {0.0, 0.5, 0.3, 1.0}) {
      for (int sync_every : {0, 1, 3, 32}) {
        simulation sim{workers, fraction, sync_every, std::mt19937_64(seeds())};
        sim.run(60);
        ASSERT_FALSE(testing::Test::HasFatalFailure())
            << "P=" << workers << " fraction=" << fraction << " sync-every=" << sync_every;
      }
    }
  }
}

TEST(quorum_policy, a_full_synchronous_round_comes_exactly_every_sync_every_rounds) {
  for (int sync_every : {1, 2, 5, 32}) {
    quorum_policy solo("solo", 0.0, sync_every);
    const int workers = 4;
    solo.set_live_workers(iota(workers));
    std::vector<std::uint64_t> steps(workers, 0);
    for (int round = 0; round < 100; ++round) {
      const bool full = (round + 1) % sync_every == 0;
      std::vector<group_decision> decisions;
      // Workers arrive one by one; a full round waits for all four, a partial one takes the first.
      for (int worker = 0; worker < workers && decisions.empty(); ++worker) {
        steps[static_cast<std::size_t>(worker)] += 1;
        decisions = solo.on_ready(ready(worker, steps[static_cast<std::size_t>(worker)]));
        if (full && worker + 1 < workers) {
          ASSERT_TRUE(decisions.empty()) << "sync-every=" << sync_every << " round " << round;
        }
      }
      ASSERT_EQ(decisions.size(), 1u);
      ASSERT_EQ(decisions[0].kind, full ? round_kind::full_sync : round_kind::partial)
          << "sync-every=" << sync_every << " round " << round;
      // The round took the fresh gradient of every worker that had arrived.
      std::vector<std::uint64_t> taken(workers, 0);
      for (int worker = 0; worker < workers; ++worker)
        taken[static_cast<std::size_t>(worker)] = steps[static_cast<std::size_t>(worker)];
      ASSERT_TRUE(solo.on_group_done(outcome(decisions[0], taken)).empty());
    }
  }
}

TEST(policies, make_policy_follows_the_configured_algorithm_and_its_section) {
  herd::config::run_config config;
  config.train.workers = 8;
  for (const char* name : {"sync", "solo", "majority", "quorum"}) {
    config.train.algorithm = name;
    EXPECT_EQ(herd::policy::make_policy(config)->name(), name);
  }
  config.train.algorithm = "quorum";
  config.quorum.fraction = 0.75;
  auto policy = herd::policy::make_policy(config);
  policy->set_live_workers(iota(8));
  EXPECT_EQ(dynamic_cast<quorum_policy&>(*policy).threshold(), 6u);
  EXPECT_EQ(herd::policy::partial_settings(config), &config.quorum);
  config.train.algorithm = "sync";
  EXPECT_EQ(herd::policy::partial_settings(config), nullptr);
  config.train.algorithm = "bogus";
  EXPECT_THROW(herd::policy::make_policy(config), std::invalid_argument);
}

// Each partial collective takes its threshold, its sync-every, its missing-members and its
// late-gradients from its own section, never from a sibling's: sync-every and late-gradients
// differ in every section, and each algorithm runs with both missing-members modes while its
// siblings hold the other one.
TEST(policies, each_partial_algorithm_reads_only_its_own_section) {
  using herd::policy::late_gradients;
  using herd::policy::weighting;
  herd::config::run_config config;
  config.train.workers = 8;
  config.solo.sync_every = 2;
  config.solo.late_gradients = "scale";
  config.majority.sync_every = 3;
  config.majority.late_gradients = "accumulate";
  config.quorum.fraction = 0.75;
  config.quorum.sync_every = 5;
  config.quorum.late_gradients = "discard";
  struct expected {
    const char* name;
    herd::config::partial_section* section;
    std::size_t threshold;
    int first_full_sync; // the round
    late_gradients late;
  };
  for (const auto& want : {expected{"solo", &config.solo, 1, 2, late_gradients::scale},
                           expected{"majority", &config.majority, 4, 3, late_gradients::accumulate},
                           expected{"quorum", &config.quorum, 6, 5, late_gradients::discard}})
    for (const bool zero : {true, false}) {
      SCOPED_TRACE(std::string(want.name) + (zero ? ", zero" : ", renormalise"));
      config.train.algorithm = want.name;
      for (herd::config::partial_section* section :
           {&config.solo, &config.majority,
            static_cast<herd::config::partial_section*>(&config.quorum)})
        section->missing_members = (section == want.section) == zero ? "zero" : "renormalise";
      EXPECT_EQ(herd::policy::partial_settings(config), want.section);
      EXPECT_EQ(herd::policy::late_gradients_of(config), want.late);
      auto policy = herd::policy::make_policy(config);
      policy->set_live_workers(iota(8));
      EXPECT_EQ(dynamic_cast<quorum_policy&>(*policy).threshold(), want.threshold);
      // Every worker is ready each round; the round activates at the threshold's arrival.
      int first_full_sync = 0;
      for (std::uint64_t round = 1; round <= 6 && first_full_sync == 0; ++round) {
        std::vector<group_decision> decided;
        for (int worker = 0; worker < 8; ++worker)
          for (auto& decision : policy->on_ready(ready(worker, round)))
            decided.push_back(std::move(decision));
        ASSERT_EQ(decided.size(), 1u) << "round " << round;
        EXPECT_EQ(decided[0].weights, zero ? weighting::uniform_planned : weighting::uniform);
        if (decided[0].kind == round_kind::full_sync)
          first_full_sync = static_cast<int>(round);
        EXPECT_TRUE(policy->on_group_done(outcome(decided[0], std::vector<std::uint64_t>(8, round)))
                        .empty());
      }
      EXPECT_EQ(first_full_sync, want.first_full_sync);
    }
}

// Every key of [preduce] and [wagma] reaches the policy, the times converted to seconds.
TEST(policies, preduce_and_wagma_take_every_key_of_their_sections) {
  herd::config::run_config config;
  config.train.workers = 8;
  auto& preduce = config.preduce;
  preduce.group_size = 5;
  preduce.wait_window_ms = 30;
  preduce.staleness_decay = 0.7;
  preduce.connect_every = 9;
  preduce.connect_wait_ms = 250;
  preduce.sync_every = 4;
  const auto settings = herd::policy::preduce_settings_of(preduce);
  EXPECT_EQ(settings.group_size, 5);
  EXPECT_DOUBLE_EQ(settings.wait_window_seconds, 0.030);
  EXPECT_DOUBLE_EQ(settings.staleness_decay, 0.7);
  EXPECT_EQ(settings.connect_every, 9);
  EXPECT_DOUBLE_EQ(settings.connect_wait_seconds, 0.25);
  EXPECT_EQ(settings.sync_every, 4);
  config.train.algorithm = "preduce";
  auto made = herd::policy::make_policy(config);
  auto& policy = dynamic_cast<herd::policy::preduce_policy&>(*made);
  policy.set_live_workers(iota(8));
  EXPECT_EQ(policy.guard().period(), 9u);
  for (int worker = 0; worker < 4; ++worker)
    EXPECT_TRUE(policy.on_ready(ready(worker, 3, 0.0)).empty()) << worker;
  const auto groups = policy.on_ready(ready(4, 1, 0.0));
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].members.size(), 5u);
  // Staleness decay 0.7: four members at step 3, one at step 1 (2 steps behind).
  const double behind = std::exp(-0.7 * 2.0), total = 4.0 + behind;
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_NEAR(groups[0].member_weights[i], (groups[0].members[i] == 4 ? behind : 1.0) / total,
                1e-6);

  config.wagma.group_size = 4;
  config.wagma.sync_every = 3;
  config.wagma.blend = "reference";
  const auto wagma = herd::policy::wagma_settings_of(config.wagma);
  EXPECT_EQ(wagma.group_size, 4);
  EXPECT_EQ(wagma.sync_every, 3);
  EXPECT_TRUE(wagma.reference_blend);
  config.train.algorithm = "wagma";
  made = herd::policy::make_policy(config);
  EXPECT_EQ(dynamic_cast<herd::policy::wagma_policy&>(*made).schedule().group_size(), 4);
}

TEST(weights, uniform_weights_are_one_over_the_members_that_answered) {
  using herd::policy::member_weights;
  using herd::policy::weighting;
  for (std::size_t n = 1; n <= 16; ++n) {
    const auto weights = member_weights(weighting::uniform, {}, std::vector<bool>(n, true));
    ASSERT_EQ(weights.size(), n);
    for (float weight : weights)
      EXPECT_FLOAT_EQ(weight, 1.0f / static_cast<float>(n));
  }
  EXPECT_EQ(member_weights(weighting::uniform, {}, {true, false, true, true}),
            (std::vector<float>{1.0f / 3, 0.0f, 1.0f / 3, 1.0f / 3}));
  EXPECT_EQ(member_weights(weighting::uniform, {}, {false, false}), (std::vector<float>{0, 0}));
}

TEST(weights, given_weights_are_renormalised_over_the_members_that_answered) {
  using herd::policy::member_weights;
  using herd::policy::weighting;
  const std::vector<float> given{0.5f, 0.25f, 0.25f};
  const auto all = member_weights(weighting::given, given, {true, true, true});
  EXPECT_FLOAT_EQ(all[0], 0.5f);
  EXPECT_FLOAT_EQ(all[1], 0.25f);
  EXPECT_FLOAT_EQ(all[2], 0.25f);
  const auto two = member_weights(weighting::given, given, {true, false, true});
  EXPECT_FLOAT_EQ(two[0], 2.0f / 3.0f);
  EXPECT_EQ(two[1], 0.0f);
  EXPECT_FLOAT_EQ(two[2], 1.0f / 3.0f);
  EXPECT_THROW(member_weights(weighting::given, given, {true, true}), std::invalid_argument);
}

// <algorithm>.missing-members = zero: the divisor stays every member, so a missing one adds zero.
TEST(weights, planned_uniform_weights_keep_the_divisor_when_members_are_missing) {
  using herd::policy::member_weights;
  using herd::policy::weighting;
  EXPECT_EQ(member_weights(weighting::uniform_planned, {}, {true, false, true, true}),
            (std::vector<float>{0.25f, 0.0f, 0.25f, 0.25f}));
  EXPECT_EQ(member_weights(weighting::uniform_planned, {}, std::vector<bool>(8, true)),
            std::vector<float>(8, 0.125f))
      << "with every member there, the same as renormalise";
  EXPECT_EQ(member_weights(weighting::uniform_planned, {}, {false, false}),
            (std::vector<float>{0, 0}));
}

// The setting reaches the rounds' weights: make_policy gives solo, majority and quorum rounds
// planned-uniform weights under zero and uniform (renormalised) ones under renormalise; sync is
// always the mean of those that answered.
TEST(weights, missing_members_reaches_the_rounds_weighting) {
  using herd::policy::weighting;
  for (const char* name : {"solo", "majority", "quorum"})
    for (const char* mode : {"renormalise", "zero"}) {
      SCOPED_TRACE(std::string(name) + " " + mode);
      herd::config::run_config config;
      config.train.algorithm = name;
      config.solo.missing_members = config.majority.missing_members =
          config.quorum.missing_members = mode;
      auto policy = herd::policy::make_policy(config);
      policy->set_live_workers(iota(4));
      std::vector<group_decision> rounds;
      for (int worker = 0; worker < 4 && rounds.empty(); ++worker)
        rounds = policy->on_ready(ready(worker));
      ASSERT_EQ(rounds.size(), 1u);
      EXPECT_EQ(rounds[0].weights, std::string(mode) == "zero" ? weighting::uniform_planned
                                                                : weighting::uniform);
    }
  herd::config::run_config config;
  config.solo.missing_members = "zero";
  auto sync = herd::policy::make_policy(config);
  sync->set_live_workers(iota(2));
  sync->on_ready(ready(0));
  const auto rounds = sync->on_ready(ready(1));
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0].weights, weighting::uniform);
  EXPECT_THROW(herd::policy::missing_members_of("drop"), std::invalid_argument);
}

// wagma.blend reaches the policy, which tells the workers (and the simulator) what to build.
TEST(wagma_blend, the_setting_reaches_the_policy) {
  herd::config::run_config config;
  config.train.algorithm = "wagma";
  EXPECT_TRUE(herd::policy::make_policy(config)->blends_on_time_models()) << "reference, default";
  EXPECT_TRUE(herd::policy::make_policy(config)->blends_late_models());
  config.wagma.blend = "herd";
  EXPECT_FALSE(herd::policy::make_policy(config)->blends_on_time_models());
  EXPECT_TRUE(herd::policy::make_policy(config)->blends_late_models());
  config.train.algorithm = "preduce";
  EXPECT_FALSE(herd::policy::make_policy(config)->blends_on_time_models());
}

} // namespace
