// The report writer and the report path's checks, without a run: two writers of one path, a
// failed write, paths that cannot take a report, a report that would replace the --config file.
#include "cli/report.hpp"
#include "cli/run_support.hpp"
#include "cli/stragglers.hpp"

#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "support/read_file.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::actors::stop_cause;
using herd::cli::check_report_path;
using herd::cli::check_writable;
using herd::cli::write_file_atomically;
using herd::testing::read_file;
using testing::HasSubstr;

std::vector<std::string> names_in(const std::filesystem::path& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    names.push_back(entry.path().filename().string());
  return names;
}

// A report big enough that a write takes several calls and two writers overlap.
std::string report_from(const std::string& writer) {
  nlohmann::json report;
  report["writer"] = writer;
  report["per_worker"] = std::vector<double>(20000, writer == "first" ? 1.0 : 2.0);
  return report.dump(2) + "\n";
}

class report_file : public testing::Test {
protected:
  herd::testing::temp_directory dir_;
};

TEST_F(report_file, two_writers_of_one_path_each_leave_a_whole_report) {
  // Two runs given the same --report: each write must succeed and leave valid JSON, whichever
  // rename comes last; before, both wrote <path>.tmp and one of them failed or wrote over the
  // other's half-written file.
  const auto path = dir_.file("report.json");
  const std::string texts[] = {report_from("first"), report_from("second")};
  constexpr int writes_each = 100;
  std::vector<std::string> failures[2];
  auto writer = [&](int index) {
    for (int i = 0; i < writes_each; ++i) {
      try {
        write_file_atomically(path, texts[index]);
      } catch (const std::exception& failure) {
        failures[index].push_back(failure.what());
      }
      const auto text = read_file(path); // never half a report
      if (text != texts[0] && text != texts[1])
        failures[index].push_back("read a torn report of " + std::to_string(text.size()) +
                                  " bytes");
    }
  };
  std::thread first(writer, 0);
  std::thread second(writer, 1);
  first.join();
  second.join();
  EXPECT_THAT(failures[0], testing::IsEmpty());
  EXPECT_THAT(failures[1], testing::IsEmpty());
  const auto report = nlohmann::json::parse(read_file(path));
  EXPECT_THAT(report["writer"].get<std::string>(), testing::AnyOf("first", "second"));
  EXPECT_THAT(names_in(dir_.path()), testing::ElementsAre("report.json"))
      << "no temporary file is left behind";
}

TEST_F(report_file, replaces_an_old_report_and_keeps_its_mode) {
  const auto path = dir_.file("report.json");
  std::ofstream(path) << "old";
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  write_file_atomically(path, "{}\n");
  EXPECT_EQ(read_file(path), "{}\n");
  struct stat status {};
  ASSERT_EQ(::stat(path.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 07777, 0640u);
}

TEST_F(report_file, a_failed_write_says_why_and_leaves_no_temporary_file) {
  // The rename cannot replace a directory: the temporary file written beside it must go.
  const auto path = dir_.file("taken");
  std::filesystem::create_directory(path);
  try {
    write_file_atomically(path, "{}\n");
    FAIL() << "a report cannot replace a directory";
  } catch (const std::runtime_error& failure) {
    EXPECT_THAT(failure.what(), HasSubstr(path));
  }
  EXPECT_THAT(names_in(dir_.path()), testing::ElementsAre("taken"));
  EXPECT_THROW(write_file_atomically(dir_.file("missing/report.json"), "{}\n"), std::runtime_error);
}

TEST_F(report_file, check_writable_refuses_what_a_report_cannot_replace) {
  auto refusal = [](const std::string& path) -> std::string {
    try {
      check_writable(path);
    } catch (const std::runtime_error& refused) {
      return refused.what();
    }
    return "accepted";
  };
  // /proc/self exists and root may write "in" it by its mode bits, but no file can be made
  // there: only creating one tells.
  EXPECT_THAT(refusal("/proc/self/nope"), HasSubstr("cannot create a file in /proc/self"));
  EXPECT_THAT(refusal(dir_.path().string()), HasSubstr("is a directory"));
  EXPECT_THAT(refusal("/dev/null"), HasSubstr("is not a regular file"));
  EXPECT_THAT(refusal(dir_.file("missing/report.json")), HasSubstr("does not exist"));
  EXPECT_EQ(refusal(dir_.file("report.json")), "accepted");
  EXPECT_THAT(names_in(dir_.path()), testing::IsEmpty()) << "the probe file is removed";
}

TEST_F(report_file, a_report_path_naming_the_config_file_is_refused_by_any_name) {
  const auto config = dir_.file("run.ini");
  std::ofstream(config) << "[train]\nworkers = 2\n";
  const auto linked = dir_.file("linked.ini");
  std::filesystem::create_symlink(config, linked);
  const auto hard = dir_.file("hard.ini");
  std::filesystem::create_hard_link(config, hard);
  const auto dotted = (dir_.path() / "." / "run.ini").string();
  for (const auto& report : {config, linked, hard, dotted}) {
    try {
      check_report_path(report, config);
      ADD_FAILURE() << report << " was accepted";
    } catch (const std::invalid_argument& refused) {
      EXPECT_THAT(refused.what(), HasSubstr("--report " + report));
      EXPECT_THAT(refused.what(), HasSubstr("--config file " + config));
    }
  }
  EXPECT_NO_THROW(check_report_path(dir_.file("report.json"), config));
  EXPECT_NO_THROW(check_report_path(dir_.file("report.json"), ""));
  EXPECT_EQ(read_file(config), "[train]\nworkers = 2\n");
}

} // namespace

