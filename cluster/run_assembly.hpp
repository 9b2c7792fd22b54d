// What the registry builds a cluster's run from once the cluster has formed: the group
// coordinator's setup, the aggregators' and the evaluator's, from the run's settings and where
// the workers live. Plain functions; the registry spawns the actors.
#pragma once

#include "actors/aggregator.hpp"
#include "actors/evaluator.hpp"
#include "actors/group_coordinator.hpp"
#include "herd/model.hpp"
#include "herd/run_summary.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace herd::cluster {

struct registry_context;

/// The summary of a run that ended before its first step.
actors::run_summary error_summary(const config::run_config& config, std::string error,
                                  actors::stop_cause stop_reason = actors::stop_cause::error);

/// The group coordinator's: it delivers the summary to the context's result, lets nodes join, and
/// takes checkpoints and metrics as the settings say. `worker_hosts`: the name of the node that
/// hosts each worker (the metrics' `node` label).
actors::coordinator_setup coordinator_setup_for(const registry_context& context,
                                                const models::model& model,
                                                const std::vector<std::string>& worker_hosts);

/// The aggregators': `worker_nodes`, the node index of each worker; `node_reducers`, each node's
/// reducer by index.
actors::aggregator_setup aggregator_setup_for(const registry_context& context,
                                              const models::model& model,
                                              const std::vector<std::int32_t>& worker_nodes,
                                              std::vector<caf::actor> node_reducers);

/// The evaluator's: the test set on the coordinator's CPU.
actors::evaluator_setup evaluator_setup_for(const registry_context& context,
                                            std::shared_ptr<const models::model> model);

} // namespace herd::cluster
