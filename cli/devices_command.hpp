// `herd devices` and `herd version`: what this machine offers and what this build can use.
#pragma once

#include <string>
#include <vector>

namespace herd::cli {

/// "herd 0.3.0" and one line on CUDA (what `herd --version` and `--version` on every command say).
std::string version_text();

/// CPUs, the BLAS library, GPUs, and what the build supports (CUDA kernels, NCCL, TLS).
int devices_command(const std::vector<std::string>& args);

} // namespace herd::cli
