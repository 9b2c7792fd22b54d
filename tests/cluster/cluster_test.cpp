// Runs across processes, with the coordinator and every node as actor systems of this process
// (each its own node in CAF's sense, joined over loopback TCP; the data plane is Gloo over
// loopback): replicas on different nodes go through the same states, every gradient is
// accounted for, every algorithm runs unchanged, and the cluster refuses what it cannot run.
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"
#include "comm/gloo_plane.hpp"
#include "herd/metrics.hpp"
#include "kernels/machine.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cmath>
#include <functional>
#include <future>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "cluster/cluster_node.hpp"
#include "cluster/cluster_session.hpp"
#include "support/eventually.hpp"
#include "support/failing_backward_ops.hpp"
#include "support/recording_probe.hpp"
#include "support/slow_backward_ops.hpp"
#include "support/temp_directory.hpp"
#include "support/test_certificates.hpp"

namespace {

using herd::actors::stop_cause;
using herd::actors::run_summary;
using herd::cluster::cluster_options;
using herd::cluster::cluster_session;
using herd::cluster::node_options;
using herd::cluster::node_outcome;
using herd::config::run_config;
using herd::testing::eventually;
using herd::testing::recording_probe;

constexpr int batch = 8;

struct job {
  run_config config;
  std::shared_ptr<const herd::models::train_test_split> data;
};

// `workers` workers in all, one epoch of `steps` steps each.
job make_job(const std::string& algorithm, int workers, int steps) {
  job made;
  auto& config = made.config;
  config.train.algorithm = algorithm;
  config.train.workers = workers;
  config.train.batch_size = batch;
  config.train.lr = 0.05;
  config.train.momentum = 0.9;
  config.train.epochs = 1;
  config.train.seed = 7;
  config.train.eval_every = 100000;
  config.data.dataset = "synthetic";
  config.model.hidden = {16};
  config.solo.sync_every = 4;
  config.majority.sync_every = 4;
  config.imbalance.kind = "random";
  config.imbalance.k = 1;
  config.imbalance.delay_ms = 3.0;
  made.data = std::make_shared<herd::models::train_test_split>(herd::models::make_synthetic_split(
      static_cast<std::size_t>(workers) * static_cast<std::size_t>(steps * batch), 200, 24, 5, 3));
  return made;
}

// A job that runs until the test stops it (train.max-seconds is a safety net).
job make_endless_job(const std::string& algorithm, int workers) {
  auto made = make_job(algorithm, workers, 40);
  made.config.train.epochs = 100000;
  made.config.train.max_seconds = 120;
  return made;
}

struct cluster_run {
  run_summary summary;
  std::vector<node_outcome> nodes;
};

node_options node_for(const job& j, std::uint16_t port, int workers,
                      std::shared_ptr<herd::actors::worker_probe> probe) {
  node_options options;
  options.coordinator_host = "127.0.0.1";
  options.coordinator_port = port;
  options.workers = workers;
  options.data_host = "127.0.0.1";
  options.cluster.join_timeout_s = 60;
  options.load_data = [data = j.data](const run_config&) { return data; };
  options.probe = std::move(probe);
  return options;
}

// Whether each of workers 0 to 2 has applied at least `rounds` rounds.
bool three_workers_applied(const recording_probe& probe, std::size_t rounds) {
  return probe.rounds(0) >= rounds && probe.rounds(1) >= rounds && probe.rounds(2) >= rounds;
}

// Collects the coordinator's notices.
class notice_log final : public herd::actors::run_observer {
public:
  void on_notice(std::string_view text) override {
    std::lock_guard<std::mutex> guard(mutex_);
    notices_.emplace_back(text);
  }
  std::vector<std::string> containing(const std::string& text) const {
    std::lock_guard<std::mutex> guard(mutex_);
    std::vector<std::string> found;
    for (const auto& notice : notices_)
      if (notice.find(text) != std::string::npos)
        found.push_back(notice);
    return found;
  }

private:
  mutable std::mutex mutex_;
  std::vector<std::string> notices_;
};

// A coordinator's options, listening on loopback; its notices go to `notices` where given.
cluster_options on_loopback(notice_log* notices = nullptr) {
  cluster_options options;
  options.listen_host = "127.0.0.1";
  options.observer = notices;
  return options;
}

// A coordinator and one node per entry of `node_workers`, each node on a thread of its own.
cluster_run run_cluster(job j, const std::vector<int>& node_workers,
                        std::shared_ptr<herd::actors::worker_probe> probe = nullptr,
                        const herd::kernels::ops* ops = nullptr) {
  j.config.cluster.min_nodes = static_cast<int>(node_workers.size());
  auto options = on_loopback();
  options.progress_interval = std::chrono::milliseconds(20);
  cluster_session session(j.config, j.data, options);
  cluster_run run;
  run.nodes.resize(node_workers.size());
  std::vector<std::thread> nodes;
  for (std::size_t i = 0; i < node_workers.size(); ++i)
    nodes.emplace_back([&, i] {
      auto node = node_for(j, session.port(), node_workers[i], probe);
      if (ops != nullptr)
        node.ops = ops;
      run.nodes[i] = herd::cluster::run_node(std::move(node));
    });
  auto summary = session.wait_for(std::chrono::minutes(3));
  for (auto& node : nodes)
    node.join();
  EXPECT_TRUE(summary.has_value()) << "the run did not end within 3 minutes";
  if (summary)
    run.summary = *summary;
  return run;
}

std::size_t parameter_count(const job& j) {
  return herd::actors::make_model(j.config, j.data->train)->parameter_count();
}

double norm(const std::vector<double>& values) {
  return std::sqrt(std::inner_product(values.begin(), values.end(), values.begin(), 0.0));
}

TEST(cluster_runs, replicas_on_different_nodes_go_through_the_same_states) {
  for (const char* algorithm : {"sync", "solo", "majority"}) {
    const auto j = make_job(algorithm, 4, 24);
    auto probe = std::make_shared<recording_probe>(4, parameter_count(j));
    const auto run = run_cluster(j, {2, 1, 1}, probe);
    ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs)
        << algorithm << ": " << run.summary.error;
    for (const auto& node : run.nodes)
      EXPECT_TRUE(node.ok) << algorithm << ": " << node.error;
    EXPECT_EQ(run.summary.workers, 4);
    EXPECT_EQ(run.summary.aborted_rounds, 0u);
    ASSERT_GT(run.summary.rounds, 0u);
    const auto& fingerprints = probe->fingerprints();
    for (int w = 0; w < 4; ++w) {
      const auto& mine = fingerprints[static_cast<std::size_t>(w)];
      ASSERT_EQ(mine.size(), run.summary.rounds) << algorithm << " worker " << w;
      for (const auto& [round, hash] : mine)
        ASSERT_EQ(hash, fingerprints[0].at(round))
            << algorithm << ": worker " << w << " (another node than worker 0's, or the same) "
            << "differs after round " << round;
    }
  }
}

// With gradient buckets (two, cut at 2,048 floats of 6,085 where the second layer begins;
// backward slowed so that rounds surely read it)
// rounds take gradients backward is still finishing, on both nodes, and pre-reduce and send them
// bucket by bucket: still nothing is lost, and the replicas stay one.
TEST(cluster_runs, every_gradient_is_accounted_for_across_nodes) {
  const herd::testing::slow_backward_ops slow_ops(std::chrono::milliseconds(1));
  for (const double bucket_mb : {0.0, 0.004}) {
    const std::string label = "comm.bucket-mb = " + std::to_string(bucket_mb);
    auto j = make_job("solo", 4, 30);
    j.config.solo.late_gradients = "accumulate"; // every gradient applied or held, none dropped
    j.config.comm.bucket_mb = bucket_mb;
    if (bucket_mb > 0)
      j.config.model.hidden = {64, 64};
    auto probe = std::make_shared<recording_probe>(4, parameter_count(j));
    const auto run = run_cluster(j, {1, 2, 1}, probe, bucket_mb > 0 ? &slow_ops : nullptr);
    ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << label << ": " << run.summary.error;
    ASSERT_TRUE(probe->all_stopped());
    EXPECT_EQ(run.summary.rounds_in_backward > 0, bucket_mb > 0) << label;
    const auto count = probe->computed()[0].size();
    std::vector<double> computed(count, 0.0), difference(count, 0.0);
    for (std::size_t w = 0; w < 4; ++w)
      for (std::size_t i = 0; i < count; ++i) {
        computed[i] += probe->computed()[w][i];
        difference[i] -= probe->computed()[w][i] - probe->unsent()[w][i];
      }
    // Every round's result is sum / P, and every worker applied every round.
    for (std::size_t i = 0; i < count; ++i)
      difference[i] += 4.0 * probe->applied()[0][i];
    EXPECT_LT(norm(difference), 1e-5 * norm(computed))
        << label << ": |applied * P + unsent - computed| = " << norm(difference) << " of "
        << norm(computed);
    for (std::size_t w = 1; w < 4; ++w)
      EXPECT_EQ(probe->fingerprints()[w], probe->fingerprints()[0]) << label << " worker " << w;
  }
}

