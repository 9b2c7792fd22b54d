// Whole runs of the actor system in one process: synchronous training is equivalent to one big
// batch, replicas stay identical, and every stop condition ends the run with a truthful summary.
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"
#include "herd/config.hpp"
#include "kernels/cuda/cuda_ops.hpp"
#include "models/optimizer.hpp"
#include "models/sampler.hpp"

#include <atomic>
#include <deque>
#include <gtest/gtest.h>
#include <thread>

#include "support/delegating_ops.hpp"
#include "support/emulated_stream_ops.hpp"
#include "support/failing_backward_ops.hpp"
#include "support/separate_memory_ops.hpp"
#include "support/session_config.hpp"
#include "support/slow_backward_ops.hpp"

namespace {

using herd::actors::stop_cause;
using herd::actors::train_session;
using herd::config::run_config;

constexpr int features = 24;
constexpr int classes = 5;

std::shared_ptr<const herd::models::train_test_split> synthetic(std::size_t train_samples,
                                                                std::uint64_t seed = 7) {
  return std::make_shared<herd::models::train_test_split>(
      herd::models::make_synthetic_split(train_samples, 500, features, classes, seed));
}

using herd::testing::quick_session_options;
using herd::testing::small_session_config;

run_config small_config(int workers, int batch) {
  return small_session_config(workers, batch);
}

herd::actors::session_options quick() {
  return quick_session_options();
}

// Twenty synchronous rounds of 4 workers at batch b against one model trained on the same samples
// in batches of 4b: the mean of the workers' mean gradients is the big batch's mean gradient.
// `options` and `backend` say where the workers compute.
void expect_sync_equals_one_big_batch(const herd::actors::session_options& options,
                                      const std::string& backend = "cpu") {
  const int workers = 4;
  const int batch = 8;
  const int rounds = 20;
  auto config = small_config(workers, batch);
  config.train.backend = backend;
  // One epoch is exactly `rounds` rounds: each shard holds rounds * batch samples.
  auto data = synthetic(std::size_t{workers} * rounds * batch);

  train_session session(config, data, options);
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  ASSERT_EQ(summary.rounds, static_cast<std::uint64_t>(rounds));

  // The reference: the same samples, step by step, in one batch of 4b.
  const auto built = herd::actors::make_model(config, data->train);
  const herd::models::model& model = *built;
  auto params = model.initial_parameters(config.train.seed);
  herd::models::optimizer optimizer(model.parameter_count(),
                                    {static_cast<float>(config.train.lr),
                                     static_cast<float>(config.train.momentum),
                                     static_cast<float>(config.train.weight_decay)});
  std::vector<herd::models::batch_sampler> samplers;
  samplers.reserve(workers);
  for (int w = 0; w < workers; ++w)
    samplers.emplace_back(herd::actors::worker_shard(config, data->train.size(), w),
                          static_cast<std::size_t>(batch),
                          herd::actors::worker_shuffle_seed(config, w));
  herd::models::tensor grads({model.parameter_count()});
  herd::models::tensor x;
  std::vector<std::int32_t> y;
  const auto work = model.make_workspace();
  for (int step = 0; step < rounds; ++step) {
    std::vector<std::size_t> big_batch;
    for (auto& sampler : samplers) {
      const auto& indices = sampler.next();
      big_batch.insert(big_batch.end(), indices.begin(), indices.end());
    }
    herd::models::gather_batch(data->train, big_batch, x, y);
    model.loss_and_gradient(herd::kernels::cpu_ops(), params.data(), x, y, grads.data(), *work);
    optimizer.step(herd::kernels::cpu_ops(), params.data(), grads.data());
  }

  const auto& finals = session.final_parameters();
  ASSERT_EQ(finals.size(), static_cast<std::size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    ASSERT_EQ(finals[w].size(), params.size());
    const double difference =
        herd::models::relative_difference(finals[w].data(), params.data(), params.size());
    EXPECT_LT(difference, 1e-4) << "worker " << w;
  }
  // And the training really moved the parameters (the comparison is not trivially true).
  const auto initial = model.initial_parameters(config.train.seed);
  EXPECT_GT(herd::models::relative_difference(finals[0].data(), initial.data(), initial.size()),
            1e-2);
}

TEST(train_session, sync_four_workers_equal_one_worker_with_four_times_the_batch) {
  expect_sync_equals_one_big_batch(quick());
}

// The same run with the workers' parameters, gradients, send buffers, velocities and the rounds'
// results in a memory the CPU does not touch directly: the path of workers on a GPU. Every step
// uploads its batch and labels; nothing comes back to the host but the parameter snapshots of
// the final evaluation and final_parameters() (no per-step downloads).
TEST(train_session, workers_computing_in_device_memory_train_the_same) {
  const herd::testing::separate_memory elsewhere;
  const herd::testing::separate_memory_ops ops(elsewhere);
  auto options = quick();
  options.ops = &ops;
  expect_sync_equals_one_big_batch(options);
  EXPECT_GE(elsewhere.counts.uploads, 4u * 20u * 2u); // each worker's 20 batches and labels
  EXPECT_LE(elsewhere.counts.downloads, 3u * 4u);     // snapshots only; 20 rounds would be 80
  EXPECT_GT(elsewhere.counts.synchronizations, 4u * 20u);
}

// train.backend = cuda with each stream emulated on the CPU
// (tests/support/emulated_stream_ops.hpp): every worker's compute thread and actor, and the
// reductions, queue work on their own "stream" that runs only when someone waits for it. A
// hand-over without its synchronisation would let a step read parameters before the last result was
// applied, or a reduction read a send buffer before it was filled, and the result would drift from
// the big-batch reference.
TEST(train_session, workers_on_emulated_gpu_streams_train_the_same) {
  const herd::testing::separate_memory elsewhere;
  auto options = quick();
  std::size_t streams = 0;
  options.stream_ops = [&]() -> std::unique_ptr<herd::kernels::ops> {
    ++streams;
    return std::make_unique<herd::testing::emulated_stream_ops>(elsewhere);
  };
  expect_sync_equals_one_big_batch(options, "cuda");
  EXPECT_EQ(streams, 2u + 2u * 4u); // the reductions', the evaluator's, and two per worker
  EXPECT_LE(elsewhere.counts.downloads, 3u * 4u);
}

// Workers on a GPU are evaluated there: the evaluator has a stream of its own, uploads each
// snapshot and scores it with the device's kernels. (On the CPU, a CNN's final evaluation took
// 7.5 s after a 2.8 s run on an H200.) Emulated, its accuracy is the CPU's on the same parameters.
// Each stream counts into a counter of the test's: the run's ops go with its actors, before the
// test reads the counts.
class scoring_stream_ops final : public herd::testing::emulated_stream_ops {
public:
  scoring_stream_ops(const herd::testing::separate_memory& memory, std::atomic<int>& scored)
      : emulated_stream_ops(memory), scored_(scored) {}
  std::size_t count_correct(const float* scores, const std::int32_t* labels, int rows,
                            int columns) const override {
    ++scored_; // only evaluations count
    return emulated_stream_ops::count_correct(scores, labels, rows, columns);
  }

private:
  std::atomic<int>& scored_;
};

TEST(train_session, workers_on_a_gpu_are_evaluated_on_it) {
  const herd::testing::separate_memory elsewhere;
  std::deque<std::atomic<int>> scored; // by stream, in the order they were made
  auto options = quick();
  options.stream_ops = [&]() -> std::unique_ptr<herd::kernels::ops> {
    return std::make_unique<scoring_stream_ops>(elsewhere, scored.emplace_back(0));
  };
  auto config = small_config(4, 8);
  config.train.backend = "cuda";
  const auto data = synthetic(std::size_t{4} * 8 * 20);
  train_session session(config, data, options);
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  ASSERT_TRUE(summary.final_test_accuracy.has_value());
  int scoring = 0;
  for (const auto& count : scored)
    scoring += count > 0 ? 1 : 0;
  EXPECT_EQ(scoring, 1); // one stream scores: the evaluator's

  const auto model = herd::actors::make_model(config, data->train);
  const auto work = model->make_workspace();
  const auto on_cpu = model->evaluate(
      herd::kernels::cpu_ops(), session.final_parameters()[0].data(), data->test, 1000, *work);
  EXPECT_EQ(*summary.final_test_accuracy, on_cpu.accuracy());
}

TEST(train_session, model_averaging_on_emulated_gpu_streams_learns) {
  for (const char* algorithm : {"wagma", "preduce"}) {
    const herd::testing::separate_memory elsewhere;
    auto options = quick();
    options.stream_ops = [&]() -> std::unique_ptr<herd::kernels::ops> {
      return std::make_unique<herd::testing::emulated_stream_ops>(elsewhere);
    };
    auto config = small_config(4, 8);
    config.train.algorithm = algorithm;
    config.train.backend = "cuda";
    config.train.epochs = 3;
    train_session session(config, synthetic(std::size_t{4} * 8 * 40), options);
    const auto summary = session.run();
    ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << algorithm << ": " << summary.error;
    EXPECT_EQ(summary.compute, "separate") << algorithm;
    ASSERT_TRUE(summary.final_test_accuracy.has_value());
    EXPECT_GT(*summary.final_test_accuracy, 0.5) << algorithm;
  }
}

// The model-averaging algorithms move models between parameters, send buffer and results with
// the ops' copies (and WAGMA blends late models): in device memory too they learn.
TEST(train_session, model_averaging_in_device_memory_learns) {
  for (const char* algorithm : {"wagma", "preduce"}) {
    const herd::testing::separate_memory elsewhere;
    const herd::testing::separate_memory_ops ops(elsewhere);
    auto options = quick();
    options.ops = &ops;
    auto config = small_config(4, 8);
    config.train.algorithm = algorithm;
    config.train.epochs = 3;
    train_session session(config, synthetic(std::size_t{4} * 8 * 40), options);
    const auto summary = session.run();
    ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << algorithm << ": " << summary.error;
    ASSERT_TRUE(summary.final_test_accuracy.has_value());
    EXPECT_GT(*summary.final_test_accuracy, 0.5) << algorithm;
    EXPECT_GT(elsewhere.counts.copies, summary.rounds) << algorithm;
    EXPECT_LE(elsewhere.counts.downloads, 3u * 4u) << algorithm;
  }
}

TEST(train_session, the_cuda_backend_without_a_device_is_refused_naming_the_key) {
  if (herd::kernels::cuda::cuda_device_available())
    GTEST_SKIP() << "this machine has a CUDA device (the GPU tests run the cuda backend)";
  auto config = small_config(2, 8);
  config.train.backend = "cuda";
  try {
    train_session session(config, synthetic(1000), quick());
    ADD_FAILURE() << "train.backend = cuda was accepted without a device";
  } catch (const herd::config::invalid_config& refused) {
    ASSERT_FALSE(refused.errors().empty());
    EXPECT_EQ(refused.errors().front().key, "train.backend");
    EXPECT_NE(std::string(refused.what()).find("train.backend = cuda: no CUDA device"),
              std::string::npos)
        << refused.what();
  }
}

TEST(train_session, sync_replicas_stay_bitwise_identical) {
  auto config = small_config(3, 16);
  config.train.epochs = 2;
  train_session session(config, synthetic(std::size_t{3} * 16 * 15), quick());
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs);
  const auto& finals = session.final_parameters();
  ASSERT_EQ(finals.size(), 3u);
  EXPECT_EQ(finals[0], finals[1]);
  EXPECT_EQ(finals[0], finals[2]);
}

