// herd coordinator and herd node as real processes on loopback: the quick-start job reaches its
// target across them; a node killed or frozen mid-run is detected and the run goes on; garbage
// sent to the coordinator's port does not bring it down (netns_cluster_test: the same across
// network namespaces). The accuracy tests need the dataset-fashion-mnist package.
#include "actors/checkpoint_state.hpp"

#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <memory>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "checkpoint/format.hpp"
#include "support/background_process.hpp"
#include "support/cluster_processes.hpp"
#include "support/subprocess.hpp"
#include "support/temp_directory.hpp"
#include "support/test_certificates.hpp"

namespace {

using herd::testing::background_process;
using herd::testing::temp_directory;
using namespace std::chrono_literals;

const std::string quickstart = std::string(HERD_CONFIG_DIR) + "/quickstart.ini";

using herd::testing::cluster;
using herd::testing::reached_target;
using herd::testing::shell;
using herd::testing::write_private_file;

TEST(cluster_cli, a_coordinator_and_three_nodes_train_the_quick_start_to_the_target) {
  REQUIRE_FASHION_MNIST();
  for (const char* algorithm : {"sync", "solo"}) {
    temp_directory dir;
    // A fourth epoch of room: solo across processes reaches 0.85 near the end of the third
    // (0.8504 at epoch 3.00 in one CI run, which then stopped by its epochs).
    cluster run(dir, {"--config", quickstart, std::string("--train.algorithm=") + algorithm,
                      "--train.target-accuracy=0.85", "--train.epochs=4", "--cluster.min-nodes=3"});
    run.add_node(2);
    run.add_node(1);
    run.add_node(1);
    const auto status = run.coordinator().wait(10min);
    ASSERT_EQ(status, 0) << algorithm << "\n" << run.logs();
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_EQ(run.node(i).wait(30s), 0) << algorithm << " node " << i << "\n" << run.logs();
    const auto report = run.report();
    EXPECT_EQ(report["algorithm"], algorithm);
    EXPECT_EQ(report["workers"], 4) << "train.workers is the sum of the nodes' --workers";
    EXPECT_EQ(report["data_plane"], "gloo");
    EXPECT_EQ(report["stop_reason"], "target-accuracy") << run.logs();
    EXPECT_TRUE(reached_target(report, 0.85, 4.0)) << run.logs();
    EXPECT_EQ(report["rounds_aborted"], 0);
  }
}

// The quick-start job (solo) to 0.85 on nodes of 2, 1 and 1 workers (node0, node1, node2).
const std::vector<std::string> quickstart_on_three_nodes{
    "--config", quickstart, "--train.target-accuracy=0.85", "--cluster.min-nodes=3"};

// Starts the three nodes and waits until the run has done its first evaluation.
bool start_three_nodes_and_train_a_while(cluster& run) {
  run.add_node(2);
  run.add_node(1);
  run.add_node(1);
  return run.coordinator_says("evaluation at round 100", 5min);
}

TEST(cluster_cli, a_node_killed_in_the_middle_of_a_solo_run_is_marked_down_and_the_run_goes_on) {
  REQUIRE_FASHION_MNIST();
  temp_directory dir;
  // A fourth epoch of room, as in the join test below: after the kill the run trains with 3 of
  // its 4 workers, and once it peaked at 0.8457 by epoch 3 (target 0.85). What this test checks
  // is that the loss is marked and the run goes on to its target.
  auto settings = quickstart_on_three_nodes;
  settings.push_back("--train.epochs=4");
  cluster run(dir, settings);
  ASSERT_TRUE(start_three_nodes_and_train_a_while(run)) << run.logs();
  const auto killed = run.workers_of("node2");
  ASSERT_EQ(killed.size(), 1u) << run.logs();
  run.node(2).stop(SIGKILL, 10s);
  ASSERT_EQ(run.coordinator().wait(10min), 0) << run.logs();
  const auto report = run.report();
  EXPECT_EQ(report["stop_reason"], "target-accuracy") << run.logs();
  EXPECT_TRUE(reached_target(report, 0.85, 4.0)) << run.logs();
  for (int worker = 0; worker < 4; ++worker)
    EXPECT_EQ(report["per_worker"][worker]["live"], worker != killed[0])
        << "worker " << worker << "\n"
        << run.logs();
  EXPECT_NE(run.coordinator().output().find("(node2) lost"), std::string::npos) << run.logs();
  // One line for the loss, the node's, naming its worker (not one more per worker).
  EXPECT_NE(run.coordinator().output().find("its worker " + std::to_string(killed[0]) + " is down"),
            std::string::npos)
      << run.logs();
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(run.node(i).wait(30s), 0) << "node " << i << "\n" << run.logs();
}

TEST(cluster_cli, a_node_started_after_one_left_joins_in_its_place_and_the_run_reaches_the_target) {
  REQUIRE_FASHION_MNIST();
  temp_directory dir;
  // A higher target and more epochs than the quick start's: the run must still be going when the
  // new node is ready. In CI, beside another test's CNN, three workers reached 0.85 at epoch 1.2
  // (17 s) before the new node had even dialled the coordinator. The one that joins starts from
  // another replica's model. What this test checks is the join, not the quick start's pace, which
  // the test above checks.
  // With checkpoints: none is whole while node2's worker is lost, and once node3 took its place
  // node3 writes that worker's part.
  auto settings = quickstart_on_three_nodes;
  settings.push_back("--train.target-accuracy=0.87");
  settings.push_back("--train.epochs=8");
  settings.push_back("--checkpoint.dir=" + dir.file("checkpoints"));
  settings.push_back("--checkpoint.every-seconds=5");
  cluster run(dir, settings);
  ASSERT_TRUE(start_three_nodes_and_train_a_while(run)) << run.logs();
  const auto slots = run.workers_of("node2");
  ASSERT_EQ(slots.size(), 1u) << run.logs();
  // SIGTERM (a VM's preemption notice) makes a node leave the job: exit 0, its workers lost,
  // once the rounds it is in have ended (no round aborts on its closed data plane).
  ::kill(run.node(2).pid(), SIGTERM);
  EXPECT_EQ(run.node(2).wait(30s), 0) << run.logs();
  EXPECT_NE(run.node(2).output().find("left the job once the rounds it was in had ended"),
            std::string::npos)
      << run.logs();
  ASSERT_TRUE(run.coordinator_says("(node2) lost: it left the job", 30s)) << run.logs();
  EXPECT_NE(run.coordinator().output().find("(node2) leaves the job: rounds pause"),
            std::string::npos)
      << run.logs();
  EXPECT_EQ(run.coordinator().output().find("aborted"), std::string::npos) << run.logs();
  run.add_node(1); // node3
  ASSERT_EQ(run.coordinator().wait(10min), 0) << run.logs();
  EXPECT_EQ(run.node(3).wait(30s), 0) << run.logs();
  EXPECT_NE(run.node(3).output().find("joining the running job as node 3 in place of lost "
                                      "worker(s) " +
                                      std::to_string(slots[0])),
            std::string::npos)
      << run.logs();
  EXPECT_NE(run.coordinator().output().find("node 3 (node3) joined the running job: worker " +
                                            std::to_string(slots[0]) + " took worker"),
            std::string::npos)
      << run.logs();
  const auto report = run.report();
  EXPECT_EQ(report["stop_reason"], "target-accuracy") << run.logs();
  EXPECT_TRUE(reached_target(report, 0.87, 8.0)) << run.logs();
  EXPECT_EQ(report["workers_joined"], 1) << run.logs();
  for (int worker = 0; worker < 4; ++worker)
    EXPECT_EQ(report["per_worker"][worker]["live"], true) << "worker " << worker << "\n"
                                                          << run.logs();
  const auto output = run.coordinator().output();
  const auto joined = output.find("node 3 (node3) joined the running job");
  const auto final_checkpoint = output.find("herd: final checkpoint ");
  ASSERT_NE(final_checkpoint, std::string::npos) << run.logs();
  EXPECT_GT(final_checkpoint, joined);
  EXPECT_NE(output.find("3 parts of", final_checkpoint), std::string::npos) << run.logs();
  const auto stem = herd::checkpoint::stem_of(
      std::filesystem::path(herd::checkpoint::resolve(dir.file("checkpoints")))
          .filename()
          .string());
  EXPECT_TRUE(
      std::filesystem::exists(dir.file("checkpoints/" + herd::checkpoint::part_name(stem, 3))))
      << run.logs();
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(run.node(i).wait(30s), 0) << "node " << i << "\n" << run.logs();
}

// Short enough to test quickly, long enough that a loaded 2-core machine raises no false alarm.
const std::vector<std::string> quick_heartbeat{"--cluster.heartbeat-ms=250",
                                               "--cluster.node-timeout-ms=2000"};

// A solo run of two one-worker nodes (node0, node1) that goes on until stopped, training once
// this returns true; `second_node` are node1's extra settings.
bool two_nodes_training(cluster& run, std::vector<std::string> second_node = {}) {
  run.add_node(1, quick_heartbeat);
  second_node.insert(second_node.end(), quick_heartbeat.begin(), quick_heartbeat.end());
  run.add_node(1, second_node);
  return run.coordinator_says("(node1) ready", 60s) && run.coordinator_says("(node0) ready", 60s);
}

std::vector<std::string> until_stopped_settings() {
  std::vector<std::string> settings{"--data.dataset=synthetic", "--train.algorithm=solo",
                                    "--train.epochs=1000", "--train.max-seconds=120",
                                    "--cluster.min-nodes=2"};
  settings.insert(settings.end(), quick_heartbeat.begin(), quick_heartbeat.end());
  return settings;
}

TEST(cluster_cli, a_frozen_node_is_detected_within_the_configured_timeout) {
  temp_directory dir;
  cluster run(dir, until_stopped_settings());
  ASSERT_TRUE(two_nodes_training(run)) << run.logs();
  auto& frozen = run.node(1);
  std::this_thread::sleep_for(500ms); // training, not only joined
  ASSERT_TRUE(frozen.running());
  const auto frozen_at = std::chrono::steady_clock::now();
  ::kill(frozen.pid(), SIGSTOP);
  const bool detected = run.coordinator_says("(node1) lost", 15s);
  const auto took = std::chrono::steady_clock::now() - frozen_at;
  ::kill(frozen.pid(), SIGKILL);
  ASSERT_TRUE(detected) << run.logs();
  // The configured timeout is 2 s; heartbeats are checked every 250 ms. The slack is for a
  // loaded 2-core machine, not for the mechanism.
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), 5000)
      << run.logs();
  // The run goes on with the other node and stops cleanly.
  run.coordinator().stop(SIGINT, 60s);
  EXPECT_NE(run.coordinator().output().find("Herd run summary"), std::string::npos) << run.logs();
}

