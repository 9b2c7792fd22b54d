// The named values of the run configuration's string keys, and the secret-free copy of a
// configuration; see run_config.hpp.
#include "herd/run_config.hpp"

#include <algorithm>

namespace herd::config {

const std::vector<std::string>& known_algorithms() {
  static const std::vector<std::string> names{"sync",    "solo",  "majority", "quorum",
                                              "preduce", "wagma", "async",    "local-sgd"};
  return names;
}

const std::vector<std::string>& known_optimizers() {
  static const std::vector<std::string> names{"sgd", "adamw"};
  return names;
}

const std::vector<std::string>& known_lr_schedules() {
  static const std::vector<std::string> names{"constant", "cosine", "step"};
  return names;
}

const std::vector<std::string>& known_backends() {
  static const std::vector<std::string> names{"cpu", "cuda"};
  return names;
}

const std::vector<std::string>& known_imbalance_kinds() {
  static const std::vector<std::string> names{"none", "random", "persistent", "lognormal"};
  return names;
}

const std::vector<std::string>& known_late_gradient_modes() {
  static const std::vector<std::string> names{"accumulate", "discard", "scale"};
  return names;
}

const std::vector<std::string>& known_missing_member_modes() {
  static const std::vector<std::string> names{"renormalise", "zero"};
  return names;
}

std::size_t min_connecting_groups(std::size_t workers, std::size_t group_size) {
  if (workers <= 1)
    return 0;
  const std::size_t merges_per_group = std::max<std::size_t>(std::min(group_size, workers), 2) - 1;
  return (workers - 1 + merges_per_group - 1) / merges_per_group;
}

const std::vector<std::string>& known_wagma_blends() {
  static const std::vector<std::string> names{"herd", "reference"};
  return names;
}

const std::vector<std::string>& known_compressions() {
  static const std::vector<std::string> names{"none", "fp16", "bf16"};
  return names;
}

const std::vector<std::string>& known_networks() {
  static const std::vector<std::string> names{"one-machine", "25gbe", "nvlink"};
  return names;
}

const std::vector<std::string>& known_collectives() {
  static const std::vector<std::string> names{"ring", "halving-doubling"};
  return names;
}

const std::vector<std::string>& known_model_presets() {
  static const std::vector<std::string> names{"mlp", "cnn", "textcnn"};
  return names;
}

const std::vector<std::string>& known_datasets() {
  static const std::vector<std::string> names{"fashion-mnist", "synthetic", "npy", "fortunes"};
  return names;
}

run_config without_secrets(run_config config) {
  config.cluster.token.clear();
  config.cluster.token_file.clear();
  return config;
}

} // namespace herd::config
