// The `herd` executable end to end: help, bad input with exit code 2 and a message naming the
// problem, a short run with its JSON report, and Ctrl-C.
#include <arpa/inet.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "support/contract_keys.hpp"
#include "support/subprocess.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::testing::run_process;
using testing::HasSubstr;

class herd_cli : public testing::Test {
protected:
  static herd::testing::process_result
  herd(std::vector<std::string> args, std::optional<std::chrono::milliseconds> interrupt = {}) {
    args.insert(args.begin(), HERD_BINARY);
    return run_process(args, std::chrono::seconds(120), interrupt);
  }

  std::string path(const std::string& name) const { return dir_.file(name); }

  herd::testing::temp_directory dir_;
};

// A short run on generated data: no dataset package needed.
const std::vector<std::string> synthetic_run{"train", "--data.dataset=synthetic",
                                             "--train.workers=2", "--model.hidden=[32]",
                                             "--train.epochs=1"};

TEST_F(herd_cli, help_lists_commands_and_every_contract_key) {
  auto top = herd({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.output, HasSubstr("train"));
  EXPECT_THAT(top.output, HasSubstr("bench"));
  auto train = herd({"train", "--help"});
  EXPECT_EQ(train.exit_code, 0);
  for (const char* key : herd::testing::contract_keys())
    EXPECT_THAT(train.output, HasSubstr(key)) << key;
  for (const char* option : {"--config", "--report"})
    EXPECT_THAT(train.output, HasSubstr(option));
}

TEST_F(herd_cli, unknown_command_and_argument_exit_2) {
  auto command = herd({"frobnicate"});
  EXPECT_EQ(command.exit_code, 2);
  EXPECT_THAT(command.output, HasSubstr("unknown command 'frobnicate'"));
  auto argument = herd({"train", "--frobnicate"});
  EXPECT_EQ(argument.exit_code, 2);
  EXPECT_THAT(argument.output, HasSubstr("unknown argument '--frobnicate'"));
}

TEST_F(herd_cli, bad_config_value_exits_2_naming_key_and_value) {
  auto result = herd({"train", "--train.workers=0", "--train.lr=-0.1"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("train.workers = 0"));
  EXPECT_THAT(result.output, HasSubstr("train.lr = -0.1"));
}

TEST_F(herd_cli, bad_config_file_exits_2_naming_file_and_key) {
  const auto file = path("bad.ini");
  std::ofstream(file) << "[train]\nworkers = 4\nalgorithim = \"sync\"\n";
  auto result = herd({"train", "--config", file});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("unknown key train.algorithim"));
  EXPECT_THAT(result.output, HasSubstr(file));
  EXPECT_THAT(result.output, HasSubstr("did you mean train.algorithm?"));
}

TEST_F(herd_cli, missing_dataset_exits_2_and_says_what_to_install) {
  auto result = herd({"train", "--data.path=" + path("no-such-dir")});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("apt-get install dataset-fashion-mnist"));
}

TEST_F(herd_cli, corrupt_idx_file_exits_2_naming_the_file) {
  // Four files with the right names; the training images are not IDX at all.
  for (const char* name :
       {"train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    std::ofstream(path(name)) << "placeholder";
  const auto corrupt = path("train-images-idx3-ubyte.gz");
  gzFile out = gzopen(corrupt.c_str(), "wb");
  const char garbage[] = "this is not an IDX file at all, just some bytes";
  gzwrite(out, garbage, sizeof garbage);
  gzclose(out);
  auto result = herd({"train", "--data.path=" + dir_.path().string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("train-images-idx3-ubyte"));
  EXPECT_THAT(result.output, HasSubstr("magic"));
  EXPECT_THAT(result.output, testing::Not(HasSubstr("terminate")));
}

TEST_F(herd_cli, batch_larger_than_a_shard_exits_2) {
  auto args = synthetic_run;
  args.push_back("--train.batch-size=5000");
  auto result = herd(args);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("train.batch-size = 5000"));
}

TEST_F(herd_cli, short_run_prints_a_summary_and_writes_the_json_report) {
  auto args = synthetic_run;
  const auto report_path = path("report.json");
  args.insert(args.end(), {"--report", report_path});
  auto result = herd(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("Herd run summary"));
  EXPECT_THAT(result.output, HasSubstr("evaluation at round")); // log lines, not a terminal
  EXPECT_THAT(result.output, testing::Not(HasSubstr("isolation guard"))) << "preduce only";
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good()) << report_path;
  const auto report = nlohmann::json::parse(in);
  for (const char* field :
       {"algorithm", "workers", "backend", "imbalance", "steps", "rounds", "samples",
        "wall_seconds", "time_to_target_seconds", "final_test_accuracy", "final_train_loss",
        "samples_per_second", "per_worker", "evaluations", "stop_reason", "config"})
    EXPECT_TRUE(report.contains(field)) << field;
  EXPECT_EQ(report["algorithm"], "sync");
  EXPECT_EQ(report["workers"], 2);
  EXPECT_EQ(report["backend"], "local");
  EXPECT_EQ(report["imbalance"], "none");
  EXPECT_EQ(report["stop_reason"], "epochs");
  EXPECT_TRUE(report["time_to_target_seconds"].is_null());
  EXPECT_EQ(report["per_worker"].size(), 2u);
  EXPECT_GT(report["per_worker"][0]["steps"].get<int>(), 0);
  EXPECT_GT(report["final_test_accuracy"].get<double>(), 0.5);
  EXPECT_GT(report["samples_per_second"].get<double>(), 0.0);
  EXPECT_FALSE(std::filesystem::exists(report_path + ".tmp"));
}

TEST_F(herd_cli, a_partial_run_reports_the_waiting_a_barrier_would_have_imposed) {
  auto args = synthetic_run;
  const auto report_path = path("solo.json");
  args.insert(args.end(),
              {"--train.algorithm=solo", "--imbalance.kind=persistent", "--imbalance.workers=[1]",
               "--imbalance.factor=30", "--report", report_path});
  auto result = herd(args);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("a synchronous barrier would have imposed"));
  EXPECT_THAT(result.output, HasSubstr("imbalance persistent: worker 1 runs 30x slower"));
  std::ifstream in(report_path);
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["algorithm"], "solo");
  const auto& waiting = report["waiting"];
  EXPECT_GT(waiting["steps_compared"].get<int>(), 0);
  EXPECT_GT(waiting["barrier_seconds"].get<double>(), 0.0);
  EXPECT_NEAR(waiting["avoided_seconds"].get<double>(),
              waiting["barrier_seconds"].get<double>() - waiting["waited_seconds"].get<double>(),
              1e-9);
  EXPECT_GT(report["rounds_partial"].get<int>(), 0);
  for (const char* field : {"fresh", "stale", "none"})
    EXPECT_TRUE(report["contributions"].contains(field)) << field;
  // The slowed worker is the one a barrier never makes wait.
  const auto& workers = report["per_worker"];
  EXPECT_LT(workers[1]["barrier_wait_seconds"].get<double>(),
            workers[0]["barrier_wait_seconds"].get<double>());
}

