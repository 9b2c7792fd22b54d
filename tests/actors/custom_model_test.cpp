// The user's own model: a hand-written class (the custom_model example's two-layer network, not a
// sequential) trained by a session through session_options::model on data from the in-memory
// source, under sync and under a partial algorithm, used by every part of the run (workers,
// evaluator, checkpoints), and refused by name when it does not fit the data.
#include "actors/train_session.hpp"
#include "herd/config.hpp"
#include "herd/dataset_sources.hpp"
#include "herd/job.hpp"
#include "herd/job_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include <atomic>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <thread>

#include "checkpoint/format.hpp"
#include "examples/custom_model/two_layer_network.hpp"
#include "support/gradient_check.hpp"
#include "support/session_config.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::actors::stop_cause;
using herd::actors::train_session;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int features = 24;
constexpr int class_count = 5;

// The example's network, counting its training steps so a test can tell it was the one trained.
class counted_network final : public herd::models::model {
public:
  explicit counted_network(std::size_t hidden) : inner_(features, hidden, class_count) {}
  std::string name() const override { return inner_.name(); }
  std::string describe() const override { return inner_.describe(); }
  const herd::models::shape& input_shape() const override { return inner_.input_shape(); }
  std::size_t classes() const override { return inner_.classes(); }
  std::size_t parameter_count() const override { return inner_.parameter_count(); }
  herd::models::tensor initial_parameters(std::uint64_t seed) const override {
    if (short_initial_parameters)
      return herd::models::tensor({5});
    return inner_.initial_parameters(seed);
  }
  std::unique_ptr<herd::models::model_workspace> make_workspace() const override {
    if (fail_workspace)
      throw std::runtime_error("no workspace for you");
    return inner_.make_workspace();
  }
  float loss_and_gradient(const herd::kernels::ops& ops, const float* params,
                          const herd::models::tensor& x, const std::vector<std::int32_t>& labels,
                          float* grads, herd::models::model_workspace& work) const override {
    steps.fetch_add(1, std::memory_order_relaxed);
    return inner_.loss_and_gradient(ops, params, x, labels, grads, work);
  }
  float loss(const herd::kernels::ops& ops, const float* params, const herd::models::tensor& x,
             const std::vector<std::int32_t>& labels,
             herd::models::model_workspace& work) const override {
    return inner_.loss(ops, params, x, labels, work);
  }
  void probabilities(const herd::kernels::ops& ops, const float* params,
                     const herd::models::tensor& x, herd::models::tensor& probs,
                     herd::models::model_workspace& work) const override {
    evaluated_batches.fetch_add(1, std::memory_order_relaxed);
    if (fail_evaluation)
      throw std::runtime_error("no probabilities for you");
    inner_.probabilities(ops, params, x, probs, work);
  }

  // Called from every worker's compute thread and the evaluator's at once.
  mutable std::atomic<std::uint64_t> steps{0};
  mutable std::atomic<std::uint64_t> evaluated_batches{0};
  bool fail_workspace = false; // a model whose workers cannot start
  bool short_initial_parameters = false; // a model that disagrees with its own parameter_count()
  bool fail_evaluation = false;          // a model that cannot be evaluated

private:
  example::two_layer_network inner_;
};

// Gaussian clusters handed to Herd as plain vectors, the way an embedder holds its own data.
std::shared_ptr<const herd::models::train_test_split> clusters(std::size_t train_samples) {
  const auto generated =
      herd::models::make_synthetic_split(train_samples, 500, features, class_count, 7);
  auto split = std::make_shared<herd::models::train_test_split>();
  const std::vector<std::size_t> shape{features};
  split->train = herd::models::dataset_from_memory(
      generated.train.images.to_host(), generated.train.labels, shape, class_count, "clusters/train");
  split->test = herd::models::dataset_from_memory(
      generated.test.images.to_host(), generated.test.labels, shape, class_count, "clusters/test");
  return split;
}

herd::config::run_config config_for(const std::string& algorithm) {
  auto config = herd::testing::small_session_config(4, 16);
  config.train.algorithm = algorithm;
  config.train.epochs = 2;
  // A [model] that cannot be built for this data (the cnn needs 28x28 images): the run must not
  // look at it.
  config.model = {};
  config.model.preset = "cnn";
  return config;
}