namespace {

// The summary as herd train prints it.
std::string printed(const herd::actors::run_summary& summary) {
  std::ostringstream out;
  herd::cli::print_summary(out, summary);
  return out.str();
}

// A run of workers 0, 1, ... whose mean steps are `means_ms`, `steps` steps each.
herd::actors::run_summary with_step_means(const std::vector<double>& means_ms,
                                          std::uint64_t steps = 100) {
  herd::actors::run_summary summary;
  for (std::size_t i = 0; i < means_ms.size(); ++i) {
    herd::actors::worker_summary worker;
    worker.worker = static_cast<int>(i);
    worker.steps = steps;
    worker.step_seconds.mean = means_ms[i] / 1e3;
    summary.per_worker.push_back(worker);
  }
  return summary;
}

std::string summary_text(double waited, double barrier) {
  herd::actors::run_summary summary;
  summary.waiting.waited_seconds = waited;
  summary.waiting.barrier_seconds = barrier;
  return printed(summary);
}

TEST(summary, waiting_above_a_barriers_says_why_in_one_line) {
  const auto above = summary_text(13.73, 8.71);
  const std::string under_the_label(20, ' ');
  EXPECT_THAT(above, HasSubstr("13.73 s idle, all workers together; a synchronous barrier\n" +
                               under_the_label + "would have imposed 8.71 s\n"));
  EXPECT_THAT(above, HasSubstr(under_the_label +
                               "(above a barrier's: reductions and messages add to it)\n"));
  EXPECT_THAT(above, testing::Not(HasSubstr("avoided")));
  const auto below = summary_text(2.78, 17.38);
  EXPECT_THAT(below, HasSubstr("(84% avoided)"));
  EXPECT_THAT(below, testing::Not(HasSubstr("above a barrier's")));
}

// A worker slower all along is named, with how much slower its mean step is than the others'
// median and how many of its steps were late; workers alike name nobody.
TEST(summary, a_worker_slower_all_along_is_named_as_the_straggler) {
  const auto run = [](const std::vector<double>& means_ms) {
    auto summary = with_step_means(means_ms, 200);
    summary.per_worker.back().late_steps = 178;
    return summary;
  };
  auto slow = run({1.0, 0.9, 1.2, 3.5});
  EXPECT_THAT(printed(slow), HasSubstr("  straggler         worker 3: mean step 3.50x the others' "
                                       "(3.50 ms against\n                    1.00 ms); 89% of its "
                                       "steps were late\n"));
  const auto report = nlohmann::json::parse(herd::cli::report_json(slow, {}));
  EXPECT_EQ(report["straggler"]["worker"], 3);
  EXPECT_DOUBLE_EQ(report["straggler"]["step_mean_ratio"].get<double>(), 3.5);
  EXPECT_EQ(report["straggler"]["late_steps"], 178);
  // Under 1.5 times the others' median: nobody. A lost worker is not compared.
  const auto alike = run({1.0, 0.9, 1.2, 1.45});
  EXPECT_THAT(printed(alike), testing::Not(HasSubstr("straggler")));
  EXPECT_TRUE(nlohmann::json::parse(herd::cli::report_json(alike, {}))["straggler"].is_null());
  slow.per_worker[3].live = false;
  EXPECT_THAT(printed(slow), testing::Not(HasSubstr("straggler ")));
}

// A text that is not UTF-8 (a node's name, a checkpoint directory's) does not lose the report at
// the end of the run: its bytes are written as U+FFFD.
TEST(summary, a_text_that_is_not_utf8_is_reported_with_replacement_characters) {
  auto summary = with_step_means({1.0, 1.0}, 10);
  summary.final_checkpoint = "/tmp/ck\xff/last.ckpt";
  const auto report = nlohmann::json::parse(herd::cli::report_json(summary, {}));
  EXPECT_EQ(report["final_checkpoint"], "/tmp/ck\xef\xbf\xbd/last.ckpt");
}

// Across processes the summary and report name each worker's node, and list the workers lost and
// joined: which node left or took over, when, and why.
TEST(summary, workers_lost_and_joined_are_listed_with_their_nodes) {
  auto summary = with_step_means({1.0, 4.0, 1.0});
  summary.per_worker[0].node = "vm-a";
  summary.per_worker[1].node = "vm-b";
  summary.per_worker[2].node = "vm-d";
  summary.worker_events = {{31.24, 2, "vm-c", false, "its node was lost: vm-c left the job"},
                           {40.08, 2, "vm-d", true, ""}};
  const auto text = printed(summary);
  EXPECT_THAT(text, HasSubstr("  worker events     31.2 s: worker 2 (node vm-c) lost: its node "
                              "was lost: vm-c\n                    left the job\n"
                              "                    40.1 s: worker 2 joined (node vm-d)\n"));
  EXPECT_THAT(text, HasSubstr("  straggler         worker 1 (node vm-b): mean step 4.00x"));
  // A node's workers lost together are one line, not its reason once per worker.
  auto together = summary;
  together.worker_events = {{5.61, 0, "vm-b", false, "its process cannot be reached"},
                            {5.62, 1, "vm-b", false, "its process cannot be reached"},
                            {5.63, 2, "vm-c", false, "its process cannot be reached"}};
  const auto grouped = printed(together);
  EXPECT_THAT(grouped, HasSubstr("  worker events     5.6 s: workers 0, 1 (node vm-b) lost: its "
                                 "process cannot be\n"));
  EXPECT_THAT(grouped, HasSubstr("5.6 s: worker 2 (node vm-c) lost: its process"));
  const auto report = nlohmann::json::parse(herd::cli::report_json(summary, {}));
  EXPECT_EQ(report["per_worker"][2]["node"], "vm-d");
  ASSERT_EQ(report["worker_events"].size(), 2u);
  EXPECT_EQ(report["worker_events"][0]["event"], "lost");
  EXPECT_EQ(report["worker_events"][0]["node"], "vm-c");
  EXPECT_EQ(report["worker_events"][1]["event"], "joined");
  EXPECT_DOUBLE_EQ(report["worker_events"][1]["seconds"].get<double>(), 40.08);
  // In one process there are no nodes: null, and no events where nothing was lost.
  summary.per_worker[0].node.clear();
  summary.worker_events.clear();
  const auto alone = nlohmann::json::parse(herd::cli::report_json(summary, {}));
  EXPECT_TRUE(alone["per_worker"][0]["node"].is_null());
  EXPECT_TRUE(alone["worker_events"].empty());
  EXPECT_THAT(printed(summary), testing::Not(HasSubstr("worker events")));
}

// Delays that strike one of two workers at random each step (1 ms, or 1 + 6 ms): each worker's
// steps are half fast and half slow, so its median falls on either by chance (here 1.2 ms against
// 6.5 ms), while the means are alike. Nobody is named.
TEST(summary, random_delays_on_half_the_steps_name_no_straggler) {
  herd::actors::run_summary summary;
  for (int i = 0; i < 2; ++i) {
    herd::actors::worker_summary worker;
    worker.worker = i;
    worker.steps = 1400;
    worker.step_seconds.median = i == 0 ? 1.2e-3 : 6.5e-3;
    worker.step_seconds.mean = i == 0 ? 3.6e-3 : 3.8e-3;
    summary.per_worker.push_back(worker);
  }
  EXPECT_THAT(printed(summary), testing::Not(HasSubstr("straggler")));
  EXPECT_TRUE(nlohmann::json::parse(herd::cli::report_json(summary, {}))["stragglers"].empty());
}

// "At least 1.5 times": a mean step exactly 1.5x the others' median is a straggler's, one a hair
// below is not (binary-exact means: 0.25 and 0.375 s); a worker that ran no step is no part of
// the others' median.
TEST(summary, a_straggler_is_at_least_one_and_a_half_times_the_others_median) {
  auto exactly = with_step_means({250.0, 250.0, 375.0});
  for (auto& w : exactly.per_worker)
    w.step_seconds.mean = w.worker == 2 ? 0.375 : 0.25;
  const auto found = herd::cli::stragglers_of(exactly);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].worker->worker, 2);
  auto below = exactly;
  below.per_worker[2].step_seconds.mean = 0.374;
  EXPECT_TRUE(herd::cli::stragglers_of(below).empty());
  auto idle = with_step_means({1.0, 2.0, 3.0}); // with a mean of 0 among them, 2 would pass
  herd::actors::worker_summary never_stepped;
  never_stepped.worker = 3;
  idle.per_worker.push_back(never_stepped); // mean 0, no steps
  const auto named = herd::cli::stragglers_of(idle);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].worker->worker, 2);
  EXPECT_DOUBLE_EQ(named[0].others_median, 2e-3);
}

