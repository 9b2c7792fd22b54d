// What the registry builds a cluster's run from; see run_assembly.hpp.
#include "cluster/run_assembly.hpp"

#include "actors/checkpoint_writer.hpp"
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"
#include "comm/buffer_pool.hpp"
#include "comm/sequencer.hpp"

#include <chrono>

#include "cluster/node_join.hpp"
#include "cluster/registry.hpp"

namespace herd::cluster {

using namespace herd::actors;

run_summary error_summary(const config::run_config& config, std::string error,
                          stop_cause stop_reason) {
  run_summary failed;
  failed.started = false;
  failed.algorithm = config.train.algorithm;
  failed.workers = config.train.workers;
  failed.data_plane = "gloo";
  failed.stop_reason = stop_reason;
  failed.error = std::move(error);
  return failed;
}

coordinator_setup coordinator_setup_for(const registry_context& context, const models::model& model,
                                        const std::vector<std::string>& worker_hosts) {
  const auto& config = context.config;
  coordinator_setup coordination;
  coordination.config = config;
  coordination.data_plane = "gloo";
  coordination.samples_per_epoch = epoch_samples(config, context.data->train.size());
  coordination.validation_samples = context.data->validation.size();
  coordination.observer = context.options.observer;
  coordination.progress_interval = context.options.progress_interval;
  coordination.joins = node_joins(config);
  if (config.checkpoint.enabled()) {
    auto checkpoints = checkpoint_options_for(config, model, context.data->train);
    checkpoints->lock = context.checkpoint_lock;
    coordination.checkpoints = std::move(checkpoints);
  }
  coordination.resume = context.resume;
  coordination.worker_hosts = worker_hosts;
  if (context.options.metrics)
    coordination.metrics = make_training_metrics(config, context.options.metrics,
                                                 context.options.node_name, worker_hosts);
  // A cluster serves its kept parameters from the final checkpoint, as herd train does.
  coordination.on_finished = [result = context.result](run_summary summary,
                                                       std::shared_ptr<const std::vector<float>>) {
    result->deliver(std::move(summary));
  };
  return coordination;
}

aggregator_setup aggregator_setup_for(const registry_context& context, const models::model& model,
                                      const std::vector<std::int32_t>& worker_nodes,
                                      std::vector<caf::actor> node_reducers) {
  aggregator_setup aggregation;
  aggregation.results = comm::buffer_pool::create(model.parameter_count());
  aggregation.reduce_timeout =
      std::chrono::milliseconds(context.config.cluster.data_timeout_ms) + std::chrono::seconds(5);
  if (context.options.ticket_order)
    aggregation.sequencer = std::make_shared<comm::sequencer>();
  aggregation.worker_nodes.assign(worker_nodes.begin(), worker_nodes.end());
  aggregation.node_reducers = std::move(node_reducers);
  return aggregation;
}

evaluator_setup evaluator_setup_for(const registry_context& context,
                                    std::shared_ptr<const models::model> model) {
  return evaluator_of(std::move(model), context.data, kernels::cpu_ops());
}

} // namespace herd::cluster