TEST(train_session, summary_counts_are_consistent) {
  const int workers = 4;
  const int batch = 10;
  auto config = small_config(workers, batch);
  config.train.epochs = 2;
  config.train.eval_every = 5;
  // 1003 samples: 250 per shard (3 left out), 25 batches per epoch.
  train_session session(config, synthetic(1003), quick());
  EXPECT_EQ(session.samples_per_epoch(), 1000u);
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs);
  EXPECT_EQ(summary.algorithm, "sync");
  EXPECT_EQ(summary.data_plane, "local");
  EXPECT_EQ(summary.workers, workers);
  EXPECT_EQ(summary.rounds, 50u);
  EXPECT_EQ(summary.samples, 50u * workers * batch);
  EXPECT_DOUBLE_EQ(summary.epochs, 2.0);
  EXPECT_GT(summary.wall_seconds, 0.0);
  EXPECT_NEAR(summary.samples_per_second, summary.samples / summary.wall_seconds, 1e-6);
  ASSERT_EQ(summary.per_worker.size(), static_cast<std::size_t>(workers));
  std::uint64_t steps = 0;
  for (const auto& worker : summary.per_worker) {
    // Every worker computed every round's gradient, and at most one more before it stopped.
    EXPECT_GE(worker.steps, 50u);
    EXPECT_LE(worker.steps, 51u);
    EXPECT_EQ(worker.samples, worker.steps * batch);
    EXPECT_TRUE(worker.live);
    EXPECT_GT(worker.step_seconds.mean, 0.0);
    EXPECT_LE(worker.step_seconds.median, worker.step_seconds.max);
    steps += worker.steps;
  }
  EXPECT_EQ(summary.steps, steps);
  // Evaluations every 5 rounds (the evaluator may skip one while busy) plus the final one.
  EXPECT_GE(summary.evaluations.size(), 2u);
  EXPECT_EQ(summary.evaluations.back().round, summary.rounds);
  ASSERT_TRUE(summary.final_test_accuracy.has_value());
  EXPECT_DOUBLE_EQ(*summary.final_test_accuracy, summary.evaluations.back().test_accuracy);
  EXPECT_GT(*summary.final_test_accuracy, 0.5); // the synthetic problem is learnable
  EXPECT_GT(summary.final_train_loss, 0.0);
}