// Two of eight slower all along (eager-SGD's setting in small) are both named, slowest first;
// a majority is never named; past four, the rest are named by number in one line.
TEST(summary, every_worker_slower_all_along_is_named_and_a_majority_never_is) {
  const auto run = [](const std::vector<double>& means_ms) { return with_step_means(means_ms); };
  const auto two = run({1.0, 3.0, 1.1, 0.9, 1.0, 4.0, 1.0, 1.2});
  const auto text = printed(two);
  EXPECT_THAT(text, HasSubstr("  straggler         worker 5: mean step 4.00x"));
  EXPECT_THAT(text, HasSubstr("  straggler         worker 1: mean step 3.00x"));
  EXPECT_LT(text.find("worker 5: mean"), text.find("worker 1: mean"));
  const auto report = nlohmann::json::parse(herd::cli::report_json(two, {}));
  ASSERT_EQ(report["stragglers"].size(), 2U);
  EXPECT_EQ(report["stragglers"][0]["worker"], 5);
  EXPECT_EQ(report["stragglers"][1]["worker"], 1);
  EXPECT_EQ(report["straggler"], report["stragglers"][0]);
  // Four of eight: each one's others are three slow and four fast, so all four are named.
  EXPECT_EQ(nlohmann::json::parse(herd::cli::report_json(
                run({3.0, 1.0, 3.0, 1.0, 3.0, 1.0, 3.0, 1.0}), {}))["stragglers"]
                .size(),
            4U);
  // An odd count of workers: the others are even in number, and their upper middle one counts
  // (the mean of the two middle ones would let 2 of 3, and 3 of 5, pass as stragglers).
  EXPECT_TRUE(nlohmann::json::parse(herd::cli::report_json(run({1.0, 3.0, 3.0}), {}))["stragglers"]
                  .empty());
  EXPECT_TRUE(nlohmann::json::parse(
                  herd::cli::report_json(run({1.0, 1.0, 10.0, 10.0, 10.0}), {}))["stragglers"]
                  .empty());
  EXPECT_EQ(nlohmann::json::parse(
                herd::cli::report_json(run({1.0, 1.0, 1.0, 10.0, 10.0}), {}))["stragglers"]
                .size(),
            2U);
  // Five of eight slow: the slow ones are the typical ones, and nobody is named.
  const auto most = run({3.0, 1.0, 3.0, 1.0, 3.0, 1.0, 3.0, 3.0});
  EXPECT_THAT(printed(most), testing::Not(HasSubstr("straggler")));
  EXPECT_TRUE(nlohmann::json::parse(herd::cli::report_json(most, {}))["stragglers"].empty());
  // Six of sixteen: four lines, then the other two by number.
  std::vector<double> sixteen(16, 1.0);
  for (std::size_t i : {2U, 4U, 6U, 9U, 11U, 13U})
    sixteen[i] = 2.0 + 0.1 * static_cast<double>(i);
  const auto many = printed(run(sixteen));
  EXPECT_THAT(many, HasSubstr("worker 13: mean step 3.30x"));
  EXPECT_THAT(many, HasSubstr("worker 6: mean step 2.60x"));
  EXPECT_THAT(many, testing::Not(HasSubstr("worker 4: mean")));
  EXPECT_THAT(many, HasSubstr("  straggler         and 2 more at least 1.5x the others' mean step: "
                              "workers 4,\n                    2\n"));
}