TEST(custom_model, the_example_network_gradient_matches_finite_differences) {
  const example::two_layer_network network(5, 7, 3);
  auto params = network.initial_parameters(11);
  // Non-zero biases, so the gradient of every slice is exercised away from zero.
  for (std::size_t i = 0; i < params.size(); ++i)
    params[i] += 0.05f * static_cast<float>(i % 5);
  const auto x = herd::testing::random_tensor({6, 5}, 12);
  const std::vector<std::int32_t> labels{0, 2, 1, 1, 0, 2};
  auto work = network.make_workspace();
  std::vector<float> grads(network.parameter_count());
  const auto& ops = herd::kernels::cpu_ops();
  network.loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work);
  herd::testing::expect_gradient_matches(
      params.data(), params.size(), grads.data(),
      [&] { return network.loss(ops, params.data(), x, labels, *work); }, "two_layer_network");
}

TEST(custom_model, trains_under_sync_and_under_solo_and_is_the_model_every_part_uses) {
  const auto data = clusters(4 * 16 * 40); // 40 rounds an epoch
  for (const char* algorithm : {"sync", "solo"}) {
    auto network = std::make_shared<counted_network>(32);
    herd::testing::temp_directory dir;
    auto config = config_for(algorithm);
    config.checkpoint.dir = dir.file("ckpt");
    config.checkpoint.every_seconds = 0;
    auto options = herd::testing::quick_session_options();
    options.model = network;
    train_session session(config, data, options);
    const auto summary = session.run();
    ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << algorithm << ": " << summary.error;
    ASSERT_TRUE(summary.final_test_accuracy.has_value()) << algorithm;
    EXPECT_GT(*summary.final_test_accuracy, 0.9) << algorithm;
    std::printf("%s: %llu rounds, test accuracy %.4f\n", algorithm,
                static_cast<unsigned long long>(summary.rounds), *summary.final_test_accuracy);
    // The workers stepped and the evaluator scored with this object, and the replicas hold its
    // layout.
    EXPECT_GE(network->steps.load(), summary.rounds) << algorithm;
    EXPECT_GT(network->evaluated_batches.load(), 0u) << algorithm;
    for (const auto& replica : session.final_parameters())
      EXPECT_EQ(replica.size(), network->parameter_count()) << algorithm;
    // The checkpoint's structure is the network's describe(): it loads for this model, and is
    // refused for the model [model] would build, naming the difference.
    ASSERT_FALSE(herd::checkpoint::list(config.checkpoint.dir).empty()) << algorithm;
    const auto loaded = herd::actors::load_checkpoint(config, *data, config.checkpoint.dir, network);
    ASSERT_EQ(loaded.state->workers.size(), 4u);
    auto plain = config;
    plain.model = {};
    plain.model.hidden = {16};
    try {
      herd::actors::load_checkpoint(plain, *data, config.checkpoint.dir);
      ADD_FAILURE() << algorithm << ": a checkpoint of another model was accepted";
    } catch (const herd::checkpoint::checkpoint_error& refused) {
      EXPECT_THAT(refused.what(), HasSubstr("two_layer_network")) << algorithm;
    }
  }
}

std::string refusal(const std::shared_ptr<const herd::models::model>& model) {
  auto options = herd::testing::quick_session_options();
  options.model = model;
  try {
    train_session session(config_for("sync"), clusters(4 * 16 * 4), options);
  } catch (const herd::config::invalid_config& refused) {
    EXPECT_EQ(refused.errors().front().key, "session_options.model");
    return refused.what();
  }
  return "accepted";
}

