// Whole runs of the partial collectives (solo, majority, quorum) under injected imbalance: every
// gradient is accounted for, every replica goes through the same states, and quorum = 1 is sync.
// And of the model-averaging algorithms: every preduce group's members leave it with one model;
// wagma's on-time members take their group's average, late ones blend it, and a global average
// makes the replicas one.
#include "actors/train_session.hpp"
#include "actors/worker_probe.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>

#include "policy/butterfly.hpp"
#include "support/recording_probe.hpp"
#include "support/slow_backward_ops.hpp"

namespace {

using herd::actors::stop_cause;
using herd::actors::run_summary;
using herd::actors::train_session;
using herd::config::run_config;
using herd::testing::recording_probe;

constexpr int features = 24;
constexpr int classes = 5;
constexpr int batch = 8;

// A run of `workers` workers whose single epoch is `steps` steps per worker.
struct job {
  run_config config;
  std::shared_ptr<const herd::models::train_test_split> data;
};

job make_job(const std::string& algorithm, int workers, int steps) {
  job made;
  auto& config = made.config;
  config.train.algorithm = algorithm;
  config.train.workers = workers;
  config.train.batch_size = batch;
  config.train.lr = 0.05;
  config.train.momentum = 0.9;
  config.train.weight_decay = 1e-4;
  config.train.epochs = 1;
  config.train.seed = 11;
  config.train.eval_every = 100000;
  config.data.dataset = "synthetic";
  config.model.hidden = {16};
  config.solo.sync_every = 4;
  config.majority.sync_every = 4;
  config.quorum.sync_every = 4;
  made.data = std::make_shared<herd::models::train_test_split>(herd::models::make_synthetic_split(
      static_cast<std::size_t>(workers) * static_cast<std::size_t>(steps * batch), 200, features,
      classes, 5));
  return made;
}

void set_imbalance(run_config& config, const std::string& kind) {
  auto& imbalance = config.imbalance;
  imbalance.kind = kind;
  imbalance.seed = 3;
  imbalance.k = std::max(1, config.train.workers / 4);
  imbalance.delay_ms = 4.0;
  imbalance.workers = {0};
  imbalance.factor = 4.0;
  imbalance.sigma = 1.0;
}

struct probed_run {
  run_summary summary;
  std::shared_ptr<recording_probe> probe;
  std::vector<std::vector<float>> final_parameters;
};

probed_run run_probed(const job& j, const herd::kernels::ops* ops = nullptr) {
  herd::actors::session_options options;
  if (ops != nullptr)
    options.ops = ops;
  options.progress_interval = std::chrono::milliseconds(20);
  const auto model = herd::actors::make_model(j.config, j.data->train);
  auto probe = std::make_shared<recording_probe>(j.config.train.workers, model->parameter_count());
  options.probe = probe;
  train_session session(j.config, j.data, options);
  probed_run result;
  result.summary = session.run();
  result.probe = probe;
  result.final_parameters = session.final_parameters();
  return result;
}

double norm(const std::vector<double>& values) {
  return std::sqrt(std::inner_product(values.begin(), values.end(), values.begin(), 0.0));
}

// How far applied * P + unsent (every round's result is sum / P, and every worker applied every
// round) is from the sum of the gradients `computed` counts: |gap| and |computed|.
struct conservation {
  double gap = 0.0;
  double computed = 0.0;
};

conservation conservation_of(const probed_run& run,
                             const std::vector<std::vector<double>>& computed_by_worker) {
  const auto workers = computed_by_worker.size();
  const auto count = computed_by_worker[0].size();
  std::vector<double> computed(count, 0.0), difference(count, 0.0);
  for (std::size_t w = 0; w < workers; ++w) {
    for (std::size_t i = 0; i < count; ++i) {
      computed[i] += computed_by_worker[w][i];
      difference[i] += run.probe->unsent()[w][i];
    }
  }
  for (std::size_t i = 0; i < count; ++i)
    difference[i] += static_cast<double>(workers) * run.probe->applied()[0][i] - computed[i];
  return {norm(difference), norm(computed)};
}

std::uint64_t late_steps(const probed_run& run) {
  std::uint64_t late = 0;
  for (const auto& worker : run.summary.per_worker)
    late += worker.late_steps;
  return late;
}

// `algorithm` with `workers` workers under random imbalance, late gradients `mode`; the run ended
// by its epoch.
probed_run run_with_late_gradients(const std::string& algorithm, int workers,
                                   const std::string& mode) {
  auto j = make_job(algorithm, workers, 40);
  j.config.solo.late_gradients = mode;
  j.config.majority.late_gradients = mode;
  set_imbalance(j.config, "random");
  auto run = run_probed(j);
  EXPECT_EQ(run.summary.stop_reason, stop_cause::epochs) << run.summary.error;
  return run;
}

TEST(partial_collectives, accumulate_conserves_every_gradient_under_random_imbalance) {
  for (const char* algorithm : {"solo", "majority"}) {
    for (int workers : {2, 4, 7}) {
      const auto run = run_with_late_gradients(algorithm, workers, "accumulate");
      ASSERT_TRUE(run.probe->all_stopped());
      ASSERT_GT(late_steps(run), 0u) << algorithm << " P=" << workers
                                     << ": no gradient was late, so this run tests nothing "
                                        "beyond sync";
      const auto kept = conservation_of(run, run.probe->computed());
      EXPECT_LT(kept.gap, 1e-5 * kept.computed)
          << algorithm << " P=" << workers << ": |applied * P + unsent - computed| = " << kept.gap
          << " of " << kept.computed;
      for (int w = 1; w < workers; ++w)
        EXPECT_EQ(run.probe->applied()[static_cast<std::size_t>(w)], run.probe->applied()[0])
            << "worker " << w << " applied different results";
    }
  }
}

TEST(partial_collectives, scale_conserves_every_gradient_at_the_weight_of_the_rounds_it_missed) {
  for (const char* algorithm : {"solo", "majority"}) {
    // A late gradient goes out in a round after the one it missed. Once in ten CI runs (two
    // loaded cores) a run had late steps but sent none of their gradients, and so tested nothing:
    // such a run is run again (at most three times).
    auto run = run_with_late_gradients(algorithm, 4, "scale");
    for (int attempt = 1; attempt < 3 && run.summary.stale_contributions == 0; ++attempt)
      run = run_with_late_gradients(algorithm, 4, "scale");
    ASSERT_TRUE(run.probe->all_stopped());
    ASSERT_GT(late_steps(run), 0u) << algorithm;
    EXPECT_GT(run.summary.stale_contributions, 0u) << algorithm << ": late gradients go out";
    // Each late gradient went out at 1 / (1 + rounds missed) of itself, and nothing else changed.
    const auto weighted = conservation_of(run, run.probe->weighted_computed());
    EXPECT_LT(weighted.gap, 1e-5 * weighted.computed)
        << algorithm << ": |applied * P + unsent - weighted computed| = " << weighted.gap;
    const auto plain = conservation_of(run, run.probe->computed());
    EXPECT_GT(plain.gap, 1e-3 * plain.computed) << algorithm << ": no gradient was scaled";
  }
}

TEST(partial_collectives, replicas_are_bit_identical_after_every_round_under_every_imbalance) {
  for (const char* kind : {"none", "random", "persistent", "lognormal"}) {
    for (int workers : {1, 2, 3, 4, 7, 8}) {
      const char* algorithm = workers % 2 == 0 ? "solo" : "majority";
      auto j = make_job(algorithm, workers, 30);
      set_imbalance(j.config, kind);
      const auto run = run_probed(j);
      const std::string label =
          std::string(algorithm) + " imbalance=" + kind + " P=" + std::to_string(workers);
      ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << label << ": " << run.summary.error;
      const auto& fingerprints = run.probe->fingerprints();
      ASSERT_EQ(fingerprints[0].size(), run.summary.rounds) << label;
      for (int w = 0; w < workers; ++w) {
        const auto& mine = fingerprints[static_cast<std::size_t>(w)];
        ASSERT_EQ(mine.size(), run.summary.rounds) << label << " worker " << w;
        std::uint64_t expected_round = 0;
        for (const auto& [round, hash] : mine) {
          ASSERT_EQ(round, expected_round++) << label << ": worker " << w << " skipped a round";
          ASSERT_EQ(hash, fingerprints[0].at(round))
              << label << ": worker " << w << " differs from worker 0 after round " << round;
        }
        EXPECT_EQ(run.final_parameters[static_cast<std::size_t>(w)], run.final_parameters[0]);
      }
      // A full synchronous round every sync-every = 4 rounds, exactly.
      EXPECT_EQ(run.summary.full_sync_rounds,
                workers == 1 ? run.summary.rounds : run.summary.rounds / 4)
          << label;
    }
  }
}

// With gradient buckets a worker announces its step once backward has made part of its gradient
// final, and a round that asks it then reduces that gradient as backward finishes it. Every
// gradient is still accounted for, and every replica goes through the same states.
TEST(partial_collectives, with_gradient_buckets_rounds_read_running_backward_and_lose_nothing) {
  const herd::testing::slow_backward_ops ops(std::chrono::milliseconds(1));
  for (const char* algorithm : {"solo", "majority", "quorum"}) {
    auto j = make_job(algorithm, 4, 30);
    j.config.model.hidden = {64, 64}; // 6,085 parameters: two buckets, cut at 2,048 floats
    j.config.comm.bucket_mb = 0.004;
    // Every gradient goes out, late or not.
    j.config.solo.late_gradients = j.config.majority.late_gradients = "accumulate";
    j.config.quorum.late_gradients = "accumulate";
    set_imbalance(j.config, "random");
    const auto run = run_probed(j, &ops);
    ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs)
        << algorithm << ": " << run.summary.error;
    ASSERT_TRUE(run.probe->all_stopped());
    EXPECT_GT(run.summary.rounds_in_backward, 0u) << algorithm << ": no round read a running step";
    EXPECT_GT(late_steps(run), 0u) << algorithm;
    const auto kept = conservation_of(run, run.probe->computed());
    EXPECT_LT(kept.gap, 1e-5 * kept.computed)
        << algorithm << ": |applied * P + unsent - computed| = " << kept.gap << " of "
        << kept.computed;
    const auto& fingerprints = run.probe->fingerprints();
    for (std::size_t w = 1; w < 4; ++w) {
      EXPECT_EQ(run.probe->applied()[w], run.probe->applied()[0]) << algorithm << " worker " << w;
      EXPECT_EQ(fingerprints[w], fingerprints[0]) << algorithm << " worker " << w;
      EXPECT_EQ(run.final_parameters[w], run.final_parameters[0]) << algorithm << " worker " << w;
    }
  }
}