// A long run's values wider than their columns (14 million samples, hours of waiting) push the
// row on, never into each other: every value stays a word of its own.
TEST(summary, values_wider_than_their_columns_stay_apart) {
  herd::actors::run_summary summary;
  herd::actors::worker_summary worker;
  worker.worker = 7;
  worker.steps = 43750000;
  worker.late_steps = 1234567;
  worker.samples = 14000000000;
  worker.step_seconds = {123.45, 100.0, 234.5, 9999.5, 12.5};
  worker.waited_compared_seconds = 123456.78;
  worker.wait_seconds_per_step.mean = 12.345;
  worker.barrier_wait_seconds = 234567.89;
  summary.per_worker.push_back(worker);
  const auto text = printed(summary);
  std::istringstream lines(text);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("       7 ", 0) == 0) {
      std::istringstream words(line);
      rows.emplace_back(std::istream_iterator<std::string>(words),
                        std::istream_iterator<std::string>());
    }
  ASSERT_EQ(rows.size(), 2u) << text;
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"7", "43750000", "1234567", "14000000000", "123450.00ms",
                                      "234500.00ms", "123456.78s", "12345.00ms", "234567.89s"}))
      << text;
  EXPECT_EQ(rows[1],
            (std::vector<std::string>{"7", "100000.00ms", "234500.00ms", "9999500.00ms", "12.50"}))
      << text;
}

