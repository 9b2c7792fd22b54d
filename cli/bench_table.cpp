// herd bench's table (bench_table.hpp).
#include "cli/bench_table.hpp"

#include "cli/text_table.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace herd::cli {


std::vector<table_row> make_table(const std::vector<bench_run>& runs,
                                  const std::vector<std::string>& scenarios,
                                  const std::vector<std::string>& algorithms) {
  std::vector<table_row> rows;
  for (const auto& scenario : scenarios) {
    for (const auto& algorithm : algorithms) {
      table_row row;
      row.scenario = scenario;
      row.algorithm = algorithm;
      std::vector<double> to_target, accuracy, throughput, wall, waited, barrier;
      for (const auto& run : runs) {
        if (run.scenario != scenario || run.algorithm != algorithm)
          continue;
        const auto& s = run.summary;
        if (s.time_to_target_seconds) {
          to_target.push_back(*s.time_to_target_seconds);
          ++row.reached;
        }
        accuracy.push_back(s.final_test_accuracy.value_or(0.0));
        row.cut_short += s.stop_reason == actors::stop_cause::max_seconds;
        throughput.push_back(s.samples_per_second);
        wall.push_back(s.wall_seconds);
        waited.push_back(s.waiting.waited_seconds);
        barrier.push_back(s.waiting.barrier_seconds);
      }
      if (accuracy.empty())
        continue; // an interrupted bench: this cell never ran
      row.runs = static_cast<int>(accuracy.size());
      row.seconds_to_target = median(to_target);
      row.final_accuracy = median(accuracy).value_or(0.0);
      row.samples_per_second = median(throughput).value_or(0.0);
      row.wall_seconds = median(wall).value_or(0.0);
      row.waited_seconds = median(waited).value_or(0.0);
      row.barrier_seconds = median(barrier).value_or(0.0);
      rows.push_back(row);
    }
    // Against sync in the same scenario, when it ran.
    const auto sync = std::find_if(rows.begin(), rows.end(), [&](const table_row& row) {
      return row.scenario == scenario && row.algorithm == "sync";
    });
    if (sync == rows.end())
      continue;
    const table_row baseline = *sync;
    for (auto& row : rows) {
      if (row.scenario != scenario)
        continue;
      row.accuracy_vs_sync = row.final_accuracy - baseline.final_accuracy;
      if (row.seconds_to_target && baseline.seconds_to_target && *row.seconds_to_target > 0.0)
        row.speedup = *baseline.seconds_to_target / *row.seconds_to_target;
    }
  }
  return rows;
}

std::string format(const std::optional<double>& value, int digits, const std::string& suffix,
                   bool sign) {
  if (!value)
    return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << (sign ? std::showpos : std::noshowpos) << *value
      << suffix;
  return out.str();
}

void print_table(std::ostream& out, const std::vector<table_row>& rows, double target,
                 int snapshot_ms, std::size_t columns) {
  text_table table(2);
  table.add_column("scenario", text_table::align::left);
  table.add_column("algorithm", text_table::align::left);
  table.add_column(target > 0.0 ? "to " + format(target, 2) + " (s)" : "to target");
  for (const char* header : {"final acc", "vs sync", "samples/s", "speedup", "idle / barrier (s)"})
    table.add_column(header);
  for (const auto& row : rows) {
    std::string to_target = format(row.seconds_to_target, 1);
    if (row.reached > 0 && row.reached < row.runs)
      to_target += " (" + std::to_string(row.reached) + "/" + std::to_string(row.runs) + ")";
    table.add_row(
        {row.scenario, row.algorithm, to_target,
         format(row.final_accuracy, 4) + (row.cut_short > 0 ? "*" : ""),
         format(row.accuracy_vs_sync ? std::optional<double>(100.0 * *row.accuracy_vs_sync)
                                     : std::nullopt,
                2, " pp", true),
         format(row.samples_per_second, 0), format(row.speedup, 2, "x"),
         format(row.waited_seconds, 1) + " / " + format(row.barrier_seconds, 1)});
  }
  out << "\n" << table.render(columns);
  if (std::any_of(rows.begin(), rows.end(), [](const table_row& row) { return row.cut_short; }))
    out << "* train.max-seconds stopped some of its runs before their epochs: its final accuracy\n"
           "  is not at equal epochs with the others' (results.json: runs[].stop_reason)\n";
  // A time to the target is the first snapshot at or above it: within 20 snapshots of the
  // start, one snapshot more or less moves a speedup by 5% or more.
  const double coarse_seconds = 20.0 * snapshot_ms / 1000.0;
  if (target > 0.0 && std::any_of(rows.begin(), rows.end(), [coarse_seconds](const auto& row) {
        return row.seconds_to_target && *row.seconds_to_target < coarse_seconds;
      }))
    out << "times to the target are read from snapshots every " << snapshot_ms
        << " ms (--snapshot-ms): those under " << format(coarse_seconds, 1)
        << " s, and their speedups, are\ncoarse (one snapshot is 5% or more of them)\n";
}

