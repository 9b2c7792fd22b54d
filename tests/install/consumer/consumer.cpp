// Trains a model through the installed library's public headers only and checks that it learnt:
// the [model] and [train] settings from herd::config::load, a sequential model built from them,
// plain SGD over the model interface's gradients on generated data, and the model's own evaluation;
// and an unusable checkpoint caught by its installed type.
#include "herd/checkpoint_error.hpp"
#include "herd/config.hpp"
#include "herd/dataset.hpp"
#include "herd/job.hpp"
#include "herd/ops.hpp"
#include "herd/sequential.hpp"

#include <cstddef>
#include <cstdint>
#include <iostream>
#include <memory>
#include <numeric>
#include <vector>

int main() {
  const auto config = herd::config::load(
      "", {"--train.lr=0.1", "--train.momentum=0.9", "--train.weight-decay=0",
           "--train.batch-size=32", "--data.dataset=synthetic", "--model.hidden=[16]"});
  const auto data = herd::models::make_synthetic_split(2000, 400, 20, 4, 5);
  const auto model = herd::models::build_model(
      {config.model.preset, config.model.layers, config.model.hidden}, data.train.input_shape(),
      static_cast<std::size_t>(data.train.classes));

  const herd::kernels::ops& ops = herd::kernels::cpu_ops();
  auto params = model->initial_parameters(config.train.seed);
  std::vector<float> grads(model->parameter_count());
  std::vector<float> velocity(model->parameter_count());
  auto work = model->make_workspace();
  const herd::kernels::sgd_hyper hyper{static_cast<float>(config.train.lr),
                                       static_cast<float>(config.train.momentum),
                                       static_cast<float>(config.train.weight_decay)};
  const auto batch = static_cast<std::size_t>(config.train.batch_size);
  std::vector<std::size_t> rows(batch);
  herd::models::tensor x;
  std::vector<std::int32_t> labels(batch);
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (std::size_t first = 0; first + batch <= data.train.size(); first += batch) {
      std::iota(rows.begin(), rows.end(), first);
      herd::models::gather_rows(data.train, rows.data(), batch, x);
      for (std::size_t i = 0; i < batch; ++i)
        labels[i] = data.train.labels[first + i];
      model->loss_and_gradient(ops, params.data(), x, labels, grads.data(), *work);
      ops.sgd_step(params.data(), grads.data(), velocity.data(), grads.size(), hyper);
    }
  }
  const auto test = model->evaluate(ops, params.data(), data.test, 100, *work);
  std::cout << "consumer: " << model->describe() << ", test accuracy " << test.accuracy() << '\n';

  try {
    herd::job_options options;
    options.resume_from = "/nonexistent/herd-checkpoints";
    const auto resumed =
        herd::job::start(config, std::make_shared<herd::models::train_test_split>(data), options);
    std::cerr << "consumer: a job resumed from a checkpoint that does not exist\n";
    return 1;
  } catch (const herd::checkpoint::checkpoint_error& unusable) {
    std::cout << "consumer: refused to resume from " << unusable.file() << '\n';
  }
  return test.accuracy() > 0.9 ? 0 : 1;
}
