// Dataset loading and model names for the commands; see job_data.hpp.
#include "cli/job_data.hpp"

namespace herd::cli {

std::shared_ptr<const models::train_test_split> load_data(const config::run_config& config) {
  if (config.data.dataset == "synthetic") {
    // Same shape as Fashion-MNIST, a tenth of its size: for smoke tests without the package.
    return std::make_shared<models::train_test_split>(
        models::make_synthetic_split(6000, 1000, 784, 10, config.train.seed));
  }
  return std::make_shared<models::train_test_split>(models::load_fashion_mnist(config.data.path));
}

std::string describe_model(const std::vector<std::size_t>& sizes) {
  std::string text;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    text += (i ? "-" : "") + std::to_string(sizes[i]);
  return text;
}

} // namespace herd::cli
