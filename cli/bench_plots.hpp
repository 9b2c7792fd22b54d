// `herd bench`'s plots: per scenario, test accuracy against each run's own wall time (the median
// over the repetitions and its spread), and the speedup over sync in time to the target. Writes
// gnuplot data files and a script next to the PNGs, so that a user can restyle them.
#pragma once

#include "herd/run_summary.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace herd::cli {

/// One run of `herd bench`.
struct bench_run {
  std::string scenario;
  std::string algorithm;
  int repetition = 0;
  actors::run_summary summary;
  std::uint64_t train_seed = 0;     // train.seed of the run: the job's plus the repetition
  std::uint64_t imbalance_seed = 0; // imbalance.seed of the run, likewise
};

/// The median of `values`; none when there are none.
std::optional<double> median(std::vector<double> values);

/// Speedup over sync in time to the target, per repetition (sync's repetition r over this
/// one's), for every scenario and algorithm: a line "scenario median min max ..." with three
/// columns per algorithm, NaN where no repetition of it (or of sync) reached the target.
std::string speedup_data(const std::vector<bench_run>& runs,
                         const std::vector<std::string>& scenarios,
                         const std::vector<std::string>& algorithms, int repeat);

struct bench_plots {
  std::vector<std::string> written; // the PNG paths gnuplot wrote
  /// With a target, why there is no speedup.png (no run reached it; sync never did); else empty.
  std::string no_speedup;
};

/// Writes to `dir` the data files (each scenario's and algorithm's accuracy over time, and where
/// a speedup can be drawn the speedups), the gnuplot script, and, when gnuplot is installed,
/// accuracy-<scenario>.png per scenario and speedup.png (the algorithms that reached the target
/// in some scenario; the others are named in its title; not drawn when none did).
bench_plots plot_bench(const std::filesystem::path& dir, const std::vector<bench_run>& runs,
                       const std::vector<std::string>& scenarios,
                       const std::vector<std::string>& algorithms, int repeat, double target);

} // namespace herd::cli
