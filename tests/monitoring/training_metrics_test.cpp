// Herd's metric families on a registry: names, labels and values as an operator's queries
// expect them, fed the way the coordinator feeds them.
#include "monitoring/training_metrics.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using herd::monitoring::training_metrics;
using testing::HasSubstr;

training_metrics::identity two_workers() {
  training_metrics::identity who;
  who.job = "test";
  who.node = "n1";
  who.algorithm = "solo";
  who.workers = 2;
  who.window_seconds = 10.0;
  return who;
}

// A reduction near cluster.data-timeout-ms's default (30 s) is told apart from one far past it:
// the buckets go on to 42 s.
TEST(training_metrics, a_reduction_near_the_data_timeout_lands_in_a_bucket_of_its_own) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics metrics(registry, two_workers());
  training_metrics::round_record round;
  round.members = 2;
  round.fresh = 2;
  round.staleness_rounds = {0, 0};
  round.fresh_arrival_seconds = {0.1, 0.1};
  round.reduce_seconds = 25.0;
  metrics.round_finished(round);
  const std::string text = herd::monitoring::expose(*registry);
  EXPECT_THAT(text, HasSubstr(R"(herd_reduce_seconds_bucket{job="test",le="20.97152"} 0)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_reduce_seconds_bucket{job="test",le="41.94304"} 1)"));
}

TEST(training_metrics, steps_rounds_and_losses_appear_under_their_names_and_labels) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics metrics(registry, two_workers());
  metrics.step_finished(0, 1, 0.05, 0.010, 0.0, 32);
  metrics.step_finished(1, 1, 0.1, 0.030, 0.0, 32);
  metrics.step_finished(0, 2, 0.1, 0.010, 0.005, 32, true); // after its round had closed
  training_metrics::round_record round;
  round.members = 2;
  round.fresh = 1;
  round.none = 1;
  round.staleness_rounds = {0};
  round.fresh_arrival_seconds = {0.2};
  round.reduce_seconds = 0.001;
  round.reduce_bytes = 4096;
  round.samples = 32;
  metrics.round_finished(round);
  round.full_sync = true;
  round.fresh = 2;
  round.none = 0;
  round.staleness_rounds = {0, 1};
  round.fresh_arrival_seconds = {0.2, 0.5};
  round.samples = 32; // a late gradient's 32 of the 96 computed were discarded, say
  metrics.round_finished(round);
  metrics.train_loss(0.75);
  metrics.test_accuracy(0.5);
  metrics.learning_rate(0.0125);
  // Worker 1, a step behind, has been in its second step for 0.01 s: less than its typical 0.03.
  metrics.refresh(0.11);
  std::string text = herd::monitoring::expose(*registry);
  EXPECT_THAT(text, HasSubstr(R"(herd_samples_total{job="test",node="n1",worker="0"} 64)"));
  EXPECT_THAT(text,
              HasSubstr(R"(herd_worker_late_steps_total{job="test",node="n1",worker="0"} 1)"));
  EXPECT_THAT(text,
              HasSubstr(R"(herd_worker_late_steps_total{job="test",node="n1",worker="1"} 0)"));
  // Computed (96 in all) is not applied: what the rounds took.
  EXPECT_THAT(text, HasSubstr(R"(herd_samples_applied_total{job="test"} 64)"));
  EXPECT_THAT(text,
              HasSubstr(R"(herd_worker_step_seconds_count{job="test",node="n1",worker="1"} 1)"));
  // The first step's wait is not observed: nothing was waited for.
  EXPECT_THAT(text,
              HasSubstr(R"(herd_worker_wait_seconds_count{job="test",node="n1",worker="0"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_worker_lag_steps{job="test",node="n1",worker="1"} 1)"));
  EXPECT_THAT(text,
              HasSubstr(R"(herd_worker_straggler_score{job="test",node="n1",worker="1"} 3)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_imbalance_ratio{job="test"} 3)"));
  EXPECT_THAT(text,
              HasSubstr(R"(herd_rounds_total{algorithm="solo",job="test",kind="partial"} 1)"));
  EXPECT_THAT(text,
              HasSubstr(R"(herd_rounds_total{algorithm="solo",job="test",kind="full_sync"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_contributions_total{job="test",kind="fresh"} 3)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_contributions_total{job="test",kind="none"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_staleness_steps_count{job="test"} 3)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_staleness_steps_sum{job="test"} 1)"));
  EXPECT_THAT(text,
              HasSubstr(R"(herd_round_arrival_skew_seconds_sum{algorithm="solo",job="test"} 0.3)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_group_size_sum{job="test"} 4)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_reduce_bytes_total{job="test"} 8192)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_train_loss{job="test"} 0.75)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_test_accuracy{job="test"} 0.5)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_learning_rate{job="test"} 0.0125)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_worker_up{job="test",node="n1",worker="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_worker_lag_steps{job="test",node="n1",worker="1"} )"));
  metrics.worker_lost(1);
  metrics.refresh(1.0);
  text = herd::monitoring::expose(*registry);
  EXPECT_THAT(text, HasSubstr(R"(herd_worker_up{job="test",node="n1",worker="1"} 0)"));
  // A lost worker's lag and score end: a 0 read as the front runner and the fastest worker.
  EXPECT_EQ(text.find(R"(herd_worker_lag_steps{job="test",node="n1",worker="1"})"),
            std::string::npos);
  EXPECT_EQ(text.find(R"(herd_worker_straggler_score{job="test",node="n1",worker="1"})"),
            std::string::npos);
}