// A step the injected imbalance delays is not announced under a partial algorithm (only reported
// when it ends): a round it started early would wait out its delay, and hold the fast worker,
// whose fresh gradient that round took, for as long. With worker 0 thirty times slower, solo
// with buckets still lets worker 1 step on.
TEST(partial_collectives, with_gradient_buckets_solo_does_not_wait_for_a_delayed_step) {
  const herd::testing::slow_backward_ops ops(std::chrono::milliseconds(1));
  auto j = make_job("solo", 2, 40);
  j.config.model.hidden = {64};
  j.config.comm.bucket_mb = 0.004;
  set_imbalance(j.config, "persistent"); // worker 0 alone
  j.config.imbalance.factor = 30.0;
  j.config.solo.sync_every = 0; // no full rounds, which wait for everyone
  const auto run = run_probed(j, &ops);
  ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << run.summary.error;
  const auto slow = run.summary.per_worker[0].steps;
  const auto fast = run.summary.per_worker[1].steps;
  EXPECT_GT(run.summary.rounds_in_backward, 0u);
  EXPECT_GE(fast, 4 * slow) << "worker 1 made " << fast << " steps, worker 0 " << slow;
}

TEST(partial_collectives, majority_rounds_carry_at_least_half_fresh_gradients) {
  for (int workers : {3, 4, 8}) {
    auto j = make_job("majority", workers, 30);
    set_imbalance(j.config, "random");
    const auto run = run_probed(j);
    ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << run.summary.error;
    const auto half = static_cast<std::uint64_t>((workers + 1) / 2);
    EXPECT_GE(run.summary.fresh_contributions, run.summary.rounds * half) << "P=" << workers;
    EXPECT_GT(run.summary.partial_rounds, 0u);
  }
}

