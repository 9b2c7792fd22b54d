// What a coordinator's metrics say about its cluster from the moment it listens, before any
// worker exists (docs/metrics.md): nodes live, nodes the cluster waits for, and whether the run
// has started. A coordinator whose nodes never come is otherwise invisible to the alerts, which
// watch the workers' series. A plain class: one thread updates it, any may collect the registry.
#pragma once

#include "herd/metrics.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace herd::monitoring {

class cluster_metrics {
public:
  /// Registers herd_cluster_nodes, herd_cluster_nodes_required and herd_cluster_formed in
  /// `metrics` under the label job = `job`: no node, `required` nodes required, not formed.
  cluster_metrics(std::shared_ptr<registry> metrics, const std::string& job, std::size_t required);

  /// Nodes that joined and have not been lost.
  void nodes(std::size_t live);
  /// The run started: every node of the cluster is connected and ready.
  void formed();

private:
  std::shared_ptr<registry> registry_;
  gauge* nodes_ = nullptr;
  gauge* formed_ = nullptr;
};

} // namespace herd::monitoring
