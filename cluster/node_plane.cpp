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

} // namespace herd::cluster