// -- checkpoints across processes ----------------------------------------------------------------

// The quick-start job under sync on two nodes of one worker, with checkpoints every `rounds`
// rounds into `directory`: the nodes write their parts there too (one machine: a shared disk).
std::vector<std::string> checkpointed_quickstart(const std::string& directory, int rounds) {
  return {"--config",
          quickstart,
          "--train.algorithm=sync",
          "--train.target-accuracy=0.85",
          "--train.epochs=4",
          "--cluster.min-nodes=2",
          "--checkpoint.dir=" + directory,
          "--checkpoint.every-rounds=" + std::to_string(rounds)};
}

std::vector<std::string> resumed(std::vector<std::string> settings, const std::string& path) {
  settings.push_back("--resume");
  settings.push_back(path);
  return settings;
}

// Starts two nodes of one worker and waits for the run's first checkpoint into `directory`.
bool two_nodes_until_a_checkpoint(cluster& run, const std::string& directory) {
  run.add_node(1);
  run.add_node(1);
  return run.coordinator_says("herd: checkpoint " + directory, 5min);
}

// Every checkpoint the coordinator committed in `directory` has both nodes' parts, whole (their
// checksums hold); returns how many there are.
std::size_t whole_checkpoints(const std::string& directory) {
  std::size_t whole = 0;
  for (const auto& file : herd::checkpoint::list(directory)) {
    const auto stem = herd::checkpoint::stem_of(std::filesystem::path(file).filename().string());
    for (int node : {0, 1}) {
      const auto part = directory + "/" + herd::checkpoint::part_name(stem, node);
      EXPECT_NO_THROW(herd::checkpoint::read_file(part)) << file << ": part " << part;
    }
    ++whole;
  }
  return whole;
}

