// herd coordinator and herd node across network namespaces, each process at its own address on
// a bridge, links limited with tbf: every algorithm reaches its target; a partition that heals
// loses the node and brings it back; a node cut off for good is lost and the job goes on; a node
// from a fresh namespace takes a lost node's place; scripts/bench-cluster measures such a
// cluster. Skipped where namespaces cannot be made (root with CAP_SYS_ADMIN and iproute2 are
// needed).
#include <algorithm>
#include <csignal>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/cluster_processes.hpp"
#include "support/network_namespaces.hpp"
#include "support/read_file.hpp"
#include "support/subprocess.hpp"
#include "support/temp_directory.hpp"
#include "support/test_certificates.hpp"

namespace {

using herd::testing::cluster;
using herd::testing::network_namespaces;
using herd::testing::reached_target;
using herd::testing::temp_directory;
using herd::testing::write_private_file;
using namespace std::chrono_literals;

#define REQUIRE_NAMESPACES(spaces)                                                                 \
  do {                                                                                             \
    if (!(spaces).create())                                                                        \
      GTEST_SKIP() << "cannot create network namespaces here (needs root, CAP_SYS_ADMIN and "      \
                      "iproute2; containers often forbid it)";                                     \
  } while (false)

// The coordinator in the hub at 10.77.0.1; hosts "a" (10.77.0.2) and "b" (10.77.0.3), each link
// limited to `rate`. An address other machines reach needs a token, from a file only this user
// reads (as the deployment docs make one).
class namespaced_cluster {
public:
  namespaced_cluster(network_namespaces& spaces, const temp_directory& dir,
                     std::vector<std::string> settings, const std::string& rate = "1gbit")
      : spaces_(spaces), token_option_("--cluster.token-file=" + dir.file("token")) {
    write_private_file(dir.file("token"), "namespace-cluster-token-1234567890\n");
    ok_ = spaces.add_host("a", 2) && spaces.add_host("b", 3) && spaces.limit("a", rate) &&
          spaces.limit("b", rate);
    settings.push_back(token_option_);
    run_ = std::make_unique<cluster>(dir, settings, network_namespaces::address(1),
                                     spaces.exec("hub"));
  }

  bool ok() const { return ok_; }
  cluster& run() { return *run_; }

  // A node of `workers` in namespace `space`.
  herd::testing::background_process& add_node(const std::string& space, int workers,
                                              std::vector<std::string> extra = {}) {
    extra.push_back(token_option_);
    return run_->add_node(workers, extra, spaces_.exec(space), network_namespaces::address(1));
  }

private:
  network_namespaces& spaces_;
  std::string token_option_;
  bool ok_ = false;
  std::unique_ptr<cluster> run_;
};

// Heartbeats that notice a cut link within about 2 s; synthetic data, so that a run is seconds.
const std::vector<std::string> quick_heartbeat{"--cluster.heartbeat-ms=250",
                                               "--cluster.node-timeout-ms=2000"};

std::vector<std::string> with_heartbeat(std::vector<std::string> settings) {
  settings.insert(settings.end(), quick_heartbeat.begin(), quick_heartbeat.end());
  return settings;
}

// A solo run on synthetic data that goes on until stopped, on nodes node0 (in a) and node1 (in
// b), training once the returned cluster's coordinator has evaluated.
std::vector<std::string> until_stopped() {
  return with_heartbeat({"--data.dataset=synthetic", "--train.algorithm=solo",
                         "--train.epochs=100000", "--train.max-seconds=120",
                         "--cluster.min-nodes=2"});
}

bool two_nodes_training(namespaced_cluster& spaces, std::vector<std::string> second = {}) {
  spaces.add_node("a", 1, quick_heartbeat);
  second.insert(second.end(), quick_heartbeat.begin(), quick_heartbeat.end());
  spaces.add_node("b", 1, second);
  return spaces.run().coordinator_says("(node1) ready", 60s) &&
         spaces.run().coordinator_says("(node0) ready", 60s) &&
         spaces.run().coordinator_says("evaluation at round", 60s);
}

// Evaluations the coordinator printed after its first line containing `marker`.
std::size_t evaluations_after(const std::string& output, const std::string& marker) {
  std::size_t count = 0;
  const auto from = output.find(marker);
  for (auto at = output.find("evaluation at round", from);
       from != std::string::npos && at != std::string::npos;
       at = output.find("evaluation at round", at + 1))
    ++count;
  return count;
}

// Two one-worker nodes training until stopped, node0 in a and node1 in b (`second_node`: node1's
// extra settings), for the tests that cut node1's link.
class netns_partition : public testing::Test {
protected:
  cluster& two_nodes_training(std::vector<std::string> second_node = {}) {
    if (!spaces_.create())
      throw std::runtime_error("no namespaces");
    cluster_ = std::make_unique<namespaced_cluster>(spaces_, dir_, until_stopped());
    EXPECT_TRUE(cluster_->ok());
    EXPECT_TRUE(::two_nodes_training(*cluster_, std::move(second_node))) << cluster_->run().logs();
    return cluster_->run();
  }

