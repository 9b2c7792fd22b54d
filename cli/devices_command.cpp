// `herd devices`; see devices_command.hpp.
#include "cli/devices_command.hpp"

#include "cli/command_support.hpp"
#include "cli/train_command.hpp" // exit statuses
#include "comm/nccl_plane.hpp"
#include "herd/ops.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/machine.hpp"

#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "cluster/gate_link.hpp"

#ifndef HERD_VERSION
#define HERD_VERSION "unknown"
#endif

namespace herd::cli {

namespace {

const char* devices_help =
    "usage: herd devices\n\n"
    "Lists what this machine offers Herd and what this build of Herd can use:\n"
    "the CPUs (the cores this process may use, within a container's CPU quota;\n"
    "the model; whether the elementwise kernels use AVX2+FMA), the memory\n"
    "(within a container's memory limit), the BLAS library, the CUDA devices,\n"
    "and NCCL and TLS support.\n\n"
    "  --help, -h   show this help\n"
    "  --version    show the version\n\n"
    "Exit status: 0, or 2 for an unknown argument.\n";

std::string cpu_model() {
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown model";
}

} // namespace

std::string version_text() {
  return std::string("herd ") + HERD_VERSION + '\n' +
         kernels::cuda::describe(kernels::cuda::query_devices()) + '\n';
}

int devices_command(const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::cout << fit_help(devices_help);
      return exit_ok;
    }
    std::cerr << "herd devices: unknown argument '" << arg << "'\n\n" << fit_help(devices_help);
    return exit_bad_input;
  }
  const auto line = [](const std::string& label, const std::string& value) {
    std::cout << "  " << std::left << std::setw(8) << label << value << '\n';
  };
  std::cout << "herd " << HERD_VERSION << " on this machine\n";
  const auto cores = kernels::this_process_cores();
  line("cpu", std::to_string(cores.usable()) + " of " +
                  std::to_string(std::thread::hardware_concurrency()) + " cores usable" +
                  (cores.quota_limited()
                       ? " (a CPU quota allows " + std::to_string(cores.quota) + " of the " +
                             std::to_string(cores.affinity) + " it may run on)"
                       : std::string()) +
                  ", " + cpu_model());
  const auto memory = kernels::this_process_memory();
  const auto gib = [](std::uint64_t bytes) {
    std::ostringstream text;
    text << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1u << 30) << " GiB";
    return text.str();
  };
  line("memory", memory.limited()
                     ? gib(memory.usable()) + " usable (a memory limit; the machine has " +
                           gib(memory.physical) + ")"
                     : gib(memory.physical));
  line("kernels", kernels::vectorised_kernels()
                      ? "elementwise kernels in their AVX2+FMA version"
                      : "elementwise kernels in their baseline x86-64 version (no AVX2+FMA)");
  line("blas", kernels::blas_description());
  const auto gpus = kernels::cuda::query_devices();
  line("cuda", kernels::cuda::describe(gpus));
  for (const auto& device : gpus.devices) {
    std::ostringstream text;
    text << "cuda:" << device.index << "  " << device.name << ", sm_" << device.compute_major
         << device.compute_minor << ", " << std::fixed << std::setprecision(1) << device.memory_gib
         << " GiB, " << device.multiprocessors << " multiprocessors";
    line("", text.str());
  }
  line("nccl", comm::nccl_description());
  line("tls", cluster::tls_library());
  return exit_ok;
}

} // namespace herd::cli