TEST(train_session, stops_at_the_target_accuracy_and_reports_when) {
  auto config = small_config(2, 16);
  config.train.epochs = 50;
  config.train.eval_every = 4;
  config.train.target_accuracy = 0.6;
  train_session session(config, synthetic(2000), quick());
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::target_accuracy);
  ASSERT_TRUE(summary.time_to_target_seconds.has_value());
  EXPECT_LE(*summary.time_to_target_seconds, summary.wall_seconds);
  EXPECT_LT(summary.epochs, 50.0);
  bool reached = false;
  for (const auto& point : summary.evaluations)
    reached = reached || point.test_accuracy >= 0.6;
  EXPECT_TRUE(reached);
}

TEST(train_session, snapshots_are_evaluated_after_the_run_in_time_order) {
  auto config = small_config(2, 8);
  config.train.epochs = 4;
  config.train.target_accuracy = 0.3;
  auto options = quick();
  options.progress_interval = std::chrono::milliseconds(5);
  options.snapshot_interval = std::chrono::milliseconds(5);
  // Steps slowed to 1 ms so that the run lasts long enough for several snapshots.
  config.imbalance.kind = "persistent";
  config.imbalance.workers = {0, 1};
  config.imbalance.factor = 100.0;
  train_session session(config, synthetic(std::size_t{2} * 8 * 40), options);
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << "the target must not stop a deferred run";
  ASSERT_GE(summary.evaluations.size(), 3u);
  for (std::size_t i = 1; i < summary.evaluations.size(); ++i)
    EXPECT_LE(summary.evaluations[i - 1].elapsed_seconds, summary.evaluations[i].elapsed_seconds);
  ASSERT_TRUE(summary.time_to_target_seconds.has_value());
  // The time to the target is that of the first snapshot at or above it.
  for (const auto& point : summary.evaluations) {
    if (point.test_accuracy >= 0.3) {
      EXPECT_EQ(*summary.time_to_target_seconds, point.elapsed_seconds);
      break;
    }
  }
  EXPECT_TRUE(summary.final_test_accuracy.has_value());
  // The final parameters are those at the end of training, on the run's own clock: evaluating
  // the kept snapshots first must not push them later (plots drew long flat tails).
  EXPECT_LE(summary.evaluations.back().elapsed_seconds, summary.wall_seconds);
}