// A coordinator is no longer a single point of failure: killed with SIGKILL mid-run, restarted
// with --resume, it takes the newest checkpoint, the nodes (which kept trying) join it with the
// workers of their parts, and the job goes on to its target.
TEST(cluster_cli, a_coordinator_killed_mid_run_and_restarted_with_resume_finishes_the_job) {
  REQUIRE_FASHION_MNIST();
  temp_directory dir;
  const auto checkpoints = dir.file("checkpoints");
  const auto settings = checkpointed_quickstart(checkpoints, 150);
  cluster run(dir, settings);
  ASSERT_TRUE(two_nodes_until_a_checkpoint(run, checkpoints)) << run.logs();
  run.coordinator().stop(SIGKILL, 10s);
  const auto newest = herd::checkpoint::list(checkpoints);
  ASSERT_FALSE(newest.empty());
  EXPECT_GE(whole_checkpoints(checkpoints), 1u);
  ASSERT_FALSE(HasFailure()) << run.logs(); // a resume needs the newest to be whole
  run.restart_coordinator(resumed(settings, checkpoints));
  ASSERT_EQ(run.coordinator().wait(10min), 0) << run.logs();
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(run.node(i).wait(30s), 0) << "node " << i << "\n" << run.logs();
    EXPECT_NE(run.node(i).output().find("lost the coordinator"), std::string::npos) << run.logs();
    EXPECT_NE(run.node(i).output().find("resuming worker(s) "), std::string::npos) << run.logs();
  }
  EXPECT_NE(run.coordinator().output().find("herd coordinator: resuming from " + newest.back()),
            std::string::npos)
      << run.logs();
  const auto report = run.report();
  EXPECT_EQ(report["stop_reason"], "target-accuracy") << run.logs();
  EXPECT_TRUE(reached_target(report, 0.85, 4.0)) << run.logs();
  EXPECT_EQ(report["workers"], 2);
  // The resumed run's counters go on from the checkpoint's: the report counts the whole run.
  EXPECT_GT(report["rounds"].get<int>(), 150) << run.logs();
}

// Under sync the reduction order is fixed (the Gloo ring, in ticket order), so a run whose
// coordinator was killed and resumed ends with the model of a run that was never interrupted: the
// same final test loss to the last bit. (Stopped by its epochs: a run stopped at a target goes on
// for the rounds in flight while that evaluation runs, which depends on timing.)
TEST(cluster_cli, a_sync_run_resumed_by_a_restarted_coordinator_ends_as_one_never_interrupted) {
  REQUIRE_FASHION_MNIST();
  auto settings_in = [](const temp_directory& dir) {
    auto settings = checkpointed_quickstart(dir.file("checkpoints"), 200);
    settings.insert(settings.end(),
                    {"--train.epochs=1", "--train.target-accuracy=0", "--train.eval-every=100000"});
    return settings;
  };
  temp_directory dir;
  cluster run(dir, settings_in(dir));
  ASSERT_TRUE(two_nodes_until_a_checkpoint(run, dir.file("checkpoints"))) << run.logs();
  run.coordinator().stop(SIGKILL, 10s);
  run.restart_coordinator(resumed(settings_in(dir), dir.file("checkpoints")));
  ASSERT_EQ(run.coordinator().wait(10min), 0) << run.logs();
  temp_directory other;
  cluster uninterrupted(other, settings_in(other));
  uninterrupted.add_node(1);
  uninterrupted.add_node(1);
  ASSERT_EQ(uninterrupted.coordinator().wait(10min), 0) << uninterrupted.logs();
  const auto report = run.report();
  const auto reference = uninterrupted.report();
  EXPECT_EQ(report["stop_reason"], "epochs");
  EXPECT_EQ(report["rounds"], reference["rounds"]);
  EXPECT_EQ(report["final_test_loss"].get<double>(), reference["final_test_loss"].get<double>())
      << run.logs();
  EXPECT_EQ(report["final_test_accuracy"].get<double>(),
            reference["final_test_accuracy"].get<double>());
}

// Two phases: a checkpoint is committed (the coordinator's file) only once every node's part is
// on disk. A node killed while the parts are being written leaves every committed checkpoint
// whole, and the job resumes from the newest with nodes started afresh.
TEST(cluster_cli, a_node_killed_during_a_checkpoint_write_leaves_the_previous_one_whole) {
  REQUIRE_FASHION_MNIST();
  temp_directory dir;
  const auto checkpoints = dir.file("checkpoints");
  const auto settings = checkpointed_quickstart(checkpoints, 10);
  cluster run(dir, settings);
  ASSERT_TRUE(two_nodes_until_a_checkpoint(run, checkpoints)) << run.logs();
  // Kill node 1 the moment a part is being written (its temporary file exists).
  bool writing = false;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!writing && std::chrono::steady_clock::now() < deadline) {
    std::error_code ignored;
    for (std::filesystem::directory_iterator it(checkpoints, ignored), end; !ignored && it != end;
         it.increment(ignored))
      writing = writing || it->path().filename().string().find(".part.tmp-") != std::string::npos;
    if (!writing)
      std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(writing) << "no part write seen in 60 s\n" << run.logs();
  run.node(1).stop(SIGKILL, 10s);
  ASSERT_TRUE(run.coordinator_says("(node1) lost", 30s)) << run.logs();
  // With a worker lost, no checkpoint is whole any more: none is taken.
  ASSERT_TRUE(run.coordinator_says("checkpoint not taken", 30s)) << run.logs();
  run.coordinator().stop(SIGKILL, 10s);
  run.node(0).stop(SIGKILL, 10s); // the whole cluster is gone; only the disk remains
  EXPECT_GE(whole_checkpoints(checkpoints), 1u);
  ASSERT_FALSE(HasFailure()) << run.logs(); // a resume needs the newest to be whole
  // Fresh nodes that find the parts in their --checkpoint-dir take the job over from the newest.
  run.restart_coordinator(resumed(settings, checkpoints));
  run.add_node(1, {"--checkpoint-dir", checkpoints});
  run.add_node(1, {"--checkpoint-dir", checkpoints});
  ASSERT_EQ(run.coordinator().wait(10min), 0) << run.logs();
  EXPECT_EQ(run.node(2).wait(30s), 0) << run.logs();
  EXPECT_EQ(run.node(3).wait(30s), 0) << run.logs();
  const auto report = run.report();
  EXPECT_EQ(report["stop_reason"], "target-accuracy") << run.logs();
  EXPECT_TRUE(reached_target(report, 0.85, 4.0)) << run.logs();
}