TEST(summary, wrap_words_breaks_between_words_and_keeps_a_number_with_its_unit) {
  using herd::cli::wrap_words;
  EXPECT_EQ(wrap_words("short enough", 20, 4), "short enough");
  EXPECT_EQ(wrap_words("one two three four", 9, 2), "one two\n  three\n  four");
  EXPECT_EQ(wrap_words("waited 12.5 s here", 12, 0), "waited\n12.5 s here");
  EXPECT_EQ(wrap_words("against 1.00 ms); late", 12, 0), "against\n1.00 ms);\nlate");
  EXPECT_EQ(wrap_words("x 3 lost", 6, 0), "x 3\nlost"); // a word, not a unit
  EXPECT_EQ(wrap_words("a\nb", 10, 1), "a\n b");
  EXPECT_EQ(wrap_words("unbreakable-long-word x", 5, 0), "unbreakable-long-word\nx");
}

// The whole summary fits an 80-column terminal, with every optional line, long values, large
// counts and a lost worker: a long value goes on under its label, broken between words.
TEST(summary, every_line_fits_an_80_column_terminal) {
  herd::actors::run_summary summary;
  summary.algorithm = "preduce";
  summary.workers = 16;
  summary.compute = "cuda:0 (NVIDIA H200)";
  summary.data_plane = "gloo";
  summary.imbalance = "persistent (workers 0, 1 delayed 120 ms)";
  summary.stop_reason = stop_cause::error;
  summary.error = "node 10.0.0.7:7001 lost while the job had no node to spare and min-nodes 2";
  summary.aborted_rounds = 12;
  summary.workers_joined = 4;
  summary.stale_contributions = 123456;
  summary.target_accuracy = 0.9;
  summary.final_test_accuracy = 0.9012;
  summary.after_stop_test_accuracy = 0.8876;
  summary.waiting = {1234567, 1234.56, 98765.43};
  for (int w = 0; w < 16; ++w) {
    herd::actors::worker_summary worker;
    worker.worker = w;
    worker.live = w != 7;
    worker.steps = 123456;
    worker.late_steps = 23456;
    worker.samples = 3950592;
    worker.step_seconds = {0.12345, 0.1, 0.99999, 1.5, 0.84};
    worker.waited_compared_seconds = 999.99;
    worker.wait_seconds_per_step.mean = 0.01234;
    worker.barrier_wait_seconds = 1234.56;
    worker.node = "gpu-worker-" + std::to_string(w) + ".us-east-1.compute.internal";
    summary.per_worker.push_back(worker);
  }
  summary.per_worker[3].step_seconds.mean = 0.9; // a straggler, on a node of a long name
  for (int e = 0; e < 10; ++e)                   // more events than the summary lists
    summary.worker_events.push_back(
        {12345.6 + e, e, "gpu-worker-" + std::to_string(e) + ".us-east-1.compute.internal",
         e % 2 == 1, e % 2 == 1 ? "" : "its node was lost: the connection to it closed"});
  std::ostringstream out;
  herd::cli::print_summary(out, summary);
  std::istringstream lines(out.str());
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count)
    EXPECT_LE(line.size(), herd::cli::summary_columns) << line;
  EXPECT_GT(count, 40);
  // Nothing was cut: the long error comes whole, broken between words under its label; the lost
  // worker is marked.
  EXPECT_THAT(out.str(), HasSubstr("(node 10.0.0.7:7001 lost while the\n" + std::string(20, ' ') +
                                   "job had no node to spare and min-nodes 2)\n"));
  EXPECT_THAT(out.str(), HasSubstr("\n      7* 123456"));
  EXPECT_THAT(out.str(), HasSubstr("(*: a worker lost during the run)"));
  // The workers computed 16 x 3950592 samples, none of them applied.
  EXPECT_THAT(out.str(), HasSubstr("0 applied (0 samples/s); 63209472 computed"));
  EXPECT_THAT(out.str(), HasSubstr("and 2 more (the report's worker_events lists them all)"));
  EXPECT_THAT(out.str(), HasSubstr("worker 3 (node gpu-worker-3.us-east-1.compute.internal)"));
}

