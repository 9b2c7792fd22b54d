// What `herd train` and `herd bench` share: loading the configured dataset and naming a model.
#pragma once

#include "config/run_config.hpp"
#include "models/dataset.hpp"

#include <memory>
#include <string>
#include <vector>

namespace herd::cli {

/// The configured dataset (data.dataset, data.path); throws models::data_error naming the file
/// and the problem.
std::shared_ptr<const models::train_test_split> load_data(const config::run_config& config);

/// "784-256-128-10".
std::string describe_model(const std::vector<std::size_t>& sizes);

} // namespace herd::cli