// A round that completed without some of its members counts once, however many were missing.
TEST(training_metrics, rounds_without_some_members_are_counted) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics metrics(registry, two_workers());
  EXPECT_THAT(herd::monitoring::expose(*registry),
              HasSubstr(R"(herd_rounds_missing_members_total{algorithm="solo",job="test"} 0)"));
  training_metrics::round_record round;
  round.members = 2;
  metrics.round_finished(round);
  round.members = 1;
  round.missing = 1;
  metrics.round_finished(round);
  round.missing = 3;
  metrics.round_finished(round);
  EXPECT_THAT(herd::monitoring::expose(*registry),
              HasSubstr(R"(herd_rounds_missing_members_total{algorithm="solo",job="test"} 2)"));
}

// Aborted rounds and re-keys of the data plane are counted from 0, so that an alert on their
// increase has a series to read before the first one.
TEST(training_metrics, aborted_rounds_and_data_plane_re_keys_are_counted) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics metrics(registry, two_workers());
  auto exposed = herd::monitoring::expose(*registry);
  EXPECT_THAT(exposed, HasSubstr(R"(herd_rounds_aborted_total{algorithm="solo",job="test"} 0)"));
  EXPECT_THAT(exposed, HasSubstr(R"(herd_data_plane_rekeys_total{job="test"} 0)"));
  metrics.round_aborted();
  metrics.round_aborted();
  metrics.data_plane_rekeyed();
  exposed = herd::monitoring::expose(*registry);
  EXPECT_THAT(exposed, HasSubstr(R"(herd_rounds_aborted_total{algorithm="solo",job="test"} 2)"));
  EXPECT_THAT(exposed, HasSubstr(R"(herd_data_plane_rekeys_total{job="test"} 1)"));
}

TEST(training_metrics, a_second_run_on_the_same_registry_continues_its_counters) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  {
    training_metrics first(registry, two_workers());
    first.step_finished(0, 1, 0.1, 0.01, 0.0, 32);
  }
  training_metrics second(registry, two_workers());
  second.step_finished(0, 1, 0.1, 0.01, 0.0, 32);
  EXPECT_THAT(herd::monitoring::expose(*registry),
              HasSubstr(R"(herd_samples_total{job="test",node="n1",worker="0"} 64)"));
}

} // namespace

