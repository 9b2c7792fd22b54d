// A coordinator and its nodes as real processes (herd coordinator, herd node), for the cluster
// tests on loopback and across network namespaces.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/background_process.hpp"
#include "support/temp_directory.hpp"

namespace herd::testing {

using namespace std::chrono_literals;

inline bool fashion_mnist_missing() {
  if (std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    return false;
  // As in quickstart_test: where the data is required (CI), its absence is a failure.
  if (std::getenv("HERD_REQUIRE_DATA") != nullptr)
    ADD_FAILURE() << "Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist";
  return true;
}

#define REQUIRE_FASHION_MNIST()                                                                    \
  do {                                                                                             \
    if (herd::testing::fashion_mnist_missing())                                                    \
      GTEST_SKIP() << "Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist";     \
  } while (false)

// Runs a command; true when it exited 0.
inline bool shell(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// A file only this user may read (a token file, as docs/deploy.md makes one).
inline void write_private_file(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
  std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::owner_write);
}

// A coordinator and its nodes, each a background process logging to a file of `dir`.
class cluster {
public:
  // `prefix`: a command the coordinator runs under (ip netns exec NAME), or empty.
  cluster(const temp_directory& dir, std::vector<std::string> coordinator_args,
          const std::string& coordinator_host = "127.0.0.1",
          const std::vector<std::string>& prefix = {})
      : dir_(dir), port_(herd::testing::free_loopback_port()), host_(coordinator_host),
        prefix_(prefix) {
    start_coordinator(coordinator_args, "coordinator.log");
  }

  // A coordinator in place of the one before (killed, or ended), on the same address, logging to
  // coordinator-N.log: what a supervisor restarting it does.
  background_process& restart_coordinator(const std::vector<std::string>& coordinator_args) {
    earlier_.push_back(std::move(coordinator_));
    start_coordinator(coordinator_args,
                      "coordinator-" + std::to_string(earlier_.size() + 1) + ".log");
    return *coordinator_;
  }

  // `prefix`: a command the node runs under (ip netns exec NAME), or empty.
  background_process& add_node(int workers, std::vector<std::string> extra = {},
                               const std::vector<std::string>& prefix = {},
                               const std::string& coordinator_host = "127.0.0.1") {
    std::vector<std::string> argv = prefix;
    const std::vector<std::string> node{
        HERD_BINARY,     "node",
        "--coordinator", coordinator_host + ":" + std::to_string(port_),
        "--workers",     std::to_string(workers),
        "--name",        "node" + std::to_string(nodes_.size())};
    argv.insert(argv.end(), node.begin(), node.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    nodes_.push_back(std::make_unique<background_process>(
        argv, dir_.file("node" + std::to_string(nodes_.size()) + ".log")));
    return *nodes_.back();
  }

  background_process& coordinator() { return *coordinator_; }
  background_process& node(std::size_t index) { return *nodes_[index]; }
  int port() const { return port_; }
  std::string report_path() const { return dir_.file("report.json"); }

  nlohmann::json report() const {
    std::ifstream in(report_path());
    return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
  }

  // Everything every process wrote, for failure messages.
  std::string logs() const {
    std::string text;
    for (const auto& earlier : earlier_)
      text += "--- an earlier coordinator:\n" + earlier->output();
    text += "--- coordinator:\n" + coordinator_->output();
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      text += "--- node " + std::to_string(i) + ":\n" + nodes_[i]->output();
    return text;
  }

  // The workers node `name` hosts, from the coordinator's "(name) ready: workers a-b" line.
  // From the coordinator's "(name) ready: worker 3" or "... ready: workers 0-1".
  std::vector<int> workers_of(const std::string& name) const {
    const std::string marker = "(" + name + ") ready: worker";
    const std::string output = coordinator_->output();
    const auto at = output.find(marker);
    if (at == std::string::npos)
      return {};
    const char* text = output.c_str() + at + marker.size();
    int first = 0, last = -1;
    if (std::sscanf(text, "s %d-%d", &first, &last) != 2 && std::sscanf(text, " %d", &first) == 1)
      last = first;
    std::vector<int> workers;
    for (int worker = first; worker <= last; ++worker)
      workers.push_back(worker);
    return workers;
  }

  // Waits until the coordinator's output contains `text`; false after `timeout`.
  bool coordinator_says(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (coordinator_->output().find(text) != std::string::npos)
        return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

private:
  void start_coordinator(const std::vector<std::string>& coordinator_args, const std::string& log) {
    std::vector<std::string> argv = prefix_;
    const std::vector<std::string> coordinator{HERD_BINARY, "coordinator",
                                               "--listen",  host_ + ":" + std::to_string(port_),
                                               "--report",  report_path()};
    argv.insert(argv.end(), coordinator.begin(), coordinator.end());
    argv.insert(argv.end(), coordinator_args.begin(), coordinator_args.end());
    coordinator_ = std::make_unique<background_process>(argv, dir_.file(log));
  }

  const temp_directory& dir_;
  int port_;
  std::string host_;
  std::vector<std::string> prefix_;
  std::vector<std::unique_ptr<background_process>> earlier_;
  std::unique_ptr<background_process> coordinator_;
  std::vector<std::unique_ptr<background_process>> nodes_;
};

// The evaluation that reached the target happened within the epochs of the job.
inline bool reached_target(const nlohmann::json& report, double target, double epochs) {
  for (const auto& evaluation : report["evaluations"])
    if (evaluation["test_accuracy"].get<double>() >= target &&
        evaluation["epoch"].get<double>() <= epochs)
      return true;
  return false;
}

} // namespace herd::testing