TEST(cluster_runs, the_model_averaging_algorithms_run_unchanged_across_nodes) {
  for (const char* algorithm : {"preduce", "wagma"}) {
    const auto j = make_job(algorithm, 4, 24);
    const auto run = run_cluster(j, {2, 2});
    EXPECT_EQ(run.summary.stop_reason, stop_cause::epochs)
        << algorithm << ": " << run.summary.error;
    EXPECT_GT(run.summary.rounds, 0u) << algorithm;
    EXPECT_EQ(run.summary.aborted_rounds, 0u) << algorithm;
    EXPECT_TRUE(run.summary.final_test_accuracy.has_value()) << algorithm;
    for (const auto& node : run.nodes)
      EXPECT_TRUE(node.ok) << algorithm << ": " << node.error;
  }
}

// The optimizer's state and the schedule's factor cross processes: sync under AdamW and a step
// schedule across two nodes ends where the same run in one process does (the ring sums in
// another order, so near it), far from where that run ends under a constant rate or under SGD.
TEST(cluster_runs, adamw_under_a_step_schedule_ends_where_one_process_does) {
  auto j = make_job("sync", 4, 24);
  auto& train = j.config.train;
  train.epochs = 2;
  train.optimizer = "adamw";
  train.momentum = run_config{}.train.momentum; // SGD's; adamw has its betas
  train.lr = 0.01;
  train.lr_schedule = "step";
  train.lr_decay = 0.1;
  train.lr_decay_epochs = 1;
  const auto in_one_process = [&j](const run_config& config) {
    herd::actors::session_options options;
    options.progress_interval = std::chrono::milliseconds(20);
    herd::actors::train_session session(config, j.data, options);
    const auto summary = session.run();
    EXPECT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error;
    return session.final_parameters().at(0);
  };
  const auto local = in_one_process(j.config);
  auto constant = j.config;
  constant.train.lr_schedule = "constant";
  constant.train.lr_decay = run_config{}.train.lr_decay;
  constant.train.lr_decay_epochs = run_config{}.train.lr_decay_epochs;
  auto sgd = j.config;
  sgd.train.optimizer = "sgd";
  sgd.train.momentum = 0.9;

  auto probe = std::make_shared<recording_probe>(4, parameter_count(j));
  const auto run = run_cluster(j, {2, 2}, probe);
  ASSERT_EQ(run.summary.stop_reason, stop_cause::epochs) << run.summary.error;
  const auto& across = probe->last_applied()[3]; // a worker of the second node
  ASSERT_EQ(across.size(), local.size());
  const auto distance = [](const std::vector<float>& a, const std::vector<float>& b) {
    double sum = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
      sum += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    return std::sqrt(sum);
  };
  const double apart = distance(across, local);
  for (const auto& [name, other] :
       {std::pair{"a constant rate", in_one_process(constant)}, {"sgd", in_one_process(sgd)}})
    EXPECT_LT(apart, 0.05 * distance(other, local))
        << "across processes " << apart << " from one process; " << name << " ends "
        << distance(other, local) << " from it";
}

TEST(cluster_runs, settings_that_do_not_fit_the_nodes_workers_are_refused_by_key) {
  auto j = make_job("solo", 4, 10);
  j.config.imbalance.kind = "persistent";
  j.config.imbalance.workers = {5}; // valid with the file's 8 workers, not with the nodes' 3
  j.config.train.workers = 8;
  const auto run = run_cluster(j, {2, 1});
  EXPECT_EQ(run.summary.stop_reason, stop_cause::error);
  EXPECT_NE(run.summary.error.find("imbalance.workers"), std::string::npos) << run.summary.error;
  for (const auto& node : run.nodes) {
    EXPECT_FALSE(node.ok);
    EXPECT_NE(node.error.find("imbalance.workers"), std::string::npos) << node.error;
  }
}

// A run that fails on the coordinator fails on its nodes too: each still connected hears why and
// ends failed (herd node exits 1), not "the job is over" as if it had ended well.
TEST(cluster_runs, a_run_that_fails_fails_on_every_node_with_the_coordinators_reason) {
  auto j = make_job("sync", 2, 10);
  const herd::testing::failing_backward_ops every_step_after_the_third(3, true);
  const auto run = run_cluster(j, {1, 1}, nullptr, &every_step_after_the_third);
  ASSERT_EQ(run.summary.stop_reason, stop_cause::error);
  ASSERT_FALSE(run.summary.error.empty());
  for (const auto& node : run.nodes) {
    EXPECT_FALSE(node.ok);
    EXPECT_EQ(node.error, "the job failed on the coordinator: " + run.summary.error);
  }
}

// The coordinator evaluates, so a node needs the training files only: validation files of the
// run's own are not read there (a node's machine need not hold them).
TEST(cluster_runs, a_node_loads_the_training_data_without_the_validation_files) {
  auto j = make_job("sync", 2, 10);
  // The node's load_data below stands in for the files: only the settings it is given count.
  j.config.data.dataset = "npy";
  j.config.data.train_features = "train_x.npy";
  j.config.data.train_labels = "train_y.npy";
  j.config.data.test_features = "test_x.npy";
  j.config.data.test_labels = "test_y.npy";
  j.config.data.validation_features = "/only/on/the/coordinator/validation_x.npy";
  j.config.data.validation_labels = "/only/on/the/coordinator/validation_y.npy";
  j.config.data.validation_fraction = 0.0;
  j.config.cluster.min_nodes = 1;
  auto options = on_loopback();
  cluster_session session(j.config, j.data, options);
  auto node = node_for(j, session.port(), 2, nullptr);
  std::optional<run_config> given;
  node.load_data = [&given, data = j.data](const run_config& config) {
    given = config;
    return data;
  };
  node_outcome outcome; // the node's run ends once the session has (in wait_for)
  std::thread running([&] { outcome = herd::cluster::run_node(node); });
  const auto summary = session.wait_for(std::chrono::minutes(2));
  running.join();
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, stop_cause::epochs) << summary->error;
  EXPECT_TRUE(outcome.ok) << outcome.error;
  ASSERT_TRUE(given.has_value());
  EXPECT_EQ(given->data.validation_features, "");
  EXPECT_EQ(given->data.validation_labels, "");
  EXPECT_EQ(given->data.train_features, "train_x.npy"); // the rest is the coordinator's
  EXPECT_EQ(given->data.test_features, "test_x.npy");
}

// A node's last line says how the job ended, as the coordinator's summary does: what stopped it,
// the rounds, the accuracy.
TEST(cluster_runs, a_node_says_how_the_job_ended) {
  auto j = make_job("sync", 1, 10);
  j.config.cluster.min_nodes = 1;
  cluster_session session(j.config, j.data, on_loopback());
  auto node = node_for(j, session.port(), 1, nullptr);
  std::mutex mutex;
  std::vector<std::string> notices;
  node.on_notice = [&](const std::string& text) {
    std::lock_guard<std::mutex> guard(mutex);
    notices.push_back(text);
  };
  node_outcome outcome;
  std::thread running([&] { outcome = herd::cluster::run_node(node); });
  const auto summary = session.wait_for(std::chrono::minutes(2));
  running.join();
  ASSERT_TRUE(summary.has_value());
  ASSERT_EQ(summary->stop_reason, stop_cause::epochs) << summary->error;
  ASSERT_TRUE(summary->final_test_accuracy.has_value());
  EXPECT_TRUE(outcome.ok) << outcome.error;
  std::lock_guard<std::mutex> guard(mutex);
  ASSERT_FALSE(notices.empty());
  char accuracy[32];
  std::snprintf(accuracy, sizeof accuracy, "%.4f", *summary->final_test_accuracy);
  EXPECT_EQ(notices.back().rfind("the job is over: stopped by epochs after 1.00 epochs, " +
                                     std::to_string(summary->rounds) + " rounds in ",
                                 0),
            0u)
      << notices.back();
  EXPECT_NE(notices.back().find(std::string("; test accuracy ") + accuracy), std::string::npos)
      << notices.back();
}

