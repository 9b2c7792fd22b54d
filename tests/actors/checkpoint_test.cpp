// Checkpoints of runs in one process: a run resumed from one goes on as if it had never stopped
// (bit for bit under sync), the partial algorithms resume and learn, and a checkpoint that does
// not fit the run is refused by name.
#include "actors/checkpoint_state.hpp"
#include "actors/checkpoint_taker.hpp"
#include "actors/checkpoint_writer.hpp"
#include "actors/train_session.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>

#include "checkpoint/format.hpp"
#include "policy/policy.hpp"
#include "support/delegating_ops.hpp"
#include "support/failing_backward_ops.hpp"
#include "support/separate_memory_ops.hpp"
#include "support/session_config.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::actors::stop_cause;
using herd::actors::train_session;
using herd::config::run_config;
using herd::testing::temp_directory;
using ::testing::HasSubstr;

constexpr int features = 24;
constexpr int classes = 5;

std::shared_ptr<const herd::models::train_test_split> synthetic(std::size_t train_samples) {
  return std::make_shared<herd::models::train_test_split>(
      herd::models::make_synthetic_split(train_samples, 500, features, classes, 7));
}

struct finished_run {
  herd::actors::run_summary summary;
  std::vector<std::vector<float>> parameters;
};

finished_run run(const run_config& config,
                 const std::shared_ptr<const herd::models::train_test_split>& data,
                 std::shared_ptr<const herd::actors::run_checkpoint> resume = nullptr,
                 const herd::kernels::ops* ops = nullptr) {
  auto options = herd::testing::quick_session_options();
  options.resume = std::move(resume);
  if (ops != nullptr)
    options.ops = ops;
  train_session session(config, data, options);
  finished_run done;
  done.summary = session.run();
  done.parameters = session.final_parameters();
  return done;
}

std::shared_ptr<const herd::actors::run_checkpoint> load(const run_config& config,
                                                         const herd::models::train_test_split& data,
                                                         const std::string& path) {
  return herd::actors::load_checkpoint(config, data, path).state;
}

// 4 workers x batch 8, 20 rounds an epoch.
run_config sync_config() {
  auto config = herd::testing::small_session_config(4, 8);
  config.train.epochs = 2;
  return config;
}

// One epoch of the sync run, its checkpoints in `directory`: its settings, once it has ended.
run_config
one_checkpointed_epoch(const std::string& directory,
                       const std::shared_ptr<const herd::models::train_test_split>& data) {
  auto config = sync_config();
  config.train.epochs = 1;
  config.checkpoint.dir = directory;
  run(config, data);
  return config;
}

void expect_bitwise_equal(const std::vector<std::vector<float>>& a,
                          const std::vector<std::vector<float>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t w = 0; w < a.size(); ++w) {
    ASSERT_EQ(a[w].size(), b[w].size()) << "worker " << w;
    ASSERT_FALSE(a[w].empty()) << "worker " << w;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < a[w].size(); ++i)
      differ += a[w][i] != b[w][i] ? 1 : 0;
    EXPECT_EQ(differ, 0u) << "worker " << w << ": " << differ << " of " << a[w].size()
                          << " parameters differ";
  }
}

// Under sync the local plane sums the members in rank order: a run of 2 epochs and one of 1 epoch,
// stopped (its final checkpoint) and resumed for the second, end with the same bits. `adjust`
// changes the runs' settings; the final parameters go to `parameters` where given.
void expect_second_epoch_resumed_bit_for_bit(
    const std::function<void(run_config&)>& adjust = [](run_config&) {},
    std::vector<std::vector<float>>* parameters = nullptr) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  auto two_epochs = sync_config();
  adjust(two_epochs);
  const auto straight = run(two_epochs, data);
  ASSERT_EQ(straight.summary.stop_reason, stop_cause::epochs) << straight.summary.error;
  ASSERT_EQ(straight.summary.rounds, 40u);

  temp_directory dir;
  auto first = two_epochs;
  first.train.epochs = 1;
  first.checkpoint.dir = dir.file("ckpt");
  first.checkpoint.every_seconds = 0;
  const auto half = run(first, data);
  ASSERT_EQ(half.summary.stop_reason, stop_cause::epochs) << half.summary.error;
  ASSERT_EQ(herd::checkpoint::list(first.checkpoint.dir).size(), 1u);

  auto second = two_epochs;
  second.checkpoint = first.checkpoint;
  const auto state = load(second, *data, first.checkpoint.dir);
  EXPECT_EQ(state->coordinator.counters.rounds, 20u);
  const auto resumed = run(second, data, state);
  ASSERT_EQ(resumed.summary.stop_reason, stop_cause::epochs) << resumed.summary.error;
  EXPECT_EQ(resumed.summary.rounds, 40u); // the summary counts the whole run
  EXPECT_EQ(resumed.summary.steps, straight.summary.steps);
  EXPECT_DOUBLE_EQ(resumed.summary.epochs, straight.summary.epochs);
  expect_bitwise_equal(resumed.parameters, straight.parameters);
  if (parameters != nullptr)
    *parameters = straight.parameters;
}

TEST(checkpoint, sync_resumed_for_the_second_epoch_matches_two_epochs_bit_for_bit) {
  expect_second_epoch_resumed_bit_for_bit();
}

// Dropout's masks are drawn from the count of a replica's passes: a resumed worker draws on from
// its steps, not from the first epoch's masks again.
TEST(checkpoint, sync_resumed_with_dropout_matches_bit_for_bit) {
  expect_second_epoch_resumed_bit_for_bit([](run_config& config) {
    config.model.hidden = herd::config::model_section{}.hidden;
    config.model.layers = "dense 16, relu, dropout 0.3, dense 5";
  });
}

// The resumed coordinator begins its rounds at the epochs the checkpoint counted, so every round
// takes the schedule's factor the uninterrupted run gave it (a schedule whose shape does not
// depend on train.epochs, which the two runs set differently); the schedule changed the run.
TEST(checkpoint, sync_resumed_under_a_learning_rate_schedule_matches_bit_for_bit) {
  std::vector<std::vector<float>> scheduled;
  expect_second_epoch_resumed_bit_for_bit(
      [](run_config& config) {
        config.train.lr_schedule = "step";
        config.train.lr_decay = 0.5;
        config.train.lr_decay_epochs = 0.3;
        config.train.lr_warmup_epochs = 0.5;
      },
      &scheduled);
  ASSERT_FALSE(scheduled.empty());
  EXPECT_NE(scheduled, run(sync_config(), synthetic(std::size_t{4} * 8 * 20)).parameters);
}

// AdamW's moments and its step count (the bias corrections) come back with each worker; the runs
// did use AdamW (twice the parameters of state).
TEST(checkpoint, sync_resumed_under_adamw_matches_bit_for_bit) {
  const auto adamw = [](run_config& config) {
    config.train.optimizer = "adamw";
    config.train.lr = 0.005;
    config.train.weight_decay = 0.01;
  };
  expect_second_epoch_resumed_bit_for_bit(adamw);
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  auto config = sync_config();
  adamw(config);
  config.checkpoint.dir = dir.file("ckpt");
  ASSERT_EQ(run(config, data).summary.stop_reason, stop_cause::epochs);
  const auto state = load(config, *data, config.checkpoint.dir);
  ASSERT_FALSE(state->workers.empty());
  EXPECT_EQ(state->workers[0].velocity.size(), 2 * state->workers[0].parameters.size());
}

// The workers hold their optimizer's state: a run of the other optimizer cannot go on from it.
TEST(checkpoint, resuming_under_another_optimizer_is_refused_naming_it) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  auto first = sync_config();
  first.checkpoint.dir = dir.file("ckpt");
  const auto done = run(first, data);
  ASSERT_EQ(done.summary.stop_reason, stop_cause::epochs) << done.summary.error;
  auto other = first;
  other.train.optimizer = "adamw";
  try {
    herd::actors::load_checkpoint(other, *data, first.checkpoint.dir);
    ADD_FAILURE() << "a checkpoint of SGD's workers resumed under adamw";
  } catch (const herd::checkpoint::checkpoint_error& refused) {
    EXPECT_NE(
        std::string(refused.what()).find("train.optimizer: the checkpoint has sgd, this run adamw"),
        std::string::npos)
        << refused.what();
  }
}

