// `herd export --checkpoint PATH --out DIR`: a checkpoint's model as one .npy file per
// parameter tensor and a JSON description, for use outside Herd (numpy, PyTorch).
#pragma once

#include <string>
#include <vector>

namespace herd::cli {

std::string export_help();

int export_command(const std::vector<std::string>& args);

} // namespace herd::cli