TEST(train_session, request_stop_ends_the_run_with_a_summary) {
  auto config = small_config(4, 8);
  config.train.epochs = 100000;
  train_session session(config, synthetic(4000), quick());
  session.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  session.request_stop();
  const auto summary = session.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, stop_cause::interrupted);
  EXPECT_GT(summary->rounds, 0u);
  EXPECT_EQ(session.final_parameters().size(), 4u);
}

TEST(train_session, batch_larger_than_a_shard_is_rejected_before_anything_runs) {
  auto config = small_config(4, 300);
  EXPECT_THROW(train_session(config, synthetic(1000), quick()), herd::config::invalid_config);
}

using herd::testing::failing_backward_ops;

// When the last worker is lost, the run's error says why that one was: an embedder's model that
// throws is named in the summary, not only in a notice.
TEST(train_session, a_run_that_lost_every_worker_says_why_the_last_was_lost) {
  auto config = small_config(2, 8);
  failing_backward_ops ops(1, true);
  auto options = quick();
  options.ops = &ops;
  train_session session(config, synthetic(std::size_t{2} * 8 * 10), options);
  const auto summary = session.run();
  EXPECT_EQ(summary.stop_reason, stop_cause::error);
  EXPECT_NE(summary.error.find("every worker was lost; the last, worker "), std::string::npos)
      << summary.error;
  EXPECT_NE(summary.error.find("injected failure"), std::string::npos) << summary.error;
}

