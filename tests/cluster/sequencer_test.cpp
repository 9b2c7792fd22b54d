// The cluster's global order of reductions between nodes (comm/sequencer.hpp), tested without a
// GPU: the coordinator and the nodes run as actor systems of this process, as in cluster_test,
// but the data plane between nodes is the emulated plane with NCCL's matching rule
// (tests/support/issue_order_plane.hpp), which records a pair's mismatch or a cycle of waits and
// fails instead of hanging. With ticket order on, no algorithm and no imbalance breaks the rule
// over thousands of reductions; with it off, the same plane catches the disorder, so these tests
// can fail.
#include "herd/run_summary.hpp"

#include <chrono>
#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "cluster/cluster_node.hpp"
#include "cluster/cluster_session.hpp"
#include "support/issue_order_plane.hpp"

namespace {

using herd::actors::stop_cause;
using herd::cluster::cluster_options;
using herd::cluster::cluster_session;
using herd::cluster::node_options;
using herd::config::run_config;
using herd::testing::issue_order_fabric;
using clock_type = std::chrono::steady_clock;

// Every node's plane of one generation shares one fabric.
class emulated_planes {
public:
  std::shared_ptr<herd::comm::data_plane> make(std::uint32_t generation, int rank, int size) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto& fabric = fabrics_[generation];
    if (!fabric)
      fabric = std::make_shared<issue_order_fabric>(size);
    return fabric->plane(rank);
  }

  template <class Sum>
  std::size_t total(Sum sum) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::size_t value = 0;
    for (const auto& [generation, fabric] : fabrics_)
      value += sum(*fabric);
    return value;
  }
  std::size_t violations() const {
    return total([](const issue_order_fabric& f) { return f.mismatches() + f.deadlocks(); });
  }
  std::size_t completed() const {
    return total([](const issue_order_fabric& f) { return f.completed(); });
  }
  std::string violation() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [generation, fabric] : fabrics_)
      if (fabric->broken())
        return fabric->violation();
    return {};
  }

private:
  mutable std::mutex mutex_;
  std::map<std::uint32_t, std::shared_ptr<issue_order_fabric>> fabrics_;
};

struct outcome {
  herd::actors::run_summary summary;
  std::size_t reductions = 0; // between nodes, finished on the emulated plane
  std::size_t violations = 0;
  std::string violation;
  double seconds = 0.0;
  std::vector<std::string> node_errors;
};

constexpr int batch = 4;

// `steps` steps per worker on a tiny model, one node per entry of `node_workers`. With
// `stop_at_violation` the run is stopped as soon as the plane catches one (it breaks, like an
// aborted communicator, and every later round is aborted anyway).
outcome run(const std::string& algorithm, const std::string& imbalance,
            const std::vector<int>& node_workers, int steps, bool ticket_order,
            bool stop_at_violation = false, int group_size = 2) {
  run_config config;
  int workers = 0;
  for (int count : node_workers)
    workers += count;
  config.train.algorithm = algorithm;
  config.train.workers = workers;
  config.train.batch_size = batch;
  config.train.lr = 0.05;
  config.train.epochs = 1;
  config.train.seed = 5;
  config.train.eval_every = 1000000;
  config.data.dataset = "synthetic";
  config.model.hidden = {4};
  config.quorum.fraction = 0.5;
  (algorithm == "wagma" ? config.wagma.group_size : config.preduce.group_size) = group_size;
  config.wagma.sync_every = 8;
  config.preduce.wait_window_ms = 2.0;
  config.imbalance.kind = imbalance;
  config.imbalance.k = 1;
  config.imbalance.delay_ms = 1.0;
  config.imbalance.workers = {0};
  config.imbalance.factor = 3.0;
  config.imbalance.sigma = 0.5;
  config.cluster.min_nodes = static_cast<int>(node_workers.size());
  config.cluster.data_timeout_ms = 10000;
  auto data = std::make_shared<herd::models::train_test_split>(herd::models::make_synthetic_split(
      static_cast<std::size_t>(workers) * static_cast<std::size_t>(steps) * batch, 50, 6, 3, 3));
  emulated_planes planes;
  cluster_options options;
  options.listen_host = "127.0.0.1";
  options.ticket_order = ticket_order;
  const auto start = clock_type::now();
  cluster_session session(config, data, options);
  outcome result;
  result.node_errors.resize(node_workers.size());
  std::vector<std::thread> nodes;
  for (std::size_t i = 0; i < node_workers.size(); ++i)
    nodes.emplace_back([&, i] {
      node_options node;
      node.coordinator_host = "127.0.0.1";
      node.coordinator_port = session.port();
      node.workers = node_workers[i];
      node.data_host = "127.0.0.1";
      node.cluster.join_timeout_s = 60;
      node.load_data = [data](const run_config&) { return data; };
      node.make_plane = [&planes](std::uint32_t generation, int rank, int size) {
        return planes.make(generation, rank, size);
      };
      const auto ended = herd::cluster::run_node(node);
      if (!ended.ok)
        result.node_errors[i] = ended.error;
    });
  std::optional<herd::actors::run_summary> summary;
  while (!(summary = session.wait_for(std::chrono::milliseconds(20)))) {
    if (stop_at_violation && planes.violations() > 0)
      session.request_stop();
    if (clock_type::now() - start > std::chrono::minutes(2)) {
      ADD_FAILURE() << algorithm << ": the run did not end within 2 minutes";
      session.request_stop();
      summary = session.wait_for(std::chrono::seconds(30));
      break;
    }
  }
  for (auto& node : nodes)
    node.join();
  if (summary)
    result.summary = *summary;
  result.reductions = planes.completed();
  result.violations = planes.violations();
  result.violation = planes.violation();
  result.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  return result;
}

