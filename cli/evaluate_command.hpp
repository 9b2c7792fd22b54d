// `herd evaluate --checkpoint PATH`: the test accuracy and loss of the model a checkpoint holds,
// overall and per class, on its run's test set.
#pragma once

#include <string>
#include <vector>

namespace herd::cli {

std::string evaluate_help();

int evaluate_command(const std::vector<std::string>& args);

} // namespace herd::cli
