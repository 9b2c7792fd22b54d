// `herd predict --checkpoint PATH --input FILE.npy`: the class probabilities the model a
// checkpoint holds gives new samples, as CSV or .npy.
#pragma once

#include <string>
#include <vector>

namespace herd::cli {

std::string predict_help();

int predict_command(const std::vector<std::string>& args);

} // namespace herd::cli