TEST(partial_collectives, quorum_of_one_gives_the_same_parameters_as_sync_bit_for_bit) {
  auto sync = make_job("sync", 4, 30);
  auto quorum = make_job("quorum", 4, 30);
  quorum.config.quorum.fraction = 1.0;
  set_imbalance(sync.config, "random");
  set_imbalance(quorum.config, "random");
  const auto with_sync = run_probed(sync);
  const auto with_quorum = run_probed(quorum);
  ASSERT_EQ(with_sync.summary.stop_reason, stop_cause::epochs) << with_sync.summary.error;
  ASSERT_EQ(with_quorum.summary.stop_reason, stop_cause::epochs) << with_quorum.summary.error;
  EXPECT_EQ(with_quorum.summary.rounds, with_sync.summary.rounds);
  EXPECT_EQ(with_quorum.summary.full_sync_rounds, with_quorum.summary.rounds);
  ASSERT_FALSE(with_sync.final_parameters[0].empty());
  EXPECT_EQ(with_quorum.final_parameters[0], with_sync.final_parameters[0]);
}

TEST(partial_collectives, discard_drops_late_gradients_instead_of_sending_them) {
  const auto run = run_with_late_gradients("solo", 4, "discard");
  EXPECT_GT(late_steps(run), 0u);
  EXPECT_EQ(run.summary.stale_contributions, 0u);
  // Discarded gradients are neither applied nor held: applied * P + unsent falls short.
  const auto kept = conservation_of(run, run.probe->computed());
  EXPECT_GT(kept.gap, 1e-3 * kept.computed);
}

