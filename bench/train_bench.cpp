// Training throughput: P synchronous workers at batch b against one worker at batch P*b (the
// framework's overhead, issue goal >= 0.9), and both against a plain training loop without actors.
// Every configuration runs in this process, alternating, several times; the table shows medians.
//
//   bench_train [--repetitions=3] [--epochs=1] [--workers=4] [--batches=32,128]
//               [--data=fashion-mnist|synthetic] [--path=/usr/share/datasets/fashion-mnist]
//               [--model=mlp|cnn] [--samples=N] [--optimizer=sgd|adamw]
// --model chooses model.preset; --samples trains on the first N training samples only (the CNN's
// epoch is long on two cores); --optimizer chooses train.optimizer for every run, the plain loop's
// included.
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"
#include "herd/config.hpp"
#include "models/optimizer.hpp"
#include "models/sampler.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_flags.hpp"

namespace {

using namespace herd;

struct options {
  int repetitions = 3;
  int epochs = 1;
  int workers = 4;
  std::vector<int> batches{32, 128};
  std::string data = "fashion-mnist";
  std::string path = models::default_fashion_mnist_dir;
  std::string model = "mlp";
  std::size_t samples = 0; // 0: all
  std::string optimizer = "sgd";
};

options parse(int argc, char** argv) {
  options parsed;
  for (int i = 1; i < argc; ++i) {
    const auto [key, value] = herd::bench::split_flag(argv[i]);
    if (key == "--repetitions")
      parsed.repetitions = std::stoi(value);
    else if (key == "--epochs")
      parsed.epochs = std::stoi(value);
    else if (key == "--workers")
      parsed.workers = std::stoi(value);
    else if (key == "--data")
      parsed.data = value;
    else if (key == "--path")
      parsed.path = value;
    else if (key == "--model")
      parsed.model = value;
    else if (key == "--samples")
      parsed.samples = std::stoul(value);
    else if (key == "--optimizer" && (value == "sgd" || value == "adamw"))
      parsed.optimizer = value;
    else if (key == "--batches") {
      parsed.batches = herd::bench::int_list("bench_train", key, value);
    } else {
      std::cerr << "usage: bench_train [--repetitions=N] [--epochs=N] [--workers=P] "
                   "[--batches=b1,b2] [--data=fashion-mnist|synthetic] [--path=DIR] "
                   "[--model=mlp|cnn] [--samples=N] [--optimizer=sgd|adamw]\n";
      std::exit(2);
    }
  }
  return parsed;
}

config::run_config base_config(const options& opts, int workers, int batch) {
  config::run_config config;
  config.train.workers = workers;
  config.train.batch_size = batch;
  config.train.epochs = opts.epochs;
  config.train.eval_every = 1 << 30; // no evaluation while timing (the final one is not timed)
  config.train.seed = 1;
  config.model.preset = opts.model;
  config.train.optimizer = opts.optimizer;
  return config;
}

// Samples per second of a herd run (actors, local data plane).
double herd_throughput(const options& opts,
                       const std::shared_ptr<const models::train_test_split>& data, int workers,
                       int batch) {
  const auto config = base_config(opts, workers, batch);
  actors::session_options session_options;
  session_options.blas_threads = actors::blas_threads_for(config, workers);
  actors::train_session session(config, data, session_options);
  const auto summary = session.run();
  return summary.samples_per_second;
}

// Samples per second of a plain loop: one replica, forward/backward/optimizer step, no actors.
double plain_throughput(const options& opts, const models::dataset& train, int batch) {
  const auto config = base_config(opts, 1, batch);
  kernels::set_blas_threads(0);
  const auto built = actors::make_model(config, train);
  const models::model& model = *built;
  auto params = model.initial_parameters(config.train.seed);
  models::tensor grads({model.parameter_count()});
  models::optimizer optimizer(model.parameter_count(), actors::optimizer_of(config));
  models::batch_sampler sampler(actors::worker_shard(config, train.size(), 0),
                                static_cast<std::size_t>(batch), 1);
  models::tensor x;
  std::vector<std::int32_t> y;
  const auto work = model.make_workspace();
  const std::size_t steps = sampler.batches_per_epoch() * static_cast<std::size_t>(opts.epochs);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t step = 0; step < steps; ++step) {
    models::gather_batch(train, sampler.next(), x, y);
    model.loss_and_gradient(kernels::cpu_ops(), params.data(), x, y, grads.data(), *work);
    optimizer.step(kernels::cpu_ops(), params.data(), grads.data());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(steps * static_cast<std::size_t>(batch)) / seconds;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

} // namespace

int main(int argc, char** argv) {
  const auto opts = parse(argc, argv);
  std::shared_ptr<const models::train_test_split> data;
  try {
    data = opts.data == "synthetic"
               ? std::make_shared<models::train_test_split>(
                     models::make_synthetic_split(60000, 1000, 784, 10, 1))
               : std::make_shared<models::train_test_split>(models::load_fashion_mnist(opts.path));
    if (opts.samples > 0 && opts.samples < data->train.size()) {
      auto fewer = std::make_shared<models::train_test_split>(*data);
      fewer->train.images.reshape({opts.samples, data->train.features()});
      std::copy_n(data->train.images.data(), fewer->train.images.size(),
                  fewer->train.images.data());
      fewer->train.labels.resize(opts.samples);
      data = std::move(fewer);
    }
    const auto model = actors::make_model(base_config(opts, 1, 1), data->train);
    std::printf("bench_train: %s (%s) on %s, %zu training samples, %s, %d epoch(s) per run, "
                "%d repetitions, medians in samples/s\n\n",
                opts.model.c_str(), model->describe().c_str(), data->train.name.c_str(),
                data->train.size(), opts.optimizer.c_str(), opts.epochs, opts.repetitions);
  } catch (const std::exception& failure) {
    std::cerr << "bench_train: " << failure.what() << '\n';
    return 2;
  }
  const int p = opts.workers;
  std::printf("%8s %14s %14s %14s %12s %12s %12s\n", "batch b", "plain 1x(Pb)", "herd 1x(Pb)",
              "herd Pxb", "Pxb/1x(Pb)", "1x(Pb)/plain", "Pxb/plain");
  for (int batch : opts.batches) {
    std::map<std::string, std::vector<double>> runs;
    for (int repetition = 0; repetition < opts.repetitions; ++repetition) {
      runs["plain"].push_back(plain_throughput(opts, data->train, p * batch));
      runs["herd1"].push_back(herd_throughput(opts, data, 1, p * batch));
      runs["herdP"].push_back(herd_throughput(opts, data, p, batch));
    }
    const double plain = median(runs["plain"]);
    const double one = median(runs["herd1"]);
    const double many = median(runs["herdP"]);
    std::printf("%8d %14.0f %14.0f %14.0f %12.3f %12.3f %12.3f\n", batch, plain, one, many,
                many / one, one / plain, many / plain);
  }
  std::printf("\nP = %d. 'herd Pxb / herd 1x(Pb)' is the framework's overhead for P workers "
              "(issue goal >= 0.9);\nall P workers share this machine's %u cores, so every "
              "replica's optimizer step is extra work the single worker does not do.\n",
              p, std::thread::hardware_concurrency());
  return 0;
}