std::string csv(const std::vector<table_row>& rows) {
  std::ostringstream out;
  out << "scenario,algorithm,seconds_to_target,reached,final_accuracy,accuracy_vs_sync,"
         "samples_per_second,wall_seconds,speedup_vs_sync,waited_seconds,barrier_seconds,runs\n";
  auto cell = [](const std::optional<double>& value) {
    if (!value)
      return std::string{};
    std::ostringstream text;
    text << std::setprecision(6) << *value;
    return text.str();
  };
  for (const auto& row : rows)
    out << row.scenario << ',' << row.algorithm << ',' << cell(row.seconds_to_target) << ','
        << row.reached << ',' << cell(row.final_accuracy) << ',' << cell(row.accuracy_vs_sync)
        << ',' << cell(row.samples_per_second) << ',' << cell(row.wall_seconds) << ','
        << cell(row.speedup) << ',' << cell(row.waited_seconds) << ',' << cell(row.barrier_seconds)
        << ',' << row.runs << '\n';
  return out.str();
}

nlohmann::json to_json(const std::vector<table_row>& rows, const std::vector<bench_run>& runs,
                       const config::run_config& job, double random_delay_ms, bool interrupted) {
  auto optional = [](const std::optional<double>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  nlohmann::json out;
  out["job"] = config::to_ini(job);
  out["random_delay_ms"] = random_delay_ms;
  out["interrupted"] = interrupted; // by a stop signal: the runs that finished before it
  auto& table = out["table"] = nlohmann::json::array();
  for (const auto& row : rows)
    table.push_back({{"scenario", row.scenario},
                     {"algorithm", row.algorithm},
                     {"seconds_to_target", optional(row.seconds_to_target)},
                     {"runs", row.runs},
                     {"reached", row.reached},
                     {"final_accuracy", row.final_accuracy},
                     {"accuracy_vs_sync", optional(row.accuracy_vs_sync)},
                     {"samples_per_second", row.samples_per_second},
                     {"wall_seconds", row.wall_seconds},
                     {"speedup_vs_sync", optional(row.speedup)},
                     {"waited_seconds", row.waited_seconds},
                     {"barrier_seconds", row.barrier_seconds},
                     {"cut_short", row.cut_short}});
  auto& all = out["runs"] = nlohmann::json::array();
  for (const auto& run : runs) {
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& point : run.summary.evaluations)
      curve.push_back({point.elapsed_seconds, point.test_accuracy});
    all.push_back({{"scenario", run.scenario},
                   {"algorithm", run.algorithm},
                   {"repetition", run.repetition},
                   {"train_seed", run.train_seed},
                   {"imbalance_seed", run.imbalance_seed},
                   {"imbalance", run.summary.imbalance},
                   {"seconds_to_target", optional(run.summary.time_to_target_seconds)},
                   {"final_accuracy", optional(run.summary.final_test_accuracy)},
                   {"samples_per_second", run.summary.samples_per_second},
                   {"wall_seconds", run.summary.wall_seconds},
                   {"stop_reason", actors::to_string(run.summary.stop_reason)},
                   {"epochs", run.summary.epochs},
                   {"rounds", run.summary.rounds},
                   {"steps", run.summary.steps},
                   {"waited_seconds", run.summary.waiting.waited_seconds},
                   {"barrier_seconds", run.summary.waiting.barrier_seconds},
                   {"accuracy_over_time", curve}});
  }
  return out;
}

} // namespace herd::cli