TEST(cluster_runs, a_node_that_comes_when_no_worker_is_lost_is_refused_with_the_reason) {
  auto j = make_job("solo", 2, 400);
  j.config.imbalance.delay_ms = 20.0; // a run long enough for the late node to find it running
  j.config.cluster.min_nodes = 1;
  notice_log notices;
  auto options = on_loopback(&notices);
  cluster_session session(j.config, j.data, options);
  auto probe = std::make_shared<recording_probe>(2, parameter_count(j));
  node_outcome first;
  std::thread first_node(
      [&] { first = herd::cluster::run_node(node_for(j, session.port(), 2, probe)); });
  EXPECT_TRUE(eventually([&] { return probe->rounds(0) >= 3; }, std::chrono::seconds(60)))
      << "the run has started";
  const auto late = herd::cluster::run_node(node_for(j, session.port(), 1, nullptr));
  EXPECT_FALSE(late.ok);
  EXPECT_NE(late.error.find("none of its 2 workers is lost"), std::string::npos) << late.error;
  // The coordinator's log says it too (an operator reads that one first).
  const auto refused = notices.containing("refused a node (");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused.front().find(", 1 worker): the job is running and none of its 2 workers is lost"),
            std::string::npos)
      << refused.front();
  session.request_stop();
  const auto summary = session.wait_for(std::chrono::minutes(2));
  first_node.join();
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->workers, 2);
  EXPECT_TRUE(first.ok) << first.error;
}

TEST(cluster_runs, a_coordinator_stopped_while_waiting_for_nodes_says_how_many_had_joined) {
  auto j = make_job("sync", 2, 10);
  j.config.cluster.min_nodes = 3;
  auto options = on_loopback();
  cluster_session session(j.config, j.data, options);
  session.request_stop();
  const auto summary = session.wait_for(std::chrono::seconds(30));
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, stop_cause::interrupted);
  EXPECT_FALSE(summary->started);
  EXPECT_NE(summary->error.find("0 of 3"), std::string::npos) << summary->error;
}

// From the moment it listens, the coordinator's metrics say how many nodes joined, how many it
// waits for, and whether the run started: a coordinator whose nodes never come is visible to an
// alert before any worker has a series.
TEST(cluster_runs, the_metrics_show_the_cluster_forming_before_any_worker_exists) {
  auto j = make_job("sync", 2, 10);
  j.config.cluster.min_nodes = 2;
  auto options = on_loopback();
  auto metrics = std::make_shared<herd::monitoring::registry>();
  options.metrics = metrics;
  cluster_session session(j.config, j.data, options);
  auto shows = [&metrics](const std::string& series) {
    return herd::monitoring::expose(*metrics).find(series + "\n") != std::string::npos;
  };
  EXPECT_TRUE(shows(R"(herd_cluster_nodes{job="herd"} 0)"));
  EXPECT_TRUE(shows(R"(herd_cluster_nodes_required{job="herd"} 2)"));
  EXPECT_TRUE(shows(R"(herd_cluster_formed{job="herd"} 0)"));
  std::vector<node_outcome> outcomes(2);
  std::thread first(
      [&] { outcomes[0] = herd::cluster::run_node(node_for(j, session.port(), 1, nullptr)); });
  EXPECT_TRUE(eventually([&] { return shows(R"(herd_cluster_nodes{job="herd"} 1)"); },
                         std::chrono::seconds(30)))
      << herd::monitoring::expose(*metrics);
  EXPECT_TRUE(shows(R"(herd_cluster_formed{job="herd"} 0)"));
  std::thread second(
      [&] { outcomes[1] = herd::cluster::run_node(node_for(j, session.port(), 1, nullptr)); });
  EXPECT_TRUE(eventually([&] { return shows(R"(herd_cluster_formed{job="herd"} 1)"); },
                         std::chrono::seconds(60)))
      << herd::monitoring::expose(*metrics);
  const auto summary = session.wait_for(std::chrono::minutes(2));
  first.join();
  second.join();
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, stop_cause::epochs) << summary->error;
  EXPECT_TRUE(shows(R"(herd_cluster_formed{job="herd"} 1)"));
}

TEST(cluster_runs, a_node_that_cannot_reach_the_coordinator_gives_up_after_the_join_timeout) {
  const auto j = make_job("sync", 2, 10);
  auto options = node_for(j, 1, 1, nullptr); // port 1: nobody listens
  options.cluster.join_timeout_s = 1;
  const auto outcome = herd::cluster::run_node(options);
  EXPECT_FALSE(outcome.ok);
  EXPECT_NE(outcome.error.find("cannot reach the coordinator at 127.0.0.1:1"), std::string::npos)
      << outcome.error;
  EXPECT_NE(outcome.error.find("cluster.join-timeout-s"), std::string::npos) << outcome.error;
}

// A node says why it waits, and says it again when the reason changes: first nothing listens,
// then something listens that never answers (a hung coordinator, or another program).
TEST(cluster_runs, a_waiting_node_says_when_the_reason_it_waits_changes) {
  const auto j = make_job("sync", 2, 10);
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const auto port = ntohs(address.sin_port);
  std::mutex mutex;
  std::vector<std::string> notices;
  auto options = node_for(j, port, 1, nullptr);
  options.cluster.join_timeout_s = 6;
  options.on_notice = [&](const std::string& text) {
    std::lock_guard<std::mutex> guard(mutex);
    notices.push_back(text);
  };
  // Bound, not listening: refused. A second later it listens, and never accepts: the kernel
  // completes the connection, and the gate's answer never comes.
  std::thread listen_later([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ::listen(listener, 16);
  });
  const auto outcome = herd::cluster::run_node(options);
  listen_later.join();
  ::close(listener);
  EXPECT_FALSE(outcome.ok);
  std::lock_guard<std::mutex> guard(mutex);
  std::string all;
  for (const auto& line : notices)
    all += line + "\n";
  const std::string at = "for the coordinator at 127.0.0.1:" + std::to_string(port);
  ASSERT_GE(notices.size(), 2u) << all;
  EXPECT_EQ(notices[0].rfind("waiting " + at + " (connect to", 0), 0u) << all;
  EXPECT_NE(notices[0].find("Connection refused"), std::string::npos) << all;
  EXPECT_EQ(notices[1].rfind("still waiting after ", 0), 0u) << all;
  EXPECT_NE(notices[1].find(at + " (no answer from the coordinator's gate)"), std::string::npos)
      << all;
}

// Nodes on one machine share its cores: a node's welcome counts the workers on its machine, and
// a one-worker node then gives its worker a share of the cores for BLAS instead of all of them.
// (Here every node is in this process, so on one machine.)
TEST(cluster_runs, one_worker_nodes_on_one_machine_share_its_cores_for_blas) {
  auto j = make_job("sync", 3, 10);
  j.config.cluster.min_nodes = 2;
  auto options = on_loopback();
  cluster_session session(j.config, j.data, options);
  std::mutex mutex;
  std::vector<std::string> notices[2];
  node_outcome outcomes[2];
  std::vector<std::thread> nodes;
  for (int i = 0; i < 2; ++i)
    nodes.emplace_back([&, i] {
      auto node = node_for(j, session.port(), i == 0 ? 1 : 2, nullptr);
      node.on_notice = [&, i](const std::string& text) {
        std::lock_guard<std::mutex> guard(mutex);
        notices[i].push_back(text);
      };
      outcomes[i] = herd::cluster::run_node(node);
    });
  const auto summary = session.wait_for(std::chrono::minutes(2));
  for (auto& node : nodes)
    node.join();
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, stop_cause::epochs) << summary->error;
  const int share = std::max(1, herd::kernels::usable_cores() / 3);
  const auto said = [&](int node, const std::string& text) {
    std::lock_guard<std::mutex> guard(mutex);
    return std::any_of(notices[node].begin(), notices[node].end(),
                       [&](const std::string& line) { return line == text; });
  };
  EXPECT_TRUE(said(0, "2 worker(s) of other nodes run on this machine: " + std::to_string(share) +
                          " BLAS thread(s) for this node's (train.blas-threads sets another "
                          "count)"));
  // A node of several workers gives each one thread already: it says nothing.
  for (const auto& line : notices[1])
    EXPECT_EQ(line.find("BLAS"), std::string::npos) << line;
  // The run's train.blas-threads, when set, is what every node takes: nothing to say.
  EXPECT_EQ(herd::actors::blas_threads_for(j.config, 1, 3), share);
  j.config.train.blas_threads = 5;
  EXPECT_EQ(herd::actors::blas_threads_for(j.config, 1, 3), 5);
  j.config.train.blas_threads = 0;
  const auto cores = herd::kernels::this_process_cores(); // alone: every core
  EXPECT_EQ(herd::actors::blas_threads_for(j.config, 1, 1),
            cores.quota_limited() ? cores.usable() : 0);
  EXPECT_EQ(herd::actors::blas_threads_for(j.config, 1, 0), 0); // machine unknown
  EXPECT_EQ(herd::actors::blas_threads_for(j.config, 2, 5), 1); // several: one each
}

