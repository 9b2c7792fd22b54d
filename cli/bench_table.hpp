// herd bench's table: each scenario and algorithm's repetitions as medians against sync in the
// same scenario, printed for a terminal and written as CSV and JSON. Plain functions of the runs,
// so that tests can drive them without a run.
#pragma once

#include "cli/bench_plots.hpp"
#include "herd/run_config.hpp"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace herd::cli {

/// One scenario and algorithm over its repetitions.
struct table_row {
  std::string scenario;
  std::string algorithm;
  std::optional<double> seconds_to_target; // median over the repetitions that reached it
  int runs = 0;                            // repetitions that ran (fewer when interrupted)
  int reached = 0;                         // repetitions that reached the target
  double final_accuracy = 0.0;             // median
  double samples_per_second = 0.0;         // median
  double wall_seconds = 0.0;               // median
  double waited_seconds = 0.0;             // median idle time of all workers
  double barrier_seconds = 0.0;            // median waiting a barrier would have imposed
  std::optional<double> speedup;           // sync's seconds to target over this one's
  std::optional<double> accuracy_vs_sync;  // final accuracy minus sync's, same scenario
  int cut_short = 0; // repetitions train.max-seconds stopped before their epochs
};

/// A row per scenario and algorithm that ran (in the lists' order), with sync's row of the same
/// scenario as the baseline of speedup and accuracy_vs_sync.
std::vector<table_row> make_table(const std::vector<bench_run>& runs,
                                  const std::vector<std::string>& scenarios,
                                  const std::vector<std::string>& algorithms);

/// `value` with `digits` decimals and `suffix` (a sign first where `sign`); "-" when there is none.
std::string format(const std::optional<double>& value, int digits, const std::string& suffix = "",
                   bool sign = false);

/// The table for a terminal `columns` wide (text_table), and its footnotes: runs that
/// train.max-seconds cut short, times to the target too close to the snapshot interval to be fine.
void print_table(std::ostream& out, const std::vector<table_row>& rows, double target,
                 int snapshot_ms, std::size_t columns);

/// results.csv: one line per row.
std::string csv(const std::vector<table_row>& rows);

/// results.json: the job, the delay, the table and every run with its accuracy over time.
nlohmann::json to_json(const std::vector<table_row>& rows, const std::vector<bench_run>& runs,
                       const config::run_config& job, double random_delay_ms, bool interrupted);

} // namespace herd::cli