// Runs preduce and checks what every run must show: each group's members leave it with one
// model (the same weighted average), groups have at least two and at most group-size members
// (the global averages all), and every step's samples reach exactly one group, but for the
// steps still waiting when the epoch ran out.
void expect_preduce_groups_consistent(const probed_run& run, const job& j,
                                      const std::string& label) {
  const int workers = j.config.train.workers;
  ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << label << ": " << run.summary.error;
  std::map<std::uint64_t, std::vector<std::pair<int, std::uint64_t>>> rounds; // round: (w, hash)
  for (int w = 0; w < workers; ++w)
    for (const auto& [round, hash] : run.probe->fingerprints()[static_cast<std::size_t>(w)])
      rounds[round].emplace_back(w, hash);
  ASSERT_EQ(rounds.size(), run.summary.rounds) << label;
  std::uint64_t everyone = 0;
  std::set<int> took_part;
  for (const auto& [round, members] : rounds) {
    for (const auto& [worker, hash] : members) {
      took_part.insert(worker);
      ASSERT_EQ(hash, members.front().second)
          << label << ": worker " << worker << " left round " << round
          << " with another model than worker " << members.front().first;
    }
    if (members.size() == static_cast<std::size_t>(workers))
      ++everyone;
    if (workers > 1) {
      ASSERT_GE(members.size(), 2u) << label << ": round " << round;
    }
    if (members.size() != static_cast<std::size_t>(workers)) {
      ASSERT_LE(members.size(), static_cast<std::size_t>(j.config.preduce.group_size))
          << label << ": round " << round;
    }
  }
  EXPECT_EQ(took_part.size(), static_cast<std::size_t>(workers)) << label;
  if (workers > j.config.preduce.group_size) {
    EXPECT_EQ(everyone, run.summary.full_sync_rounds) << label;
  }
  std::uint64_t computed = 0;
  for (const auto& worker : run.summary.per_worker)
    computed += worker.samples;
  EXPECT_LE(run.summary.samples, computed) << label;
  EXPECT_GE(run.summary.samples + static_cast<std::uint64_t>(workers * batch), computed) << label;
  EXPECT_EQ(run.summary.stale_contributions + run.summary.empty_contributions, 0u) << label;
}

TEST(preduce_runs, every_group_leaves_its_members_with_one_model_under_every_imbalance) {
  for (const char* kind : {"none", "random", "persistent"}) {
    for (int workers : {1, 2, 3, 4, 7}) {
      auto j = make_job("preduce", workers, 30);
      set_imbalance(j.config, kind);
      j.config.preduce.group_size = 3;
      j.config.preduce.staleness_decay = 0.3;
      j.config.preduce.connect_every = 4;
      const std::string label =
          std::string("preduce imbalance=") + kind + " P=" + std::to_string(workers);
      const auto run = run_probed(j);
      expect_preduce_groups_consistent(run, j, label);
      EXPECT_EQ(run.summary.full_sync_rounds, 0u) << label; // sync-every = 0: groups only
    }
  }
}

TEST(preduce_runs, a_global_average_every_sync_every_groups_makes_the_replicas_one_model) {
  auto j = make_job("preduce", 6, 40);
  set_imbalance(j.config, "persistent");
  j.config.preduce.group_size = 2;
  j.config.preduce.sync_every = 5;
  const auto run = run_probed(j);
  expect_preduce_groups_consistent(run, j, "preduce sync-every=5");
  ASSERT_GT(run.summary.full_sync_rounds, 0u);
  // Five partial groups before each global average; the run may end between them.
  EXPECT_GE(run.summary.partial_rounds, 5 * run.summary.full_sync_rounds);
  EXPECT_LE(run.summary.partial_rounds, 5 * (run.summary.full_sync_rounds + 1));
}

