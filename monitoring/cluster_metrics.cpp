// The cluster's metrics; see cluster_metrics.hpp.
#include "monitoring/cluster_metrics.hpp"

namespace herd::monitoring {

cluster_metrics::cluster_metrics(std::shared_ptr<registry> metrics, const std::string& job,
                                 std::size_t required)
    : registry_(std::move(metrics)) {
  const labels of_job{{"job", job}};
  nodes_ = &registry_
                ->add_gauge("herd_cluster_nodes",
                            "Nodes that joined the coordinator's cluster and are not lost")
                .add(of_job);
  registry_
      ->add_gauge("herd_cluster_nodes_required",
                  "Nodes the cluster waits for before its run starts (cluster.min-nodes, or the "
                  "checkpoint's parts on a resume)")
      .add(of_job)
      .set(static_cast<double>(required));
  formed_ = &registry_
                 ->add_gauge("herd_cluster_formed",
                             "1 once the cluster's run has started, 0 while it waits for nodes")
                 .add(of_job);
}

void cluster_metrics::nodes(std::size_t live) {
  nodes_->set(static_cast<double>(live));
}

void cluster_metrics::formed() {
  formed_->set(1.0);
}

} // namespace herd::monitoring
