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

#include "support/npy_file.hpp"
#include "support/subprocess.hpp"

namespace {

// config/text.ini trains on all 80,288 training texts, several minutes on two cores; the test
// keeps CI short with a seeded stratified subset of 24,000 texts (21,531 train, 2,468 test) for
// 2 epochs of 168 rounds, evaluated every 25 rounds, and a target of 0.9: measured on a shared
// 2-core machine, reached at round 150 (0.96); the test took 80 s there, 136 s under a load of
// about 12 (docs/text.md).
constexpr const char* target = "0.9";
constexpr double target_value = 0.9;

// herd predict on the text model's checkpoint: rows of token ids narrower than data.max-length
// (padded with -1 at the end) are predicted; a value that is not a token id, a token after the
// padding and a row without tokens are refused naming the sample and the place (exit 2), where
// they used to reach the kernels' checks (exit 1, a source file's path).
void expect_predict_takes_token_rows(const std::filesystem::path& scratch) {
  const auto input = (scratch / "texts.npy").string();
  auto predict_file = [&scratch, &input] {
    return herd::testing::run_process({HERD_BINARY, "predict", "--checkpoint",
                                       (scratch / "ckpt").string(), "--input", input,
                                       "--data.cache-dir=" + scratch.string()},
                                      std::chrono::minutes(2));
  };
  auto predict = [&](const std::vector<float>& rows, std::uint64_t width) {
    herd::testing::write_npy(input, "<f4", {rows.size() / width, width}, rows);
    return predict_file();
  };
  // "Hello" and "Hallo Welt" as bytes, 12 wide.
  std::vector<float> texts = {72, 101, 108, 108, 111, -1, -1, -1, -1, -1, -1, -1,
                              72, 97,  108, 108, 111, 32, 87, 101, 108, 116, -1, -1};
  const auto predicted = predict(texts, 12);
  ASSERT_EQ(predicted.exit_code, 0) << predicted.output;
  EXPECT_NE(predicted.output.find("2 samples of"), std::string::npos) << predicted.output;
  EXPECT_NE(predicted.output.find("class_6,predicted"), std::string::npos) << predicted.output;
  struct refused_row {
    std::vector<float> row;
    std::string message;
  };
  for (const auto& [row, message] : std::vector<refused_row>{
           {{72, 300, -1, -1}, "sample 0, position 1: 300 is not a token id"},
           {{72, 65.5f, -1, -1}, "sample 0, position 1: 65.5 is not a token id"},
           {{72, -1, 72, -1}, "sample 0, position 2: a token after the padding"},
           {{-1, -1, -1, -1}, "sample 0 has no tokens"}}) {
    const auto refused = predict(row, 4);
    EXPECT_EQ(refused.exit_code, 2) << refused.output;
    EXPECT_NE(refused.output.find(message), std::string::npos) << refused.output;
  }
  // Padding is any negative value, as everywhere else.
  const auto other_padding = predict({72, 105, -2, -7}, 4);
  EXPECT_EQ(other_padding.exit_code, 0) << other_padding.output;
  // uint8 would be scaled as pixels, and cannot hold the padding.
  herd::testing::write_npy(input, "|u1", {1, 3}, std::vector<std::uint8_t>{72, 105, 33});
  const auto bytes = predict_file();
  EXPECT_EQ(bytes.exit_code, 2) << bytes.output;
  EXPECT_NE(bytes.output.find("holds uint8 values"), std::string::npos) << bytes.output;
  // A text longer than data.max-length is cut to it, as training cuts it.
  const auto long_text = predict(std::vector<float>(4100, 97.0f), 4100);
  EXPECT_EQ(long_text.exit_code, 0) << long_text.output;
  EXPECT_NE(long_text.output.find("1 sample(s) of " + input +
                                  " longer than the model's 4096 "
                                  "tokens: cut to their first 4096"),
            std::string::npos)
      << long_text.output;
}

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
       "--checkpoint.dir=" + (scratch / "ckpt").string(), "--report", report_path},
      std::chrono::minutes(10));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good()) << result.output;
  const auto report = nlohmann::json::parse(in);
  expect_predict_takes_token_rows(scratch);
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
  // batch costs what its longest text costs. Measured on 2 cores at a load of 9: cv 0.7-1.3 per
  // worker, p90 1.5-2.2x the median. (At such a load preemption adds to any workload's spread:
  // this checks that the distribution is measured and reported, docs/text.md compares.)
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