// A run's best evaluation and its target were measured on one set: a run that would evaluate on
// another (validation files added or dropped, a split of the caller's with a validation set of its
// own, a validation set of another size) cannot go on from them. The data given is what counts,
// not only the keys that name it.
TEST(checkpoint, resuming_with_another_evaluation_set_is_refused_naming_the_key) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  auto with_validation_set = std::make_shared<herd::models::train_test_split>(*data);
  with_validation_set->validation = with_validation_set->test; // as the files would give it
  temp_directory dir;
  auto first = sync_config();
  first.checkpoint.dir = dir.file("ckpt");
  first.data.dataset = "npy"; // files named, the samples given
  first.data.train_features = "x.npy";
  first.data.train_labels = "y.npy";
  first.data.test_features = "t_x.npy";
  first.data.test_labels = "t_y.npy";
  ASSERT_EQ(run(first, data).summary.stop_reason, stop_cause::epochs);
  const auto refusal = [](const run_config& now, const herd::models::train_test_split& given,
                          const std::string& directory) -> std::string {
    try {
      herd::actors::load_checkpoint(now, given, directory);
    } catch (const herd::checkpoint::checkpoint_error& refused) {
      return refused.what();
    }
    return "(resumed)";
  };
  auto with_files = first;
  with_files.data.validation_features = "v_x.npy";
  with_files.data.validation_labels = "v_y.npy";
  EXPECT_THAT(refusal(with_files, *with_validation_set, first.checkpoint.dir),
              HasSubstr("whose evaluations measured the test set, and this run's would measure a "
                        "validation set (data.validation-features)"));
  // A caller's split with a validation set, and no key naming it.
  EXPECT_THAT(refusal(first, *with_validation_set, first.checkpoint.dir),
              HasSubstr("would measure a validation set (the data's validation set)"));
  EXPECT_EQ(refusal(first, *data, first.checkpoint.dir), "(resumed)");

  // The other way: a checkpoint of a run with validation files, resumed without them.
  temp_directory other_dir;
  auto validated = with_files;
  validated.checkpoint.dir = other_dir.file("ckpt");
  const auto validated_run = run(validated, with_validation_set);
  ASSERT_EQ(validated_run.summary.stop_reason, stop_cause::epochs);
  ASSERT_EQ(validated_run.summary.validation_samples, data->test.size());
  auto without = validated;
  without.data.validation_features.clear();
  without.data.validation_labels.clear();
  EXPECT_THAT(refusal(without, *data, validated.checkpoint.dir),
              HasSubstr("whose evaluations measured a validation set, and this run's would "
                        "measure the test set"));
  // The keys as they were, the set of another size (another file): refused, naming both sizes.
  auto smaller = std::make_shared<herd::models::train_test_split>(*with_validation_set);
  std::vector<std::size_t> first_rows(40);
  std::iota(first_rows.begin(), first_rows.end(), std::size_t{0});
  smaller->validation = herd::models::subset(smaller->validation, first_rows);
  EXPECT_THAT(refusal(validated, *smaller, validated.checkpoint.dir),
              HasSubstr("measured a validation set of " + std::to_string(data->test.size()) +
                        " samples, and this run's has 40 (data.validation-features)"));
  EXPECT_EQ(refusal(validated, *with_validation_set, validated.checkpoint.dir), "(resumed)");
}

// Periodic checkpoints are taken while the run goes on (rounds paused, not stopped): resuming from
// one in the middle of an epoch ends where the uninterrupted run ends, and taking them changed
// nothing in the run that took them.
TEST(checkpoint, sync_resumed_from_a_periodic_checkpoint_matches_bit_for_bit) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  const auto straight = run(sync_config(), data);

  temp_directory dir;
  auto with_checkpoints = sync_config();
  with_checkpoints.checkpoint.dir = dir.file("ckpt");
  with_checkpoints.checkpoint.every_seconds = 0;
  with_checkpoints.checkpoint.every_rounds = 7;
  with_checkpoints.checkpoint.keep = 100;
  const auto taking = run(with_checkpoints, data);
  ASSERT_EQ(taking.summary.stop_reason, stop_cause::epochs) << taking.summary.error;
  expect_bitwise_equal(taking.parameters, straight.parameters);

  const auto files = herd::checkpoint::list(with_checkpoints.checkpoint.dir);
  // About every 7 rounds (a round the policy started as one was due finishes first; on a loaded
  // machine one waits for the write before it), and the final one.
  ASSERT_GE(files.size(), 2u);
  const auto state = load(with_checkpoints, *data, files[files.size() - 2]); // newest periodic
  const auto rounds = state->coordinator.counters.rounds;
  EXPECT_GE(rounds, 7u);
  EXPECT_LT(rounds, 40u);
  const auto resumed = run(sync_config(), data, state);
  ASSERT_EQ(resumed.summary.stop_reason, stop_cause::epochs) << resumed.summary.error;
  expect_bitwise_equal(resumed.parameters, straight.parameters);
}

// A checkpoint due at the round an evaluation starts waits for that evaluation: taken before it,
// the checkpoint held a run that had not recorded it, and the resumed run never evaluated that
// round (with a target accuracy, it then stopped elsewhere).
TEST(checkpoint, an_evaluation_under_way_is_recorded_before_the_checkpoint_is_taken) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  auto config = sync_config();
  config.train.eval_every = 10; // the first evaluation starts at round 10, with the checkpoint
  temp_directory dir;
  auto with_checkpoints = config;
  with_checkpoints.checkpoint.dir = dir.file("ckpt");
  with_checkpoints.checkpoint.every_seconds = 0;
  with_checkpoints.checkpoint.every_rounds = 10;
  with_checkpoints.checkpoint.keep = 100;
  const auto taking = run(with_checkpoints, data);
  ASSERT_FALSE(taking.summary.evaluations.empty());
  ASSERT_EQ(taking.summary.evaluations.front().round, 10u);
  const auto files = herd::checkpoint::list(with_checkpoints.checkpoint.dir);
  ASSERT_GE(files.size(), 2u);
  const auto state = load(with_checkpoints, *data, files[0]);
  ASSERT_EQ(state->coordinator.counters.rounds, 10u);
  const auto& saved = state->coordinator.evaluations.evaluations();
  ASSERT_EQ(saved.size(), 1u) << "the checkpoint of round 10 lacks the evaluation of round 10";
  EXPECT_EQ(saved.front().round, 10u);
  EXPECT_EQ(saved.front().test_accuracy, taking.summary.evaluations.front().test_accuracy);
  // The resumed run has it (restored), and goes on evaluating from there.
  const auto resumed = run(config, data, state);
  ASSERT_GE(resumed.summary.evaluations.size(), 2u);
  EXPECT_EQ(resumed.summary.evaluations.front().round, 10u);
  EXPECT_GT(resumed.summary.evaluations.back().round, 10u);
}