// The final checkpoint's first phase failing on a node (its disk full or read-only; here its
// directory became a file) loses the run's end state as surely as the coordinator's own write
// failing: the summary says NOT WRITTEN and the exit status is 1, where it was 0 and one line.
TEST(cluster_cli, a_final_checkpoint_a_node_cannot_write_fails_the_run) {
  temp_directory dir;
  cluster run(dir, {"--data.dataset=synthetic", "--train.algorithm=sync", "--train.epochs=1000",
                    "--train.max-seconds=600", "--cluster.min-nodes=1",
                    "--checkpoint.dir=" + dir.file("checkpoints"), "--checkpoint.every-seconds=0"});
  const auto parts = dir.file("parts");
  run.add_node(1, {"--checkpoint-dir", parts});
  ASSERT_TRUE(run.coordinator_says("(node0) ready", 60s)) << run.logs();
  std::this_thread::sleep_for(500ms); // training
  std::filesystem::remove_all(parts);
  std::ofstream(parts) << "not a directory";
  ::kill(run.coordinator().pid(), SIGINT);
  ASSERT_EQ(run.coordinator().wait(120s), std::optional<int>(1)) << run.logs();
  EXPECT_NE(run.coordinator().output().find("herd: final checkpoint not written: "),
            std::string::npos)
      << run.logs();
  EXPECT_NE(run.coordinator().output().find("  final checkpoint  NOT WRITTEN: "), std::string::npos)
      << run.logs();
}

// A node that cannot write its parts says so when it joins, not at the first checkpoint.
TEST(cluster_cli, a_node_that_cannot_write_its_checkpoint_parts_says_where_when_it_joins) {
  temp_directory dir;
  cluster run(dir, {"--data.dataset=synthetic", "--cluster.min-nodes=1",
                    "--checkpoint.dir=" + dir.file("checkpoints")});
  auto& node = run.add_node(1, {"--checkpoint-dir", "/proc/herd-parts"});
  EXPECT_EQ(node.wait(60s), 1) << run.logs();
  EXPECT_NE(node.output().find("cannot write checkpoint parts to /proc/herd-parts ("),
            std::string::npos)
      << run.logs();
  EXPECT_NE(node.output().find("set herd node --checkpoint-dir to a directory it can write"),
            std::string::npos)
      << run.logs();
  EXPECT_EQ(run.coordinator().wait(60s), 1) << run.logs();
}

// A coordinator restarted without --resume starts the job afresh: it says so when a node holds
// parts of a checkpoint it could have gone on from.
TEST(cluster_cli, a_coordinator_without_resume_says_when_a_node_holds_checkpoint_parts) {
  temp_directory dir;
  const auto parts = dir.file("parts");
  std::filesystem::create_directories(parts);
  const auto part = herd::checkpoint::part_name("herd-001796225269817-000000000600", 1);
  std::ofstream(parts + "/" + part) << "listed, not read";
  cluster run(dir, {"--data.dataset=synthetic", "--train.epochs=1", "--cluster.min-nodes=1"});
  run.add_node(1, {"--checkpoint-dir", parts});
  ASSERT_EQ(run.coordinator().wait(60s), 0) << run.logs();
  EXPECT_NE(run.coordinator().output().find(
                "(node0) holds checkpoint parts (the newest " + part +
                "): this job starts from the first step; to go on from a checkpoint, start the "
                "coordinator with --resume"),
            std::string::npos)
      << run.logs();
}

// Lost is not final: a node paused past the node timeout is declared lost, and when it goes on it
// joins the running job again in place of its own workers, which take a live worker's model.
TEST(cluster_cli, a_node_paused_past_the_node_timeout_joins_the_job_again) {
  temp_directory dir;
  cluster run(dir, until_stopped_settings());
  ASSERT_TRUE(two_nodes_training(run)) << run.logs();
  auto& paused = run.node(1);
  std::this_thread::sleep_for(500ms);
  ::kill(paused.pid(), SIGSTOP);
  ASSERT_TRUE(run.coordinator_says("(node1) lost", 15s)) << run.logs();
  std::this_thread::sleep_for(2s); // well past the timeout
  ::kill(paused.pid(), SIGCONT);
  ASSERT_TRUE(run.coordinator_says("(node1) joined the running job", 60s)) << run.logs();
  EXPECT_TRUE(paused.running()) << run.logs();
  EXPECT_NE(paused.output().find("joining the running job again"), std::string::npos) << run.logs();
  // Its wait is the rejoin window's, not the first join's ten minutes.
  const auto again = paused.output().find("joining the running job again");
  EXPECT_NE(paused.output().find("waiting for its welcome (a run starts once cluster.min-nodes "
                                 "nodes have joined; at most cluster.rejoin-s = ",
                                 again),
            std::string::npos)
      << run.logs();
  run.coordinator().stop(SIGINT, 60s);
  EXPECT_EQ(paused.wait(30s), 0) << run.logs();
  EXPECT_EQ(run.node(0).wait(30s), 0) << run.logs();
  const auto report = run.report();
  ASSERT_FALSE(report.is_null()) << run.logs();
  EXPECT_EQ(report["workers_joined"], 1) << run.logs();
}

// Without a rejoin window, the paused node says why it ends.
TEST(cluster_cli, a_node_paused_past_the_node_timeout_without_rejoin_exits_naming_the_loss) {
  temp_directory dir;
  cluster run(dir, until_stopped_settings());
  ASSERT_TRUE(two_nodes_training(run, {"--cluster.rejoin-s=0"})) << run.logs();
  auto& paused = run.node(1);
  ::kill(paused.pid(), SIGSTOP);
  ASSERT_TRUE(run.coordinator_says("(node1) lost", 15s)) << run.logs();
  ::kill(paused.pid(), SIGCONT);
  EXPECT_EQ(paused.wait(60s), 1) << run.logs();
  EXPECT_NE(paused.output().find("lost the coordinator"), std::string::npos) << run.logs();
  // It says the coordinator may have dropped it, not only that the coordinator went away.
  EXPECT_NE(paused.output().find("it dropped this node, silent past cluster.node-timeout-ms"),
            std::string::npos)
      << run.logs();
  run.coordinator().stop(SIGINT, 60s);
}

// Bytes that are not CAF's protocol, or a header that announces more than it sends.
void send_garbage(int port, const std::vector<unsigned char>& bytes) {
  const int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::send(sock, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  std::this_thread::sleep_for(100ms);
  ::close(sock);
}

TEST(cluster_cli, garbage_on_the_coordinator_port_does_not_bring_it_down) {
  temp_directory dir;
  cluster run(dir, {"--data.dataset=synthetic", "--train.algorithm=sync", "--train.epochs=1",
                    "--cluster.min-nodes=1"});
  ASSERT_TRUE(run.coordinator_says("waiting for 1 node", 30s)) << run.logs();
  std::mt19937 generator(17);
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::vector<unsigned char> bytes(static_cast<std::size_t>(1 + generator() % 4096));
    for (auto& byte : bytes)
      byte = static_cast<unsigned char>(generator());
    send_garbage(run.port(), bytes);
  }
  // A BASP-sized header whose payload length is huge, then nothing.
  std::vector<unsigned char> header(64, 0);
  for (std::size_t i = 8; i < 16; ++i)
    header[i] = 0xff;
  send_garbage(run.port(), header);
  send_garbage(run.port(), {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '1',
                            '\r', '\n', '\r', '\n'});
  ASSERT_TRUE(run.coordinator().running()) << run.logs();
  // It still admits a real node and runs the job.
  run.add_node(2);
  EXPECT_EQ(run.coordinator().wait(5min), 0) << run.logs();
  EXPECT_EQ(run.report()["stop_reason"], "epochs") << run.logs();
  EXPECT_EQ(run.node(0).wait(30s), 0) << run.logs();
}