namespace {

TEST(training_metrics, workers_of_a_cluster_carry_the_name_of_the_node_that_hosts_them) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  auto who = two_workers();
  who.node = "coordinator-vm";
  who.worker_nodes = {"node-a", "node-b"};
  training_metrics metrics(registry, who);
  metrics.step_finished(1, 1, 0.1, 0.030, 0.0, 32);
  const std::string text = herd::monitoring::expose(*registry);
  EXPECT_NE(text.find("herd_worker_up{job=\"test\",node=\"node-a\",worker=\"0\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("herd_samples_total{job=\"test\",node=\"node-b\",worker=\"1\"} 32"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("coordinator-vm"), std::string::npos) << text;
}

TEST(training_metrics, a_worker_whose_slot_a_joining_node_took_is_up_under_that_nodes_name) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  auto who = two_workers();
  who.worker_nodes = {"node-a", "node-b"};
  training_metrics metrics(registry, who);
  metrics.step_finished(1, 1, 0.1, 0.030, 0.0, 32);
  metrics.worker_lost(1);
  metrics.worker_joined(1, "node-c");
  metrics.step_finished(1, 2, 0.2, 0.030, 0.0, 32);
  const std::string text = herd::monitoring::expose(*registry);
  EXPECT_EQ(text.find("node=\"node-b\""), std::string::npos)
      << "the series of the node it left end (no alert for a worker that is live again)\n"
      << text;
  EXPECT_NE(text.find("herd_worker_up{job=\"test\",node=\"node-c\",worker=\"1\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("herd_samples_total{job=\"test\",node=\"node-c\",worker=\"1\"} 32"),
            std::string::npos)
      << text;
}

// A resumed run's workers go on from their step numbers, and a joining node's worker from a live
// peer's: until its first step is reported, neither reads as the run's whole step count behind.
TEST(training_metrics, lags_count_from_where_a_resumed_or_joined_worker_goes_on) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics resumed(registry, two_workers());
  resumed.resumed_steps(0, 1000);
  resumed.resumed_steps(1, 1000);
  resumed.step_finished(0, 1001, 0.1, 0.01, 0.0, 32);
  resumed.step_finished(0, 1002, 0.2, 0.01, 0.0, 32);
  resumed.refresh(0.2);
  auto text = herd::monitoring::expose(*registry);
  EXPECT_THAT(text, HasSubstr(R"(herd_worker_lag_steps{job="test",node="n1",worker="1"} 2)"));

  auto joined_registry = std::make_shared<herd::monitoring::registry>();
  training_metrics joined(joined_registry, two_workers());
  for (std::uint64_t step = 1; step <= 500; ++step)
    joined.step_finished(0, step, 0.001 * static_cast<double>(step), 0.001, 0.0, 32);
  joined.worker_lost(1);
  joined.worker_joined(1, "n2");
  joined.refresh(0.6);
  text = herd::monitoring::expose(*joined_registry);
  EXPECT_THAT(text, HasSubstr(R"(herd_worker_lag_steps{job="test",node="n2",worker="1"} 0)"));
  joined.step_finished(0, 501, 0.7, 0.001, 0.0, 32);
  joined.refresh(0.7);
  text = herd::monitoring::expose(*joined_registry);
  EXPECT_THAT(text, HasSubstr(R"(herd_worker_lag_steps{job="test",node="n2",worker="1"} 1)"));
}

// A node that is lost and joins again flips herd_worker_up 1, 0, 1 between two scrapes unseen:
// the losses and joins are counted.
TEST(training_metrics, losses_and_joins_are_counted) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics metrics(registry, two_workers());
  EXPECT_THAT(herd::monitoring::expose(*registry),
              HasSubstr("herd_worker_losses_total{job=\"test\"} 0\n"));
  for (int flap = 0; flap < 3; ++flap) {
    metrics.worker_lost(1);
    metrics.worker_joined(1, "n1");
  }
  metrics.worker_lost(0);
  const std::string text = herd::monitoring::expose(*registry);
  EXPECT_THAT(text, HasSubstr("herd_worker_losses_total{job=\"test\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("herd_worker_joins_total{job=\"test\"} 3\n"));
}

// What a crash would lose, live: with checkpoints on, the training since the state the newest
// checkpoint holds (from the start or resume until the first), and the checkpoints written and
// failed. A run without checkpoint.dir has none of these series.
TEST(training_metrics, the_training_a_crash_would_lose_counts_from_the_newest_checkpoint) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics metrics(registry, two_workers());
  metrics.refresh(5.0);
  EXPECT_EQ(herd::monitoring::expose(*registry).find("checkpoint"), std::string::npos);
  metrics.checkpoints_on(60.0, 10.0); // resumed at 10 s of training
  metrics.refresh(25.0);
  std::string text = herd::monitoring::expose(*registry);
  EXPECT_THAT(text, HasSubstr("herd_unsaved_training_seconds{job=\"test\"} 15\n"));
  EXPECT_THAT(text, HasSubstr("herd_checkpoint_interval_seconds{job=\"test\"} 60\n"));
  EXPECT_THAT(text, HasSubstr("herd_checkpoints_written_total{job=\"test\"} 0\n"));
  metrics.checkpoint_written(70.0, 0.25);
  metrics.checkpoint_failed(); // a later one: the newest written still holds 70 s
  metrics.refresh(100.0);
  text = herd::monitoring::expose(*registry);
  EXPECT_THAT(text, HasSubstr("herd_unsaved_training_seconds{job=\"test\"} 30\n"));
  EXPECT_THAT(text, HasSubstr("herd_checkpoints_written_total{job=\"test\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("herd_checkpoint_failures_total{job=\"test\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("herd_checkpoint_pause_seconds{job=\"test\"} 0.25\n"));
  metrics.close(); // the series go with the job
  EXPECT_EQ(herd::monitoring::expose(*registry).find("herd_unsaved_training_seconds{"),
            std::string::npos);
}

// What a barrier would have cost, live: the counters grow by the comparison's increase, and a
// resumed run's go on from the checkpoint's totals instead of counting them again.
TEST(training_metrics, waiting_against_a_barrier_is_counted_from_the_ledgers_totals) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics metrics(registry, two_workers());
  metrics.barrier_comparison(0.5, 2.0, 10);
  metrics.barrier_comparison(0.75, 3.5, 16);
  std::string text = herd::monitoring::expose(*registry);
  EXPECT_THAT(text, HasSubstr("herd_waited_seconds_total{job=\"test\"} 0.75\n"));
  EXPECT_THAT(text, HasSubstr("herd_barrier_wait_seconds_total{job=\"test\"} 3.5\n"));
  EXPECT_THAT(text, HasSubstr("herd_compared_steps_total{job=\"test\"} 16\n"));

  auto resumed_registry = std::make_shared<herd::monitoring::registry>();
  training_metrics resumed(resumed_registry, two_workers());
  resumed.resumed_comparison(0.75, 3.5, 16); // a fresh process: its counters start at 0
  resumed.barrier_comparison(1.0, 4.0, 20);
  text = herd::monitoring::expose(*resumed_registry);
  EXPECT_THAT(text, HasSubstr("herd_waited_seconds_total{job=\"test\"} 0.25\n"));
  EXPECT_THAT(text, HasSubstr("herd_barrier_wait_seconds_total{job=\"test\"} 0.5\n"));
  EXPECT_THAT(text, HasSubstr("herd_compared_steps_total{job=\"test\"} 4\n"));
}

} // namespace