// A run that train.max-seconds stops while a periodic checkpoint waits for an evaluation writes one
// checkpoint of its last state, the final one: not the periodic one as well, which would take one
// of checkpoint.keep's places with a copy and push an older one out.
TEST(checkpoint, a_stop_while_a_periodic_checkpoint_waits_writes_one_final_checkpoint) {
  struct final_notices final : herd::actors::run_observer {
    std::mutex mutex;
    std::vector<std::string> written;
    void on_notice(std::string_view text) override {
      std::lock_guard lock(mutex);
      if (text.find("checkpoint /") != std::string::npos)
        written.emplace_back(text);
    }
  };
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  auto config = sync_config(); // 40 rounds
  config.train.eval_every = 20;
  temp_directory dir;
  config.checkpoint.dir = dir.file("ckpt");
  config.checkpoint.every_seconds = 0;
  config.checkpoint.every_rounds = 20;
  config.checkpoint.keep = 2;
  config.train.max_seconds = 2.0;
  // The first evaluation (round 20, which the checkpoint due then waits for) lasts until
  // train.max-seconds has passed: the stop comes while the periodic checkpoint waits.
  struct slow_evaluation final : herd::testing::delegating_ops {
    std::chrono::steady_clock::time_point until;
    mutable std::once_flag once;
    std::size_t count_correct(const float* scores, const std::int32_t* labels, int rows,
                              int columns) const override {
      std::call_once(once, [this] { std::this_thread::sleep_until(until); });
      return delegating_ops::count_correct(scores, labels, rows, columns);
    }
  };
  final_notices notices;
  slow_evaluation ops;
  // Past train.max-seconds (2 s of run time) however long the session takes to start.
  ops.until = std::chrono::steady_clock::now() + std::chrono::milliseconds(4000);
  auto options = herd::testing::quick_session_options();
  options.observer = &notices;
  options.ops = &ops;
  train_session session(config, data, options);
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::max_seconds);
  ASSERT_EQ(summary.rounds, 20u);
  const auto files = herd::checkpoint::list(config.checkpoint.dir);
  ASSERT_EQ(notices.written.size(), 1u) << testing::PrintToString(notices.written);
  EXPECT_THAT(notices.written[0], HasSubstr("final checkpoint"));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(load(config, *data, files[0])->coordinator.counters.rounds, 20u);
  EXPECT_EQ(summary.final_checkpoint, files[0]) << "the summary names the file it ended with";
}

// The partial algorithms keep more state (stale gradients, queues, blends in flight): resumed
// from the middle of a run, they go on and reach the accuracy a run of theirs reaches.
TEST(checkpoint, partial_algorithms_resume_and_reach_their_target) {
  const auto data = synthetic(std::size_t{4} * 8 * 40);
  for (const char* algorithm : {"solo", "preduce", "wagma"}) {
    temp_directory dir;
    auto config = herd::testing::small_session_config(4, 8);
    config.train.algorithm = algorithm;
    config.imbalance.kind = "random"; // stragglers: late steps, partial groups, blends
    config.imbalance.k = 1;
    config.imbalance.delay_ms = 2;
    config.checkpoint.dir = dir.file("ckpt");
    config.checkpoint.every_seconds = 0;
    config.checkpoint.every_rounds = 15;
    config.checkpoint.keep = 100;
    const auto first = run(config, data);
    ASSERT_EQ(first.summary.stop_reason, stop_cause::epochs)
        << algorithm << ": " << first.summary.error;
    const auto files = herd::checkpoint::list(config.checkpoint.dir);
    ASSERT_GE(files.size(), 2u) << algorithm;
    // From the middle of the run: its newest periodic checkpoint (one waits for the write before
    // it on a loaded machine, so there may be few).
    const auto state = load(config, *data, files[files.size() - 2]);
    const auto rounds = state->coordinator.counters.rounds;
    const auto steps = state->coordinator.counters.steps;

    config.train.epochs = 4;
    config.train.target_accuracy = 0.6;
    config.train.eval_every = 10;
    const auto resumed = run(config, data, state);
    ASSERT_NE(resumed.summary.stop_reason, stop_cause::error)
        << algorithm << ": " << resumed.summary.error;
    EXPECT_GT(resumed.summary.rounds, rounds) << algorithm;
    EXPECT_GT(resumed.summary.steps, steps) << algorithm;
    EXPECT_TRUE(resumed.summary.time_to_target_seconds.has_value())
        << algorithm << " did not reach 0.6; final accuracy "
        << resumed.summary.final_test_accuracy.value_or(-1);
  }
}

// Every algorithm's workers come back with exactly the parameters they were saved with: resumed
// from the final checkpoint with no epoch left to train, a run ends at once where it was.
TEST(checkpoint, every_algorithm_resumes_with_the_saved_parameters) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  for (const char* algorithm : {"sync", "solo", "preduce", "wagma"}) {
    temp_directory dir;
    auto config = herd::testing::small_session_config(4, 8);
    config.train.algorithm = algorithm;
    config.checkpoint.dir = dir.file("ckpt");
    config.checkpoint.every_seconds = 0;
    const auto first = run(config, data);
    ASSERT_EQ(first.summary.stop_reason, stop_cause::epochs)
        << algorithm << ": " << first.summary.error;
    const auto state = load(config, *data, config.checkpoint.dir);
    const auto again = run(config, data, state);
    ASSERT_EQ(again.summary.stop_reason, stop_cause::epochs)
        << algorithm << ": " << again.summary.error;
    EXPECT_EQ(again.summary.rounds, first.summary.rounds) << algorithm;
    EXPECT_EQ(again.summary.steps, first.summary.steps) << algorithm;
    ASSERT_EQ(again.summary.evaluations.size(), 1u) << algorithm; // its own final evaluation
    EXPECT_EQ(again.summary.final_test_accuracy, first.summary.final_test_accuracy) << algorithm;
    expect_bitwise_equal(again.parameters, first.parameters);
  }
}

// A run that stops at its target keeps the parameters that reached it: the final checkpoint holds
// them beside the workers' last state, and they score exactly the accuracy that stopped the run.
TEST(checkpoint, a_run_stopped_at_its_target_keeps_the_parameters_that_reached_it) {
  const auto data = synthetic(std::size_t{4} * 8 * 40);
  temp_directory dir;
  auto config = herd::testing::small_session_config(4, 8);
  config.train.algorithm = "solo";
  // Room to reach the target: it stops at the first evaluation at or above 0.6 (a few epochs);
  // under a heavy load the evaluator may answer only after five epochs' rounds have run.
  config.train.epochs = 50;
  config.train.target_accuracy = 0.6;
  config.train.eval_every = 5;
  config.checkpoint.dir = dir.file("ckpt");
  config.checkpoint.every_seconds = 0;
  const auto finished = run(config, data);
  ASSERT_EQ(finished.summary.stop_reason, stop_cause::target_accuracy) << finished.summary.error;
  ASSERT_TRUE(finished.summary.final_test_accuracy.has_value());

  const auto state = load(config, *data, config.checkpoint.dir);
  const auto& evaluations = state->coordinator.evaluations;
  ASSERT_TRUE(evaluations.target_point().has_value());
  ASSERT_NE(evaluations.target_parameters(), nullptr);
  EXPECT_EQ(evaluations.target_point()->test_accuracy, *finished.summary.final_test_accuracy);
  const auto model = herd::actors::make_model(config, data->train);
  ASSERT_EQ(evaluations.target_parameters()->size(), model->parameter_count());
  const auto work = model->make_workspace();
  const auto scored = model->evaluate(
      herd::kernels::cpu_ops(), evaluations.target_parameters()->data(), data->test, 100, *work);
  EXPECT_NEAR(scored.accuracy(), evaluations.target_point()->test_accuracy, 1e-12);
  EXPECT_GE(scored.accuracy(), 0.6);
}