TEST(cluster_cli, a_node_refuses_the_run_settings_on_its_command_line) {
  const auto result = herd::testing::run_process(
      {HERD_BINARY, "node", "--coordinator", "127.0.0.1:7070", "--train.lr=0.1"}, 30s);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("a node takes the run's settings from the coordinator"),
            std::string::npos)
      << result.output;
  const auto coordinator_only = herd::testing::run_process(
      {HERD_BINARY, "node", "--coordinator", "127.0.0.1:7070", "--cluster.min-nodes=2"}, 30s);
  EXPECT_EQ(coordinator_only.exit_code, 2) << coordinator_only.output;
}

TEST(cluster_cli, bad_addresses_are_bad_input_naming_the_option) {
  const auto no_coordinator = herd::testing::run_process({HERD_BINARY, "node"}, 30s);
  EXPECT_EQ(no_coordinator.exit_code, 2);
  EXPECT_NE(no_coordinator.output.find("--coordinator HOST:PORT is required"), std::string::npos)
      << no_coordinator.output;
  const auto bad_port =
      herd::testing::run_process({HERD_BINARY, "coordinator", "--listen", "127.0.0.1:99999"}, 30s);
  EXPECT_EQ(bad_port.exit_code, 2);
  EXPECT_NE(bad_port.output.find("--listen 127.0.0.1:99999"), std::string::npos) << bad_port.output;
  const auto bad_workers = herd::testing::run_process(
      {HERD_BINARY, "node", "--coordinator", "127.0.0.1:7070", "--workers", "zero"}, 30s);
  EXPECT_EQ(bad_workers.exit_code, 2);
  EXPECT_NE(bad_workers.output.find("--workers zero"), std::string::npos) << bad_workers.output;
  // A newline in a name would split the coordinator's log lines.
  const auto split_name = herd::testing::run_process(
      {HERD_BINARY, "node", "--coordinator", "127.0.0.1:7070", "--name", "vm\n3"}, 30s);
  EXPECT_EQ(split_name.exit_code, 2);
  EXPECT_NE(split_name.output.find("--name \"vm\\n3\": a control character"), std::string::npos)
      << split_name.output;
  // A --data-host that is not this machine's is refused before the node joins anything.
  const auto elsewhere = herd::testing::run_process(
      {HERD_BINARY, "node", "--coordinator", "127.0.0.1:7070", "--data-host", "192.0.2.1"}, 30s);
  EXPECT_EQ(elsewhere.exit_code, 2) << elsewhere.output;
  EXPECT_NE(elsewhere.output.find("--data-host 192.0.2.1: the data plane cannot listen there"),
            std::string::npos)
      << elsewhere.output;
  // A name that does not resolve is said so, before any word on tokens.
  const auto unresolved =
      herd::testing::run_process({HERD_BINARY, "coordinator", "--listen", "nosuchhost.invalid:7070",
                                  "--data.dataset=synthetic"},
                                 30s);
  EXPECT_EQ(unresolved.exit_code, 2);
  EXPECT_NE(unresolved.output.find("--listen nosuchhost.invalid: cannot resolve this name"),
            std::string::npos)
      << unresolved.output;
  // The metrics endpoint on the gate's port is named as the collision it is.
  const auto same_port =
      herd::testing::run_process({HERD_BINARY, "coordinator", "--listen", "127.0.0.1:27082",
                                  "--metrics.port=27082", "--data.dataset=synthetic"},
                                 30s);
  EXPECT_EQ(same_port.exit_code, 2);
  EXPECT_NE(same_port.output.find("metrics.port = 27082 is --listen's port too"), std::string::npos)
      << same_port.output;
}

// Secure by default: on an address other machines reach, the coordinator refuses to start
// without a token (or with one short enough to guess), and says how to make one.
TEST(cluster_cli, a_coordinator_reachable_from_the_network_needs_a_token) {
  temp_directory dir;
  const std::vector<std::string> base{HERD_BINARY, "coordinator", "--listen", "0.0.0.0:0",
                                      "--data.dataset=synthetic"};
  auto run = [&](std::vector<std::string> extra) {
    auto argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return herd::testing::run_process(argv, 60s);
  };
  const auto open_door = run({});
  EXPECT_EQ(open_door.exit_code, 2) << open_door.output;
  EXPECT_NE(open_door.output.find("cluster.token is not set"), std::string::npos)
      << open_door.output;
  EXPECT_NE(open_door.output.find("--cluster.token-file"), std::string::npos) << open_door.output;
  // Found before the dataset loads (a dataset that is not there is never reached), and by
  // --print-config as by a run.
  const auto before_data = run({"--data.dataset=fashion-mnist", "--data.path=" + dir.file("none")});
  EXPECT_EQ(before_data.exit_code, 2) << before_data.output;
  EXPECT_NE(before_data.output.find("cluster.token is not set"), std::string::npos)
      << before_data.output;
  // Left at its default, --listen is said to be that, not as if the user had typed it.
  const auto defaulted =
      herd::testing::run_process({HERD_BINARY, "coordinator", "--data.dataset=synthetic"}, 60s);
  EXPECT_EQ(defaulted.exit_code, 2) << defaulted.output;
  EXPECT_NE(defaulted.output.find("--listen was not given, and its default, 0.0.0.0:7070, is "
                                  "reachable from other machines"),
            std::string::npos)
      << defaulted.output;
  const auto printed = run({"--print-config"});
  EXPECT_EQ(printed.exit_code, 2) << printed.output;
  EXPECT_NE(printed.output.find("cluster.token is not set"), std::string::npos) << printed.output;
  const auto short_token = run({"--cluster.token=guessable"});
  EXPECT_EQ(short_token.exit_code, 2) << short_token.output;
  EXPECT_NE(short_token.output.find("cluster.token has 9 characters"), std::string::npos)
      << short_token.output;
  // A token file that is empty, missing, or not a regular file is named.
  write_private_file(dir.file("empty"), "");
  const auto empty = run({"--cluster.token-file=" + dir.file("empty")});
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(
      empty.output.find("cluster.token-file = " + dir.file("empty") + ": the file holds no token"),
      std::string::npos)
      << empty.output;
  const auto both =
      run({"--cluster.token=abcdefghijklmnopq", "--cluster.token-file=" + dir.file("empty")});
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("not both"), std::string::npos) << both.output;
  ASSERT_TRUE(shell("mkfifo " + dir.file("fifo")));
  const auto fifo = run({"--cluster.token-file=" + dir.file("fifo")});
  EXPECT_EQ(fifo.exit_code, 2) << fifo.output;
  EXPECT_FALSE(fifo.timed_out);
  // Loopback needs no token: only this machine can connect (it starts, and is stopped).
  background_process loopback(
      {HERD_BINARY, "coordinator", "--listen", "127.0.0.1:0", "--data.dataset=synthetic"},
      dir.file("loopback.log"));
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (loopback.output().find("listening on 127.0.0.1:") == std::string::npos &&
         loopback.running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  EXPECT_NE(loopback.output().find("listening on 127.0.0.1:"), std::string::npos)
      << loopback.output();
  // Stopped while it waits for nodes: one line says so, none speaks of rounds (there are none).
  ::kill(loopback.pid(), SIGINT);
  EXPECT_EQ(loopback.wait(30s), 130) << loopback.output();
  EXPECT_NE(loopback.output().find("stopped while waiting for nodes (0 of 1 had joined)"),
            std::string::npos)
      << loopback.output();
  EXPECT_EQ(loopback.output().find("rounds in flight"), std::string::npos) << loopback.output();
}