namespace {

// A closed run's series leave the registry, another job's stay, and calls after close() change
// nothing (the coordinator may still hear a late step).
TEST(training_metrics, closing_removes_the_jobs_series_and_only_them) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics ended(registry, two_workers());
  auto other_job = two_workers();
  other_job.job = "other";
  training_metrics running(registry, other_job);
  ended.step_finished(0, 1, 0.1, 0.010, 0.0, 32);
  running.step_finished(0, 1, 0.1, 0.010, 0.0, 32);
  ASSERT_THAT(herd::monitoring::expose(*registry), HasSubstr(R"(job="test")"));
  ended.close();
  ended.step_finished(1, 1, 0.2, 0.010, 0.0, 32);
  ended.refresh(1.0);
  ended.worker_lost(1);
  const auto text = herd::monitoring::expose(*registry);
  EXPECT_EQ(text.find(R"(job="test")"), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr(R"(herd_samples_total{job="other",node="n1",worker="0"} 32)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_worker_up{job="other",node="n1",worker="1"} 1)"));
  EXPECT_FALSE(ended.straggler());
}

// Loss, accuracy, the imbalance ratio and the workers' scores have no series before their first
// value: a dashboard shows no data rather than a perfect loss of 0, an accuracy of 0 or a ratio
// under the balanced 1.
TEST(training_metrics, loss_accuracy_imbalance_and_scores_appear_with_their_first_value) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  training_metrics metrics(registry, two_workers());
  metrics.train_loss(0.0); // the coordinator's recent loss before any step
  metrics.refresh(0.5);    // no worker has a typical step time yet
  auto text = herd::monitoring::expose(*registry);
  for (const char* name :
       {"herd_train_loss{", "herd_test_accuracy{", "herd_imbalance_ratio{",
        "herd_worker_straggler_score{", "herd_learning_rate{", "herd_validation_accuracy{"})
    EXPECT_EQ(text.find(name), std::string::npos) << name << " in\n" << text;
  EXPECT_THAT(text, HasSubstr(R"(herd_worker_up{job="test",node="n1",worker="0"} 1)"));
  metrics.step_finished(0, 1, 0.1, 0.010, 0.0, 32);
  metrics.train_loss(2.25);
  metrics.test_accuracy(0.125);
  text = herd::monitoring::expose(*registry);
  EXPECT_THAT(text, HasSubstr(R"(herd_train_loss{job="test"} 2.25)"));
  EXPECT_THAT(text, HasSubstr(R"(herd_test_accuracy{job="test"} 0.125)"));
  EXPECT_EQ(text.find("herd_validation_accuracy{"), std::string::npos);
  metrics.validation_accuracy(0.25);
  EXPECT_THAT(herd::monitoring::expose(*registry),
              HasSubstr(R"(herd_validation_accuracy{job="test"} 0.25)"));
}

// A service's registry that already holds one of Herd's names as another type refuses the job,
// and the series registered before the clash leave with it: a worker up forever would alert.
TEST(training_metrics, a_name_clash_in_a_shared_registry_leaves_none_of_the_jobs_series) {
  auto registry = std::make_shared<herd::monitoring::registry>();
  registry->add_histogram("herd_train_loss", "the service's own")
      .add({{"job", "service"}}, herd::monitoring::bucket_boundaries{1.0});
  EXPECT_THROW(training_metrics(registry, two_workers()), std::invalid_argument);
  const auto text = herd::monitoring::expose(*registry);
  EXPECT_EQ(text.find(R"(job="test")"), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr(R"(herd_train_loss_count{job="service"} 0)"));
}

} // namespace
