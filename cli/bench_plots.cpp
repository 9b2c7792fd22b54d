// `herd bench`'s plots; see bench_plots.hpp.
#include "cli/bench_plots.hpp"

#include "cli/command_support.hpp"
#include "cli/report.hpp"

#include <algorithm>
#include <array>
#include <iomanip>
#include <limits>
#include <sstream>

namespace herd::cli {

namespace {

// The accuracy of one run at `t` on its own clock: its latest evaluation at or before t (after
// its end, its last one: a finished run holds its final accuracy, so that a median over the
// repetitions does not become one run's value where the others have stopped); none before its
// first.
std::optional<double> accuracy_at(const actors::run_summary& run, double t) {
  std::optional<double> latest;
  for (const auto& point : run.evaluations) {
    if (point.elapsed_seconds > t)
      break;
    latest = point.test_accuracy;
  }
  return latest;
}

// Median, least and greatest of `values` (not empty).
std::array<double, 3> spread(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {*median(values), values.front(), values.back()};
}

// One scenario's curve of `algorithm` over its repetitions: at every evaluation time of any of
// them, the median, least and greatest accuracy of those that have begun ("t median min max n"),
// finished ones at their final accuracy.
std::string curve_data(const std::vector<const bench_run*>& repetitions) {
  std::vector<double> times;
  for (const auto* run : repetitions)
    for (const auto& point : run->summary.evaluations)
      times.push_back(point.elapsed_seconds);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  std::ostringstream data;
  data << "# elapsed_seconds median_accuracy min_accuracy max_accuracy repetitions\n"
       << std::setprecision(9);
  for (double t : times) {
    std::vector<double> values;
    for (const auto* run : repetitions)
      if (const auto value = accuracy_at(run->summary, t))
        values.push_back(*value);
    if (values.empty())
      continue;
    const auto [mid, low, high] = spread(values);
    // The time exactly (it names an evaluation of the runs' reports), the accuracies to 9 digits.
    data << std::setprecision(std::numeric_limits<double>::max_digits10) << t
         << std::setprecision(9) << ' ' << mid << ' ' << low << ' ' << high << ' ' << values.size()
         << '\n';
  }
  return data.str();
}

// The median time to the target of `algorithm` in `scenario`, over the repetitions that reached it
// (as the table's).
std::optional<double> median_time_to_target(const std::vector<bench_run>& runs,
                                            const std::string& scenario,
                                            const std::string& algorithm) {
  std::vector<double> times;
  for (const auto& run : runs)
    if (run.scenario == scenario && run.algorithm == algorithm &&
        run.summary.time_to_target_seconds)
      times.push_back(*run.summary.time_to_target_seconds);
  return median(times);
}

// The speedups over sync of `algorithm` in `scenario`, one per repetition that it and sync's
// same repetition both reached the target in.
std::vector<double> speedups(const std::vector<bench_run>& runs, const std::string& scenario,
                             const std::string& algorithm, int repeat) {
  auto time_to_target = [&](const std::string& name, int repetition) -> std::optional<double> {
    for (const auto& run : runs)
      if (run.scenario == scenario && run.algorithm == name && run.repetition == repetition)
        return run.summary.time_to_target_seconds;
    return std::nullopt;
  };
  std::vector<double> ratios;
  for (int r = 0; r < repeat; ++r) {
    const auto sync = time_to_target("sync", r);
    const auto own = time_to_target(algorithm, r);
    if (sync && own && *own > 0.0)
      ratios.push_back(*sync / *own);
  }
  return ratios;
}

std::string format_target(double target) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << target;
  return out.str();
}

} // namespace