// Until the cluster forms a node's number is its place in the list: the one that joined after the
// leaver moves up, and the coordinator's log says so.
TEST(cluster_cli, a_node_that_leaves_before_the_cluster_forms_is_not_counted) {
  temp_directory dir;
  cluster run(dir, {"--data.dataset=synthetic", "--train.algorithm=solo", "--train.epochs=1",
                    "--cluster.min-nodes=3"});
  auto& quitter = run.add_node(1);
  ASSERT_TRUE(run.coordinator_says("(node0, 1 worker) joined; 1 of 3", 60s)) << run.logs();
  run.add_node(1);
  ASSERT_TRUE(run.coordinator_says("(node1, 1 worker) joined; 2 of 3", 60s)) << run.logs();
  quitter.stop(SIGKILL, 10s);
  ASSERT_TRUE(run.coordinator_says("(node0) left before the cluster formed", 30s)) << run.logs();
  EXPECT_TRUE(run.coordinator_says("1 of 3 nodes; node1 is node 0 now", 30s)) << run.logs();
  run.add_node(1);
  run.add_node(2);
  ASSERT_EQ(run.coordinator().wait(5min), 0) << run.logs();
  EXPECT_EQ(run.report()["workers"], 4) << run.logs();
  for (std::size_t i = 1; i < 4; ++i)
    EXPECT_EQ(run.node(i).wait(30s), 0) << run.logs();
}

// Two coordinators into one checkpoint.dir would delete each other's checkpoints. The second is
// refused at its start, naming the first, even while the first still waits for its nodes (the
// directory used to be held only once the run was assembled, after the nodes joined).
TEST(cluster_cli, a_second_coordinator_into_the_checkpoint_dir_of_a_waiting_one_is_refused) {
  temp_directory dir;
  const auto checkpoints = dir.file("checkpoints");
  cluster run(dir, {"--data.dataset=synthetic", "--cluster.min-nodes=2",
                    "--checkpoint.dir=" + checkpoints});
  ASSERT_TRUE(run.coordinator_says("listening on", 60s)) << run.logs();
  const auto second =
      herd::testing::run_process({HERD_BINARY, "coordinator", "--data.dataset=synthetic",
                                  "--listen", "127.0.0.1:0", "--checkpoint.dir=" + checkpoints},
                                 60s);
  EXPECT_EQ(second.exit_code, 2) << second.output;
  EXPECT_NE(second.output.find("checkpoint.dir = " + checkpoints +
                               ": a running job of another process (pid " +
                               std::to_string(run.coordinator().pid()) + ")"),
            std::string::npos)
      << second.output;
  run.coordinator().stop(SIGINT, 30s);
}

// A coordinator stopped past the node timeout counts its healthy nodes lost as it resumes: its
// log says that it was the one that stood still (it used to blame the nodes alone).
TEST(cluster_cli, a_coordinator_that_stood_still_past_the_node_timeout_says_so) {
  temp_directory dir;
  cluster run(dir, {"--data.dataset=synthetic", "--cluster.min-nodes=2",
                    "--cluster.heartbeat-ms=200", "--cluster.node-timeout-ms=1000"});
  ASSERT_TRUE(run.coordinator_says("listening on", 60s)) << run.logs();
  ::kill(run.coordinator().pid(), SIGSTOP);
  std::this_thread::sleep_for(2500ms);
  ::kill(run.coordinator().pid(), SIGCONT);
  EXPECT_TRUE(run.coordinator_says("this coordinator stood still for ", 30s)) << run.logs();
  EXPECT_TRUE(run.coordinator_says("past cluster.node-timeout-ms = 1000: the nodes it counts lost "
                                   "now were likely healthy",
                                   5s))
      << run.logs();
  run.coordinator().stop(SIGINT, 30s);
}

TEST(cluster_cli, a_node_waiting_for_the_cluster_leaves_when_the_coordinator_goes) {
  temp_directory dir;
  cluster run(dir, {"--data.dataset=synthetic", "--cluster.min-nodes=2"});
  auto& waiting = run.add_node(1);
  ASSERT_TRUE(run.coordinator_says("1 of 2 nodes", 60s)) << run.logs();
  // Its own log says it got through and waits (it used to say nothing until the run formed).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (waiting.output().find("waiting for its welcome") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  EXPECT_NE(waiting.output().find("herd node: connected to the coordinator; waiting for its "
                                  "welcome (a run starts once cluster.min-nodes nodes have joined"),
            std::string::npos)
      << run.logs();
  run.coordinator().stop(SIGKILL, 10s);
  EXPECT_EQ(waiting.wait(60s), 1) << run.logs();
  EXPECT_NE(waiting.output().find("lost the coordinator while the cluster formed"),
            std::string::npos)
      << run.logs();
}