// Where the workers compute in memory the host cannot read (a GPU's, emulated): the states cross
// to the host and back, results still to blend in included, and a resumed sync run still matches
// an uninterrupted one bit for bit.
TEST(checkpoint, states_in_device_memory_cross_to_the_host_and_back) {
  const herd::testing::separate_memory elsewhere;
  const herd::testing::separate_memory_ops ops(elsewhere);
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  for (const char* algorithm : {"sync", "wagma"}) {
    auto config = sync_config();
    config.train.algorithm = algorithm;
    const auto straight = run(config, data, nullptr, &ops);
    ASSERT_EQ(straight.summary.stop_reason, stop_cause::epochs)
        << algorithm << ": " << straight.summary.error;
    temp_directory dir;
    auto first = config;
    first.train.epochs = 1;
    first.checkpoint.dir = dir.file("ckpt");
    first.checkpoint.every_seconds = 0;
    ASSERT_EQ(run(first, data, nullptr, &ops).summary.stop_reason, stop_cause::epochs) << algorithm;
    const auto state = load(config, *data, first.checkpoint.dir);
    const auto resumed = run(config, data, state, &ops);
    ASSERT_EQ(resumed.summary.stop_reason, stop_cause::epochs)
        << algorithm << ": " << resumed.summary.error;
    EXPECT_GT(resumed.summary.rounds, state->coordinator.counters.rounds) << algorithm;
    if (std::string(algorithm) == "sync")
      expect_bitwise_equal(resumed.parameters, straight.parameters);
  }
}

TEST(checkpoint, a_damaged_or_truncated_file_is_refused_naming_the_file_and_the_problem) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  const auto config = one_checkpointed_epoch(dir.file("ckpt"), data);
  const auto file = herd::checkpoint::resolve(config.checkpoint.dir);
  std::ostringstream file_bytes;
  file_bytes << std::ifstream(file, std::ios::binary).rdbuf();
  const std::string bytes = file_bytes.str();
  auto problem_with = [&](const std::string& contents) -> std::string {
    const auto damaged = dir.file("damaged.ckpt");
    std::ofstream(damaged, std::ios::binary | std::ios::trunc) << contents;
    try {
      load(config, *data, damaged);
    } catch (const herd::checkpoint::checkpoint_error& refused) {
      EXPECT_EQ(refused.file(), damaged);
      return refused.what();
    }
    return "accepted";
  };
  auto flipped = bytes;
  flipped[bytes.size() / 2] = static_cast<char>(flipped[bytes.size() / 2] ^ 0x40);
  EXPECT_NE(problem_with(flipped).find("checksum mismatch"), std::string::npos);
  EXPECT_NE(problem_with(bytes.substr(0, bytes.size() - 1000)).find("truncated"),
            std::string::npos);
  EXPECT_NE(problem_with("").find("not a Herd checkpoint"), std::string::npos);
  EXPECT_EQ(problem_with(bytes), "accepted");
}

TEST(checkpoint, a_run_of_another_shape_is_refused_naming_what_differs) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  const auto config = one_checkpointed_epoch(dir.file("ckpt"), data);
  auto other = config;
  other.train.workers = 2;
  other.train.algorithm = "majority";
  other.model.hidden = {32};
  other.train.epochs = 3; // a resume may change it: not among the settings that differ
  try {
    load(other, *data, config.checkpoint.dir);
    FAIL() << "a checkpoint of another shape was accepted";
  } catch (const herd::checkpoint::checkpoint_error& refused) {
    const std::string what = refused.what();
    EXPECT_NE(what.find("train.workers: the checkpoint has 4, this run 2"), std::string::npos)
        << what;
    EXPECT_NE(what.find("train.algorithm: the checkpoint has sync, this run majority"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("the checkpoint has 24: flatten, dense 16, relu, dense 5, this run 24: "
                        "flatten, dense 32, relu, dense 5"),
              std::string::npos)
        << what;
    // The settings behind the difference are named too.
    EXPECT_NE(what.find("; the settings that differ: "), std::string::npos) << what;
    EXPECT_NE(what.find("model.hidden: [16] in the checkpoint, [32] now"), std::string::npos)
        << what;
    EXPECT_EQ(what.find("train.epochs"), std::string::npos) << what;
    // Those the shape's difference names already are not said twice.
    EXPECT_EQ(what.find("train.workers: 4 in the checkpoint"), std::string::npos) << what;
    EXPECT_EQ(what.find("train.algorithm: sync in the checkpoint"), std::string::npos) << what;
  }
  // Learning rate, epochs and target are not its shape: they may change, and are named.
  auto changed = config;
  changed.train.lr = 0.02;
  changed.train.epochs = 5;
  changed.cluster.min_nodes = 3; // not used by a resumed run: not named
  // The same directory written another way is no change; another directory is.
  const std::filesystem::path saved_dir(config.checkpoint.dir);
  changed.checkpoint.dir = (saved_dir.parent_path() / "." / saved_dir.filename()).string() + "/";
  const auto state = load(changed, *data, config.checkpoint.dir);
  const auto lines = herd::actors::changed_settings(state->settings, changed);
  ASSERT_EQ(lines.size(), 2u) << testing::PrintToString(lines);
  EXPECT_EQ(lines[0], "train.epochs: 1 in the checkpoint, 5 now");
  EXPECT_EQ(lines[1], "train.lr: 0.05 in the checkpoint, 0.02 now");
  changed.checkpoint.dir = saved_dir.string() + "-elsewhere";
  EXPECT_THAT(herd::actors::changed_settings(state->settings, changed),
              testing::Contains(HasSubstr("checkpoint.dir: ")));
}

// A cluster's checkpoint keeps the workers' states in its nodes' parts. Made here from a run in
// one process, split the way a cluster's nodes would write it: the coordinator's file names each
// worker in exactly one part, each part is checked against the hash the file names, and herd
// train refuses it (no nodes hold its workers there).
TEST(checkpoint, a_cluster_checkpoint_names_each_worker_in_one_part_whose_hash_it_checks) {
  namespace ckpt = herd::checkpoint;
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  const auto config = one_checkpointed_epoch(dir.file("one-process"), data);
  const auto whole = ckpt::read_file(ckpt::resolve(config.checkpoint.dir));
  const auto state = herd::actors::decode_payload(whole.payload, "whole");
  const std::string parts_dir = dir.file("parts");
  const std::string stem = "herd-000000000000001-000000000020";
  // Node 0 holds workers 0 and 2, node 1 workers 1 and 3.
  auto manifest = state;
  manifest.workers.clear();
  for (int node : {0, 1}) {
    std::vector<herd::actors::worker_record> held{state.workers[node], state.workers[node + 2]};
    const auto payload = herd::actors::encode_part(held);
    herd::actors::part_record part;
    part.node = node;
    part.workers = {node, node + 2};
    part.file = ckpt::part_name(stem, node);
    part.payload_hash = ckpt::fnv1a64(payload);
    ckpt::write_atomically(parts_dir, part.file, ckpt::encode(whole.head, payload));
    manifest.parts.push_back(part);
  }
  auto write_manifest = [&](const herd::actors::run_checkpoint& written) {
    const auto file = dir.file("cluster/" + stem + ".ckpt");
    ckpt::write_atomically(dir.file("cluster"), stem + ".ckpt",
                           ckpt::encode(whole.head, herd::actors::encode_payload(written)));
    return file;
  };
  const auto file = write_manifest(manifest);
  const auto shape = whole.head.shape;
  const auto count = state.workers[0].parameters.size();
  const auto loaded = herd::actors::load_for_resume(file, shape, count);
  ASSERT_TRUE(loaded.across_processes());
  ASSERT_EQ(loaded.parts.size(), 2u);
  for (int node : {0, 1}) {
    const auto& part = loaded.parts[static_cast<std::size_t>(node)];
    const auto workers = herd::actors::load_part(parts_dir + "/" + part.file, part, shape, count);
    ASSERT_EQ(workers.size(), 2u);
    EXPECT_EQ(workers[1].index, node + 2);
    EXPECT_EQ(workers[1].parameters, state.workers[node + 2].parameters);
    EXPECT_EQ(workers[1].sampler.offset, state.workers[node + 2].sampler.offset);
  }
  // Another write of a part (its hash differs from the one the checkpoint names) is refused.
  auto other = loaded.parts[0];
  other.payload_hash ^= 1;
  try {
    herd::actors::load_part(parts_dir + "/" + other.file, other, shape, count);
    FAIL() << "a part of another write was accepted";
  } catch (const ckpt::checkpoint_error& refused) {
    EXPECT_NE(std::string(refused.what()).find("is not the part the checkpoint names"),
              std::string::npos)
        << refused.what();
  }
  // A worker in two parts (and so another in none) is not a whole checkpoint.
  auto twice = manifest;
  twice.parts[1].workers = {1, 2};
  const auto damaged = write_manifest(twice);
  try {
    herd::actors::load_for_resume(damaged, shape, count);
    FAIL() << "a checkpoint naming a worker twice was accepted";
  } catch (const ckpt::checkpoint_error& refused) {
    EXPECT_NE(std::string(refused.what()).find("the parts name worker 2 2 times (once is whole)"),
              std::string::npos)
        << refused.what();
  }
  write_manifest(manifest);
  try {
    load(config, *data, file);
    FAIL() << "herd train accepted a cluster's checkpoint";
  } catch (const ckpt::checkpoint_error& refused) {
    EXPECT_NE(std::string(refused.what()).find("resume it with herd coordinator --resume"),
              std::string::npos)
        << refused.what();
  }
}