// Groups per round (rounds with every worker are the global averages under wagma), each member
// with its fingerprint afterwards and whether it took the result itself.
struct wagma_round {
  std::vector<int> members;
  std::vector<std::uint64_t> hashes;
  std::vector<bool> took_result;
};

std::map<std::uint64_t, wagma_round> rounds_of(const probed_run& run, int workers) {
  std::map<std::uint64_t, wagma_round> rounds;
  for (int w = 0; w < workers; ++w) {
    const auto index = static_cast<std::size_t>(w);
    for (const auto& [round, hash] : run.probe->fingerprints()[index]) {
      auto& entry = rounds[round];
      entry.members.push_back(w);
      entry.hashes.push_back(hash);
      entry.took_result.push_back(run.probe->took_result()[index].at(round));
    }
  }
  return rounds;
}

TEST(wagma_runs, on_time_members_take_the_average_late_ones_blend_and_global_averages_unite) {
  for (const char* kind : {"none", "random", "persistent"}) {
    for (int workers : {1, 2, 3, 4, 7, 8}) {
      auto j = make_job("wagma", workers, 30);
      set_imbalance(j.config, kind);
      j.config.wagma.sync_every = 4;
      j.config.wagma.blend = "herd"; // on time: the group's average itself
      const std::string label =
          std::string("wagma imbalance=") + kind + " P=" + std::to_string(workers);
      const auto run = run_probed(j);
      ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << label << ": " << run.summary.error;
      const auto rounds = rounds_of(run, workers);
      // A late member blends when its step finishes; a worker stopped before that (at the end of
      // the run) never applies the round, so a round of late members only can go unapplied.
      ASSERT_LE(rounds.size(), run.summary.rounds) << label;
      ASSERT_GE(rounds.size() + 2 * static_cast<std::uint64_t>(workers), run.summary.rounds)
          << label;
      const int group_size = herd::policy::butterfly_schedule::default_group_size(workers);
      std::uint64_t everyone = 0, blends = 0;
      for (const auto& [round, entry] : rounds) {
        const bool global = entry.members.size() == static_cast<std::size_t>(workers);
        if (global) {
          ++everyone;
        } else {
          ASSERT_LE(entry.members.size(), static_cast<std::size_t>(group_size)) << label;
        }
        std::optional<std::uint64_t> on_time_hash;
        for (std::size_t i = 0; i < entry.members.size(); ++i) {
          if (!entry.took_result[i]) {
            ++blends;
            continue;
          }
          // Every on-time member holds the same model: the group's average.
          if (on_time_hash) {
            ASSERT_EQ(entry.hashes[i], *on_time_hash) << label << " round " << round;
          }
          on_time_hash = entry.hashes[i];
        }
      }
      // A global average is blocking: nobody blends it, so the replicas are one model.
      std::uint64_t late = 0;
      for (const auto& worker : run.summary.per_worker)
        late += worker.late_steps;
      EXPECT_LE(blends, late) << label;
      EXPECT_GE(blends + static_cast<std::uint64_t>(workers), late) << label;
      if (workers > group_size) {
        EXPECT_EQ(everyone, run.summary.full_sync_rounds) << label;
        EXPECT_GT(run.summary.full_sync_rounds, 0u) << label;
      }
    }
  }
}

TEST(wagma_runs, global_averages_leave_every_replica_with_the_same_model) {
  auto j = make_job("wagma", 8, 40);
  set_imbalance(j.config, "random");
  j.config.wagma.sync_every = 5;
  j.config.wagma.group_size = 4; // not the default (2 at P = 8): the groups show it
  const auto run = run_probed(j);
  ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << run.summary.error;
  std::uint64_t globals = 0;
  for (const auto& [round, entry] : rounds_of(run, 8)) {
    if (entry.members.size() != 8u) {
      EXPECT_EQ(entry.members.size(), 4u) << "round " << round << ": a group of wagma.group-size";
      continue;
    }
    ++globals;
    for (std::size_t i = 0; i < entry.members.size(); ++i) {
      EXPECT_TRUE(entry.took_result[i]) << "round " << round << " worker " << entry.members[i];
      EXPECT_EQ(entry.hashes[i], entry.hashes[0]) << "round " << round;
    }
  }
  EXPECT_EQ(globals, run.summary.full_sync_rounds);
  EXPECT_GE(globals, 40u / 5u - 1u) << "a global average every 5 of about 40 steps";
}

