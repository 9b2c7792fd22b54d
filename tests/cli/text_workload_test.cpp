// config/text.ini on the real fortunes: 4 workers under sync reach a target accuracy within the
// epochs the test gives them. Needs the fortunes packages (scripts/install-deps.sh); the first
// run prepares and caches the texts (in the test's own cache directory, so a user's cache is not
// touched and the preparation is exercised too).
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "support/subprocess.hpp"

namespace {

// config/text.ini trains on all 80,288 training texts, several minutes on two cores; the test
// keeps CI short with a seeded stratified subset of 24,000 texts (21,531 train, 2,468 test) for
// 2 epochs of 168 rounds, evaluated every 25 rounds, and a target of 0.9: measured on a shared
// 2-core machine, reached at round 150 (0.96); the test took 80 s there, 136 s under a load of
// about 12 (docs/text.md).
constexpr const char* target = "0.9";
constexpr double target_value = 0.9;

TEST(text_workload, sync_with_four_workers_reaches_the_target_accuracy) {
  std::vector<std::string> missing;
  for (const char* package : {"fortunes", "fortunes-de", "fortunes-it", "fortunes-es",
                              "fortunes-pl", "fortunes-cs", "fortunes-ru"})
    if (!std::filesystem::exists(std::string("/var/lib/dpkg/info/") + package + ".list"))
      missing.push_back(package);
  if (!missing.empty()) {
    std::string names;
    for (const auto& each : missing)
      names += " " + each;
    // scripts/test.sh (and so CI) sets HERD_REQUIRE_DATA: there a missing package is a failure,
    // not a skip that would leave the accuracy unchecked.
    if (std::getenv("HERD_REQUIRE_DATA") != nullptr)
      FAIL() << "not installed: apt-get install" << names;
    GTEST_SKIP() << "not installed: apt-get install" << names;
  }
  const auto scratch =
      std::filesystem::temp_directory_path() / ("herd-text-" + std::to_string(::getpid()));
  const auto report_path = (scratch / "report.json").string();
  std::filesystem::create_directories(scratch);
  const auto result = herd::testing::run_process(
      {HERD_BINARY, "train", "--config", std::string(HERD_CONFIG_DIR) + "/text.ini",
       "--data.max-texts=24000", "--train.epochs=2", "--train.eval-every=25",
       std::string("--train.target-accuracy=") + target, "--data.cache-dir=" + scratch.string(),
       "--report", report_path},
      std::chrono::minutes(10));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good()) << result.output;
  const auto report = nlohmann::json::parse(in);
  std::filesystem::remove_all(scratch);
  EXPECT_EQ(report["workers"], 4);
  EXPECT_EQ(report["algorithm"], "sync");
  EXPECT_EQ(report["stop_reason"], "target-accuracy") << result.output;
  EXPECT_FALSE(report["time_to_target_seconds"].is_null());
  bool reached = false;
  for (const auto& evaluation : report["evaluations"])
    reached = reached || evaluation["test_accuracy"].get<double>() >= target_value;
  EXPECT_TRUE(reached) << result.output;
  // The final evaluation comes a few rounds after the one that reached the target: SGD noise may
  // put it just below, not far below.
  EXPECT_GT(report["final_test_accuracy"].get<double>(), target_value - 0.05) << result.output;
  // No delay is injected (text.ini: imbalance none), yet the step times vary by themselves: a
  // batch costs what its longest text costs. Measured on 2 cores: cv 0.7-1.2 per worker, p90
  // 1.6-2.2x the median. A batch padded to a fixed length would bring both down to the noise.
  for (const auto& worker : report["per_worker"]) {
    const auto& step = worker["step_seconds"];
    EXPECT_GT(step["cv"].get<double>(), 0.3) << worker.dump();
    EXPECT_GT(step["p90"].get<double>(), 1.3 * step["median"].get<double>()) << worker.dump();
    std::uint64_t counted = 0;
    for (const auto& bar : worker["step_histogram"])
      counted += bar["count"].get<std::uint64_t>();
    EXPECT_EQ(counted, worker["steps"].get<std::uint64_t>()) << "every step in one bar";
  }
}

} // namespace
