// herd bench's plot files without a run: the speedups over sync per repetition, and an algorithm
// that never reached the target named in the speedup plot's title instead of drawn (gnuplot
// refuses a histogram column without one valid point, and then drew no speedup plot at all).
#include "cli/bench_plots.hpp"
#include "cli/bench_table.hpp"

#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/read_file.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::actors::stop_cause;
using herd::cli::bench_run;
using herd::testing::read_file;
using herd::testing::temp_directory;
using testing::HasSubstr;
using testing::Not;

// A run whose accuracy climbs from 0.5 to `last` over 10 s, reaching the target 0.9 at `to_target`.
bench_run run(const std::string& algorithm, int repetition, std::optional<double> to_target,
              double last) {
  bench_run made{"none", algorithm, repetition, {}};
  made.summary.time_to_target_seconds = to_target;
  made.summary.evaluations.push_back({1, 1.0, 0.1, 0.5, 1.0});
  made.summary.evaluations.push_back({2, 10.0, 1.0, last, 0.3});
  return made;
}

const std::vector<std::string> scenarios{"none"};
const std::vector<std::string> algorithms{"sync", "solo", "preduce"};

std::vector<bench_run> runs_where_solo_never_reached_the_target() {
  return {run("sync", 0, 8.0, 0.95),         run("solo", 0, std::nullopt, 0.8),
          run("preduce", 0, 4.0, 0.95),      run("sync", 1, 6.0, 0.95),
          run("solo", 1, std::nullopt, 0.8), run("preduce", 1, 2.0, 0.95)};
}

// The bar is the table's speedup (sync's median time over the algorithm's: the plot and the table
// once gave 0.28x and 0.18x for one cell); the whiskers span the repetitions' own ratios.
TEST(bench_plots, speedups_are_the_tables_with_each_repetitions_range_and_nan_where_none_reached) {
  const auto data =
      herd::cli::speedup_data(runs_where_solo_never_reached_the_target(), scenarios, algorithms, 2);
  // sync 1 1 1; solo NaN; preduce: median(8, 6) / median(4, 2) = 7 / 3; 8/4 = 2 and 6/2 = 3.
  EXPECT_THAT(data, HasSubstr("\nnone 1 1 1 NaN NaN NaN 2.33333 2 3\n"));
}

// Past the end of the shorter repetition the curve is still the median of both, the finished one
// at its final accuracy (it was the longer run's value alone, a drop neither run had).
TEST(bench_plots, a_finished_repetition_holds_its_final_accuracy_in_the_curve) {
  temp_directory dir;
  auto quick = run("sync", 0, 8.0, 0.9);
  quick.summary.evaluations.back().elapsed_seconds = 2.0;
  auto slow = run("sync", 1, 8.0, 0.7);
  herd::cli::plot_bench(dir.path(), {quick, slow}, scenarios, {"sync"}, 2, 0.0);
  const auto curve = read_file(dir.file("curve-none-sync.dat"));
  // At 10 s: the quick run's 0.9 and the slow run's 0.7, two repetitions.
  EXPECT_THAT(curve, HasSubstr("\n10 0.8 0.7 0.9 2\n")) << curve;
}

// The curves are of the set the evaluations measured, and the axis says which.
TEST(bench_plots, the_accuracy_axis_names_the_set_the_evaluations_measured) {
  temp_directory dir;
  auto runs = runs_where_solo_never_reached_the_target();
  herd::cli::plot_bench(dir.path(), runs, scenarios, algorithms, 2, 0.9);
  EXPECT_THAT(read_file(dir.file("plot.gp")), HasSubstr("set ylabel 'test accuracy'"));
  for (auto& made : runs)
    made.summary.validation_samples = 6000;
  herd::cli::plot_bench(dir.path(), runs, scenarios, algorithms, 2, 0.9);
  EXPECT_THAT(read_file(dir.file("plot.gp")), HasSubstr("set ylabel 'validation accuracy'"));
}

TEST(bench_plots, an_algorithm_that_never_reached_the_target_is_named_not_drawn) {
  temp_directory dir;
  herd::cli::plot_bench(dir.path(), runs_where_solo_never_reached_the_target(), scenarios,
                        algorithms, 2, 0.9);
  const auto script = read_file(dir.file("plot.gp"));
  EXPECT_THAT(script, HasSubstr("never reached it: solo"));
  EXPECT_THAT(script, HasSubstr("using 2:3:4:xtic(1) title 'sync'"));
  EXPECT_THAT(script, HasSubstr("using 8:9:10 title 'preduce'"));
  EXPECT_THAT(script, Not(HasSubstr("title 'solo' lc"))) << "solo's speedup column is all NaN";
  EXPECT_THAT(script, Not(HasSubstr("using 5:6:7")));
  // Its accuracy curve is drawn all the same.
  EXPECT_THAT(script, HasSubstr("'curve-none-solo.dat' using 1:2 with lines"));
}

