// Semantic checks of a run_config: ranges and known names, each failure a sentence that names the
// key, the value and what is allowed.
#include "config/loader.hpp"

#include <algorithm>
#include <sstream>

namespace herd::config {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + names[i];
  return out;
}

class checker {
public:
  explicit checker(const value_origins& origins) : origins_(origins) {}

  template <class T>
  void require(bool ok, const std::string& key, const T& value, const std::string& allowed) {
    if (ok)
      return;
    std::ostringstream message;
    message << key << " = " << value;
    if (auto origin = origins_.find(key); origin != origins_.end())
      message << " (" << origin->second << ")";
    message << ": " << allowed;
    errors_.push_back({key, message.str()});
  }

  std::vector<config_error> take() { return std::move(errors_); }

private:
  const value_origins& origins_;
  std::vector<config_error> errors_;
};

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

} // namespace

std::vector<config_error> validate(const run_config& config, const value_origins& origins) {
  checker check(origins);
  const auto& train = config.train;
  check.require(contains(known_algorithms(), train.algorithm), "train.algorithm",
                '"' + train.algorithm + '"',
                "unknown algorithm; allowed: " + join(known_algorithms()));
  check.require(train.workers >= 1 && train.workers <= 1024, "train.workers", train.workers,
                "must be between 1 and 1024");
  check.require(train.batch_size >= 1, "train.batch-size", train.batch_size, "must be at least 1");
  check.require(train.lr > 0.0, "train.lr", train.lr, "the learning rate must be positive");
  check.require(train.momentum >= 0.0 && train.momentum < 1.0, "train.momentum", train.momentum,
                "must lie in [0, 1)");
  check.require(train.weight_decay >= 0.0, "train.weight-decay", train.weight_decay,
                "must not be negative");
  check.require(train.epochs >= 1, "train.epochs", train.epochs, "must be at least 1");
  check.require(train.target_accuracy >= 0.0 && train.target_accuracy <= 1.0,
                "train.target-accuracy", train.target_accuracy,
                "must lie in [0, 1] (0 = no target)");
  check.require(train.max_seconds >= 0.0, "train.max-seconds", train.max_seconds,
                "must not be negative (0 = no limit)");
  check.require(train.eval_every >= 1, "train.eval-every", train.eval_every,
                "must be at least 1 round");
  check.require(train.blas_threads >= 0 && train.blas_threads <= 256, "train.blas-threads",
                train.blas_threads, "must be between 0 (automatic) and 256");
  check.require(contains(known_datasets(), config.data.dataset), "data.dataset",
                '"' + config.data.dataset + '"',
                "unknown dataset; allowed: " + join(known_datasets()));
  check.require(config.data.dataset != "fashion-mnist" || !config.data.path.empty(), "data.path",
                "\"\"", "must name the directory holding the Fashion-MNIST files");
  for (int size : config.model.hidden)
    check.require(size >= 1 && size <= 65536, "model.hidden", size,
                  "every hidden layer size must be between 1 and 65536");
  check.require(config.metrics.port >= 0 && config.metrics.port <= 65535, "metrics.port",
                config.metrics.port, "must be a TCP port between 0 and 65535 (0 = off)");
  const bool port_in_range = config.metrics.port >= 0 && config.metrics.port <= 65535;
  check.require(config.metrics.port == 0 || !port_in_range, "metrics.port", config.metrics.port,
                "this build does not serve /metrics yet; leave metrics.port at 0");
  return check.take();
}

std::vector<config_error> validate_against_data(const run_config& config,
                                                std::size_t training_samples) {
  const value_origins no_origins;
  checker check(no_origins);
  const auto workers = static_cast<std::size_t>(config.train.workers);
  const std::size_t shard = training_samples / workers;
  std::ostringstream allowed;
  allowed << "larger than a worker's shard of " << shard << " samples (" << training_samples
          << " training samples / " << workers << " workers); use at most " << shard;
  check.require(static_cast<std::size_t>(config.train.batch_size) <= shard, "train.batch-size",
                config.train.batch_size, allowed.str());
  return check.take();
}

} // namespace herd::config