TEST(cluster_runs, a_coordinator_port_in_use_is_named) {
  const auto j = make_job("sync", 2, 10);
  auto options = on_loopback();
  cluster_session first(j.config, j.data, options);
  options.port = first.port();
  try {
    cluster_session second(j.config, j.data, options);
    FAIL() << "a second coordinator listened on the same port";
  } catch (const std::runtime_error& failure) {
    EXPECT_NE(std::string(failure.what())
                  .find("cannot listen on 127.0.0.1:" + std::to_string(first.port())),
              std::string::npos)
        << failure.what();
  }
  first.request_stop();
}

} // namespace

#include "actors/messages.hpp"

#include <caf/all.hpp>

#include "cluster/control_gate.hpp"
#include "cluster/remoting.hpp"

namespace {

TEST(cluster_runs, only_welcomed_nodes_may_use_the_data_planes_rendezvous) {
  auto j = make_job("sync", 2, 10);
  j.config.cluster.min_nodes = 2;
  auto options = on_loopback();
  cluster_session session(j.config, j.data, options);
  // A process that passed the gate but never joined: it may not read or write the store.
  caf::actor_system_config system_config;
  herd::cluster::configure_remoting(system_config, j.config.cluster);
  caf::actor_system system{system_config};
  herd::cluster::gate_dialer gate("127.0.0.1", session.port(),
                                  herd::cluster::gate_settings_of(j.config.cluster));
  herd::cluster::gate_connection attempt;
  auto registry =
      herd::cluster::remote_through_gate(system, gate, attempt, std::chrono::seconds(10));
  ASSERT_TRUE(registry) << attempt.why;
  caf::scoped_actor self{system};
  std::string refusal;
  self->request(registry, std::chrono::seconds(10), herd::actors::store_get_atom::value,
                std::string("any-key"))
      .receive([](const herd::actors::wire_bytes&) {},
               [&](caf::error& error) { refusal = system.render(error); });
  EXPECT_NE(refusal.find("for welcomed nodes only"), std::string::npos) << refusal;
  session.request_stop();
  EXPECT_TRUE(session.wait_for(std::chrono::seconds(30)).has_value());
}

} // namespace

namespace {

// A run of three one-worker nodes that goes on until stopped: node 2 leaves after a few rounds,
// and a fourth node joins in its place.
struct join_run {
  run_summary summary;
  node_outcome left, joined;
  std::size_t rounds_before_leaving = 0; // rounds worker 2 had applied when its node left
  std::size_t steps_before_leaving = 0;
  std::size_t rounds_after_joining = 0;
};

join_run run_with_a_join(const std::string& algorithm,
                         const std::shared_ptr<recording_probe>& probe) {
  auto j = make_endless_job(algorithm, 3);
  j.config.cluster.min_nodes = 3;
  auto options = on_loopback();
  cluster_session session(j.config, j.data, options);
  join_run run;
  std::atomic<bool> leave{false};
  node_outcome first, second;
  std::thread node0(
      [&] { first = herd::cluster::run_node(node_for(j, session.port(), 1, probe)); });
  std::thread node1(
      [&] { second = herd::cluster::run_node(node_for(j, session.port(), 1, probe)); });
  std::thread node2([&] {
    auto leaving = node_for(j, session.port(), 1, probe);
    leaving.leave = &leave;
    leaving.name = "vm-leaving";
    run.left = herd::cluster::run_node(leaving);
  });
  // Which worker index the leaving node hosts is decided by join order: find it by its rounds
  // stopping. Every node hosts one worker; wait until all applied some rounds.
  EXPECT_TRUE(
      eventually([&] { return three_workers_applied(*probe, 20); }, std::chrono::seconds(60)));
  leave = true;
  node2.join();
  const int gone = run.left.worker_indices.empty() ? -1 : run.left.worker_indices.front();
  if (gone >= 0) {
    run.rounds_before_leaving = probe->rounds(gone);
    run.steps_before_leaving = probe->steps(gone);
    std::thread node3([&] {
      auto joining = node_for(j, session.port(), 1, probe);
      joining.name = "vm-joining";
      run.joined = herd::cluster::run_node(joining);
    });
    EXPECT_TRUE(eventually([&] { return probe->rounds(gone) >= run.rounds_before_leaving + 30; },
                           std::chrono::seconds(60)))
        << "the joined worker applied " << probe->rounds(gone) - run.rounds_before_leaving
        << " rounds";
    run.rounds_after_joining = probe->rounds(gone) - run.rounds_before_leaving;
    session.request_stop();
    auto summary = session.wait_for(std::chrono::minutes(2));
    node3.join();
    if (summary)
      run.summary = *summary;
  } else {
    session.request_stop();
    session.wait_for(std::chrono::minutes(2));
  }
  node0.join();
  node1.join();
  EXPECT_TRUE(first.ok) << first.error;
  EXPECT_TRUE(second.ok) << second.error;
  return run;
}

TEST(cluster_runs, a_node_joins_the_running_job_in_place_of_one_that_left_and_takes_the_model) {
  for (const char* algorithm : {"solo", "sync", "preduce", "wagma"}) {
    const auto j = make_job(algorithm, 3, 40);
    auto probe = std::make_shared<recording_probe>(3, parameter_count(j));
    const auto run = run_with_a_join(algorithm, probe);
    ASSERT_TRUE(run.left.ok) << algorithm << ": " << run.left.error;
    EXPECT_TRUE(run.left.left) << algorithm;
    ASSERT_EQ(run.left.worker_indices.size(), 1u) << algorithm;
    const int slot = run.left.worker_indices.front();
    EXPECT_TRUE(run.joined.ok) << algorithm << ": " << run.joined.error;
    EXPECT_TRUE(run.joined.joined_running) << algorithm;
    EXPECT_EQ(run.joined.worker_indices, std::vector<int>{slot}) << algorithm;
    EXPECT_EQ(run.summary.stop_reason, stop_cause::interrupted)
        << algorithm << ": " << run.summary.error;
    EXPECT_EQ(run.summary.workers_joined, 1u) << algorithm;
    ASSERT_EQ(run.summary.per_worker.size(), 3u) << algorithm;
    EXPECT_TRUE(run.summary.per_worker[static_cast<std::size_t>(slot)].live) << algorithm;
    // The summary names the node each worker ends on, and says which left and which took over.
    EXPECT_EQ(run.summary.per_worker[static_cast<std::size_t>(slot)].node, "vm-joining");
    ASSERT_EQ(run.summary.worker_events.size(), 2u) << algorithm;
    const auto& lost = run.summary.worker_events[0];
    const auto& joined = run.summary.worker_events[1];
    EXPECT_EQ(lost.worker, slot);
    EXPECT_FALSE(lost.joined);
    EXPECT_EQ(lost.node, "vm-leaving");
    EXPECT_THAT(lost.why, testing::HasSubstr("left the job")) << lost.why;
    EXPECT_EQ(joined.worker, slot);
    EXPECT_TRUE(joined.joined);
    EXPECT_EQ(joined.node, "vm-joining");
    EXPECT_LE(lost.seconds, joined.seconds);
    // It computes again: it contributes, not only receives.
    EXPECT_GT(probe->steps(slot), run.steps_before_leaving + 10) << algorithm;
    EXPECT_GE(run.rounds_after_joining, 30u) << algorithm;
    if (std::string(algorithm) == "preduce" || std::string(algorithm) == "wagma")
      continue; // model averaging: replicas differ between global averages
    // The gradient algorithms: the new worker took the model, the velocity and the round count,
    // so after every round it is bit for bit the replica that never left.
    const int witness = slot == 0 ? 1 : 0;
    const auto& fingerprints = probe->fingerprints();
    std::size_t compared = 0;
    for (const auto& [round, hash] : fingerprints[static_cast<std::size_t>(slot)]) {
      auto theirs = fingerprints[static_cast<std::size_t>(witness)].find(round);
      ASSERT_NE(theirs, fingerprints[static_cast<std::size_t>(witness)].end())
          << algorithm << ": worker " << witness << " did not apply round " << round;
      ASSERT_EQ(hash, theirs->second) << algorithm << ": worker " << slot << " differs from worker "
                                      << witness << " after round " << round;
      ++compared;
    }
    EXPECT_GE(compared, run.rounds_before_leaving + 30) << algorithm;
  }
}

// A node that joined a cluster whose coordinator is then stopped was not refused: its part is
// over (ok, as when a run it served ends), and it says so.
TEST(cluster_runs, a_node_whose_coordinator_is_stopped_before_the_run_ends_cleanly) {
  auto j = make_job("sync", 2, 10);
  j.config.cluster.min_nodes = 2;
  notice_log coordinator_notices;
  auto options = on_loopback(&coordinator_notices);
  cluster_session session(j.config, j.data, options);
  std::mutex mutex;
  std::vector<std::string> notices;
  auto node = node_for(j, session.port(), 1, nullptr);
  node.on_notice = [&](const std::string& text) {
    std::lock_guard<std::mutex> guard(mutex);
    notices.push_back(text);
  };
  node_outcome outcome;
  std::thread joining([&] { outcome = herd::cluster::run_node(node); });
  ASSERT_TRUE(
      eventually([&] { return coordinator_notices.containing("joined; 1 of 2 nodes").size() == 1; },
                 std::chrono::seconds(30)));
  session.request_stop();
  const auto summary = session.wait_for(std::chrono::seconds(30));
  joining.join();
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, stop_cause::interrupted);
  EXPECT_TRUE(outcome.ok) << outcome.error;
  std::lock_guard<std::mutex> guard(mutex);
  ASSERT_FALSE(notices.empty());
  EXPECT_EQ(notices.back(), "the coordinator was stopped while waiting for nodes (1 of 2 had "
                            "joined); its run never started");
}

