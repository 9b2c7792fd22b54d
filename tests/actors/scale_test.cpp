// 256 worker actors in one process under every algorithm (label slow): the run goes on with every
// worker, and the control plane handles a bounded number of messages per round: the coordinator
// one per round and at most one per step (the workers post their step reports into its inbox,
// and it is woken once per batch), an aggregator one per round and one per member it asked, so
// its work per round grows linearly with the members, not with P. bench_scale measures the time.
#include "actors/train_session.hpp"
#include "herd/dataset.hpp"

#include <gtest/gtest.h>

#include <string>

#include "support/session_config.hpp"

namespace {

using herd::actors::stop_cause;
using herd::actors::train_session;

class at_scale : public testing::TestWithParam<std::string> {};

TEST_P(at_scale, two_hundred_fifty_six_workers_keep_the_control_plane_linear) {
  constexpr int workers = 256;
  auto config = herd::testing::small_session_config(workers, 8);
  config.train.algorithm = GetParam();
  config.train.epochs = 1000;
  config.train.max_seconds = 2.0;
  config.imbalance.kind = "random"; // every step lasts at least 1 ms
  config.imbalance.k = workers;
  config.imbalance.delay_ms = 1.0;
  const auto data = std::make_shared<const herd::models::train_test_split>(
      herd::models::make_synthetic_split(20000, 500, 784, 10, 5));
  train_session session(config, data, herd::testing::quick_session_options());
  const auto summary = session.run();
  ASSERT_TRUE(summary.error.empty()) << summary.error;
  EXPECT_EQ(summary.stop_reason, stop_cause::max_seconds);
  ASSERT_EQ(summary.per_worker.size(), static_cast<std::size_t>(workers));
  for (const auto& worker : summary.per_worker) {
    EXPECT_TRUE(worker.live) << worker.worker;
    EXPECT_GT(worker.steps, 0u) << worker.worker;
  }
  ASSERT_GT(summary.rounds, 2u);
  const auto& control = summary.control;
  const auto contributions =
      summary.fresh_contributions + summary.stale_contributions + summary.empty_contributions;
  // An aggregator handles a round's plan and each answer of a member it asked.
  EXPECT_EQ(control.aggregator_messages, summary.rounds + contributions);
  // The coordinator handles each round's report, and a message per batch of step reports its
  // workers posted (a few may come after the stop): where 256 workers share 2 cores, batches of
  // more than one, so fewer messages than steps.
  EXPECT_GE(control.coordinator_messages, summary.rounds);
  EXPECT_LE(control.coordinator_messages,
            summary.steps + summary.rounds + static_cast<std::uint64_t>(workers));
  EXPECT_LT(control.coordinator_messages, summary.steps);
  EXPECT_GT(control.coordinator_seconds, 0.0);
  EXPECT_GT(control.aggregator_seconds, 0.0);
}

INSTANTIATE_TEST_SUITE_P(algorithms, at_scale,
                         testing::Values("sync", "solo", "majority", "quorum", "preduce",
                                         "wagma"),
                         [](const testing::TestParamInfo<std::string>& algorithm) {
                           return algorithm.param;
                         });

} // namespace