TEST(bench_plots, no_speedup_plot_when_no_run_reached_the_target) {
  temp_directory dir;
  const std::vector<bench_run> runs{run("sync", 0, std::nullopt, 0.8),
                                    run("solo", 0, std::nullopt, 0.8)};
  const auto plots = herd::cli::plot_bench(dir.path(), runs, scenarios, {"sync", "solo"}, 1, 0.9);
  const auto script = read_file(dir.file("plot.gp"));
  EXPECT_THAT(script, Not(HasSubstr("speedup.png")));
  EXPECT_THAT(script, HasSubstr("accuracy-none.png"));
  // Said, and no data file of NaNs beside it.
  EXPECT_EQ(plots.no_speedup, "no run reached the target 0.90");
  EXPECT_FALSE(std::filesystem::exists(dir.file("speedup.dat")));
  // Where only sync never did, that is the reason.
  const std::vector<bench_run> others{run("sync", 0, std::nullopt, 0.8), run("solo", 0, 4.0, 0.95)};
  EXPECT_EQ(
      herd::cli::plot_bench(dir.path(), others, scenarios, {"sync", "solo"}, 1, 0.9).no_speedup,
      "sync never reached the target 0.90, so there is no speedup over it to draw");
  // Without a target there is nothing to say.
  EXPECT_EQ(herd::cli::plot_bench(dir.path(), runs, scenarios, {"sync", "solo"}, 1, 0.0).no_speedup,
            "");
}

TEST(bench_plots, a_scenario_where_sync_never_reached_the_target_is_named) {
  temp_directory dir;
  auto runs = runs_where_solo_never_reached_the_target();
  for (auto made : runs_where_solo_never_reached_the_target()) {
    made.scenario = "random";
    if (made.algorithm == "sync")
      made.summary.time_to_target_seconds.reset();
    runs.push_back(made);
  }
  herd::cli::plot_bench(dir.path(), runs, {"none", "random"}, algorithms, 2, 0.9);
  const auto script = read_file(dir.file("plot.gp"));
  EXPECT_THAT(script, HasSubstr("\\nnever reached it: solo; sync never reached it in random (no "
                                "speedup to draw)\""));
  EXPECT_THAT(script, HasSubstr("speedup.png")) << "none still has speedups";
}

// The table: medians over the repetitions; speedup is sync's median time to the target over
// this algorithm's, accuracy against sync's median; a cell no repetition of which reached the
// target has no time and no speedup, and counts the runs train.max-seconds cut short.
TEST(bench_table, rows_are_medians_against_sync_in_the_same_scenario) {
  std::vector<bench_run> runs{run("sync", 0, 8.0, 0.90),
                              run("sync", 1, 6.0, 0.92),
                              run("sync", 2, 7.0, 0.91),
                              run("solo", 0, 2.0, 0.89),
                              run("solo", 1, 4.0, 0.88),
                              run("solo", 2, 3.5, 0.87),
                              run("preduce", 0, std::nullopt, 0.80)};
  for (auto& r : runs)
    r.summary.final_test_accuracy = r.summary.evaluations.back().test_accuracy;
  runs.back().summary.stop_reason = stop_cause::max_seconds;
  const auto rows = herd::cli::make_table(runs, scenarios, algorithms);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].algorithm, "sync");
  EXPECT_EQ(rows[0].runs, 3);
  EXPECT_DOUBLE_EQ(*rows[0].seconds_to_target, 7.0);
  EXPECT_DOUBLE_EQ(rows[0].final_accuracy, 0.91);
  EXPECT_DOUBLE_EQ(*rows[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(*rows[1].seconds_to_target, 3.5);
  EXPECT_DOUBLE_EQ(*rows[1].speedup, 2.0);
  EXPECT_NEAR(*rows[1].accuracy_vs_sync, -0.03, 1e-12);
  EXPECT_EQ(rows[2].reached, 0);
  EXPECT_FALSE(rows[2].seconds_to_target.has_value());
  EXPECT_FALSE(rows[2].speedup.has_value());
  EXPECT_EQ(rows[2].cut_short, 1);
  // The CSV says the same, one line a row.
  const auto csv = herd::cli::csv(rows);
  EXPECT_THAT(csv, HasSubstr("\nnone,solo,3.5,3,0.88,-0.03,"));
  EXPECT_THAT(csv, HasSubstr("\nnone,preduce,,0,0.8,"));
}

} // namespace