// Stopped once the cluster formed, while its nodes connect the data plane: the nodes are told,
// and end as cleanly as those stopped while waiting (before, their rendezvous failed and they
// exited as failed with Gloo's errors). The first node stops the coordinator as it is welcomed,
// before it sets its own rendezvous keys, so that the other waits for them.
TEST(cluster_runs, nodes_connecting_when_their_coordinator_is_stopped_end_cleanly) {
  // One node: its plane has no peer to wait for, so it hears of the stop as it serves.
  for (const std::size_t count : {std::size_t{2}, std::size_t{1}}) {
    auto j = make_endless_job("sync", static_cast<int>(count));
    j.config.cluster.min_nodes = static_cast<int>(count);
    auto options = on_loopback();
    cluster_session session(j.config, j.data, options);
    std::mutex mutex;
    std::vector<std::vector<std::string>> notices(count);
    std::atomic<bool> stopped{false};
    std::vector<node_outcome> outcomes(count);
    std::vector<std::thread> nodes;
    for (std::size_t i = 0; i < count; ++i) {
      auto node = node_for(j, session.port(), 1, nullptr);
      node.on_notice = [&, i](const std::string& text) {
        {
          std::lock_guard<std::mutex> guard(mutex);
          notices[i].push_back(text);
        }
        if (text.rfind("joined as node", 0) == 0 && !stopped.exchange(true)) {
          session.request_stop();
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
        }
      };
      nodes.emplace_back([&outcomes, i, node] { outcomes[i] = herd::cluster::run_node(node); });
    }
    const auto summary = session.wait_for(std::chrono::seconds(60));
    for (auto& node : nodes)
      node.join();
    ASSERT_TRUE(summary.has_value());
    EXPECT_EQ(summary->stop_reason, stop_cause::interrupted);
    std::lock_guard<std::mutex> guard(mutex);
    for (std::size_t i = 0; i < count; ++i) {
      EXPECT_TRUE(outcomes[i].ok) << outcomes[i].error;
      ASSERT_FALSE(notices[i].empty());
      EXPECT_EQ(notices[i].back(), "the coordinator was stopped while the nodes were connecting; "
                                   "its run never started")
          << count << " node(s)";
    }
  }
}

// Nodes whose data plane cannot connect (a firewall between them): a stop signal did nothing
// until the connect gave up, minutes later, and a node whose coordinator was gone waited out the
// rest of its join timeout in silence. The wait is now the node's own: a stop signal ends it at
// once, and so does the coordinator's loss.
TEST(cluster_runs, a_node_whose_data_plane_hangs_ends_at_once_on_a_stop_or_its_coordinators_loss) {
  auto j = make_endless_job("sync", 2);
  j.config.cluster.min_nodes = 2;
  notice_log coordinator_notices;
  auto options = on_loopback(&coordinator_notices);
  auto session = std::make_unique<cluster_session>(j.config, j.data, options);
  // Planes that never connect, until the test lets them go (they then fail).
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto connecting = std::make_shared<std::atomic<int>>(0);
  const auto hanging_plane =
      [released, connecting](std::uint32_t, int, int) -> std::shared_ptr<herd::comm::data_plane> {
    ++*connecting;
    released.wait();
    throw std::runtime_error("released by the test");
  };
  std::atomic<bool> leave{false};
  auto stopped_node = node_for(j, session->port(), 1, nullptr);
  stopped_node.make_plane = hanging_plane;
  stopped_node.leave = &leave;
  auto other_node = node_for(j, session->port(), 1, nullptr);
  other_node.make_plane = hanging_plane;
  other_node.cluster.rejoin_s = 0;
  std::promise<node_outcome> stopped_outcome;
  std::promise<node_outcome> other_outcome;
  auto stopped_ended = stopped_outcome.get_future();
  auto other_ended = other_outcome.get_future();
  std::thread first([&] { stopped_outcome.set_value(herd::cluster::run_node(stopped_node)); });
  std::thread second([&] { other_outcome.set_value(herd::cluster::run_node(other_node)); });
  ASSERT_TRUE(eventually([&] { return connecting->load() == 2; }, std::chrono::seconds(60)));
  // After 15 s the coordinator says what it waits for, and what may block it.
  ASSERT_TRUE(eventually(
      [&] { return !coordinator_notices.containing("the data plane has not connected").empty(); },
      std::chrono::seconds(40)));
  EXPECT_THAT(coordinator_notices.containing("the data plane has not connected").front(),
              testing::AllOf(testing::HasSubstr("after 15 s: the nodes dial each other"),
                             testing::HasSubstr("(0 of 2 nodes connected; waiting for node ")));
  leave = true; // one stop signal
  const bool stopped_in_time =
      stopped_ended.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  EXPECT_TRUE(stopped_in_time) << "a stop signal did not end the data plane's wait";
  if (stopped_in_time) {
    const auto outcome = stopped_ended.get();
    EXPECT_FALSE(outcome.ok);
    EXPECT_THAT(outcome.error, testing::HasSubstr("interrupted while the data plane connected"));
  }
  // The coordinator's run ends without the node that left; then the coordinator goes.
  EXPECT_TRUE(session->wait_for(std::chrono::seconds(30)).has_value());
  session.reset();
  const bool other_in_time =
      other_ended.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  EXPECT_TRUE(other_in_time) << "the coordinator's loss did not end the data plane's wait";
  if (other_in_time) {
    const auto outcome = other_ended.get();
    EXPECT_FALSE(outcome.ok);
    EXPECT_THAT(outcome.error,
                testing::HasSubstr("lost the coordinator while the data plane connected"));
  }
  release->set_value(); // the planes' threads end; so do the nodes of a run that failed this test
  first.join();
  second.join();
}

// A node of two workers leaves a sync run: both its workers leave the rounds before its data
// plane closes, so no round aborts (retired one at a time, the first loss could complete a round
// that still took the other), and the others go on.
TEST(cluster_runs, a_node_of_two_workers_leaves_without_an_aborted_round) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto j = make_endless_job("sync", 3);
    j.config.cluster.min_nodes = 2;
    notice_log notices;
    auto options = on_loopback(&notices);
    cluster_session session(j.config, j.data, options);
    auto probe = std::make_shared<recording_probe>(3, parameter_count(j));
    std::atomic<bool> leave{false};
    node_outcome stays, left;
    std::thread node0(
        [&] { stays = herd::cluster::run_node(node_for(j, session.port(), 1, probe)); });
    auto leaving = node_for(j, session.port(), 2, probe);
    leaving.leave = &leave;
    std::thread node1([&] { left = herd::cluster::run_node(leaving); });
    ASSERT_TRUE(
        eventually([&] { return probe->rounds(0) >= std::size_t{10} + 5u * std::size_t(attempt); },
                   std::chrono::seconds(60)));
    leave = true;
    node1.join();
    EXPECT_TRUE(left.left) << left.error;
    ASSERT_EQ(left.worker_indices.size(), 2u);
    int staying = 0;
    while (std::count(left.worker_indices.begin(), left.worker_indices.end(), staying) > 0)
      ++staying;
    const std::size_t before = probe->rounds(staying);
    EXPECT_TRUE(eventually([&] { return probe->rounds(staying) >= before + 10; },
                           std::chrono::seconds(60)));
    session.request_stop();
    ASSERT_TRUE(session.wait_for(std::chrono::minutes(2)).has_value());
    node0.join();
    EXPECT_TRUE(stays.ok) << stays.error;
    EXPECT_TRUE(notices.containing("aborted").empty())
        << testing::PrintToString(notices.containing(""));
  }
}