TEST_F(herd_cli, a_preduce_run_reports_its_isolation_guard) {
  // Four workers in groups of two, two of them slowed: fast pairs form more often than slow ones.
  const auto report_path = path("preduce.json");
  auto result =
      herd({"train", "--data.dataset=synthetic", "--train.workers=4", "--model.hidden=[32]",
            "--train.epochs=1", "--train.algorithm=preduce", "--preduce.connect-every=4",
            "--imbalance.kind=persistent", "--imbalance.workers=[2,3]", "--imbalance.factor=3",
            "--report", report_path});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("Herd run summary"));
  std::smatch line;
  ASSERT_TRUE(std::regex_search(
      result.output, line,
      std::regex(R"(isolation guard +([0-9]+) group\(s\) built across disconnected workers)")))
      << result.output;
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good()) << report_path;
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["algorithm"], "preduce");
  EXPECT_EQ(report["workers"], 4);
  EXPECT_EQ(report["stop_reason"], "epochs");
  ASSERT_TRUE(report.contains("isolation_interventions"));
  ASSERT_TRUE(report["isolation_interventions"].is_number_unsigned())
      << report["isolation_interventions"];
  const auto interventions = report["isolation_interventions"].get<std::uint64_t>();
  EXPECT_EQ(std::to_string(interventions), line[1].str()) << "the summary and the report agree";
  // The fast pair keeps meeting itself, so within 4 groups the guard has to join it to the slow
  // workers (0 only if every period happened to connect everyone on its own).
  EXPECT_GT(interventions, 0u);
  EXPECT_LE(interventions, report["rounds_partial"].get<std::uint64_t>());
  EXPECT_GT(report["rounds_partial"].get<int>(), 0);
  EXPECT_EQ(report["rounds_full_sync"], 0) << "preduce.sync-every = 0: groups only";
  EXPECT_THAT(report["config"].get<std::string>(), HasSubstr("[preduce]\ngroup-size = 2\n"));
  EXPECT_THAT(report["config"].get<std::string>(), HasSubstr("connect-every = 4\n"));
  // The evaluated model is the mean of the replicas; it must have learned.
  EXPECT_GT(report["final_test_accuracy"].get<double>(), 0.5);
  EXPECT_FALSE(std::filesystem::exists(report_path + ".tmp"));
}