TEST(train_session, sync_continues_without_a_worker_whose_step_failed) {
  auto config = small_config(4, 8);
  config.train.epochs = 2;
  failing_backward_ops ops(10);
  auto options = quick();
  options.ops = &ops;
  train_session session(config, synthetic(std::size_t{4} * 8 * 10), options);
  const auto summary = session.run();
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
  int lost = 0;
  for (const auto& worker : summary.per_worker)
    lost += worker.live ? 0 : 1;
  EXPECT_EQ(lost, 1);
  // The three survivors still trained two epochs' worth of samples, in rounds of three.
  EXPECT_GE(summary.samples, 2u * 4 * 8 * 10);
  const auto& finals = session.final_parameters();
  std::vector<const std::vector<float>*> survivors;
  for (const auto& params : finals)
    if (!params.empty())
      survivors.push_back(&params);
  ASSERT_EQ(survivors.size(), 3u);
  EXPECT_EQ(*survivors[0], *survivors[1]);
  EXPECT_EQ(*survivors[0], *survivors[2]);
}

// comm.bucket-mb in floats: whole blocks of 1,024 floats (4 KiB), the nearest, at least one.
TEST(train_session, a_bucket_is_a_whole_number_of_4_kib_blocks) {
  auto config = small_config(4, 8);
  EXPECT_EQ(herd::actors::bucket_floats(config), 0u);
  for (const auto& [mib, floats] : std::vector<std::pair<double, std::size_t>>{
           {0.004, 1024}, {0.1, 26 * 1024}, {1.0, 262144}, {25.0, 25 * 262144}}) {
    config.comm.bucket_mb = mib;
    EXPECT_EQ(herd::actors::bucket_floats(config), floats) << mib;
  }
}

herd::config::run_config bucketed_config(double bucket_mb) {
  auto config = small_config(4, 8);
  config.model.hidden = {256, 128}; // 39,941 parameters, layers from 0, 6,400 and 39,296
  config.comm.bucket_mb = bucket_mb;
  return config;
}

// The run cuts the model's gradient where its layers begin (rounded up to whole 4 KiB blocks),
// each bucket at least comm.bucket-mb: with 1,024 floats, the two last layers (final once the
// 256-to-128 layer's backward has run: the last layer's 645 floats are too few for a bucket of
// their own) and the first.
TEST(train_session, gradient_buckets_are_cut_where_the_models_layers_begin) {
  const auto data = synthetic(64);
  const auto model = herd::actors::make_model(bucketed_config(0.004), data->train);
  ASSERT_EQ(model->parameter_count(), 39941u);
  const auto buckets = herd::actors::gradient_buckets(bucketed_config(0.004), *model);
  EXPECT_EQ(buckets.count(), 39941u);
  EXPECT_EQ(buckets.cuts(), std::vector<std::size_t>{7168});
  // 0.1 MiB (26,624 floats): the same cut; 0.2 MiB (52,224) is more than the whole: one bucket.
  EXPECT_EQ(herd::actors::gradient_buckets(bucketed_config(0.1), *model).cuts(),
            std::vector<std::size_t>{7168});
  EXPECT_EQ(herd::actors::gradient_buckets(bucketed_config(0.2), *model).size(), 1u);
  EXPECT_TRUE(herd::actors::gradient_buckets(bucketed_config(0.0), *model).empty());
}