// A node asked to leave while another joins the running job: it connects the joining node's data
// plane, then departs once the join has ended, and the joined node computes with the node that
// stays. (The registry used to pass the departure on at once, the coordinator refused it while
// the join was under way, and the node left without waiting for the rounds it was in.) The
// joining node holds its join open once it has the model, asks the other node to leave meanwhile
// and waits until the registry has heard it ask.
TEST(cluster_runs, a_node_that_leaves_during_a_join_leaves_once_the_join_has_ended) {
  auto j = make_endless_job("sync", 3);
  j.config.cluster.min_nodes = 3;
  // A leaving node gives the coordinator 2 s to let it go; the join below takes longer than that
  // after the node asked, and well within its transfer's bound (2 x 2 s + 5 s).
  j.config.cluster.data_timeout_ms = 2000;
  notice_log notices;
  auto options = on_loopback(&notices);
  cluster_session session(j.config, j.data, options);
  auto probe = std::make_shared<recording_probe>(3, parameter_count(j));
  std::atomic<bool> leave_now{false}, leave_later{false};
  node_outcome stays, first_out, second_out, joined;
  std::thread staying(
      [&] { stays = herd::cluster::run_node(node_for(j, session.port(), 1, probe)); });
  auto first = node_for(j, session.port(), 1, probe);
  first.leave = &leave_now;
  std::thread leaving_first([&] { first_out = herd::cluster::run_node(first); });
  auto second = node_for(j, session.port(), 1, probe);
  second.leave = &leave_later;
  std::vector<std::string> parting; // the second leaving node's own log
  second.on_notice = [&parting](const std::string& text) { parting.push_back(text); };
  std::thread leaving_second([&] { second_out = herd::cluster::run_node(second); });
  ASSERT_TRUE(
      eventually([&] { return three_workers_applied(*probe, 10); }, std::chrono::seconds(60)));
  leave_now = true;
  leaving_first.join();
  ASSERT_TRUE(first_out.left) << first_out.error;
  const int gone = first_out.worker_indices.front();
  auto joining = node_for(j, session.port(), 1, probe);
  joining.on_notice = [&leave_later, &notices](const std::string& text) {
    if (text.find("'s model from node") == std::string::npos)
      return;
    leave_later = true;
    // Before it tells the coordinator: until the registry has heard the other node ask (10 s at
    // most: the order that broke the join never says so).
    eventually([&] { return !notices.containing(" asks to leave the job").empty(); },
               std::chrono::seconds(10));
    std::this_thread::sleep_for(std::chrono::seconds(4)); // twice the leaving node's own wait
  };
  const std::size_t before = probe->rounds(gone);
  std::thread joiner([&] { joined = herd::cluster::run_node(joining); });
  leaving_second.join();
  EXPECT_TRUE(
      eventually([&] { return probe->rounds(gone) >= before + 10; }, std::chrono::seconds(60)))
      << "the joined worker computes with the node that stays";
  session.request_stop();
  const auto summary = session.wait_for(std::chrono::minutes(2));
  staying.join();
  joiner.join();
  const auto all = [&] { return testing::PrintToString(notices.containing("")); };
  ASSERT_TRUE(summary.has_value());
  EXPECT_TRUE(joined.ok) << joined.error << all();
  EXPECT_TRUE(joined.joined_running);
  EXPECT_EQ(summary->workers_joined, 1u) << all();
  EXPECT_TRUE(stays.ok) << stays.error;
  ASSERT_TRUE(second_out.ok) << second_out.error;
  EXPECT_TRUE(second_out.left);
  EXPECT_EQ(notices
                .containing(" asks to leave the job; it leaves once the join under way has "
                            "ended")
                .size(),
            1u)
      << all();
  ASSERT_FALSE(parting.empty());
  EXPECT_THAT(parting, testing::Contains("leaves once the join under way has ended (a second "
                                         "stop signal leaves at once)"));
  // Every node here has this machine's host name, the default --name: the logs could not tell
  // them apart, and the coordinator says so (for the second node to join, and the joiner).
  EXPECT_EQ(notices
                .containing(" too: give each node a name of its own (herd node --name), or the "
                            "logs and the metrics cannot tell them apart")
                .size(),
            3u)
      << all();
  EXPECT_THAT(parting.back(),
              testing::StartsWith("left the job once the rounds it was in had ended"))
      << all();
  EXPECT_TRUE(notices.containing("aborted").empty()) << all();
}

// A join that fails on a peer's side (here the node that stays cannot connect the join's data
// plane; on a real network, bytes from a stranger on its port did it): the joining node says the
// coordinator's reason, not the rendezvous's "for welcomed nodes only", which read as if it had
// never been welcomed.
TEST(cluster_runs, a_node_turned_away_from_a_failed_join_says_the_coordinators_reason) {
  auto j = make_endless_job("sync", 2);
  j.config.cluster.min_nodes = 2;
  j.config.cluster.data_timeout_ms = 5000;
  notice_log notices;
  auto options = on_loopback(&notices);
  cluster_session session(j.config, j.data, options);
  auto probe = std::make_shared<recording_probe>(2, parameter_count(j));
  std::atomic<bool> leave{false};
  node_outcome stays, left;
  std::thread staying([&] {
    auto node = node_for(j, session.port(), 1, probe);
    node.adjust_plane = [](std::uint32_t generation, herd::comm::gloo_plane_options& plane) {
      if (generation == 1)
        plane.hostname = "192.0.2.1"; // TEST-NET-1: no address of this machine
    };
    stays = herd::cluster::run_node(node);
  });
  std::thread leaving([&] {
    auto node = node_for(j, session.port(), 1, probe);
    node.leave = &leave;
    left = herd::cluster::run_node(node);
  });
  ASSERT_TRUE(eventually([&] { return probe->rounds(0) >= 10 && probe->rounds(1) >= 10; },
                         std::chrono::seconds(60)));
  leave = true;
  leaving.join();
  ASSERT_TRUE(left.left) << left.error;
  const auto joined = herd::cluster::run_node(node_for(j, session.port(), 1, probe));
  session.request_stop();
  session.wait_for(std::chrono::minutes(2));
  staying.join();
  const auto all = testing::PrintToString(notices.containing(""));
  EXPECT_TRUE(stays.ok) << stays.error;
  EXPECT_FALSE(joined.ok);
  EXPECT_THAT(joined.error,
              testing::HasSubstr("the data plane did not connect, because the coordinator turned "
                                 "this node away: the data plane did not reconnect: node "))
      << joined.error << all;
  EXPECT_THAT(joined.error, testing::HasSubstr("start it again to try to join once more"));
  EXPECT_THAT(joined.error, testing::Not(testing::HasSubstr("welcomed nodes only")));
}