TEST(cluster_cli, a_node_without_the_cluster_token_is_refused_and_the_job_goes_on) {
  temp_directory dir;
  cluster run(dir, {"--data.dataset=synthetic", "--train.algorithm=sync", "--train.epochs=1",
                    "--cluster.min-nodes=1", "--cluster.token=blue-herd-42"});
  auto& stranger = run.add_node(1, {"--cluster.token=red-herd", "--cluster.join-timeout-s=20"});
  EXPECT_EQ(stranger.wait(60s), 1) << run.logs();
  EXPECT_NE(stranger.output().find("refused this node: wrong cluster.token"), std::string::npos)
      << run.logs();
  // Its last line, the reason it ended, is stamped as its others are: when is what a log is read
  // for.
  EXPECT_TRUE(std::regex_search(
      stranger.output(), std::regex(R"(\[ *[0-9]+\.[0-9]s\] herd node: the coordinator refused)")))
      << stranger.output();
  auto& member = run.add_node(1, {"--cluster.token=blue-herd-42"});
  EXPECT_EQ(run.coordinator().wait(5min), 0) << run.logs();
  EXPECT_EQ(member.wait(30s), 0) << run.logs();
  EXPECT_NE(run.coordinator().output().find("wrong cluster.token"), std::string::npos)
      << run.logs();
  // The report keeps the settings that reproduce the run, not the cluster's secret.
  const auto report = run.report();
  ASSERT_TRUE(report.contains("config")) << run.logs();
  EXPECT_EQ(report["config"].get<std::string>().find("blue-herd-42"), std::string::npos);
}

// A cluster CA, a second CA, and certificates: the coordinator's and a member's from the first,
// a stranger's from the second.
bool make_certificates(const temp_directory& dir) {
  const std::string d = dir.path().string();
  using herd::testing::make_certificate_authority;
  using herd::testing::make_signed_certificate;
  return make_certificate_authority(d, "cluster-ca") && make_certificate_authority(d, "other-ca") &&
         make_signed_certificate(d, "coordinator", "cluster-ca") &&
         make_signed_certificate(d, "member", "cluster-ca") &&
         make_signed_certificate(d, "stranger", "other-ca") &&
         // Both CAs in one file: a stranger whose own certificate verifies, and that trusts the
         // cluster's coordinator, which does not trust it.
         std::system(("cat " + d + "/cluster-ca.pem " + d + "/other-ca.pem > " + d + "/both-ca.pem")
                         .c_str()) == 0;
}

std::vector<std::string> tls(const temp_directory& dir, const std::string& ca,
                             const std::string& name) {
  return {"--cluster.tls-ca=" + dir.file(ca + ".pem"),
          "--cluster.tls-cert=" + dir.file(name + ".pem"),
          "--cluster.tls-key=" + dir.file(name + ".key")};
}

TEST(cluster_cli, a_node_whose_certificate_another_ca_signed_cannot_join_and_the_job_goes_on) {
  temp_directory dir;
  ASSERT_TRUE(make_certificates(dir)) << "openssl could not make the test certificates";
  std::vector<std::string> args{"--data.dataset=synthetic", "--train.algorithm=sync",
                                "--train.epochs=1", "--cluster.min-nodes=1"};
  const auto coordinator_tls = tls(dir, "cluster-ca", "coordinator");
  args.insert(args.end(), coordinator_tls.begin(), coordinator_tls.end());
  cluster run(dir, args);
  // A certificate that its own cluster.tls-ca does not sign is refused at the start, before the
  // node reaches anyone (it used to fail only in the handshake).
  const auto unsigned_cert = herd::testing::run_process(
      {HERD_BINARY, "node", "--coordinator", "127.0.0.1:" + std::to_string(run.port()),
       "--cluster.tls-ca=" + dir.file("cluster-ca.pem"),
       "--cluster.tls-cert=" + dir.file("stranger.pem"),
       "--cluster.tls-key=" + dir.file("stranger.key")},
      60s);
  EXPECT_EQ(unsigned_cert.exit_code, 2) << unsigned_cert.output;
  EXPECT_NE(unsigned_cert.output.find(
                "cluster.tls-cert = " + dir.file("stranger.pem") +
                " does not verify against cluster.tls-ca = " + dir.file("cluster-ca.pem")),
            std::string::npos)
      << unsigned_cert.output;
  // Another CA's certificate (trusting that CA), then a stranger that trusts both CAs (the
  // coordinator trusts only its own), then no TLS at all: none gets in.
  std::vector<std::vector<std::string>> strangers{
      tls(dir, "other-ca", "stranger"), tls(dir, "both-ca", "stranger"), {}};
  for (std::size_t i = 0; i < strangers.size(); ++i) {
    auto extra = strangers[i];
    extra.push_back("--cluster.join-timeout-s=5");
    auto& stranger = run.add_node(1, extra);
    EXPECT_EQ(stranger.wait(60s), 1) << "stranger " << i << "\n" << run.logs();
  }
  EXPECT_NE(run.node(0).output().find("TLS handshake with the coordinator failed"),
            std::string::npos)
      << run.logs();
  // The coordinator refused the second one's certificate: it says so, and does not retry.
  EXPECT_NE(run.node(1).output().find("the coordinator refused this node's certificate"),
            std::string::npos)
      << run.logs();
  ASSERT_TRUE(run.coordinator().running()) << run.logs();
  auto& member = run.add_node(2, tls(dir, "cluster-ca", "member"));
  EXPECT_EQ(run.coordinator().wait(5min), 0) << run.logs();
  EXPECT_EQ(member.wait(30s), 0) << run.logs();
  EXPECT_EQ(run.report()["workers"], 2) << "only the member's workers joined\n" << run.logs();
}