// A final checkpoint that would copy the newest periodic one is not taken: the taker names the
// file that holds the run's state while the rounds, aborted rounds, steps, joins and evaluations
// are those it holds, and only once it was written.
TEST(checkpoint, the_newest_checkpoint_stands_in_for_a_final_one_only_while_it_holds_the_state) {
  temp_directory dir;
  auto taken_at = [](herd::actors::checkpoint_taker& taker, const herd::actors::run_counters& at) {
    auto state = std::make_shared<herd::actors::run_checkpoint>();
    state->coordinator.counters = at;
    taker.begin(0.0, at.rounds);
    taker.write(state, 0.01, false);
  };
  herd::actors::run_counters at;
  at.rounds = 10;
  at.steps = 40;
  auto options = std::make_shared<herd::actors::checkpoint_options>();
  options->directory = dir.file("ckpt");
  herd::actors::checkpoint_taker taker(options);
  EXPECT_EQ(taker.newest_holding(at, 0), "") << "no checkpoint yet";
  taken_at(taker, at);
  const auto newest = taker.newest_holding(at, 0);
  ASSERT_EQ(herd::checkpoint::list(options->directory).size(), 1u);
  EXPECT_EQ(newest, herd::checkpoint::list(options->directory).front());
  for (auto* counter : {&at.rounds, &at.aborted_rounds, &at.steps, &at.workers_joined}) {
    ++*counter;
    EXPECT_EQ(taker.newest_holding(at, 0), "");
    --*counter;
  }
  EXPECT_EQ(taker.newest_holding(at, 1), "") << "an evaluation since";
  EXPECT_EQ(taker.newest_holding(at, 0), newest);
  // The report the check took from the writer still comes out, once.
  EXPECT_EQ(taker.reports().size(), 1u);
  EXPECT_TRUE(taker.reports().empty());

  // A checkpoint that could not be written holds nothing.
  options = std::make_shared<herd::actors::checkpoint_options>();
  options->directory = dir.file("not-a-directory");
  std::ofstream(options->directory) << "a file";
  herd::actors::checkpoint_taker failing(options);
  taken_at(failing, at);
  EXPECT_EQ(failing.newest_holding(at, 0), "");
  const auto reports = failing.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FALSE(reports.front().error.empty());
}

// checkpoint.every-seconds counts training time: from the end of the last checkpoint's pause (here
// 4.6 s waiting for an evaluation), so that a long pause is not followed by another checkpoint at
// once. checkpoint.every-rounds counts from the rounds the last one held.
TEST(checkpoint, the_next_checkpoint_is_due_a_whole_interval_after_the_last_pause_ended) {
  temp_directory dir;
  auto options = std::make_shared<herd::actors::checkpoint_options>();
  options->directory = dir.file("ckpt");
  options->every_seconds = 5.0;
  herd::actors::checkpoint_taker taker(options);
  EXPECT_FALSE(taker.due(4.9, 0));
  ASSERT_TRUE(taker.due(5.0, 0));
  taker.begin(5.0, 100);
  EXPECT_FALSE(taker.due(20.0, 100)) << "never while holding";
  taker.release(9.6);
  EXPECT_FALSE(taker.due(10.0, 101));
  EXPECT_FALSE(taker.due(14.5, 200));
  EXPECT_TRUE(taker.due(14.6, 200));
  auto by_rounds = std::make_shared<herd::actors::checkpoint_options>();
  by_rounds->directory = dir.file("rounds");
  by_rounds->every_rounds = 50;
  herd::actors::checkpoint_taker counting(by_rounds);
  counting.begin(1.0, 50);
  counting.release(30.0);
  EXPECT_FALSE(counting.due(30.0, 99));
  EXPECT_TRUE(counting.due(30.0, 100));
}

// An interval shorter than a write (checkpoint.every-rounds = 10 with a model of a few MB) queued
// checkpoints without end: a gigabyte of states in memory within seconds, written for seconds
// after the run ended. One is written at a time; the next waits for that write, once said.
TEST(checkpoint, a_checkpoint_due_while_the_last_is_being_written_waits_for_that_write) {
  temp_directory dir;
  auto options = std::make_shared<herd::actors::checkpoint_options>();
  options->directory = dir.file("ckpt");
  options->every_rounds = 1;
  std::promise<void> written_started;
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<int> writes{0};
  options->on_written = [&](const herd::actors::checkpoint_report&) {
    if (writes++ == 0) {
      written_started.set_value();
      released.wait(); // the writer's thread stays busy with the first checkpoint
    }
  };
  herd::actors::checkpoint_taker taker(options);
  taker.begin(0.0, 1);
  taker.write(std::make_shared<herd::actors::run_checkpoint>(), 0.01, false);
  taker.release(0.01);
  written_started.get_future().wait();
  EXPECT_FALSE(taker.due(1.0, 5)) << "due while the last checkpoint is being written";
  EXPECT_TRUE(taker.first_wait_for_write(1.0, 5));
  EXPECT_FALSE(taker.first_wait_for_write(1.0, 6)) << "said once";
  release.set_value();
  taker.flush();
  EXPECT_TRUE(taker.due(1.0, 6)) << "not taken once the write ended";
  EXPECT_FALSE(taker.first_wait_for_write(1.0, 6));
}

// A write that does not return (a disk or network filesystem that stopped answering) held the
// coordinator at the run's end for good: its wait for the writer had no limit. It now waits up to
// write_limit, saying so every write_notice_every, gives up once (a later wait only looks), and
// the writer's end leaves the hung write to its thread instead of joining it.
TEST(checkpoint, a_write_that_does_not_return_is_given_up_at_the_limit_and_once) {
  temp_directory dir;
  auto options = std::make_shared<herd::actors::checkpoint_options>();
  options->directory = dir.file("ckpt");
  options->write_limit = std::chrono::milliseconds(400);
  options->write_notice_every = std::chrono::milliseconds(100);
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto writes = std::make_shared<std::atomic<int>>(0);
  options->on_written = [released, writes](const herd::actors::checkpoint_report&) {
    if ((*writes)++ == 0)
      released.wait(); // the first write "hangs" until the test lets it go
  };
  {
    herd::actors::checkpoint_taker taker(options);
    taker.begin(0.0, 1);
    taker.write(std::make_shared<herd::actors::run_checkpoint>(), 0.01, false);
    taker.release(0.01);
    std::vector<double> waited;
    EXPECT_FALSE(taker.flush([&waited](double seconds) { waited.push_back(seconds); }));
    EXPECT_TRUE(taker.write_hung());
    // Told at 0.1, 0.2 and 0.3 s; at 0.4 s it gives up instead.
    ASSERT_EQ(waited.size(), 3u);
    EXPECT_DOUBLE_EQ(waited[0], 0.1);
    EXPECT_DOUBLE_EQ(waited[2], 0.3);
    waited.clear();
    EXPECT_FALSE(taker.close([&waited](double seconds) { waited.push_back(seconds); }));
    EXPECT_TRUE(waited.empty()) << "waited a second time for a write it gave up on";
  } // the taker and its writer are gone, the write still hangs: the test is here, not stuck
  // (its file was on disk before it hung, in on_written); the left thread ends once let go.
  EXPECT_EQ(herd::checkpoint::list(options->directory).size(), 1u);
  release->set_value();
}