// The step-time distribution per worker: median, p90, max and the coefficient of variation in
// the summary (within 80 columns), the histogram in the report.
TEST(summary, shows_each_workers_step_time_distribution_and_reports_its_histogram) {
  herd::actors::run_summary summary;
  herd::actors::worker_summary worker;
  worker.worker = 3;
  worker.steps = 7;
  worker.step_seconds = {0.05, 0.0412, 0.0987, 0.3125, 0.84};
  worker.step_histogram = {{0.04, 0.0488, 5}, {0.0488, 0.0595, 0}, {0.0595, 0.0726, 2}};
  summary.per_worker.push_back(worker);
  std::ostringstream out;
  herd::cli::print_summary(out, summary);
  EXPECT_THAT(out.str(), HasSubstr("  worker   step median    step p90     step max   variation (cv)\n"
                                   "       3       41.20ms     98.70ms     312.50ms             0.84\n"));
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);)
    if (line.find("step median") != std::string::npos || line.find("0.84") != std::string::npos) {
      EXPECT_LE(line.size(), 80u) << line;
    }
  const auto report =
      nlohmann::json::parse(herd::cli::report_json(summary, herd::config::run_config{}));
  const auto& reported = report["per_worker"][0];
  EXPECT_DOUBLE_EQ(reported["step_seconds"]["cv"].get<double>(), 0.84);
  EXPECT_DOUBLE_EQ(reported["step_seconds"]["median"].get<double>(), 0.0412);
  ASSERT_EQ(reported["step_histogram"].size(), 3u);
  EXPECT_DOUBLE_EQ(reported["step_histogram"][2]["lower_seconds"].get<double>(), 0.0595);
  EXPECT_EQ(reported["step_histogram"][2]["count"].get<int>(), 2);
}

// The run keeps the parameters that reached its target; where the rounds then in flight moved the
// workers' elsewhere, the summary and the report show both.
TEST(summary, a_run_stopped_at_its_target_shows_both_accuracies_where_they_differ) {
  herd::actors::run_summary summary;
  summary.stop_reason = stop_cause::target_accuracy;
  summary.final_test_accuracy = 0.8538;
  summary.final_test_loss = 0.41;
  summary.after_stop_test_accuracy = 0.8449;
  std::ostringstream out;
  herd::cli::print_summary(out, summary);
  EXPECT_THAT(out.str(), HasSubstr("0.8538 (loss 0.4100), those that reached the target\n"));
  EXPECT_THAT(out.str(),
              HasSubstr("after the stop    0.8449 (the workers' after the rounds then in flight)"));
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);)
    if (line.find("reached the target") != std::string::npos ||
        line.find("after the stop") != std::string::npos) {
      EXPECT_LE(line.size(), 80u) << line; // fits a terminal
    }
  summary.after_stop_test_accuracy = 0.85381; // the same to the digits shown
  std::ostringstream same;
  herd::cli::print_summary(same, summary);
  EXPECT_THAT(same.str(), testing::Not(HasSubstr("after the stop")));
  EXPECT_THAT(same.str(), testing::Not(HasSubstr("those that reached")));
  const auto report =
      nlohmann::json::parse(herd::cli::report_json(summary, herd::config::run_config{}));
  EXPECT_EQ(report["final_test_accuracy"], 0.8538);
  EXPECT_EQ(report["after_stop_test_accuracy"], 0.85381);
}