  void SetUp() override {
    network_namespaces probe;
    REQUIRE_NAMESPACES(probe);
  }

  network_namespaces spaces_;
  temp_directory dir_;
  std::unique_ptr<namespaced_cluster> cluster_;
};

// TLS as a deployment has it, for every process of a namespaced cluster: one certificate naming
// every address the cluster uses (so the data plane is sealed too, cluster.data-encryption =
// auto). Empty when openssl cannot make the certificates.
std::vector<std::string> tls_options(const temp_directory& dir) {
  const std::string d = dir.path().string();
  if (!herd::testing::make_certificate_authority(d, "ca") ||
      !herd::testing::make_signed_certificate(d, "member", "ca",
                                              "IP:10.77.0.1,IP:10.77.0.2,IP:10.77.0.3"))
    return {};
  return {"--cluster.tls-ca=" + dir.file("ca.pem"), "--cluster.tls-cert=" + dir.file("member.pem"),
          "--cluster.tls-key=" + dir.file("member.key")};
}

TEST(netns_cluster, the_quick_start_with_tls_reaches_the_target_across_three_namespaces_at_1_gbit) {
  REQUIRE_FASHION_MNIST();
  network_namespaces spaces;
  REQUIRE_NAMESPACES(spaces);
  temp_directory dir;
  const auto tls = tls_options(dir);
  ASSERT_FALSE(tls.empty()) << "openssl could not make the test certificates";
  // sync: what is tested is the network between namespaces, and sync's accuracy does not depend
  // on the machine's load (solo's, with stale gradients, can miss 0.85 in 3 epochs on a loaded
  // 2-core machine).
  std::vector<std::string> settings{"--config", std::string(HERD_CONFIG_DIR) + "/quickstart.ini",
                                    "--train.target-accuracy=0.85", "--train.algorithm=sync",
                                    "--cluster.min-nodes=3"};
  settings.insert(settings.end(), tls.begin(), tls.end());
  namespaced_cluster cluster(spaces, dir, settings);
  ASSERT_TRUE(cluster.ok());
  auto& a = cluster.add_node("a", 2, tls);
  auto& b = cluster.add_node("b", 1, tls);
  cluster.add_node("hub", 1, tls);
  auto& run = cluster.run();
  ASSERT_EQ(run.coordinator().wait(10min), 0) << run.logs();
  const auto report = run.report();
  EXPECT_EQ(report["workers"], 4);
  EXPECT_EQ(report["stop_reason"], "target-accuracy") << run.logs();
  EXPECT_TRUE(reached_target(report, 0.85, 3.0)) << run.logs();
  // Each node's data plane listened on its own namespace's address, and sealed its messages.
  EXPECT_NE(a.output().find("data plane connected (10.77.0.2, 3 nodes, sealed by "),
            std::string::npos)
      << run.logs();
  EXPECT_NE(b.output().find("data plane connected (10.77.0.3, 3 nodes, sealed by "),
            std::string::npos)
      << run.logs();
}

// The 10 Gbit/s preset, with everything the wire can do at once: sealed (TLS) by three threads a
// node, fp16 with error feedback.
TEST(netns_cluster, sealed_fp16_with_error_feedback_reaches_the_target_at_10_gbit) {
  network_namespaces spaces;
  REQUIRE_NAMESPACES(spaces);
  temp_directory dir;
  const auto tls = tls_options(dir);
  ASSERT_FALSE(tls.empty()) << "openssl could not make the test certificates";
  std::vector<std::string> settings{"--data.dataset=synthetic",    "--train.algorithm=sync",
                                    "--train.target-accuracy=0.9", "--train.epochs=10",
                                    "--cluster.min-nodes=3",       "--comm.compression=fp16",
                                    "--comm.error-feedback=true",  "--comm.seal-threads=3"};
  settings.insert(settings.end(), tls.begin(), tls.end());
  namespaced_cluster cluster(spaces, dir, settings, "10gbit");
  ASSERT_TRUE(cluster.ok());
  auto& a = cluster.add_node("a", 1, tls);
  cluster.add_node("b", 1, tls);
  cluster.add_node("hub", 1, tls);
  auto& run = cluster.run();
  ASSERT_EQ(run.coordinator().wait(5min), 0) << run.logs();
  const auto report = run.report();
  EXPECT_EQ(report["stop_reason"], "target-accuracy") << run.logs();
  EXPECT_EQ(report["rounds_aborted"], 0) << run.logs();
  EXPECT_NE(a.output().find("3 nodes, fp16 on the wire with error feedback, sealed by 3 threads)"),
            std::string::npos)
      << run.logs();
}

class every_algorithm : public testing::TestWithParam<const char*> {};

TEST_P(every_algorithm, reaches_its_target_across_three_namespaces) {
  network_namespaces spaces;
  REQUIRE_NAMESPACES(spaces);
  temp_directory dir;
  const std::string algorithm = GetParam();
  namespaced_cluster cluster(spaces, dir,
                             {"--data.dataset=synthetic", "--train.algorithm=" + algorithm,
                              "--train.target-accuracy=0.9", "--train.epochs=10",
                              "--cluster.min-nodes=3"});
  ASSERT_TRUE(cluster.ok());
  cluster.add_node("a", 1);
  cluster.add_node("b", 1);
  cluster.add_node("hub", 1);
  auto& run = cluster.run();
  ASSERT_EQ(run.coordinator().wait(5min), 0) << run.logs();
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_EQ(run.node(i).wait(30s), 0) << "node " << i << "\n" << run.logs();
  const auto report = run.report();
  EXPECT_EQ(report["algorithm"], algorithm);
  EXPECT_EQ(report["data_plane"], "gloo");
  EXPECT_EQ(report["stop_reason"], "target-accuracy") << run.logs();
  EXPECT_EQ(report["rounds_aborted"], 0) << run.logs();
}

INSTANTIATE_TEST_SUITE_P(netns_cluster, every_algorithm,
                         // Not async: herd coordinator refuses it (its parameter server lives
                         // in one process), as cluster_cli_test checks.
                         testing::Values("sync", "solo", "majority", "wagma", "preduce",
                                         "local-sgd"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A link down for 10 s, then up: the node is lost after the node timeout, and once the link is
// back it joins the running job again in place of its own workers (the documented rule), which
// goes on meanwhile.
//
// This failed in about one run of six (3 of 20) while the node rejoined with the actor system it
// had before the partition: the coordinator's CAF still knew that CAF node and took its new
// connections for redundant ones. Each membership now has an actor system of its own (28 of 28
// runs passed).
TEST_F(netns_partition, a_partition_that_heals_loses_the_node_and_brings_it_back) {
  auto& run = two_nodes_training();
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(spaces_.set_link("b", false));
  const auto cut_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(run.coordinator_says("(node1) lost", 15s)) << run.logs();
  std::this_thread::sleep_until(cut_at + 10s);
  // The job went on without the node while it was cut off.
  EXPECT_GT(evaluations_after(run.coordinator().output(), "(node1) lost"), 0u) << run.logs();
  ASSERT_TRUE(spaces_.set_link("b", true));
  ASSERT_TRUE(run.coordinator_says("(node1) joined the running job", 90s)) << run.logs();
  EXPECT_NE(run.node(1).output().find("joining the running job again"), std::string::npos)
      << run.logs();
  run.coordinator().stop(SIGINT, 60s);
  EXPECT_EQ(run.node(0).wait(30s), 0) << run.logs();
  EXPECT_EQ(run.node(1).wait(30s), 0) << run.logs();
  const auto report = run.report();
  ASSERT_FALSE(report.is_null()) << run.logs();
  EXPECT_EQ(report["workers_joined"], 1) << run.logs();
  for (const auto& worker : report["per_worker"])
    EXPECT_TRUE(worker["live"].get<bool>()) << run.logs();
}

// Cuts node1's link for good and waits until the job has gone on without it.
void cut_node1_for_good(network_namespaces& spaces, cluster& run) {
  ASSERT_TRUE(spaces.set_link("b", false));
  ASSERT_TRUE(run.coordinator_says("(node1) lost", 15s)) << run.logs();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (evaluations_after(run.coordinator().output(), "(node1) lost") < 2 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  ASSERT_GE(evaluations_after(run.coordinator().output(), "(node1) lost"), 2u) << run.logs();
}

// A link down for good: the job goes on with the other node; the cut-off node gives up
// rejoining after cluster.rejoin-s and says why.
TEST_F(netns_partition, a_node_cut_off_for_good_is_lost_and_the_job_goes_on) {
  auto& run = two_nodes_training({"--cluster.rejoin-s=3"});
  ASSERT_FALSE(HasFailure());
  cut_node1_for_good(spaces_, run);
  EXPECT_EQ(run.node(1).wait(60s), 1) << run.logs();
  EXPECT_NE(run.node(1).output().find("lost the coordinator"), std::string::npos) << run.logs();
  run.coordinator().stop(SIGINT, 60s);
  EXPECT_EQ(run.node(0).wait(30s), 0) << run.logs();
  const auto report = run.report();
  ASSERT_FALSE(report.is_null()) << run.logs();
  ASSERT_EQ(report["per_worker"].size(), 2u) << run.logs();
  // Workers are numbered in the order the nodes joined: node1's is the one it was given.
  const auto cut_off = run.workers_of("node1");
  ASSERT_EQ(cut_off.size(), 1u) << run.logs();
  for (const auto& worker : report["per_worker"])
    EXPECT_EQ(worker["live"].get<bool>(), worker["worker"].get<int>() != cut_off[0]) << run.logs();
}

// After a node is cut off for good, a node started in a namespace that did not exist before
// takes its place.
TEST_F(netns_partition, a_node_from_a_fresh_namespace_takes_the_lost_nodes_place) {
  auto& run = two_nodes_training({"--cluster.rejoin-s=0"});
  ASSERT_FALSE(HasFailure());
  cut_node1_for_good(spaces_, run);
  ASSERT_TRUE(spaces_.add_host("d", 4) && spaces_.limit("d", "1gbit"));
  auto& fresh = cluster_->add_node("d", 1, quick_heartbeat);
  ASSERT_TRUE(run.coordinator_says("(node2) joined the running job", 60s)) << run.logs();
  const auto joined = run.coordinator().output().find("(node2) joined the running job");
  // It trains: the job evaluates again after the join.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (evaluations_after(run.coordinator().output(), "(node2) joined") < 1 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  EXPECT_NE(joined, std::string::npos);
  EXPECT_GE(evaluations_after(run.coordinator().output(), "(node2) joined"), 1u) << run.logs();
  EXPECT_NE(fresh.output().find("data plane connected (10.77.0.4"), std::string::npos)
      << run.logs();
  run.coordinator().stop(SIGINT, 60s);
  EXPECT_EQ(fresh.wait(30s), 0) << run.logs();
  const auto report = run.report();
  ASSERT_FALSE(report.is_null()) << run.logs();
  EXPECT_EQ(report["workers_joined"], 1) << run.logs();
}

// scripts/bench-cluster --netns: the cluster layout runs as hosts in namespaces of their own on
// links of the given rate (scripts/local-cluster --netns), and its row names the rate.
TEST(netns_cluster, bench_cluster_measures_a_cluster_of_namespaced_hosts) {
  network_namespaces spaces; // only to learn whether namespaces can be made here
  REQUIRE_NAMESPACES(spaces);
  const auto measured = herd::testing::run_process(
      {std::string(HERD_SOURCE_DIR) + "/scripts/bench-cluster", "--binary", HERD_BINARY,
       "--nodes=2", "--repetitions=1", "--algorithms=sync", "--netns=100mbit", "--",
       "--data.dataset=synthetic", "--train.epochs=1", "--imbalance.kind=none"},
      300s);
  ASSERT_EQ(measured.exit_code, 0) << measured.output;
  EXPECT_NE(measured.output.find("run  2 of 2: sync     2 nodes x 1 at 100mbit"), std::string::npos)
      << measured.output;
  EXPECT_NE(measured.output.find("the cluster's links are limited to 100mbit"), std::string::npos)
      << measured.output;
  const auto logs = measured.output.find("logs and reports in ");
  ASSERT_NE(logs, std::string::npos) << measured.output;
  const auto dir = measured.output.substr(logs + 20, measured.output.find('\n', logs) - logs - 20);
  const auto cluster_log = herd::testing::read_file(dir + "/sync-cluster-1-1.log");
  EXPECT_NE(cluster_log.find("links of 100mbit"), std::string::npos) << cluster_log;
  const auto report =
      nlohmann::json::parse(herd::testing::read_file(dir + "/sync-cluster-1-1.json"));
  EXPECT_EQ(report["workers"], 2);
}

} // namespace