// Given up, and then the write returns: the next wait sees it, and the run ends well.
TEST(checkpoint, a_write_that_returns_after_the_limit_is_seen_by_the_next_wait) {
  temp_directory dir;
  auto options = std::make_shared<herd::actors::checkpoint_options>();
  options->directory = dir.file("ckpt");
  options->write_limit = std::chrono::milliseconds(100);
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<int> writes{0};
  options->on_written = [&](const herd::actors::checkpoint_report&) {
    if (writes++ == 0)
      released.wait();
  };
  herd::actors::checkpoint_taker taker(options);
  taker.begin(0.0, 1);
  taker.write(std::make_shared<herd::actors::run_checkpoint>(), 0.01, false);
  taker.release(0.01);
  EXPECT_FALSE(taker.flush());
  release.set_value();
  while (writes < 1 || !taker.flush())
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(taker.write_hung());
  EXPECT_TRUE(taker.close());
}

// The checksums catch damage, not a crafted file: model inputs no trained model has (a shape whose
// product wraps around, no classes, a deviation of 0 that made every sample "not finite") are
// refused by the checkpoint, naming it, not blamed on the user's samples later.
TEST(checkpoint, model_inputs_no_trained_model_has_are_refused_naming_the_file) {
  const auto refusal = [](const herd::actors::model_inputs& inputs) -> std::string {
    herd::actors::run_checkpoint state;
    state.inputs = inputs;
    try {
      herd::actors::decode_payload(herd::actors::encode_payload(state), "crafted.ckpt");
    } catch (const herd::checkpoint::checkpoint_error& refused) {
      return refused.what();
    }
    return "(read)";
  };
  herd::actors::model_inputs fine;
  fine.sample_shape = {1, 28, 28};
  fine.classes = 10;
  fine.mean = 0.5f;
  fine.stddev = 0.25f;
  EXPECT_EQ(refusal(fine), "(read)");
  EXPECT_EQ(refusal({}), "(read)") << "a format-5 checkpoint has no inputs";
  auto wrapping = fine;
  wrapping.sample_shape = {1, 2, (std::uint64_t{1} << 63) + 392}; // 1x2x... wraps to 784
  EXPECT_EQ(refusal(wrapping), "crafted.ckpt: payload: the model inputs hold a sample shape of "
                               "1x2x9223372036854776200 (each extent at least 1, at most "
                               "2147483648 values in all), which no trained model has");
  auto empty_extent = fine;
  empty_extent.sample_shape = {1, 0, 28};
  EXPECT_NE(refusal(empty_extent).find("a sample shape of 1x0x28"), std::string::npos);
  auto no_classes = fine;
  no_classes.classes = 0;
  EXPECT_NE(refusal(no_classes).find("classes = 0 (from 1 to 65536)"), std::string::npos);
  auto flat = fine;
  flat.stddev = 0.0f;
  EXPECT_NE(refusal(flat).find("a normalisation of mean 0.500000 and deviation 0.000000"),
            std::string::npos);
  auto endless = fine;
  endless.mean = std::numeric_limits<float>::infinity();
  EXPECT_NE(refusal(endless).find("a normalisation of mean inf"), std::string::npos);
}

// The counters keep each worker's liveness apart from its counters; a checkpoint holds both, and
// a lost worker comes back lost.
TEST(checkpoint, the_counters_come_back_with_each_workers_liveness_and_steps) {
  herd::actors::run_checkpoint state;
  auto& counters = state.coordinator.counters;
  counters = herd::actors::run_counters(3, 64);
  counters.set_workers(3);
  for (int worker = 0; worker < 3; ++worker)
    for (std::uint64_t step = 1; step <= static_cast<std::uint64_t>(worker) + 2; ++step)
      counters.step_finished(worker, step, 0.01 * step, 0.001, 1.0, 8, false);
  counters.worker_lost(1);
  const auto back = herd::actors::decode_payload(herd::actors::encode_payload(state), "x.ckpt");
  const auto& restored = back.coordinator.counters;
  ASSERT_EQ(restored.workers.size(), 3u);
  ASSERT_EQ(restored.live.size(), 3u);
  EXPECT_TRUE(restored.is_live(0));
  EXPECT_FALSE(restored.is_live(1));
  EXPECT_TRUE(restored.is_live(2));
  EXPECT_EQ(restored.live_workers(), (std::vector<int>{0, 2}));
  for (std::size_t worker = 0; worker < 3; ++worker) {
    EXPECT_EQ(restored.workers[worker].steps, worker + 2) << worker;
    EXPECT_DOUBLE_EQ(restored.workers[worker].step_seconds.total(),
                     counters.workers[worker].step_seconds.total())
        << worker;
  }
  EXPECT_EQ(restored.steps, counters.steps);
}

// Replicas that went through the same states (sync) hold the same parameters and momentum: each
// distinct tensor is written once, and every worker gets its own back bit for bit, also when only
// some are equal, or equal but for the sign of a zero.
TEST(checkpoint, equal_replicas_are_written_once_and_come_back_whole) {
  const std::size_t count = 1000;
  const auto state_of = [&](const std::vector<std::vector<float>>& parameters) {
    herd::actors::run_checkpoint state;
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      herd::actors::worker_record record;
      record.index = static_cast<std::int32_t>(i);
      record.parameters = parameters[i];
      record.velocity = std::vector<float>(count, 0.5f); // equal in every worker
      record.send = std::vector<float>(count, static_cast<float>(i));
      state.workers.push_back(std::move(record));
    }
    return state;
  };
  std::vector<float> a(count);
  for (std::size_t i = 0; i < count; ++i)
    a[i] = 0.001f * static_cast<float>(i);
  auto b = a;
  b[count / 2] = -1.0f;
  auto negative_zero = a;
  negative_zero[0] = -0.0f; // a[0] is +0.0: equal as numbers, not as bits
  const auto distinct = state_of({a, b, negative_zero, b});
  const auto equal = state_of({a, a, a, a});
  const auto distinct_bytes = herd::actors::encode_payload(distinct);
  const auto equal_bytes = herd::actors::encode_payload(equal);
  // The distinct state writes three parameter tensors (its fourth equals its second), the equal
  // one a single one; both write the momentum once.
  EXPECT_EQ(distinct_bytes.size() - equal_bytes.size(), 2 * count * sizeof(float));
  for (const auto* state : {&distinct, &equal}) {
    const auto back = herd::actors::decode_payload(herd::actors::encode_payload(*state), "x.ckpt");
    ASSERT_EQ(back.workers.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
      const auto& want = state->workers[i];
      const auto& got = back.workers[i];
      ASSERT_EQ(got.parameters.size(), count) << i;
      EXPECT_EQ(std::memcmp(got.parameters.data(), want.parameters.data(), count * 4), 0) << i;
      EXPECT_EQ(got.velocity, want.velocity) << i;
      EXPECT_EQ(got.send, want.send) << i;
    }
  }
}