// With TLS the data plane is sealed by default (cluster.data-encryption = auto): the nodes say so
// (and by how many threads), and a sync job across two nodes ends with the very result of the
// same job in the clear. The sealed job runs over two connections between the nodes
// (comm.connections), which they say too. The model (1.2 M parameters) is large enough for
// each reduction to be cut across both connections and for each connection's chunks to be two
// segments long, so every part of the sealed path runs: the lanes, the sends sealed by the
// plane's thread, the receives opened by the operation's.
TEST(cluster_cli, with_tls_the_data_plane_is_sealed_and_the_result_is_the_clear_one_bit_for_bit) {
  temp_directory dir;
  ASSERT_TRUE(make_certificates(dir)) << "openssl could not make the test certificates";
  auto job = [&](const std::string& encryption, int connections, const std::string& expected) {
    std::vector<std::string> args{
        "--data.dataset=synthetic", "--train.algorithm=sync",
        "--train.epochs=1",         "--model.hidden=[1536]",
        "--cluster.min-nodes=2",    "--cluster.data-encryption=" + encryption,
        "--comm.seal-threads=2",    "--comm.connections=" + std::to_string(connections)};
    const auto coordinator_tls = tls(dir, "cluster-ca", "coordinator");
    args.insert(args.end(), coordinator_tls.begin(), coordinator_tls.end());
    cluster run(dir, args);
    auto& first = run.add_node(1, tls(dir, "cluster-ca", "member"));
    auto& second = run.add_node(1, tls(dir, "cluster-ca", "member"));
    EXPECT_EQ(run.coordinator().wait(5min), 0) << run.logs();
    EXPECT_EQ(first.wait(30s), 0) << run.logs();
    EXPECT_EQ(second.wait(30s), 0) << run.logs();
    for (auto* node : {&first, &second})
      EXPECT_NE(node->output().find("2 nodes, " + expected + ")"), std::string::npos) << run.logs();
    return run.report();
  };
  const auto sealed = job("auto", 2, "sealed by 2 threads, 2 connections to each peer");
  const auto clear = job("off", 1, "in the clear");
  ASSERT_TRUE(sealed.contains("final_test_accuracy")) << sealed.dump();
  EXPECT_EQ(sealed["rounds_aborted"], 0);
  EXPECT_EQ(sealed["final_test_accuracy"], clear["final_test_accuracy"]);
  EXPECT_EQ(sealed["final_test_loss"], clear["final_test_loss"]);
  EXPECT_EQ(sealed["rounds"], clear["rounds"]);
}

// Gradient buckets across processes: three nodes of two workers (with two, a sum across the
// nodes would have the same bits in any order), sync, a model of 1.46 M parameters in buckets
// of 0.25 MiB (three of them, cut where the second and third layers begin: at 803,840 and
// 1,329,152 floats), no injected delays (which would hold every bucket back until the step's
// end). Rounds begin while backward runs, each bucket
// crosses between the nodes once both of a node's workers have finished it, and the job ends
// with the result it has without buckets, to the bit.
TEST(cluster_cli, sync_with_gradient_buckets_across_nodes_ends_with_the_result_it_has_without) {
  temp_directory dir;
  // The checkpoint the run ends with: every worker's parameters and velocity, from the nodes'
  // parts (how many steps a worker began past the last round, and so its send buffer, varies
  // from run to run).
  using replica = std::pair<std::vector<float>, std::vector<float>>;
  auto job = [&](const std::string& bucket_mb) {
    const auto checkpoints = dir.file("checkpoints-" + bucket_mb);
    cluster run(dir, {"--data.dataset=synthetic", "--train.algorithm=sync", "--train.epochs=1",
                      "--train.batch-size=128", "--model.hidden=[1024,512,256]",
                      "--cluster.min-nodes=3", "--imbalance.kind=none",
                      "--comm.bucket-mb=" + bucket_mb, "--checkpoint.dir=" + checkpoints});
    std::vector<background_process*> nodes;
    for (int node = 0; node < 3; ++node)
      nodes.push_back(&run.add_node(2));
    EXPECT_EQ(run.coordinator().wait(5min), 0) << run.logs();
    for (auto* node : nodes)
      EXPECT_EQ(node->wait(30s), 0) << run.logs();
    std::vector<replica> replicas;
    const auto saved = herd::checkpoint::list(checkpoints);
    EXPECT_EQ(saved.size(), 1u) << run.logs();
    if (saved.size() == 1) {
      const auto stem = herd::checkpoint::stem_of(std::filesystem::path(saved[0]).filename());
      for (int node = 0; node < 3; ++node) {
        const auto file = checkpoints + "/" + herd::checkpoint::part_name(stem, node);
        for (auto& worker :
             herd::actors::decode_part(herd::checkpoint::read_file(file).payload, file))
          replicas.emplace_back(std::move(worker.parameters), std::move(worker.velocity));
      }
    }
    return std::make_pair(run.report(), replicas);
  };
  const auto [buckets, bucketed_parts] = job("0.25");
  const auto [whole, whole_parts] = job("0");
  ASSERT_TRUE(buckets.contains("final_test_accuracy")) << buckets.dump();
  EXPECT_EQ(buckets["rounds_aborted"], 0);
  EXPECT_GT(buckets["rounds_in_backward"], 0) << buckets.dump();
  EXPECT_EQ(whole["rounds_in_backward"], 0);
  EXPECT_EQ(buckets["rounds"], whole["rounds"]);
  ASSERT_EQ(bucketed_parts.size(), 6u);
  ASSERT_EQ(whole_parts.size(), 6u);
  for (std::size_t worker = 0; worker < 6; ++worker) {
    EXPECT_TRUE(bucketed_parts[worker].first == whole_parts[worker].first) << worker;
    EXPECT_TRUE(bucketed_parts[worker].second == whole_parts[worker].second) << worker;
  }
  EXPECT_TRUE(bucketed_parts[0].first == bucketed_parts[5].first); // replicas, and trained
  EXPECT_FALSE(bucketed_parts[0].second == std::vector<float>(bucketed_parts[0].second.size()));
}

TEST(cluster_cli, tls_settings_that_cannot_work_are_bad_input_naming_the_key) {
  const auto missing = herd::testing::run_process(
      {HERD_BINARY, "node", "--coordinator", "127.0.0.1:7070", "--cluster.tls-ca=/nonexistent.pem"},
      30s);
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("cluster.tls-cert"), std::string::npos) << missing.output;
  EXPECT_NE(missing.output.find("cluster.tls-ca = \"/nonexistent.pem\""), std::string::npos)
      << missing.output;
  // Files that exist but cannot serve: refused by the node before it reaches anyone, as the
  // coordinator refuses them, exit 2 and the key named.
  temp_directory dir;
  ASSERT_TRUE(make_certificates(dir)) << "openssl could not make the test certificates";
  auto node = [&dir](const std::string& ca, const std::string& cert, const std::string& key) {
    return herd::testing::run_process(
        {HERD_BINARY, "node", "--coordinator", "127.0.0.1:7070", "--cluster.tls-ca=" + dir.file(ca),
         "--cluster.tls-cert=" + dir.file(cert), "--cluster.tls-key=" + dir.file(key)},
        30s);
  };
  const auto other_key = node("cluster-ca.pem", "member.pem", "stranger.key");
  EXPECT_EQ(other_key.exit_code, 2) << other_key.output;
  EXPECT_NE(other_key.output.find("this key does not belong to the certificate"), std::string::npos)
      << other_key.output;
  const auto leaf_as_ca = node("member.pem", "member.pem", "member.key");
  EXPECT_EQ(leaf_as_ca.exit_code, 2) << leaf_as_ca.output;
  EXPECT_NE(leaf_as_ca.output.find("holds no CA certificate"), std::string::npos)
      << leaf_as_ca.output;
}

} // namespace
