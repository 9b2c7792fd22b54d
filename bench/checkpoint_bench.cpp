// The cost of checkpoints: training throughput of the quick-start job with a checkpoint every 10 s
// against checkpoints off (issue goal: at most 2% slower), and what one checkpoint of that job
// costs: how long training pauses for it and how long writing the file takes (on its own thread).
// Both configurations run in this process, alternating, several times; the table shows medians.
//
//   bench_checkpoint [--repetitions=3] [--seconds=40] [--every=10] [--config=FILE] [--dir=DIR]
//                    [--data=fashion-mnist|synthetic]
#include "actors/train_session.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "bench/bench_flags.hpp"
#include "checkpoint/format.hpp"

namespace {

using namespace herd;

struct options {
  int repetitions = 3;
  double seconds = 40.0;
  double every = 10.0;
  std::string config = HERD_CONFIG_DIR "/quickstart.ini";
  std::string dir;
  std::string data;
};

options parse(int argc, char** argv) {
  options parsed;
  for (int i = 1; i < argc; ++i) {
    const auto [key, value] = herd::bench::split_flag(argv[i]);
    if (key == "--repetitions")
      parsed.repetitions = std::stoi(value);
    else if (key == "--seconds")
      parsed.seconds = std::stod(value);
    else if (key == "--every")
      parsed.every = std::stod(value);
    else if (key == "--config")
      parsed.config = value;
    else if (key == "--dir")
      parsed.dir = value;
    else if (key == "--data")
      parsed.data = value;
    else {
      std::cerr << "usage: bench_checkpoint [--repetitions=N] [--seconds=S] [--every=S] "
                   "[--config=FILE] [--dir=DIR] [--data=fashion-mnist|synthetic]\n";
      std::exit(2);
    }
  }
  return parsed;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

struct measured {
  double samples_per_second = 0.0;
  std::vector<actors::checkpoint_report> checkpoints;
};

measured run(config::run_config config,
             const std::shared_ptr<const models::train_test_split>& data) {
  std::mutex mutex;
  measured out;
  actors::session_options session_options;
  session_options.on_checkpoint = [&](const actors::checkpoint_report& report) {
    std::lock_guard<std::mutex> guard(mutex);
    out.checkpoints.push_back(report);
  };
  session_options.blas_threads = actors::blas_threads_for(config, config.train.workers);
  actors::train_session session(config, data, session_options);
  const auto summary = session.run();
  if (summary.stop_reason == actors::stop_cause::error) {
    std::cerr << "bench_checkpoint: the run failed: " << summary.error << '\n';
    std::exit(1);
  }
  out.samples_per_second = summary.samples_per_second;
  return out;
}

} // namespace

int main(int argc, char** argv) {
  const auto opts = parse(argc, argv);
  std::vector<std::string> overrides{"--train.max-seconds=" + std::to_string(opts.seconds),
                                     "--train.epochs=1000", "--train.eval-every=1000000000"};
  if (!opts.data.empty())
    overrides.push_back("--data.dataset=\"" + opts.data + "\"");
  config::run_config config;
  std::shared_ptr<const models::train_test_split> data;
  try {
    config = config::load(opts.config, overrides);
    data = config.data.dataset == "synthetic"
               ? std::make_shared<models::train_test_split>(
                     models::make_synthetic_split(60000, 1000, 784, 10, 1))
               : std::make_shared<models::train_test_split>(
                     models::load_fashion_mnist(config.data.path));
  } catch (const std::exception& failure) {
    std::cerr << "bench_checkpoint: " << failure.what() << '\n';
    return 2;
  }
  const std::string dir =
      opts.dir.empty()
          ? (std::filesystem::temp_directory_path() / "herd-bench-checkpoints").string()
          : opts.dir;
  std::printf("bench_checkpoint: %s (%s, %d workers), %.0f s per run, %d repetitions, "
              "checkpoints every %.0f s to %s\n\n",
              opts.config.c_str(), config.train.algorithm.c_str(), config.train.workers,
              opts.seconds, opts.repetitions, opts.every, dir.c_str());
  std::vector<double> off, on, pauses, writes, sizes;
  for (int repetition = 0; repetition < opts.repetitions; ++repetition) {
    auto plain = config;
    off.push_back(run(plain, data).samples_per_second);
    auto with = config;
    std::filesystem::remove_all(dir);
    with.checkpoint.dir = dir;
    with.checkpoint.every_seconds = opts.every;
    with.checkpoint.keep = 2;
    const auto result = run(with, data);
    on.push_back(result.samples_per_second);
    for (const auto& report : result.checkpoints) {
      if (!report.error.empty()) {
        std::cerr << "bench_checkpoint: a checkpoint failed: " << report.error << '\n';
        return 1;
      }
      if (!report.final)
        pauses.push_back(report.pause_seconds * 1e3);
      writes.push_back(report.write_seconds * 1e3);
      sizes.push_back(static_cast<double>(report.bytes) / 1e6);
    }
    std::printf("  run %d: off %.0f samples/s, on %.0f samples/s (%zu checkpoints)\n",
                repetition + 1, off.back(), on.back(), result.checkpoints.size());
    std::fflush(stdout);
  }
  std::filesystem::remove_all(dir);
  const double ratio = median(on) / median(off);
  std::vector<double> paired; // each repetition's on/off: less exposed to a drifting machine
  for (std::size_t i = 0; i < on.size(); ++i)
    paired.push_back(on[i] / off[i]);
  std::printf("\n%22s %14s %14s %10s %14s\n", "", "off", "every 10 s", "on/off", "paired on/off");
  std::printf("%22s %14.0f %14.0f %10.3f %14.3f\n", "samples/s (median)", median(off), median(on),
              ratio, median(paired));
  std::printf("\none checkpoint (medians of %zu): %.1f MB, training paused %.1f ms, written in "
              "%.1f ms (encode, fsync, rename; on the writer's thread)\n",
              writes.size(), median(sizes), median(pauses), median(writes));
  std::printf("goal: on/off >= 0.98. Training pauses %.2f%% of the time for checkpoints every "
              "%.0f s (median pause / interval).\n",
              100.0 * median(pauses) / 1e3 / opts.every, opts.every);
  return 0;
}
