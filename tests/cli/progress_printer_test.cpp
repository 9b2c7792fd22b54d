// The progress display as a person sees it: a live line that never reaches the terminal's last
// column (so it never wraps and redraws in place), an ETA from the stopping rule in force, and log
// lines whose stamps never go back in time.
#include "cli/progress_printer.hpp"
#include "herd/run_config.hpp"

#include <algorithm>
#include <chrono>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

namespace {

using herd::actors::evaluation_point;
using herd::actors::progress;
using herd::cli::progress_options;
using herd::cli::progress_printer;

progress a_busy_run() {
  progress now;
  now.elapsed_seconds = 754.2;
  now.epoch = 12.34;
  now.rounds = 123456;
  now.steps = 987654;
  now.train_loss = 0.4321;
  now.test_accuracy = 0.8765;
  now.samples_per_second = 123456.0;
  return now;
}

progress_options options_of(double epochs, double max_seconds, int columns, bool interactive) {
  progress_options options;
  options.interactive = interactive;
  options.epochs = epochs;
  options.max_seconds = max_seconds;
  options.columns = [columns] { return columns; };
  options.log_interval_seconds = 0.0;
  return options;
}

// What a terminal shows after the output: the text after the last carriage return of each line.
std::vector<std::string> screen_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    const auto last = line.rfind('\r');
    std::string shown = last == std::string::npos ? line : line.substr(last + 1);
    if (shown.rfind("\033[K", 0) == 0)
      shown = shown.substr(3);
    lines.push_back(shown);
  }
  return lines;
}

TEST(progress_printer, the_live_line_never_reaches_the_last_column_at_any_width) {
  for (const int columns : {20, 40, 60, 80, 100, 200}) {
    progress_printer printer(std::cout, options_of(100, 0, columns, true));
    const auto line = printer.status(a_busy_run(), columns);
    EXPECT_LE(static_cast<int>(line.size()), columns - 1) << columns << ": " << line;
    EXPECT_EQ(line.rfind("epoch 12.34/100", 0), 0u) << columns << ": " << line;
  }
}

TEST(progress_printer, a_narrow_terminal_drops_the_least_important_parts_first) {
  progress_printer printer(std::cout, options_of(100, 0, 80, true));
  const auto wide = printer.status(a_busy_run(), 200);
  const auto narrow = printer.status(a_busy_run(), 80);
  for (const char* part :
       {"round 123456", "(987654 steps)", "samples/s", "test acc 0.8765", "loss 0.4321", "ETA"})
    EXPECT_NE(wide.find(part), std::string::npos) << part << " in " << wide;
  EXPECT_GT(wide.size(), 79u) << "the test needs a line wider than 80 columns: " << wide;
  for (const char* kept : {"test acc 0.8765", "loss 0.4321", "ETA"})
    EXPECT_NE(narrow.find(kept), std::string::npos) << kept << " in " << narrow;
  EXPECT_EQ(narrow.find("steps)"), std::string::npos) << narrow;
}

TEST(progress_printer, redraws_in_place_on_one_line) {
  std::ostringstream out;
  progress_printer printer(out, options_of(100, 0, 80, true));
  auto now = a_busy_run();
  for (int i = 0; i < 9; ++i) {
    now.elapsed_seconds += 1.0;
    printer.on_progress(now);
  }
  printer.finish();
  const auto lines = screen_lines(out.str());
  ASSERT_EQ(lines.size(), 1u) << out.str();
  EXPECT_LE(lines[0].size(), 79u) << lines[0];
}

