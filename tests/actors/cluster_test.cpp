// Runs across processes, with the coordinator and every node as actor systems of this process
// (each its own node in CAF's sense, joined over loopback TCP; the data plane is Gloo over
// loopback): replicas on different nodes go through the same states, every gradient is
// accounted for, every algorithm runs unchanged, and the cluster refuses what it cannot run.
#include "actors/cluster_node.hpp"
#include "actors/cluster_session.hpp"
#include "actors/train_session.hpp"
#include "models/mlp.hpp"

#include <cmath>
#include <condition_variable>
#include <gtest/gtest.h>
#include <mutex>
#include <numeric>
#include <thread>

#include "support/recording_probe.hpp"

namespace {

using herd::actors::cluster_options;
using herd::actors::cluster_session;
using herd::actors::node_options;
using herd::actors::node_outcome;
using herd::actors::run_summary;
using herd::config::run_config;
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

// A coordinator and one node per entry of `node_workers`, each node on a thread of its own.
cluster_run run_cluster(job j, const std::vector<int>& node_workers,
                        std::shared_ptr<herd::actors::worker_probe> probe = nullptr) {
  j.config.cluster.min_nodes = static_cast<int>(node_workers.size());
  cluster_options options;
  options.listen_host = "127.0.0.1";
  options.progress_interval = std::chrono::milliseconds(20);
  cluster_session session(j.config, j.data, options);
  cluster_run run;
  run.nodes.resize(node_workers.size());
  std::vector<std::thread> nodes;
  for (std::size_t i = 0; i < node_workers.size(); ++i)
    nodes.emplace_back([&, i] {
      run.nodes[i] = herd::actors::run_node(node_for(j, session.port(), node_workers[i], probe));
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
  return herd::models::mlp(herd::actors::mlp_layer_sizes(j.config, j.data->train))
      .parameter_count();
}

double norm(const std::vector<double>& values) {
  return std::sqrt(std::inner_product(values.begin(), values.end(), values.begin(), 0.0));
}

TEST(cluster_runs, replicas_on_different_nodes_go_through_the_same_states) {
  for (const char* algorithm : {"sync", "solo", "majority"}) {
    const auto j = make_job(algorithm, 4, 24);
    auto probe = std::make_shared<recording_probe>(4, parameter_count(j));
    const auto run = run_cluster(j, {2, 1, 1}, probe);
    ASSERT_EQ(run.summary.stop_reason, "epochs") << algorithm << ": " << run.summary.error;
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

TEST(cluster_runs, every_gradient_is_accounted_for_across_nodes) {
  const auto j = make_job("solo", 4, 30);
  auto probe = std::make_shared<recording_probe>(4, parameter_count(j));
  const auto run = run_cluster(j, {1, 2, 1}, probe);
  ASSERT_EQ(run.summary.stop_reason, "epochs") << run.summary.error;
  ASSERT_TRUE(probe->all_stopped());
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
      << "|applied * P + unsent - computed| = " << norm(difference) << " of " << norm(computed);
}

TEST(cluster_runs, the_model_averaging_algorithms_run_unchanged_across_nodes) {
  for (const char* algorithm : {"preduce", "wagma"}) {
    const auto j = make_job(algorithm, 4, 24);
    const auto run = run_cluster(j, {2, 2});
    EXPECT_EQ(run.summary.stop_reason, "epochs") << algorithm << ": " << run.summary.error;
    EXPECT_GT(run.summary.rounds, 0u) << algorithm;
    EXPECT_EQ(run.summary.aborted_rounds, 0u) << algorithm;
    EXPECT_TRUE(run.summary.final_test_accuracy.has_value()) << algorithm;
    for (const auto& node : run.nodes)
      EXPECT_TRUE(node.ok) << algorithm << ": " << node.error;
  }
}

TEST(cluster_runs, settings_that_do_not_fit_the_nodes_workers_are_refused_by_key) {
  auto j = make_job("solo", 4, 10);
  j.config.imbalance.kind = "persistent";
  j.config.imbalance.workers = {5}; // valid with the file's 8 workers, not with the nodes' 3
  j.config.train.workers = 8;
  const auto run = run_cluster(j, {2, 1});
  EXPECT_EQ(run.summary.stop_reason, "error");
  EXPECT_NE(run.summary.error.find("imbalance.workers"), std::string::npos) << run.summary.error;
  for (const auto& node : run.nodes) {
    EXPECT_FALSE(node.ok);
    EXPECT_NE(node.error.find("imbalance.workers"), std::string::npos) << node.error;
  }
}

TEST(cluster_runs, a_node_that_comes_after_the_run_started_is_refused_with_the_reason) {
  auto j = make_job("solo", 2, 400);
  j.config.imbalance.delay_ms = 20.0; // a run long enough for the late node to find it running
  j.config.cluster.min_nodes = 1;
  cluster_options options;
  options.listen_host = "127.0.0.1";
  cluster_session session(j.config, j.data, options);
  std::mutex mutex;
  std::condition_variable joined;
  bool first_joined = false;
  auto first_options = node_for(j, session.port(), 2, nullptr);
  first_options.on_notice = [&](const std::string& text) {
    if (text.find("joined as node 0") != std::string::npos) {
      std::lock_guard<std::mutex> guard(mutex);
      first_joined = true;
      joined.notify_all();
    }
  };
  node_outcome first;
  std::thread first_node([&] { first = herd::actors::run_node(first_options); });
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(joined.wait_for(lock, std::chrono::seconds(60), [&] { return first_joined; }));
  }
  const auto late = herd::actors::run_node(node_for(j, session.port(), 1, nullptr));
  EXPECT_FALSE(late.ok);
  EXPECT_NE(late.error.find("joining a running job is not supported"), std::string::npos)
      << late.error;
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
  cluster_options options;
  options.listen_host = "127.0.0.1";
  cluster_session session(j.config, j.data, options);
  session.request_stop();
  const auto summary = session.wait_for(std::chrono::seconds(30));
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->stop_reason, "interrupted");
  EXPECT_FALSE(summary->started);
  EXPECT_NE(summary->error.find("0 of 3"), std::string::npos) << summary->error;
}

TEST(cluster_runs, a_node_that_cannot_reach_the_coordinator_gives_up_after_the_join_timeout) {
  const auto j = make_job("sync", 2, 10);
  auto options = node_for(j, 1, 1, nullptr); // port 1: nobody listens
  options.cluster.join_timeout_s = 1;
  const auto outcome = herd::actors::run_node(options);
  EXPECT_FALSE(outcome.ok);
  EXPECT_NE(outcome.error.find("cannot reach the coordinator at 127.0.0.1:1"), std::string::npos)
      << outcome.error;
  EXPECT_NE(outcome.error.find("cluster.join-timeout-s"), std::string::npos) << outcome.error;
}

TEST(cluster_runs, a_coordinator_port_in_use_is_named) {
  const auto j = make_job("sync", 2, 10);
  cluster_options options;
  options.listen_host = "127.0.0.1";
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

#include "actors/control_gate.hpp"
#include "actors/messages.hpp"
#include "actors/remoting.hpp"

#include <caf/all.hpp>

namespace {

TEST(cluster_runs, only_welcomed_nodes_may_use_the_data_planes_rendezvous) {
  auto j = make_job("sync", 2, 10);
  j.config.cluster.min_nodes = 2;
  cluster_options options;
  options.listen_host = "127.0.0.1";
  cluster_session session(j.config, j.data, options);
  // A process that passed the gate but never joined: it may not read or write the store.
  caf::actor_system_config system_config;
  herd::actors::configure_remoting(system_config, j.config.cluster);
  caf::actor_system system{system_config};
  herd::actors::gate_dialer gate("127.0.0.1", session.port(), "");
  auto registry = herd::actors::remote_on_loopback(system, gate.local_port(), j.config.cluster);
  ASSERT_TRUE(registry) << system.render(registry.error());
  caf::scoped_actor self{system};
  std::string refusal;
  self->request(*registry, std::chrono::seconds(10), herd::actors::store_get_atom::value,
                std::string("any-key"))
      .receive([](const std::vector<char>&) {},
               [&](caf::error& error) { refusal = system.render(error); });
  EXPECT_NE(refusal.find("for welcomed nodes only"), std::string::npos) << refusal;
  session.request_stop();
  EXPECT_TRUE(session.wait_for(std::chrono::seconds(30)).has_value());
}

} // namespace