std::optional<double> median(std::vector<double> values) {
  if (values.empty())
    return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string speedup_data(const std::vector<bench_run>& runs,
                         const std::vector<std::string>& scenarios,
                         const std::vector<std::string>& algorithms, int repeat) {
  std::ostringstream data;
  data << "# scenario, then per algorithm (" << join(algorithms)
       << "): the speedup over sync in time to target as the table gives it (sync's median time\n"
          "# over the algorithm's), then the least and greatest of the repetitions' own ratios\n"
       << std::setprecision(6);
  for (const auto& scenario : scenarios) {
    data << scenario;
    const auto sync = median_time_to_target(runs, scenario, "sync");
    for (const auto& algorithm : algorithms) {
      const auto own = median_time_to_target(runs, scenario, algorithm);
      if (!sync || !own || *own <= 0.0) {
        data << " NaN NaN NaN";
        continue;
      }
      const double speedup = *sync / *own;
      auto ratios = speedups(runs, scenario, algorithm, repeat);
      if (ratios.empty()) // no repetition reached the target with sync's: the bar alone
        ratios.push_back(speedup);
      data << ' ' << speedup << ' ' << *std::min_element(ratios.begin(), ratios.end()) << ' '
           << *std::max_element(ratios.begin(), ratios.end());
    }
    data << '\n';
  }
  return data.str();
}

bench_plots plot_bench(const std::filesystem::path& dir, const std::vector<bench_run>& runs,
                       const std::vector<std::string>& scenarios,
                       const std::vector<std::string>& algorithms, int repeat, double target) {
  // The curves are the evaluations': of the validation set where the runs hold one.
  const std::string measured =
      !runs.empty() && runs.front().summary.validation_samples > 0 ? "validation" : "test";
  std::ostringstream script;
  script << "# herd bench wrote this: " << measured
         << " accuracy against each run's own wall time (the median\n"
            "# over the repetitions, the band from least to greatest), and the speedup over sync.\n"
            "set terminal pngcairo size 900,560\n"
            "set xlabel 'wall time of the run (s)'\nset ylabel '"
         << measured << " accuracy'\nset key bottom right\nset grid\n";
  const std::string band = repeat > 1 ? " (median, band: min to max of " + std::to_string(repeat) +
                                            " runs; a finished run stays at its final accuracy)"
                                      : "";
  std::vector<std::string> pngs;
  for (const auto& scenario : scenarios) {
    std::vector<std::string> lines;
    for (const auto& algorithm : algorithms) {
      std::vector<const bench_run*> repetitions;
      for (const auto& run : runs)
        if (run.scenario == scenario && run.algorithm == algorithm)
          repetitions.push_back(&run);
      if (repetitions.empty())
        continue;
      const std::string name = "curve-" + scenario + "-" + algorithm + ".dat";
      write_file_atomically((dir / name).string(), curve_data(repetitions));
      // One colour per algorithm in every plot of the bench, its place in the list.
      const auto place = std::find(algorithms.begin(), algorithms.end(), algorithm);
      const std::string colour =
          "lc " + plot_colour(static_cast<std::size_t>(place - algorithms.begin()));
      lines.push_back("'" + name + "' using 1:3:4 with filledcurves " + colour +
                      " fs transparent solid 0.15 noborder notitle");
      lines.push_back("'" + name + "' using 1:2 with lines lw 2 " + colour + " title '" +
                      algorithm + "'");
    }
    if (lines.empty())
      continue;
    const std::string png = "accuracy-" + scenario + ".png";
    script << "set output '" << png << "'\nset title 'scenario " << scenario << band << "'\n";
    if (target > 0.0)
      script << "set arrow 1 from graph 0, first " << target << " to graph 1, first " << target
             << " nohead dashtype 2\n";
    script << "plot ";
    for (std::size_t i = 0; i < lines.size(); ++i)
      script << (i ? ", " : "") << lines[i];
    script << "\nunset arrow 1\n";
    pngs.push_back(png);
  }
  // gnuplot refuses a histogram column without one valid point: an algorithm that never reached
  // the target is named in the title instead of drawn.
  std::vector<std::size_t> drawn;
  std::vector<std::string> never;
  std::vector<std::string> sync_never; // scenarios with no speedup to draw at all
  for (const auto& scenario : scenarios)
    if (!median_time_to_target(runs, scenario, "sync"))
      sync_never.push_back(scenario);
  for (std::size_t i = 0; i < algorithms.size(); ++i) {
    const bool reached = std::any_of(scenarios.begin(), scenarios.end(), [&](const auto& scenario) {
      return median_time_to_target(runs, scenario, algorithms[i]).has_value() &&
             !std::count(sync_never.begin(), sync_never.end(), scenario);
    });
    if (reached)
      drawn.push_back(i);
    else
      never.push_back(algorithms[i]);
  }
  bench_plots plots;
  if (drawn.empty() && target > 0.0) {
    const bool any_reached = std::any_of(runs.begin(), runs.end(), [](const bench_run& run) {
      return run.summary.time_to_target_seconds.has_value();
    });
    const bool sync_ran =
        std::find(algorithms.begin(), algorithms.end(), "sync") != algorithms.end();
    plots.no_speedup = !sync_ran     ? "sync did not run (--algorithms), and speedups are over it"
                       : any_reached ? "sync never reached the target " + format_target(target) +
                                           ", so there is no speedup over it to draw"
                                     : "no run reached the target " + format_target(target);
  }
  if (!drawn.empty()) {
    write_file_atomically((dir / "speedup.dat").string(),
                          speedup_data(runs, scenarios, algorithms, repeat));
    // What is missing goes on a line of its own: a long title is cut at the image's edge.
    std::string missing = never.empty() ? "" : "never reached it: " + join(never);
    if (!sync_never.empty())
      missing += (missing.empty() ? "" : "; ") + std::string("sync never reached it in ") +
                 join(sync_never) + " (no speedup to draw)";
    script
        << "set output 'speedup.png'\n"
           "set title \"speedup over sync in time to "
        << format_target(target) << " (of median times; whiskers: the repetitions' own ratios)"
        << (missing.empty() ? "" : "\\n" + missing) << "\" noenhanced\n"
        << "set xlabel 'scenario'\nset ylabel 'speedup over sync (x)'\nset key top left\n"
           "set style data histogram\nset style histogram errorbars gap 2 lw 1\n"
           "set style fill solid 0.6 border -1\nset yrange [0:*]\nset offsets 0, 0, graph 0.1, 0\n"
           "set arrow 2 from graph 0, first 1 to graph 1, first 1 nohead dashtype 2\nplot ";
    for (std::size_t i : drawn)
      script << (i == drawn.front() ? "" : ", ") << "'speedup.dat' using " << 2 + 3 * i << ':'
             << 3 + 3 * i << ':' << 4 + 3 * i << (i == drawn.front() ? ":xtic(1)" : "")
             << " title '" << algorithms[i] << "' lc " << plot_colour(i);
    script << '\n';
    pngs.push_back("speedup.png");
  }
  if (!run_gnuplot(dir.string(), script.str()))
    return plots;
  for (const auto& png : pngs)
    plots.written.push_back((dir / png).string());
  return plots;
}

} // namespace herd::cli