TEST_F(herd_cli, bench_help_and_bad_arguments) {
  auto help = herd({"bench", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* text : {"--algorithms", "--scenarios", "persistent", "lognormal", "--repeat"})
    EXPECT_THAT(help.output, HasSubstr(text));
  auto scenario = herd({"bench", "--scenarios=none,sideways"});
  EXPECT_EQ(scenario.exit_code, 2);
  EXPECT_THAT(scenario.output, HasSubstr("unknown scenario 'sideways'"));
  auto algorithm = herd({"bench", "--algorithms=sync,fast"});
  EXPECT_EQ(algorithm.exit_code, 2);
  EXPECT_THAT(algorithm.output, HasSubstr("unknown algorithm 'fast'"));
  auto repeat = herd({"bench", "--repeat=0"});
  EXPECT_EQ(repeat.exit_code, 2);
  EXPECT_THAT(repeat.output, HasSubstr("--repeat"));
}

TEST_F(herd_cli, bench_writes_its_table_as_csv_json_and_plots) {
  const auto out = path("bench");
  auto result =
      herd({"bench", "--data.dataset=synthetic", "--train.workers=2", "--model.hidden=[16]",
            "--train.epochs=1", "--train.target-accuracy=0.3", "--algorithms=sync,solo",
            "--scenarios=none,random", "--snapshot-ms=20", "--out", out});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("four undelayed step times"));
  std::ifstream csv(out + "/results.csv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);)
    lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << "a header and one row per scenario and algorithm";
  EXPECT_EQ(lines[0].rfind("scenario,algorithm,seconds_to_target,", 0), 0u);
  EXPECT_EQ(lines[1].rfind("none,sync,", 0), 0u);
  EXPECT_EQ(lines[4].rfind("random,solo,", 0), 0u);
  std::ifstream json(out + "/results.json");
  const auto results = nlohmann::json::parse(json);
  ASSERT_EQ(results["runs"].size(), 4u);
  EXPECT_GT(results["random_delay_ms"].get<double>(), 0.0);
  for (const auto& run : results["runs"])
    EXPECT_FALSE(run["accuracy_over_time"].empty()) << run["algorithm"];
  EXPECT_EQ(results["table"][0]["speedup_vs_sync"].get<double>(), 1.0);
  if (std::system("command -v gnuplot > /dev/null 2>&1") == 0) {
    EXPECT_GT(std::filesystem::file_size(out + "/accuracy-none.png"), 1000u);
    EXPECT_GT(std::filesystem::file_size(out + "/accuracy-random.png"), 1000u);
  } else {
    EXPECT_THAT(result.output, HasSubstr("gnuplot is not installed"));
  }
}

TEST_F(herd_cli, a_metrics_port_in_use_is_refused_before_training) {
  // Hold a listening socket on a port, as another process would.
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string port = std::to_string(ntohs(address.sin_port));
  auto args = synthetic_run;
  args.push_back("--metrics.port=" + port);
  auto result = herd(args);
  ::close(holder);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("metrics.port = " + port));
  EXPECT_THAT(result.output, HasSubstr("cannot serve metrics on 127.0.0.1:" + port));
  EXPECT_THAT(result.output, testing::Not(HasSubstr("Herd run summary")));
  auto window = herd({"train", "--metrics.window-seconds=0"});
  EXPECT_EQ(window.exit_code, 2);
  EXPECT_THAT(window.output, HasSubstr("metrics.window-seconds = 0"));
}

TEST_F(herd_cli, unwritable_report_path_is_refused_before_training) {
  auto args = synthetic_run;
  args.insert(args.end(), {"--report", path("missing-dir/report.json")});
  auto result = herd(args);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("missing-dir/report.json"));
  EXPECT_THAT(result.output, HasSubstr("does not exist"));
  EXPECT_THAT(result.output, testing::Not(HasSubstr("Herd run summary")));
  auto directory = herd({"train", "--report", dir_.path().string()});
  EXPECT_EQ(directory.exit_code, 2);
  EXPECT_THAT(directory.output, HasSubstr("is a directory"));
}

TEST_F(herd_cli, config_path_that_is_a_directory_exits_2) {
  auto result = herd({"train", "--config", dir_.path().string()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("it is a directory"));
}

TEST_F(herd_cli, a_model_too_large_for_memory_is_refused_before_allocating) {
  auto result = herd({"train", "--data.dataset=synthetic", "--model.hidden=65536,65536"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.output, HasSubstr("model.hidden: the model has"));
  EXPECT_THAT(result.output, HasSubstr("GiB"));
}

TEST_F(herd_cli, a_diverging_run_stops_with_an_error_and_exit_1) {
  auto result = herd({"train", "--data.dataset=synthetic", "--train.lr=1000", "--train.epochs=50"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("training diverged"));
  EXPECT_THAT(result.output, HasSubstr("try a smaller train.lr"));
}

TEST_F(herd_cli, ctrl_c_stops_cleanly_with_a_summary_and_report) {
  const auto report_path = path("interrupted.json");
  auto result = herd({"train", "--data.dataset=synthetic", "--train.epochs=100000",
                      "--model.hidden=[32]", "--report", report_path},
                     std::chrono::milliseconds(1500));
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.signal, 0) << "SIGINT killed herd instead of stopping it";
  EXPECT_EQ(result.exit_code, 130) << result.output;
  EXPECT_THAT(result.output, HasSubstr("interrupted"));
  EXPECT_THAT(result.output, HasSubstr("Herd run summary"));
  std::ifstream in(report_path);
  ASSERT_TRUE(in.good());
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["stop_reason"], "interrupted");
  EXPECT_GT(report["rounds"].get<int>(), 0);
}

} // namespace