// Under sync with comm.bucket-mb, rounds begin while their members' backward runs and reduce the
// gradient bucket by bucket as it is finished, and the run ends with the bits it has without.
TEST(train_session, sync_with_gradient_buckets_reduces_during_backward_and_trains_the_same_bits) {
  const herd::testing::slow_backward_ops ops(std::chrono::milliseconds(2));
  auto options = quick();
  options.ops = &ops;
  const auto data = synthetic(std::size_t{4} * 8 * 10);
  std::vector<std::vector<float>> finals;
  std::vector<std::uint64_t> in_backward;
  for (const double bucket_mb : {0.0, 0.004}) {
    train_session session(bucketed_config(bucket_mb), data, options);
    const auto summary = session.run();
    ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
    EXPECT_EQ(summary.rounds, 10u);
    in_backward.push_back(summary.rounds_in_backward);
    ASSERT_EQ(session.final_parameters().size(), 4u);
    for (const auto& replica : session.final_parameters())
      EXPECT_EQ(replica, session.final_parameters()[0]);
    finals.push_back(session.final_parameters()[0]);
  }
  EXPECT_EQ(in_backward[0], 0u);
  EXPECT_GT(in_backward[1], 0u);
  EXPECT_EQ(finals[0], finals[1]);
}

// A worker whose backward fails while its round reads the gradient: the round is aborted (every
// member skips it), and the run goes on without that worker, as without buckets. Under solo the
// failing step may also have been asked for before it was announced (then it is late, no round
// reads it, and none is aborted): either way the worker is lost and the others agree.
TEST(train_session, a_step_failing_while_its_round_reads_it_aborts_the_round_and_the_run_goes_on) {
  for (const char* algorithm : {"sync", "solo"}) {
    const herd::testing::slow_backward_ops ops(std::chrono::milliseconds(50), 10);
    auto options = quick();
    options.ops = &ops;
    auto config = bucketed_config(0.004);
    config.train.algorithm = algorithm;
    config.train.epochs = 2;
    train_session session(config, synthetic(std::size_t{4} * 8 * 5), options);
    const auto summary = session.run();
    ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << algorithm << ": " << summary.error;
    if (config.train.algorithm == "sync")
      EXPECT_EQ(summary.aborted_rounds, 1u);
    else
      EXPECT_LE(summary.aborted_rounds, 1u) << algorithm;
    int lost = 0;
    for (const auto& worker : summary.per_worker)
      lost += worker.live ? 0 : 1;
    EXPECT_EQ(lost, 1) << algorithm;
    std::vector<const std::vector<float>*> survivors;
    for (const auto& params : session.final_parameters())
      if (!params.empty())
        survivors.push_back(&params);
    ASSERT_EQ(survivors.size(), 3u) << algorithm;
    EXPECT_EQ(*survivors[0], *survivors[1]) << algorithm;
    EXPECT_EQ(*survivors[0], *survivors[2]) << algorithm;
  }
}

} // namespace

namespace {

// Each worker's setup takes the run's settings: data.bucket-by-length gives every worker the same
// order of length buckets (one stream of train.seed), and its own shuffles; the optimizer and the
// late-gradient mode are the run's.
TEST(worker_setup, a_workers_setup_takes_the_bucket_order_shuffles_optimizer_and_late_gradients) {
  auto config = small_config(4, 8);
  config.train.algorithm = "majority";
  config.majority.late_gradients = "discard";
  config.train.lr = 0.02;
  const auto data = synthetic(std::size_t{4} * 8 * 5);
  const auto train = std::shared_ptr<const herd::models::dataset>(data, &data->train);
  const auto model = herd::actors::make_model(config, data->train);
  const auto setup = [&](int index) {
    return herd::actors::make_worker_setup(config, index, model, train, &herd::kernels::cpu_ops(),
                                           nullptr, nullptr, nullptr);
  };
  EXPECT_FALSE(setup(0).bucket_order_seed.has_value());
  EXPECT_FLOAT_EQ(setup(2).optimizer.learning_rate, 0.02f);
  EXPECT_EQ(setup(2).late_gradients, herd::policy::late_gradients::discard);
  EXPECT_NE(setup(0).shuffle_seed, setup(1).shuffle_seed);
  config.data.bucket_by_length = true;
  ASSERT_TRUE(setup(0).bucket_order_seed.has_value());
  EXPECT_EQ(setup(0).bucket_order_seed, setup(3).bucket_order_seed);
  const auto first = setup(0).bucket_order_seed;
  config.train.seed += 1;
  EXPECT_NE(setup(0).bucket_order_seed, first);
}

TEST(train_session, stop_right_after_start_still_ends_with_a_summary) {
  auto config = small_config(4, 8);
  config.train.epochs = 100000;
  train_session session(config, synthetic(4000), quick());
  session.start();
  session.request_stop();
  const auto summary = session.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, stop_cause::interrupted);
  EXPECT_TRUE(summary->error.empty()) << summary->error;
}