// A notice longer than the terminal (a checkpoint's path) breaks between words on a terminal,
// and stays one line in a log.
TEST(progress_printer, long_notices_break_between_words_on_a_terminal_only) {
  const std::string notice =
      "checkpoint ckpt/herd-001796313135035-000000002175.ckpt (round 2175, 11.4 MB; training "
      "paused 19 ms, written in 113 ms)";
  std::ostringstream shown;
  progress_printer terminal(shown, options_of(100, 0, 60, true));
  terminal.on_notice(notice);
  const auto lines = screen_lines(shown.str());
  ASSERT_GT(lines.size(), 1u) << shown.str();
  std::string words;
  for (const auto& line : lines) {
    EXPECT_LE(line.size(), 59u) << line;
    words += (words.empty() ? "" : " ") + line.substr(line.find_first_not_of(' '));
  }
  EXPECT_EQ(words, "herd: " + notice) << "a word was cut: " << shown.str();
  std::ostringstream logged;
  progress_printer log(logged, options_of(100, 0, 60, false));
  log.on_notice(notice);
  EXPECT_EQ(logged.str(), "herd: " + notice + "\n");
}

// In a log a notice carries the run's time (from the latest progress event on), so that joins
// and losses can be placed among the progress lines; before the run has a time, none.
TEST(progress_printer, logged_notices_carry_the_runs_time_once_it_has_one) {
  std::ostringstream logged;
  auto options = options_of(100, 0, 80, false);
  auto now = std::chrono::steady_clock::time_point{};
  options.clock = [&now] { return now; };
  progress_printer log(logged, options);
  log.on_notice("node 0 (vm-a, 1 worker) joined; 1 of 2 nodes");
  auto run = a_busy_run();
  run.elapsed_seconds = 12.0;
  log.on_progress(run);
  now += std::chrono::milliseconds(500);
  log.on_notice("node 1 (vm-b) lost: no heartbeat");
  std::vector<std::string> lines;
  std::istringstream in(logged.str());
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u) << logged.str();
  EXPECT_EQ(lines[0], "herd: node 0 (vm-a, 1 worker) joined; 1 of 2 nodes");
  EXPECT_EQ(lines[1].rfind("[   12.0s] epoch", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2], "[   12.5s] herd: node 1 (vm-b) lost: no heartbeat");
}

TEST(progress_printer, the_eta_follows_the_stopping_rule_in_force) {
  auto now = a_busy_run();
  now.elapsed_seconds = 100.0;
  now.epoch = 1.0;
  progress_printer by_epochs(std::cout, options_of(3, 0, 80, true));
  ASSERT_TRUE(by_epochs.eta_seconds(now));
  EXPECT_DOUBLE_EQ(*by_epochs.eta_seconds(now), 200.0); // two more epochs at 100 s each
  progress_printer by_time(std::cout, options_of(3, 130, 80, true));
  EXPECT_DOUBLE_EQ(*by_time.eta_seconds(now), 30.0); // the time limit comes first
  progress_printer by_epochs_first(std::cout, options_of(3, 1000, 80, true));
  EXPECT_DOUBLE_EQ(*by_epochs_first.eta_seconds(now), 200.0);
  now.epoch = 0.0;
  EXPECT_FALSE(by_epochs.eta_seconds(now)) << "no rate yet";
  EXPECT_NE(by_epochs.status(now, 200).find("ETA  -"), std::string::npos);
  now.epoch = 1.0;
  EXPECT_NE(by_epochs.status(now, 200).find("ETA 3:20"), std::string::npos)
      << by_epochs.status(now, 200);
  // Once a stop was asked for, no time left is promised: the line that stays above the summary
  // said "ETA 0:10" for an interrupted run.
  by_epochs.stopping();
  const auto stopping = by_epochs.status(now, 80);
  EXPECT_NE(stopping.find("stopping"), std::string::npos) << stopping;
  EXPECT_EQ(stopping.find("ETA"), std::string::npos) << stopping;
}

