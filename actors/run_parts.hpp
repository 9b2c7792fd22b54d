// The parts of a run that one process (train_session) and a cluster (cluster_session on the
// coordinator, cluster_node on every node) build the same way. No CAF in this header.
#pragma once

#include "actors/imbalance.hpp"
#include "actors/worker.hpp"
#include "config/run_config.hpp"
#include "monitoring/metrics.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace herd::monitoring {
class training_metrics;
} // namespace herd::monitoring

namespace herd::actors {

/// Worker `index`'s setup for this run: its shard, seeds, optimizer and the algorithm's modes.
worker_setup make_worker_setup(const config::run_config& config, int index,
                               std::shared_ptr<const models::mlp> model,
                               std::shared_ptr<const models::dataset> train,
                               const kernels::ops* ops, std::shared_ptr<comm::backend> backend,
                               std::shared_ptr<const imbalance_model> imbalance,
                               std::shared_ptr<worker_probe> probe);

/// Samples that make one epoch over all shards (workers x whole batches per shard x batch size).
std::size_t epoch_samples(const config::run_config& config, std::size_t training_samples);

/// Aggregators in the pool: the gradient algorithms have one round in flight, preduce up to one
/// group per two workers.
int aggregator_count(const config::run_config& config);

/// One BLAS thread per worker when several share the cores; one worker may use every core.
void set_blas_threads_for(const config::run_config& config, int local_workers);

/// Refuses (config::invalid_config naming model.hidden) a model whose `local_workers` replicas
/// cannot fit in this machine's memory, before anything is allocated.
void check_memory(const std::vector<std::size_t>& layer_sizes, int local_workers);

/// The run's Prometheus metrics in `registry` (labels job = metrics.job, node = `node_name`, or
/// this host's name when empty).
std::shared_ptr<monitoring::training_metrics>
make_training_metrics(const config::run_config& config,
                      std::shared_ptr<monitoring::registry> registry, const std::string& node_name);

/// This machine's host name ("localhost" if it has none).
std::string host_name();

} // namespace herd::actors