// Joins that fail free the lost slots again, and the next node joins in their place: one whose
// data plane cannot listen on its --data-host (it fails before any peer connects), then one that
// crashes right after its data plane connected (every live node has that generation of the plane
// then, but rounds must go on through the one in use), then one that succeeds.
TEST(cluster_runs, a_failed_join_frees_the_slots_for_the_next_node) {
  auto j = make_endless_job("solo", 3);
  j.config.cluster.min_nodes = 3;
  j.config.cluster.data_timeout_ms = 2000;
  notice_log notices;
  auto options = on_loopback(&notices);
  cluster_session session(j.config, j.data, options);
  auto probe = std::make_shared<recording_probe>(3, parameter_count(j));
  std::atomic<bool> leave{false};
  node_outcome first, second, left;
  std::thread node0(
      [&] { first = herd::cluster::run_node(node_for(j, session.port(), 1, probe)); });
  std::thread node1(
      [&] { second = herd::cluster::run_node(node_for(j, session.port(), 1, probe)); });
  auto leaving = node_for(j, session.port(), 1, probe);
  leaving.leave = &leave;
  std::vector<std::string> parting; // the leaving node's own log
  leaving.on_notice = [&parting](const std::string& text) { parting.push_back(text); };
  std::thread node2([&] { left = herd::cluster::run_node(leaving); });
  EXPECT_TRUE(
      eventually([&] { return three_workers_applied(*probe, 10); }, std::chrono::seconds(60)));
  leave = true;
  node2.join();
  ASSERT_TRUE(left.left) << left.error;
  const int gone = left.worker_indices.front();
  // Its leaving is said once, for the node, naming its worker; not again for the worker.
  EXPECT_TRUE(eventually([&] { return !notices.containing(" is down").empty(); },
                         std::chrono::seconds(30)));
  EXPECT_TRUE(notices.containing("worker " + std::to_string(gone) + " lost").empty())
      << notices.containing("worker " + std::to_string(gone) + " lost").front();
  // It left once the round it was in had ended: no peer's reduction failed on its data plane.
  EXPECT_TRUE(notices.containing("aborted").empty())
      << testing::PrintToString(notices.containing("")) << testing::PrintToString(parting);
  EXPECT_EQ(notices.containing(" leaves the job: rounds pause").size(), 1u);
  ASSERT_FALSE(parting.empty());
  EXPECT_THAT(parting.back(), testing::StartsWith("left the job once the rounds it was in had "
                                                  "ended"));

  auto unreachable = node_for(j, session.port(), 1, probe);
  unreachable.data_host = "192.0.2.1"; // TEST-NET-1: no address of this machine
  const auto failed = herd::cluster::run_node(unreachable);
  EXPECT_FALSE(failed.ok);
  EXPECT_TRUE(failed.joined_running);
  EXPECT_NE(failed.error.find("the data plane did not connect"), std::string::npos) << failed.error;

  auto crashing = node_for(j, session.port(), 1, probe);
  crashing.on_notice = [](const std::string& text) {
    if (text.find("data plane connected") != std::string::npos)
      throw std::runtime_error("crashed after connecting");
  };
  const auto crashed = herd::cluster::run_node(crashing);
  EXPECT_FALSE(crashed.ok);
  EXPECT_NE(crashed.error.find("crashed after connecting"), std::string::npos) << crashed.error;
  // Rounds go on meanwhile, through the data plane the aggregators use.
  const int witness = gone == 0 ? 1 : 0;
  const std::size_t still = probe->rounds(witness);
  EXPECT_TRUE(
      eventually([&] { return probe->rounds(witness) >= still + 10; }, std::chrono::seconds(60)));

  const std::size_t before = probe->rounds(gone);
  node_outcome joined;
  auto joining = node_for(j, session.port(), 1, probe);
  std::mutex said_mutex;
  std::vector<std::string> said; // the joining node's own log
  joining.on_notice = [&](const std::string& text) {
    const std::lock_guard<std::mutex> lock(said_mutex);
    said.push_back(text);
  };
  std::thread node3([&] { joined = herd::cluster::run_node(joining); });
  EXPECT_TRUE(
      eventually([&] { return probe->rounds(gone) >= before + 10; }, std::chrono::seconds(60)));
  session.request_stop();
  const auto summary = session.wait_for(std::chrono::minutes(2));
  for (auto* node : {&node0, &node1, &node3})
    node->join();
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->workers_joined, 1u);
  EXPECT_TRUE(summary->per_worker[static_cast<std::size_t>(gone)].live);
  EXPECT_TRUE(joined.ok) << joined.error;
  EXPECT_TRUE(joined.joined_running);
  // Its log says that its worker took a live model, and whose.
  EXPECT_EQ(std::count_if(said.begin(), said.end(),
                          [&](const std::string& line) {
                            return line.rfind("worker " + std::to_string(gone) + " took worker ",
                                              0) == 0 &&
                                   line.find("'s model from node ") != std::string::npos;
                          }),
            1)
      << testing::PrintToString(said);
  EXPECT_TRUE(first.ok) << first.error;
  EXPECT_TRUE(second.ok) << second.error;
  EXPECT_EQ(notices.containing("could not join").size(), 2u) << [&] {
    std::string all;
    for (const auto& notice : notices.containing(""))
      all += notice + "\n";
    return all;
  }();
  EXPECT_TRUE(notices.containing("is not connected on node").empty())
      << notices.containing("is not connected on node").front();
  EXPECT_TRUE(notices.containing("is not in data plane").empty())
      << notices.containing("is not in data plane").front();
}

TEST(cluster_runs, a_node_offering_more_workers_than_are_lost_is_told_how_many_are) {
  auto j = make_endless_job("solo", 3);
  j.config.cluster.min_nodes = 2;
  auto options = on_loopback();
  cluster_session session(j.config, j.data, options);
  auto probe = std::make_shared<recording_probe>(3, parameter_count(j));
  std::atomic<bool> leave{false};
  node_outcome first, second;
  std::thread node0(
      [&] { first = herd::cluster::run_node(node_for(j, session.port(), 2, probe)); });
  auto leaving = node_for(j, session.port(), 1, probe);
  leaving.leave = &leave;
  std::thread node1([&] { second = herd::cluster::run_node(leaving); });
  // The run has started (a node leaving before that would end it).
  EXPECT_TRUE(eventually([&] { return probe->rounds(0) >= 5; }, std::chrono::seconds(60)));
  leave = true;
  node1.join();
  ASSERT_TRUE(second.left) << second.error;
  const int gone = second.worker_indices.front();
  const auto big = herd::cluster::run_node(node_for(j, session.port(), 2, nullptr));
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.error.find("only 1 slot(s) are free (worker " + std::to_string(gone) +
                           "); start it with --workers 1"),
            std::string::npos)
      << big.error;
  session.request_stop();
  EXPECT_TRUE(session.wait_for(std::chrono::minutes(2)).has_value());
  node0.join();
  EXPECT_TRUE(first.ok) << first.error;
}

// Three nodes of one worker each run `j`; `adjust` may change node i's Gloo options for a
// generation before it connects (node_options::adjust_plane).
struct three_node_run {
  std::optional<run_summary> summary;
  std::vector<node_outcome> outcomes;
  std::shared_ptr<recording_probe> probe;
  std::vector<std::string> notices;

  std::size_t count(const std::string& text) const {
    return static_cast<std::size_t>(
        std::count_if(notices.begin(), notices.end(), [&](const std::string& notice) {
          return notice.find(text) != std::string::npos;
        }));
  }
  std::string all() const {
    std::string text;
    for (const auto& notice : notices)
      text += notice + "\n";
    return text;
  }
};

three_node_run run_three_nodes(
    const job& j,
    const std::function<void(std::size_t, std::uint32_t, herd::comm::gloo_plane_options&)>& adjust,
    std::shared_ptr<herd::monitoring::registry> metrics = nullptr) {
  auto config = j.config;
  config.cluster.min_nodes = 3;
  notice_log notices;
  auto options = on_loopback(&notices);
  options.metrics = std::move(metrics);
  cluster_session session(config, j.data, options);
  three_node_run run;
  run.probe = std::make_shared<recording_probe>(3, parameter_count(j));
  run.outcomes.resize(3);
  std::vector<std::thread> nodes;
  for (std::size_t i = 0; i < 3; ++i)
    nodes.emplace_back([&, i] {
      auto node = node_for(j, session.port(), 1, run.probe);
      node.cluster = config.cluster;
      node.cluster.join_timeout_s = 60;
      node.adjust_plane = [&adjust, i](std::uint32_t generation,
                                       herd::comm::gloo_plane_options& plane) {
        adjust(i, generation, plane);
      };
      run.outcomes[i] = herd::cluster::run_node(node);
    });
  run.summary = session.wait_for(std::chrono::minutes(3));
  for (auto& node : nodes)
    node.join();
  run.notices = notices.containing("");
  return run;
}

// The run reached its last epoch with every node and worker, and every replica went through the
// same states.
void expect_finished_whole(const three_node_run& run) {
  ASSERT_TRUE(run.summary.has_value()) << run.all();
  const auto& summary = *run.summary;
  ASSERT_EQ(summary.stop_reason, stop_cause::epochs) << summary.error << "\n" << run.all();
  for (const auto& outcome : run.outcomes)
    EXPECT_TRUE(outcome.ok) << outcome.error;
  for (const auto& worker : summary.per_worker)
    EXPECT_TRUE(worker.live) << "worker " << worker.worker;
  ASSERT_GT(summary.rounds, 20u);
  const auto& fingerprints = run.probe->fingerprints();
  for (std::size_t w = 0; w < 3; ++w) {
    ASSERT_EQ(fingerprints[w].size(), summary.rounds) << "worker " << w;
    for (const auto& [round, hash] : fingerprints[w])
      ASSERT_EQ(hash, fingerprints[0].at(round)) << "worker " << w << " after round " << round;
  }
}