// S = P with a global average every step is synchronous model averaging: with momentum kept
// per worker and everything linear, the mean of P models each stepped on its own gradient is
// sync's step on the mean gradient, so the two end at the same parameters up to rounding.
TEST(wagma_runs, one_group_of_everyone_every_step_is_synchronous_model_averaging) {
  auto sync = make_job("sync", 4, 30);
  auto wagma = make_job("wagma", 4, 30);
  wagma.config.wagma.group_size = 4;
  wagma.config.wagma.sync_every = 1;
  const auto with_sync = run_probed(sync);
  const auto with_wagma = run_probed(wagma);
  ASSERT_EQ(with_sync.summary.stop_reason, stop_cause::epochs) << with_sync.summary.error;
  ASSERT_EQ(with_wagma.summary.stop_reason, stop_cause::epochs) << with_wagma.summary.error;
  EXPECT_EQ(with_wagma.summary.rounds, with_sync.summary.rounds);
  EXPECT_EQ(with_wagma.summary.full_sync_rounds, with_wagma.summary.rounds);
  for (const auto& [round, entry] : rounds_of(with_wagma, 4)) {
    ASSERT_EQ(entry.members.size(), 4u) << "round " << round;
    for (std::size_t i = 0; i < 4; ++i)
      EXPECT_EQ(entry.hashes[i], entry.hashes[0]) << "round " << round;
  }
  // After its last round: a worker's model then takes a last local step that no round averages.
  const auto& expected = with_sync.final_parameters[0];
  const auto& got = with_wagma.probe->last_applied()[0];
  ASSERT_EQ(got.size(), expected.size());
  double difference = 0.0, magnitude = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    difference += std::pow(static_cast<double>(got[i]) - expected[i], 2.0);
    magnitude += std::pow(static_cast<double>(expected[i]), 2.0);
  }
  EXPECT_LT(std::sqrt(difference), 1e-4 * std::sqrt(magnitude));
  for (int w = 1; w < 4; ++w)
    EXPECT_EQ(with_wagma.probe->last_applied()[static_cast<std::size_t>(w)], got);
}

TEST(partial_collectives, the_summary_compares_waiting_with_a_barrier) {
  // Under sync with worker 1 forty times slower, the other workers really wait for it, and the
  // slow worker is the one a barrier never makes wait.
  auto sync = make_job("sync", 4, 40);
  sync.config.imbalance.kind = "persistent";
  sync.config.imbalance.workers = {1};
  sync.config.imbalance.factor = 40.0;
  sync.config.model.hidden = {256, 256}; // steps of about 0.1 ms, 4 ms for the slow worker
  const auto with_sync = run_probed(sync).summary;
  ASSERT_EQ(with_sync.stop_reason, stop_cause::epochs) << with_sync.error;
  EXPECT_GT(with_sync.waiting.steps_compared, 30u);
  EXPECT_GT(with_sync.waiting.waited_seconds, 0.5 * with_sync.waiting.barrier_seconds);
  for (const auto& worker : with_sync.per_worker) {
    if (worker.worker != 1) {
      EXPECT_GT(worker.barrier_wait_seconds, 10.0 * with_sync.per_worker[1].barrier_wait_seconds);
    }
  }
  // Under solo, with one worker in four delayed 5 ms each step, the others go on: they are idle
  // for a small part of what a barrier would impose (round latency only).
  auto solo = make_job("solo", 4, 40);
  solo.config.solo.sync_every = 0; // no full synchronous rounds: they wait like a barrier
  solo.config.imbalance.kind = "random";
  solo.config.imbalance.k = 1;
  solo.config.imbalance.delay_ms = 5.0;
  const auto with_solo = run_probed(solo).summary;
  ASSERT_EQ(with_solo.stop_reason, stop_cause::epochs) << with_solo.error;
  // Enough step numbers to compare (40 rounds; under a heavy load the delayed worker finished 19).
  EXPECT_GT(with_solo.waiting.steps_compared, 10u);
  EXPECT_GT(with_solo.waiting.barrier_seconds, 0.0);
  EXPECT_LT(with_solo.waiting.waited_seconds, 0.3 * with_solo.waiting.barrier_seconds);
}

} // namespace
