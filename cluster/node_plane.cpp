// The Gloo options of a node's data plane (node_plane.hpp).
#include "cluster/node_plane.hpp"

#include "comm/errors.hpp"

#include <algorithm>

namespace herd::cluster {

comm::gloo_plane_options node_plane_options(const config::run_config& config,
                                            const std::string& hostname,
                                            const std::string& prefix,
                                            std::chrono::milliseconds timeout,
                                            const std::string& key) {
  comm::gloo_plane_options options;
  options.hostname = hostname;
  options.prefix = prefix;
  options.timeout = timeout;
  options.compression = comm::wire_format_of(config.comm.compression);
  options.error_feedback = config.comm.error_feedback;
  if (!key.empty()) {
    comm::plane_key sealing{};
    if (key.size() != sealing.size())
      throw comm::comm_error(comm::outcome::invalid_argument,
                             "the coordinator sent a data-plane key of " +
                                 std::to_string(key.size()) + " bytes; keys are " +
                                 std::to_string(sealing.size()) + " bytes");
    std::copy(key.begin(), key.end(), sealing.begin());
    options.seal_key = sealing;
    options.seal_threads = config.comm.seal_threads;
  }
  options.lanes = config.comm.connections;
  return options;
}

std::string plane_connected_text(const config::run_config& config, const std::string& hostname,
                                 std::size_t nodes, bool sealed) {
  const auto& comm = config.comm;
  std::string text = "data plane connected (" + hostname + ", " + std::to_string(nodes) + " nodes";
  if (comm.compression != "none")
    text += ", " + comm.compression + " on the wire" +
            (comm.error_feedback ? " with error feedback" : "");
  text +=
      sealed ? ", " + comm::sealing_text(comm.seal_threads, comm.connections) : ", in the clear";
  if (comm.connections != 1)
    text += ", " + std::to_string(comm.connections) + " connections to each peer";
  return text + ")";
}

std::string plane_waiting_text(long long seconds) {
  return "the data plane has not connected after " + std::to_string(seconds) +
         " s: the nodes dial each other on ports the kernel picks (32768-60999 on Debian), which "
         "a firewall or security group that admits only the coordinator's port blocks; admit "
         "all TCP between the cluster's addresses";
}

} // namespace herd::cluster