// A checkpoint keeps the workers lost and joined before it, so that a resumed run's summary and
// report still name them, with their times, nodes and reasons.
TEST(checkpoint, the_workers_lost_and_joined_come_back_with_the_checkpoint) {
  herd::actors::run_checkpoint state;
  state.coordinator.worker_events = {{12.5, 2, "vm-b", false, "its node vm-b left"},
                                     {31.25, 2, "vm-d", true, ""}};
  const auto back = herd::actors::decode_payload(herd::actors::encode_payload(state), "x.ckpt");
  const auto& events = back.coordinator.worker_events;
  ASSERT_EQ(events.size(), 2u);
  EXPECT_DOUBLE_EQ(events[0].seconds, 12.5);
  EXPECT_EQ(events[0].worker, 2);
  EXPECT_EQ(events[0].node, "vm-b");
  EXPECT_FALSE(events[0].joined);
  EXPECT_EQ(events[0].why, "its node vm-b left");
  EXPECT_DOUBLE_EQ(events[1].seconds, 31.25);
  EXPECT_EQ(events[1].node, "vm-d");
  EXPECT_TRUE(events[1].joined);
}

// A resumed run goes on with the worker events of the run before it (here one of a cluster's,
// set in the checkpoint): its summary lists them first, and its own final checkpoint keeps them.
TEST(checkpoint, a_resumed_run_keeps_the_worker_events_of_the_run_before_it) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  const auto first = one_checkpointed_epoch(dir.file("ckpt"), data);
  auto second = sync_config();
  second.checkpoint = first.checkpoint;
  auto state =
      std::make_shared<herd::actors::run_checkpoint>(*load(second, *data, first.checkpoint.dir));
  state->coordinator.worker_events = {{0.5, 3, "vm-c", false, "its node vm-c left"},
                                      {0.75, 3, "vm-d", true, ""}};
  const auto resumed = run(second, data, state);
  ASSERT_EQ(resumed.summary.stop_reason, stop_cause::epochs) << resumed.summary.error;
  const auto& events = resumed.summary.worker_events;
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].why, "its node vm-c left");
  EXPECT_EQ(events[1].node, "vm-d");
  const auto files = herd::checkpoint::list(second.checkpoint.dir);
  ASSERT_EQ(files.size(), 2u);
  const auto last = herd::actors::read_run_checkpoint(files.back());
  ASSERT_EQ(last.coordinator.counters.rounds, 40u);
  ASSERT_EQ(last.coordinator.worker_events.size(), 2u);
  EXPECT_DOUBLE_EQ(last.coordinator.worker_events[1].seconds, 0.75);
  EXPECT_TRUE(last.coordinator.worker_events[1].joined);
}

// Files of older format versions are read as payloads without the parts added since: version 9
// ends before the worker events, 8 before the validation set's size, 7 before the best
// evaluation, 6 before the inputs' byte flag and the list of copies, 5 before the inputs.
TEST(checkpoint, payloads_of_versions_5_to_9_are_read_without_the_later_parts) {
  herd::actors::run_checkpoint state;
  state.settings = "[train]\nworkers = 4\n";
  state.inputs.sample_shape = {1, 28, 28};
  state.inputs.classes = 10;
  state.inputs.mean = 0.25f;
  state.inputs.stddev = 0.5f;
  state.inputs.scaled_bytes = true;
  state.validation_samples = 1200;
  const auto v10 = herd::actors::encode_payload(state);
  const auto v9 = v10.substr(0, v10.size() - 8); // no worker events: an 8-byte size tag
  EXPECT_THROW(herd::actors::decode_payload(v9, "x.ckpt", 10), herd::checkpoint::checkpoint_error);
  EXPECT_TRUE(herd::actors::decode_payload(v9, "x.ckpt", 9).coordinator.worker_events.empty());
  EXPECT_EQ(herd::actors::decode_payload(v9, "x.ckpt", 9).validation_samples,
            std::optional<std::uint64_t>(1200));
  const auto v8 = v9.substr(0, v9.size() - 8); // the size, 8 bytes
  EXPECT_THROW(herd::actors::decode_payload(v8, "x.ckpt", 9), herd::checkpoint::checkpoint_error);
  EXPECT_FALSE(herd::actors::decode_payload(v8, "x.ckpt", 8).validation_samples);
  EXPECT_FALSE(herd::actors::decode_payload(v8, "x.ckpt", 8).coordinator.evaluations.best_point());
  // No best evaluation: an empty optional (a byte) and no parameters (an 8-byte size tag).
  const auto v7 = v8.substr(0, v8.size() - 1 - 8);
  EXPECT_THROW(herd::actors::decode_payload(v7, "x.ckpt", 8), herd::checkpoint::checkpoint_error);
  const auto back = herd::actors::decode_payload(v7, "x.ckpt", 7);
  EXPECT_EQ(back.inputs.sample_shape, state.inputs.sample_shape);
  EXPECT_TRUE(back.inputs.scaled_bytes);
  // Without workers the list of copies is two empty vectors (8-byte size tags); the flag a byte.
  const auto v6 = v7.substr(0, v7.size() - 1 - 2 * 8);
  const auto six = herd::actors::decode_payload(v6, "x.ckpt", 6);
  EXPECT_EQ(six.inputs.sample_shape, state.inputs.sample_shape);
  EXPECT_EQ(six.inputs.mean, 0.25f);
  EXPECT_FALSE(six.inputs.scaled_bytes);
  EXPECT_THROW(herd::actors::decode_payload(v6, "x.ckpt", 7), herd::checkpoint::checkpoint_error);
  EXPECT_THROW(herd::actors::decode_payload(v7, "x.ckpt", 6), herd::checkpoint::checkpoint_error);
  const auto five =
      herd::actors::decode_payload(v6.substr(0, v6.size() - (8 + 3 * 8) - 4 - 2 * 4), "x.ckpt", 5);
  EXPECT_FALSE(five.inputs.known());
  EXPECT_EQ(five.settings, state.settings);

  // Version 8: the best evaluation and its parameters (train.patience).
  herd::actors::evaluation_point best;
  best.round = 40;
  best.test_accuracy = 0.875;
  state.coordinator.evaluations.restore_best(
      best, std::make_shared<const std::vector<float>>(std::vector<float>{1.5f, -2.0f}));
  const auto eight = herd::actors::decode_payload(herd::actors::encode_payload(state), "x.ckpt");
  const auto& restored = eight.coordinator.evaluations;
  ASSERT_TRUE(restored.best_point() && restored.best_parameters());
  EXPECT_EQ(restored.best_point()->round, 40u);
  EXPECT_EQ(restored.best_point()->test_accuracy, 0.875);
  EXPECT_EQ(*restored.best_parameters(), (std::vector<float>{1.5f, -2.0f}));
}

// A run checks checkpoint.dir before it loads its data and locks it only once it starts: a short
// run that came and went meanwhile left checkpoints there, which this one would prune, final
// one included. Once locked the directory is checked again, and the lock goes with the refusal.
TEST(checkpoint, checkpoints_written_before_the_lock_was_taken_are_refused_once_it_is) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  const auto config = one_checkpointed_epoch(dir.file("ckpt"), data); // the other run's
  const auto written = herd::checkpoint::list(config.checkpoint.dir);
  ASSERT_EQ(written.size(), 1u);
  try {
    herd::actors::lock_checkpoint_dir(config, std::string(), "--resume");
    ADD_FAILURE() << "a directory holding another run's checkpoints was locked";
  } catch (const herd::config::invalid_config& refused) {
    ASSERT_EQ(refused.errors().size(), 1u);
    EXPECT_EQ(refused.errors()[0].key, "checkpoint.dir");
    EXPECT_THAT(refused.errors()[0].message,
                HasSubstr("holds 1 checkpoint of another run (the newest: " + written[0]));
  }
  // Released with the refusal; the run that resumes from those checkpoints may lock it.
  EXPECT_TRUE(herd::actors::lock_checkpoint_dir(config, config.checkpoint.dir, "--resume"));
  EXPECT_EQ(herd::checkpoint::list(config.checkpoint.dir), written);
}