TEST(train_session, destroying_a_running_session_stops_it) {
  auto config = small_config(2, 8);
  config.train.epochs = 100000;
  const auto start = std::chrono::steady_clock::now();
  {
    train_session session(config, synthetic(4000), quick());
    session.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // The destructor stops the run (it does not wait out its 60 s bound).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// Evaluations are the only callers of count_correct.
class failing_evaluation_ops final : public herd::testing::delegating_ops {
public:
  std::size_t count_correct(const float*, const std::int32_t*, int, int) const override {
    throw std::runtime_error("injected evaluation failure");
  }
};

TEST(train_session, a_failed_final_evaluation_is_reported_not_replaced) {
  auto config = small_config(2, 8);
  config.train.eval_every = 3;
  failing_evaluation_ops ops;
  auto options = quick();
  options.ops = &ops;
  train_session session(config, synthetic(std::size_t{2} * 8 * 10), options);
  const auto summary = session.run();
  EXPECT_EQ(summary.stop_reason, stop_cause::epochs);
  EXPECT_FALSE(summary.final_test_accuracy.has_value());
  EXPECT_FALSE(summary.final_test_loss.has_value());
  EXPECT_TRUE(summary.evaluations.empty());
  EXPECT_NE(summary.error.find("final evaluation failed"), std::string::npos) << summary.error;
  EXPECT_NE(summary.error.find("injected evaluation failure"), std::string::npos);
}

// Reductions are the only callers of weighted_sum.
class failing_reduction_ops final : public herd::testing::delegating_ops {
public:
  void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                    std::size_t n) const override {
    if (calls_.fetch_add(1) == 3)
      throw std::runtime_error("injected reduction failure");
    base().weighted_sum(out, inputs, weights, k, n);
  }

private:
  mutable std::atomic<int> calls_{0};
};

TEST(train_session, a_failed_reduction_ends_the_run_with_an_error_instead_of_hanging) {
  auto config = small_config(2, 8);
  config.train.epochs = 100;
  failing_reduction_ops ops;
  auto options = quick();
  options.ops = &ops;
  train_session session(config, synthetic(std::size_t{2} * 8 * 10), options);
  session.start();
  const auto summary = session.wait_for(std::chrono::seconds(60));
  ASSERT_TRUE(summary.has_value()) << "the run hung after a failed reduction";
  EXPECT_EQ(summary->stop_reason, stop_cause::error);
  EXPECT_NE(summary->error.find("injected reduction failure"), std::string::npos) << summary->error;
  EXPECT_EQ(summary->rounds, 3u); // the failed round is not counted
}

TEST(train_session, max_seconds_stops_within_a_progress_interval_or_two) {
  auto config = small_config(2, 8);
  config.train.epochs = 100000;
  config.train.max_seconds = 0.3;
  config.train.eval_every = 1000000;
  train_session session(config, synthetic(4000), quick());
  const auto summary = session.run();
  EXPECT_EQ(summary.stop_reason, stop_cause::max_seconds);
  EXPECT_GE(summary.wall_seconds, 0.3);
  EXPECT_LT(summary.wall_seconds, 5.0); // generous: a shared 2-core CI machine
}

} // namespace