// With a validation set the summary shows what the run chose by (validation) and what it scored
// on the test set, measured once; the report says which set the evaluations measured.
TEST(summary, a_run_with_a_validation_set_shows_both_and_which_the_target_read) {
  herd::actors::run_summary summary;
  summary.stop_reason = stop_cause::target_accuracy;
  summary.validation_samples = 6000;
  summary.final_validation_accuracy = 0.8812;
  summary.final_validation_loss = 0.33;
  summary.final_test_accuracy = 0.8741;
  summary.final_test_loss = 0.36;
  summary.after_stop_test_accuracy = 0.8790;
  std::ostringstream out;
  herd::cli::print_summary(out, summary);
  EXPECT_THAT(out.str(), HasSubstr("validation acc    0.8812 (loss 0.3300) on 6000 held-out "
                                   "samples, those that\n" +
                                   std::string(20, ' ') + "reached the target\n"));
  EXPECT_THAT(out.str(),
              HasSubstr("test accuracy     0.8741 (loss 0.3600), measured once, at the end\n"));
  EXPECT_THAT(out.str(), HasSubstr("after the stop    0.8790"));
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);)
    EXPECT_LE(line.size(), 80u) << line;
  const auto report =
      nlohmann::json::parse(herd::cli::report_json(summary, herd::config::run_config{}));
  EXPECT_EQ(report["evaluated_on"], "validation");
  EXPECT_EQ(report["validation_samples"], 6000);
  EXPECT_EQ(report["final_validation_accuracy"], 0.8812);
  EXPECT_EQ(report["final_test_accuracy"], 0.8741);
  // The test set's measurement failed: said so, not mistaken for the validation set's.
  summary.final_test_accuracy.reset();
  std::ostringstream failed;
  herd::cli::print_summary(failed, summary);
  EXPECT_THAT(failed.str(), HasSubstr("test accuracy     not measured (its evaluation failed)"));
  EXPECT_EQ(nlohmann::json::parse(
                herd::cli::report_json(summary, herd::config::run_config{}))["final_test_accuracy"],
            nullptr);
  summary.validation_samples = 0;
  EXPECT_EQ(nlohmann::json::parse(
                herd::cli::report_json(summary, herd::config::run_config{}))["evaluated_on"],
            "test");
}

// With train.patience the run keeps its best evaluation's parameters; the summary says so, and
// shows the workers' last where they differ.
TEST(summary, a_run_that_kept_its_best_evaluation_says_so_beside_the_last) {
  herd::actors::run_summary summary;
  summary.stop_reason = stop_cause::plateau;
  summary.final_test_accuracy = 0.8712;
  summary.final_test_loss = 0.38;
  summary.after_stop_test_accuracy = 0.8650;
  std::ostringstream out;
  herd::cli::print_summary(out, summary);
  EXPECT_THAT(out.str(), HasSubstr("stopped by        plateau"));
  EXPECT_THAT(out.str(), HasSubstr("0.8712 (loss 0.3800), the best evaluation's\n"));
  EXPECT_THAT(out.str(), HasSubstr("last evaluation   0.8650 (the workers' last)\n"));
  EXPECT_THAT(out.str(), testing::Not(HasSubstr("after the stop")));
}

// A run that failed has no final accuracy; its summary says why, and what the last evaluation
// measured (every worker lost after five evaluations left the line empty-handed).
TEST(summary, a_failed_run_shows_its_last_evaluation_in_place_of_a_final_one) {
  herd::actors::run_summary summary;
  summary.stop_reason = stop_cause::error;
  summary.error = "every worker was lost";
  std::ostringstream none;
  herd::cli::print_summary(none, summary);
  EXPECT_THAT(none.str(), HasSubstr("test accuracy     not measured (the run failed)\n"));
  summary.evaluations.push_back({100, 1.0, 0.2, 0.7712, 0.61});
  summary.evaluations.push_back({500, 4.0, 1.0, 0.8063, 0.52});
  std::ostringstream out;
  herd::cli::print_summary(out, summary);
  EXPECT_THAT(out.str(), HasSubstr("test accuracy     none at the end (the run failed); the last "
                                   "evaluation:\n" +
                                   std::string(20, ' ') + "0.8063 at round 500\n"));
}

} // namespace