// Checkpoint files are written by the writer's thread; the session reports each one.
TEST(checkpoint, only_the_newest_keep_files_remain_and_each_is_reported) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  auto config = sync_config();
  config.checkpoint.dir = dir.file("ckpt");
  config.checkpoint.every_seconds = 0;
  config.checkpoint.every_rounds = 5;
  config.checkpoint.keep = 1;
  std::mutex mutex;
  std::vector<herd::actors::checkpoint_report> reports;
  auto options = herd::testing::quick_session_options();
  options.on_checkpoint = [&](const herd::actors::checkpoint_report& report) {
    std::lock_guard<std::mutex> guard(mutex);
    reports.push_back(report);
  };
  train_session session(config, data, options);
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  std::lock_guard<std::mutex> guard(mutex);
  // Every 5 rounds where a write takes less than 5 rounds (each waits for the write before it),
  // and the final one at 40.
  ASSERT_GE(reports.size(), 2u);
  for (const auto& report : reports)
    EXPECT_TRUE(report.error.empty()) << report.error;
  EXPECT_TRUE(reports.back().final);
  EXPECT_EQ(reports.back().rounds, 40u);
  const auto files = herd::checkpoint::list(config.checkpoint.dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files.back(), reports.back().path);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(config.checkpoint.dir),
                          std::filesystem::directory_iterator()),
            1); // no temporary file left behind
}

// The notices a run says, kept for a test to read.
struct notice_log final : herd::actors::run_observer {
  void on_notice(std::string_view text) override {
    std::lock_guard<std::mutex> guard(mutex);
    seen.emplace_back(text);
  }
  std::mutex mutex;
  std::vector<std::string> seen;
};

// A run that lost a worker cannot be resumed from its end; it says so rather than leaving the
// final checkpoint out without a word.
TEST(checkpoint, a_run_that_lost_a_worker_says_why_it_writes_no_final_checkpoint) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  auto config = sync_config();
  config.checkpoint.dir = dir.file("ckpt");
  config.checkpoint.every_seconds = 0;
  notice_log observer;
  herd::testing::failing_backward_ops ops(10);
  auto options = herd::testing::quick_session_options();
  options.ops = &ops;
  options.observer = &observer;
  train_session session(config, data, options);
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  EXPECT_TRUE(summary.final_checkpoint_error.empty()) << "not an error: the run itself went well";
  EXPECT_TRUE(herd::checkpoint::list(config.checkpoint.dir).empty());
  std::lock_guard<std::mutex> guard(observer.mutex);
  EXPECT_EQ(std::count(observer.seen.begin(), observer.seen.end(),
                       "no final checkpoint: 1 worker(s) lost: their states cannot be saved"),
            1);
}

} // namespace

namespace {

// A whole run whose checkpoint write hangs ends at the write limit, says that it waits and why it
// ends without its final checkpoint (an error: exit status 1 for herd train), rather than never.
TEST(checkpoint, a_run_whose_checkpoint_write_hangs_ends_at_the_limit_and_says_so) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  auto config = sync_config();
  config.checkpoint.dir = dir.file("ckpt");
  config.checkpoint.every_seconds = 0;
  config.checkpoint.every_rounds = 5;
  notice_log observer;
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto writes = std::make_shared<std::atomic<int>>(0);
  auto options = herd::testing::quick_session_options();
  options.observer = &observer;
  options.on_checkpoint = [released, writes](const herd::actors::checkpoint_report&) {
    if ((*writes)++ == 0)
      released.wait(); // the first periodic write hangs
  };
  options.checkpoint_write_limit = std::chrono::milliseconds(600);
  options.checkpoint_write_notice_every = std::chrono::milliseconds(200);
  herd::actors::run_summary summary;
  {
    train_session session(config, data, options);
    summary = session.run();
  }
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  EXPECT_THAT(summary.final_checkpoint_error,
              HasSubstr("a checkpoint's write to " + config.checkpoint.dir +
                        " had not returned after 0.6 s"));
  EXPECT_TRUE(summary.final_checkpoint.empty());
  {
    std::lock_guard<std::mutex> guard(observer.mutex);
    EXPECT_EQ(std::count_if(observer.seen.begin(), observer.seen.end(),
                            [](const std::string& text) {
                              return text.rfind("waiting for a checkpoint's write to ", 0) == 0;
                            }),
              2); // at 0.2 and 0.4 s
  }
  // The hung write returns: the final checkpoint queued behind it, reported as not written, is
  // not written later either, nor heard of.
  release->set_value();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(*writes, 1);
  EXPECT_EQ(herd::checkpoint::list(config.checkpoint.dir).size(), 1u);
}

} // namespace

namespace {

// A policy state that its own policy takes, but that counts other workers live than the
// coordinator's counters, is refused with the checkpoint's name; so is one it cannot take.
TEST(checkpoint, a_policy_state_that_does_not_match_the_counters_is_refused) {
  auto config = sync_config();
  config.train.algorithm = "solo";
  config.train.workers = 2;
  herd::actors::run_checkpoint state;
  state.coordinator.counters.set_workers(2);
  herd::policy::quorum_policy solo("solo", 0.0, 0);
  solo.set_live_workers({0, 1});
  state.coordinator.policy_state = solo.save_state();
  EXPECT_NO_THROW(herd::actors::check_policy_state("x.ckpt", state, config));
  solo.set_live_workers({0});
  state.coordinator.policy_state = solo.save_state();
  try {
    herd::actors::check_policy_state("x.ckpt", state, config);
    ADD_FAILURE() << "a policy state of other live workers was accepted";
  } catch (const herd::checkpoint::checkpoint_error& refused) {
    EXPECT_THAT(refused.what(), HasSubstr("x.ckpt"));
    EXPECT_THAT(refused.what(), HasSubstr("payload: the solo policy state counts 1 workers live, "
                                          "the coordinator's counters 2 (0, 1)"));
  }
  // The coordinator's own records name workers of the run only.
  solo.set_live_workers({0, 1});
  state.coordinator.policy_state = solo.save_state();
  herd::policy::group_decision decided;
  decided.members = {0, 7};
  state.coordinator.unstarted.push_back(decided);
  try {
    herd::actors::check_policy_state("x.ckpt", state, config);
    ADD_FAILURE() << "a round of a worker outside the run was accepted";
  } catch (const herd::checkpoint::checkpoint_error& refused) {
    EXPECT_THAT(refused.what(), HasSubstr("payload: a round decided before the checkpoint names "
                                          "worker 7 of a run of 2"));
  }
  state.coordinator.unstarted.clear();
  state.coordinator.policy_state = "not a state";
  try {
    herd::actors::check_policy_state("x.ckpt", state, config);
    ADD_FAILURE() << "an unreadable policy state was accepted";
  } catch (const herd::checkpoint::checkpoint_error& refused) {
    EXPECT_THAT(refused.what(), HasSubstr("payload: the solo policy state cannot be read"));
  }
}

} // namespace

namespace {

// A worker's sampler past the last batch of its shard failed an internal check in the worker
// (exit 1, a source line); it is refused as the file is loaded, naming the worker.
TEST(checkpoint, a_sampler_past_its_shard_is_refused_as_the_file_is_loaded) {
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  temp_directory dir;
  const auto config = one_checkpointed_epoch(dir.file("ckpt"), data);
  const auto file = herd::checkpoint::resolve(config.checkpoint.dir);
  const auto loaded = herd::checkpoint::read_file(file);
  auto state = herd::actors::read_run_checkpoint(file);
  state.workers[1].sampler.offset = 1000000;
  const auto crafted = dir.file("crafted.ckpt");
  std::ofstream(crafted, std::ios::binary)
      << herd::checkpoint::encode(loaded.head, herd::actors::encode_payload(state));
  try {
    load(config, *data, crafted);
    ADD_FAILURE() << "a sampler past its shard was accepted";
  } catch (const herd::checkpoint::checkpoint_error& refused) {
    EXPECT_THAT(refused.what(), HasSubstr("payload: worker 1's sampler stands at sample 1000000 "
                                          "of its shard of 160, past its last batch of 8"));
  }
}

} // namespace
