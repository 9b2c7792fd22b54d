// How early a backward pass finishes its gradient: what reducing gradient buckets while backward
// runs could hide. For each model, one worker's steps (forward and backward on a batch of random
// inputs, one BLAS thread as a worker of several has) report, through model::gradient_progress,
// when each part of the gradient is final; the table gives how long before the step ends half, 90%
// and 99% of the gradient (by floats) were final. A reduction of that part could run that long
// beside the rest of backward. The same steps without reports run alternately as the baseline:
// `vs plain` is their median over the reporting steps' (1.00: reporting costs nothing).
//
//   bench_backward [--models=mlp,cnn,textcnn] [--batch=32] [--steps=40] [--repetitions=3]
#include "herd/ops.hpp"
#include "herd/sequential.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_flags.hpp"

namespace {

using namespace herd;
using clock_type = std::chrono::steady_clock;

struct options {
  std::vector<std::string> models{"mlp", "cnn", "textcnn"};
  int batch = 32;
  int steps = 40;
  int repetitions = 3;
};

options parse(int argc, char** argv) {
  options parsed;
  for (int i = 1; i < argc; ++i) {
    const auto [key, value] = herd::bench::split_flag(argv[i]);
    if (key == "--models")
      parsed.models = herd::bench::list_flag(value);
    else if (key == "--batch")
      parsed.batch = herd::bench::int_flag("bench_backward", key, value);
    else if (key == "--steps")
      parsed.steps = herd::bench::int_flag("bench_backward", key, value);
    else if (key == "--repetitions")
      parsed.repetitions = herd::bench::int_flag("bench_backward", key, value);
    else {
      std::cerr << "usage: bench_backward [--models=mlp,cnn,textcnn] [--batch=32] [--steps=40] "
                   "[--repetitions=3]\n";
      std::exit(2);
    }
  }
  if (parsed.batch < 1 || parsed.steps < 1 || parsed.repetitions < 1) {
    std::cerr << "bench_backward: --batch, --steps and --repetitions must be at least 1\n";
    std::exit(2);
  }
  return parsed;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// When, since the step began, each report came and from where the gradient was final.
class timeline final : public models::gradient_progress {
public:
  void begin() {
    start_ = clock_type::now();
    reports_.clear();
  }
  void final_from(std::size_t begin) override {
    reports_.push_back({begin, std::chrono::duration<double>(clock_type::now() - start_).count()});
  }
  // Seconds after the start when at least `share` of `count` floats were final.
  double when_final(double share, std::size_t count) const {
    for (const auto& report : reports_)
      if (static_cast<double>(count - report.begin) >= share * static_cast<double>(count))
        return report.at;
    return reports_.empty() ? 0.0 : reports_.back().at;
  }

private:
  struct entry {
    std::size_t begin = 0;
    double at = 0.0;
  };
  clock_type::time_point start_;
  std::vector<entry> reports_;
};

struct measured {
  double plain_ms = 0.0;
  double step_ms = 0.0;
  std::vector<double> ahead_ms; // per share: how long before the step's end it was final
};

const std::vector<double> shares{0.5, 0.9, 0.99};

measured run_once(const models::model& model, const models::tensor& x,
                  const std::vector<std::int32_t>& labels, int steps) {
  const auto& ops = kernels::cpu_ops();
  const auto params = model.initial_parameters(1);
  models::tensor grads({model.parameter_count()});
  const auto work = model.make_workspace();
  timeline progress;
  std::vector<double> plain;
  std::vector<double> reporting;
  std::vector<std::vector<double>> ahead(shares.size());
  for (int step = -2; step < steps; ++step) { // two steps to warm up
    auto start = clock_type::now();
    model.loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work);
    const double plain_seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    progress.begin();
    start = clock_type::now();
    model.loss_and_gradient_with_progress(ops, params.data(), x, labels, grads.data(), *work,
                                          progress);
    const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    if (step < 0)
      continue;
    plain.push_back(plain_seconds);
    reporting.push_back(seconds);
    for (std::size_t s = 0; s < shares.size(); ++s)
      ahead[s].push_back(seconds - progress.when_final(shares[s], model.parameter_count()));
  }
  measured result;
  result.plain_ms = 1e3 * median(plain);
  result.step_ms = 1e3 * median(reporting);
  for (const auto& each : ahead)
    result.ahead_ms.push_back(1e3 * median(each));
  return result;
}

void run_model(const std::string& name, const options& opts) {
  models::model_choice choice;
  choice.preset = name;
  const bool tokens = name == "textcnn";
  const models::shape input = tokens ? models::shape{64} : models::shape{1, 28, 28};
  const std::size_t classes = tokens ? 4 : 10;
  const auto model = models::build_model(choice, input, classes);
  const auto rows = static_cast<std::size_t>(opts.batch);
  models::tensor x({rows, models::elements(input)});
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int> token(0, 255);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = tokens ? static_cast<float>(token(rng)) : pixel(rng);
  std::vector<std::int32_t> labels;
  for (std::size_t r = 0; r < rows; ++r)
    labels.push_back(static_cast<std::int32_t>(r % classes));

  std::vector<measured> runs;
  for (int r = 0; r < opts.repetitions; ++r)
    runs.push_back(run_once(*model, x, labels, opts.steps));
  auto median_of = [&](auto field) {
    std::vector<double> values;
    for (const auto& run : runs)
      values.push_back(field(run));
    return median(values);
  };
  const double plain_ms = median_of([](const measured& m) { return m.plain_ms; });
  const double step_ms = median_of([](const measured& m) { return m.step_ms; });
  std::printf("%-8s %10zu %8.2f %8.3f %8.3f %8.2f", name.c_str(), model->parameter_count(),
              4.0 * static_cast<double>(model->parameter_count()) / (1 << 20), plain_ms, step_ms,
              plain_ms / step_ms);
  for (std::size_t s = 0; s < shares.size(); ++s) {
    const double ahead = median_of([s](const measured& m) { return m.ahead_ms[s]; });
    std::printf("  %7.3f (%3.0f%%)", ahead, 100.0 * ahead / step_ms);
  }
  std::printf("\n");
}

} // namespace

int main(int argc, char** argv) {
  const options opts = parse(argc, argv);
  kernels::set_blas_threads(1);
  std::printf("bench_backward: batch %d, %d steps, median of %d; ms before the step ends when that "
              "share of the gradient was final (%% of the step)\n",
              opts.batch, opts.steps, opts.repetitions);
  std::printf("%-8s %10s %8s %8s %8s %8s  %15s  %15s  %15s\n", "model", "params", "MB", "plain ms",
              "step ms", "vs plain", "50% final", "90% final", "99% final");
  for (const auto& name : opts.models) {
    try {
      run_model(name, opts);
    } catch (const std::exception& failure) {
      std::cerr << "bench_backward: " << name << ": " << failure.what() << "\n";
      return 1;
    }
  }
  return 0;
}