TEST(progress_printer, piped_lines_are_stamped_in_time_order) {
  std::ostringstream out;
  progress_printer printer(out, options_of(3, 0, 80, false));
  auto now = a_busy_run();
  now.elapsed_seconds = 0.3;
  printer.on_progress(now);
  evaluation_point late; // parameters taken at 0.2 s, evaluated after the 0.3 s line
  late.round = 100;
  late.elapsed_seconds = 0.2;
  late.test_accuracy = 0.81;
  printer.on_evaluation(late);
  now.elapsed_seconds = 0.5;
  printer.on_progress(now);
  std::vector<double> stamps;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) {
    ASSERT_EQ(line.front(), '[') << line;
    stamps.push_back(std::stod(line.substr(1)));
  }
  ASSERT_EQ(stamps.size(), 3u) << out.str();
  EXPECT_TRUE(std::is_sorted(stamps.begin(), stamps.end())) << out.str();
  EXPECT_NE(out.str().find("parameters of 0.2s"), std::string::npos) << out.str();
}

// A run stopped right after an evaluation evaluates the same parameters again at its end: one
// line, not the same line twice. A later evaluation of the same round that differs is printed.
// A schedule's rate at the evaluated epochs stands beside each evaluation; a constant one does not.
TEST(progress_printer, an_evaluation_shows_the_scheduled_learning_rate_at_its_epochs) {
  herd::config::run_config config;
  config.train.lr = 0.1;
  config.train.epochs = 4;
  evaluation_point point;
  point.round = 300;
  point.epoch = 2.0;
  point.elapsed_seconds = 1.5;
  point.test_accuracy = 0.8;
  point.test_loss = 0.5;
  std::ostringstream constant_out;
  auto constant = herd::cli::progress_options_for(config);
  constant.interactive = false;
  progress_printer(constant_out, constant).on_evaluation(point);
  EXPECT_EQ(constant_out.str().find(", lr "), std::string::npos) << constant_out.str();

  config.train.lr_schedule = "cosine"; // halfway through 4 epochs: half of 0.1
  std::ostringstream cosine_out;
  auto cosine = herd::cli::progress_options_for(config);
  cosine.interactive = false;
  progress_printer(cosine_out, cosine).on_evaluation(point);
  EXPECT_NE(cosine_out.str().find("evaluation at round 300 (epoch 2.00, lr 0.05): test accuracy"),
            std::string::npos)
      << cosine_out.str();
}

TEST(progress_printer, with_a_validation_set_the_evaluations_are_named_for_it) {
  herd::config::run_config config;
  config.data.validation_fraction = 0.1;
  evaluation_point point;
  point.round = 30;
  point.epoch = 1.0;
  point.test_accuracy = 0.8;
  point.test_loss = 0.5;
  auto logged = herd::cli::progress_options_for(config);
  logged.interactive = false;
  std::ostringstream log;
  progress_printer(log, logged).on_evaluation(point);
  EXPECT_NE(log.str().find("): validation accuracy 0.8000, validation loss 0.5000"),
            std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("test"), std::string::npos) << log.str();
  auto live = options_of(10, 0, 120, true);
  live.validation = true;
  const auto line = progress_printer(log, live).status(a_busy_run(), 120);
  EXPECT_NE(line.find("val acc 0.8765"), std::string::npos) << line;
  live.validation = false;
  EXPECT_NE(progress_printer(log, live).status(a_busy_run(), 120).find("test acc 0.8765"),
            std::string::npos);
}

TEST(progress_printer, the_same_evaluation_twice_is_printed_once) {
  std::ostringstream out;
  progress_printer printer(out, options_of(3, 0, 80, false));
  evaluation_point point;
  point.round = 700;
  point.elapsed_seconds = 1.7;
  point.test_accuracy = 0.8443;
  point.test_loss = 0.4493;
  printer.on_evaluation(point);
  printer.on_evaluation(point);
  auto other = point;
  other.test_accuracy = 0.8450;
  printer.on_evaluation(other);
  const std::string printed = out.str();
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 2) << printed;
  EXPECT_NE(out.str().find("test accuracy 0.8450"), std::string::npos) << out.str();
}

} // namespace