// A run stopped by its evaluations (a target accuracy, patience) whose evaluations all fail would
// train to its last epoch and end as if it had only missed its target: it fails after three in a
// row. Without such a rule the failures are notices, and the run ends by its epochs.
TEST(custom_model, a_run_stopped_by_evaluations_that_all_fail_fails) {
  const auto data = clusters(4 * 16 * 40);
  for (const bool stopped_by_evaluations : {true, false}) {
    auto network = std::make_shared<counted_network>(8);
    network->fail_evaluation = true;
    auto config = config_for("sync");
    config.train.epochs = 6;
    config.train.eval_every = 10;
    config.train.target_accuracy = stopped_by_evaluations ? 0.99 : 0.0;
    auto options = herd::testing::quick_session_options();
    options.model = network;
    train_session session(config, data, options);
    const auto summary = session.run();
    if (stopped_by_evaluations) {
      EXPECT_EQ(summary.stop_reason, stop_cause::error);
      EXPECT_THAT(summary.error,
                  HasSubstr("3 evaluations in a row failed, and train.target-accuracy or "
                            "train.patience stops the run by them; the last: "));
      EXPECT_THAT(summary.error, HasSubstr("no probabilities for you"));
      EXPECT_LT(summary.epochs, 6.0);
    } else {
      EXPECT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
    }
  }
}

TEST(custom_model, a_model_that_does_not_fit_the_data_is_refused_naming_both) {
  EXPECT_THAT(refusal(std::make_shared<example::two_layer_network>(20, 8, class_count)),
              AllOf(HasSubstr("session_options.model"), HasSubstr("\"two-layer\""),
                    HasSubstr("takes samples of 20 floats"),
                    HasSubstr("\"clusters/train\" has samples of 24 floats")));
  EXPECT_THAT(refusal(std::make_shared<example::two_layer_network>(features, 8, 3)),
              AllOf(HasSubstr("scores 3 classes"), HasSubstr("\"clusters/train\" has 5"),
                    HasSubstr("labels 0 to 4")));
  // More classes than the labels use is allowed: the extra scores are never a label.
  EXPECT_EQ(refusal(std::make_shared<example::two_layer_network>(features, 8, 7)), "accepted");
  // Every replica would read the initial tensor past its end.
  auto short_start = std::make_shared<counted_network>(8);
  short_start->short_initial_parameters = true;
  EXPECT_THAT(refusal(short_start), HasSubstr("initial_parameters() gives 5 floats, but its "
                                              "parameter_count() is " +
                                              std::to_string(short_start->parameter_count())));
}

// A job that cannot start (its model's workspace throws as its workers are spawned) throws from
// job::start, and nothing of it reaches the caller's callbacks: they would tell of a job the
// caller never got (on_finished used to say "interrupted").
TEST(custom_model, a_job_that_fails_to_start_calls_no_callback) {
  auto network = std::make_shared<counted_network>(8);
  network->fail_workspace = true;
  herd::job_options options;
  options.model = network;
  std::atomic<int> finished{0};
  options.on_finished = [&finished](const herd::actors::run_summary&) { ++finished; };
  EXPECT_THROW(static_cast<void>(herd::job::start(config_for("sync"), clusters(960), options)),
               std::exception);
  std::this_thread::sleep_for(std::chrono::milliseconds(200)); // a late callback would come now
  EXPECT_EQ(finished.load(), 0);
}

// Through spawn_job in a service's system nothing of such a job is spawned (the workspace is made
// once before): the system runs as many actors after the refusal as before, and the job's name is
// free for a retry at once.
TEST(custom_model, a_model_whose_workspace_throws_is_refused_before_anything_is_spawned) {
  caf::actor_system_config config;
  herd::add_message_types(config);
  caf::actor_system system{config};
  const auto before = system.registry().running();
  auto network = std::make_shared<counted_network>(8);
  network->fail_workspace = true;
  herd::job_options options;
  options.model = network;
  options.name = "retried";
  options.metrics = std::make_shared<herd::monitoring::registry>();
  EXPECT_THROW(
      static_cast<void>(herd::spawn_job(system, config_for("sync"), clusters(960), options)),
      std::runtime_error);
  EXPECT_EQ(system.registry().running(), before);
  network->fail_workspace = false;
  const auto retried = herd::spawn_job(system, config_for("sync"), clusters(960), options);
  caf::anon_send_exit(retried.actor, caf::exit_reason::user_shutdown);
}

} // namespace