// What a run measured, for the log (the test's report quotes it).
void note(const std::string& what, const outcome& ran) {
  std::cout << "[ sequencer ] " << what << ": " << ran.summary.rounds << " rounds, "
            << ran.reductions << " reductions between nodes, " << ran.summary.aborted_rounds
            << " aborted, " << ran.violations << " violations, " << ran.seconds << " s"
            << (ran.violation.empty() ? "" : " (" + ran.violation + ")") << "\n";
}

// wagma's and preduce's concurrent groups share nodes when nodes host several workers and groups
// are larger than two (groups of two workers, one per node, never overlap in nodes).
const std::vector<std::pair<std::string, int>> groups = {{"wagma", 4}, {"preduce", 3}};

// Every algorithm under every imbalance kind, on four nodes of two workers each: the groups that
// wagma and preduce run concurrently, and the rounds of the quorum family one at a time, never
// break NCCL's rule, and every round is applied (none aborted).
TEST(sequencer_cluster, with_ticket_order_no_algorithm_or_imbalance_breaks_the_matching_rule) {
  std::size_t reductions = 0;
  std::vector<std::tuple<std::string, int, int>> runs = {
      {"sync", 100, 0}, {"solo", 100, 0}, {"majority", 100, 0}, {"quorum", 100, 0}};
  for (const auto& [algorithm, group_size] : groups)
    runs.emplace_back(algorithm, 200, group_size);
  for (const auto& [algorithm, steps, group_size] : runs)
    for (const char* imbalance : {"none", "random", "persistent", "lognormal"}) {
      const auto ran = run(algorithm, imbalance, {2, 2, 2, 2}, steps, true, false,
                           group_size > 0 ? group_size : 2);
      note(algorithm + " / " + imbalance + ", ticket order on", ran);
      EXPECT_EQ(ran.summary.stop_reason, stop_cause::epochs)
          << algorithm << " / " << imbalance << ": " << ran.summary.error;
      EXPECT_EQ(ran.violations, 0u) << algorithm << " / " << imbalance << ": " << ran.violation;
      EXPECT_EQ(ran.summary.aborted_rounds, 0u) << algorithm << " / " << imbalance;
      EXPECT_GT(ran.reductions, 0u) << algorithm << " / " << imbalance;
      for (const auto& error : ran.node_errors)
        EXPECT_TRUE(error.empty()) << algorithm << " / " << imbalance << ": " << error;
      reductions += ran.reductions;
    }
  std::cout << "[ sequencer ] " << reductions << " reductions between nodes in all\n";
  EXPECT_GE(reductions, 2000u);
}

// The same plane catches the disorder when nodes issue as orders come: wagma's and preduce's
// concurrent groups meet the nodes in different orders. (The quorum family runs one round at a
// time, so it cannot show it.) Stopped at the first violation, which comes within a few dozen
// rounds.
TEST(sequencer_cluster, without_ticket_order_the_emulated_plane_catches_the_disorder) {
  for (const auto& [algorithm, group_size] : groups) {
    const auto ran = run(algorithm, "random", {2, 2, 2, 2}, 400, false, true, group_size);
    note(std::string(algorithm) + " / random, ticket order off", ran);
    EXPECT_GT(ran.violations, 0u) << algorithm << ": " << ran.reductions
                                  << " reductions between nodes and no violation";
  }
}

} // namespace