// A node that refuses a peer's data-plane messages reports it, and the coordinator re-keys the
// data plane. With TLS every generation is sealed with a key the coordinator draws; one node
// seals generation 0 with another key (as when bytes that are not the peer's reach a connection),
// so every message between it and the others is refused. The nodes connect generation 1 with a
// fresh key while the rounds pause, and the run goes on to its last epoch with no worker lost and
// every replica through the same states.
TEST(cluster_runs, a_refused_data_plane_peer_is_reported_and_the_re_keyed_plane_finishes_the_run) {
  herd::testing::temp_directory certificates;
  const std::string dir = certificates.path().string();
  ASSERT_TRUE(herd::testing::make_certificate_authority(dir, "ca") &&
              herd::testing::make_signed_certificate(dir, "member", "ca"))
      << "openssl could not make the test certificates";
  auto j = make_job("sync", 3, 40);
  j.config.cluster.tls_ca = dir + "/ca.pem";
  j.config.cluster.tls_cert = dir + "/member.pem";
  j.config.cluster.tls_key = dir + "/member.key";
  j.config.comm.seal_threads = 3;
  j.config.comm.connections = 2; // and every plane over two connections per pair of nodes
  std::mutex keys_mutex;
  std::map<std::pair<std::uint32_t, std::size_t>, herd::comm::plane_key>
      keys; // by generation, node
  std::set<int> seal_threads;
  std::set<int> lanes;
  auto metrics = std::make_shared<herd::monitoring::registry>();
  const auto run = run_three_nodes(
      j,
      [&](std::size_t node, std::uint32_t generation, herd::comm::gloo_plane_options& plane) {
        if (!plane.seal_key)
          return; // not sealed: the assertions below say so
        std::lock_guard<std::mutex> guard(keys_mutex);
        keys[{generation, node}] = *plane.seal_key;
        seal_threads.insert(plane.seal_threads);
        lanes.insert(plane.lanes);
        if (generation == 0 && node == 1)
          for (auto& byte : *plane.seal_key)
            byte = static_cast<std::uint8_t>(byte ^ 0xff);
      },
      metrics);
  expect_finished_whole(run);
  ASSERT_TRUE(run.summary);
  // Under sync one round is in flight at a time: the first one is refused, and no round starts
  // until generation 1 is in use (without the pause, 2 to 4 rounds were aborted).
  EXPECT_EQ(run.summary->aborted_rounds, 1u) << run.all();
  // The data plane names ranks; the abort says which node each rank is.
  EXPECT_EQ(run.count("(ranks of data plane generation 0: 0 = node 0, 1 = node 1, 2 = node 2)"),
            1u)
      << run.all();
  EXPECT_EQ(run.count("refused data-plane messages from"), 1u) << run.all();
  EXPECT_EQ(run.count("data plane re-keyed: rounds go on through generation 1"), 1u) << run.all();
  // What an operator's dashboard and alert read.
  const auto exposed = herd::monitoring::expose(*metrics);
  EXPECT_THAT(exposed, testing::HasSubstr(R"(herd_data_plane_rekeys_total{job="herd"} 1)"));
  EXPECT_THAT(exposed,
              testing::HasSubstr(R"(herd_rounds_aborted_total{algorithm="sync",job="herd"} 1)"));
  // The nodes left once the job was over, not during it.
  EXPECT_THAT(exposed, testing::HasSubstr(R"(herd_cluster_nodes{job="herd"} 3)"));
  // Every node sealed both generations with the coordinator's keys, and generation 1's is fresh.
  ASSERT_EQ(keys.size(), 6u) << "a generation was not sealed on some node";
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(keys.at({0, i}), keys.at({0, 0})) << "node " << i;
    EXPECT_EQ(keys.at({1, i}), keys.at({1, 0})) << "node " << i;
  }
  EXPECT_NE(keys.at({1, 0}), keys.at({0, 0})) << "the re-keyed generation kept the old key";
  EXPECT_EQ(seal_threads, std::set<int>{3}) << "comm.seal-threads did not reach every plane";
  EXPECT_EQ(lanes, std::set<int>{2}) << "comm.connections did not reach every plane";
}

// A re-key that does not connect (node 2 cannot listen for generation 1) is tried again once
// every node has answered for it, and generation 2 finishes the run. Without TLS the nodes seal
// generation 0 themselves, node 1 with another key.
TEST(cluster_runs, a_re_key_that_does_not_connect_is_tried_again) {
  auto j = make_job("sync", 3, 40);
  j.config.cluster.data_timeout_ms = 2000; // how long the others wait for node 2's generation 1
  const auto run = run_three_nodes(
      j, [](std::size_t node, std::uint32_t generation, herd::comm::gloo_plane_options& plane) {
        if (generation == 0) {
          herd::comm::plane_key key{};
          key.fill(node == 1 ? 0x5a : 0x17);
          plane.seal_key = key;
        } else if (generation == 1 && node == 2) {
          plane.hostname = "192.0.2.1"; // TEST-NET-1: no address of this machine
        }
      });
  expect_finished_whole(run);
  ASSERT_TRUE(run.summary);
  EXPECT_EQ(run.count("the data plane could not be re-keyed"), 1u) << run.all();
  EXPECT_EQ(run.count("re-keying the data plane (2 of at most 8 in a run)"), 1u) << run.all();
  EXPECT_EQ(run.count("data plane re-keyed: rounds go on through generation 2"), 1u) << run.all();
  EXPECT_EQ(run.count("data plane re-keyed"), 1u) << run.all();
}

// A node that cannot connect the data plane while the cluster forms ends the run at once, and the
// coordinator says why: the others stop waiting for its address (rather than until their join
// timeout) and name it as the rank that had not appeared.
TEST(cluster_runs, a_node_that_cannot_connect_as_the_cluster_forms_ends_the_run_and_is_named) {
  auto j = make_job("sync", 3, 40);
  const auto run = run_three_nodes(
      j, [](std::size_t node, std::uint32_t, herd::comm::gloo_plane_options& plane) {
        // A node dialling a peer that has just given up waits out the connect (a fifth of this
        // timeout, five times): 5 s rather than the join timeout's minute.
        plane.timeout = std::chrono::seconds(5);
        if (node == 2)
          plane.hostname = "192.0.2.1"; // TEST-NET-1: no address of this machine
      });
  ASSERT_TRUE(run.summary.has_value()) << run.all();
  EXPECT_EQ(run.summary->stop_reason, stop_cause::error);
  // Slots follow the order the nodes joined in: one worker each, so its worker is its rank.
  const auto& failed = run.outcomes[2];
  ASSERT_EQ(failed.worker_indices.size(), 1u) << failed.error;
  const auto bad = std::to_string(failed.worker_indices.front());
  // The coordinator names the node and says why it left, in the node's words.
  EXPECT_THAT(run.summary->error,
              testing::HasSubstr("node " + bad +
                                 " (vm) was lost before the run started: the data "
                                 "plane did not connect: gloo_plane rank " +
                                 bad + " of 3: cannot listen on '192.0.2.1'"));
  EXPECT_THAT(failed.error, testing::HasSubstr("cannot listen on '192.0.2.1'"));
  // The first good node to stop is told by the coordinator that a key will never be set, and names
  // the ranks it had not seen, the bad one among them (a node that came late may not have seen the
  // others either). The other may instead find that first one gone when it connects to it.
  std::size_t told = 0;
  for (std::size_t node = 0; node < 2; ++node) {
    const auto& error = run.outcomes[node].error;
    EXPECT_FALSE(run.outcomes[node].ok);
    EXPECT_THAT(error, testing::HasSubstr("the data plane did not connect")) << error;
    if (error.find("the data plane did not connect, because the run ended before it started") ==
        std::string::npos)
      continue;
    ++told;
    // The cause leads, the data plane's account of the rendezvous follows.
    EXPECT_THAT(error, testing::StartsWith("the data plane did not connect, because the run ended "
                                           "before it started: node " +
                                           bad + " (vm) was lost"))
        << error;
    EXPECT_THAT(error, testing::HasSubstr("rendezvous failed after")) << error;
    EXPECT_THAT(error, testing::ContainsRegex("rank\\(s\\) \\{([0-9]+, )*" + bad +
                                              "(, [0-9]+)*\\} had not appeared in the store"));
    // and why the run ended, in the coordinator's words.
    EXPECT_THAT(error, testing::HasSubstr("the run ended before it started: node " + bad +
                                          " (vm) was lost before the run started"))
        << error;
  }
  EXPECT_GE(told, 1u) << run.outcomes[0].error << "\n" << run.outcomes[1].error;
}

} // namespace
