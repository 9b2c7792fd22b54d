// The parts of a run that one process (train_session) and a cluster (cluster_session on the
// coordinator, cluster_node on every node) build the same way. No CAF in this header.
#pragma once

#include "actors/imbalance.hpp"
#include "actors/worker.hpp"
#include "comm/bucket_layout.hpp"
#include "herd/metrics.hpp"
#include "herd/run_config.hpp"
#include "herd/run_summary.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace herd::monitoring {
class training_metrics;
} // namespace herd::monitoring

namespace herd::actors {

/// The sample indices worker `worker` trains on, as train_session assigns them.
std::vector<std::size_t> worker_shard(const config::run_config& config,
                                      std::size_t training_samples, int worker);

/// The seed of worker `worker`'s per-epoch shuffles, as train_session assigns it.
std::uint64_t worker_shuffle_seed(const config::run_config& config, int worker);

/// The BLAS thread count `herd train` runs with: train.blas-threads when set, else one thread
/// per worker when several share the cores (0: one per core, for a single worker; the cores a
/// container's CPU quota allows where that is fewer). A node passes `workers_on_machine`, the
/// workers of every node on its machine: when a single worker shares the machine with other
/// nodes' workers, it gets its share of the usable cores (at least one thread).
int blas_threads_for(const config::run_config& config, int local_workers,
                     int workers_on_machine = 0);

/// Worker `index`'s setup for this run: its shard, seeds, optimizer and the algorithm's modes.
worker_setup make_worker_setup(const config::run_config& config, int index,
                               std::shared_ptr<const models::model> model,
                               std::shared_ptr<const models::dataset> train,
                               const kernels::ops* ops, std::shared_ptr<comm::data_plane> plane,
                               std::shared_ptr<const imbalance_model> imbalance,
                               std::shared_ptr<worker_probe> probe);

/// The optimizer the run's settings give (train.lr, momentum, weight-decay): every worker's, and
/// under async the parameter server's.
models::optimizer_settings optimizer_of(const config::run_config& config);
/// The parameter server's optimizer (async): the workers' settings at server_learning_rate.
models::optimizer_settings server_optimizer_of(const config::run_config& config);
/// The parameter server's learning rate (async), before train.lr-schedule's factor: async.lr,
/// else train.lr / train.workers (the server takes a step for every worker's gradient).
double server_learning_rate(const config::run_config& config);

/// Samples that make one epoch over all shards (workers x whole batches per shard x batch size).
std::size_t epoch_samples(const config::run_config& config, std::size_t training_samples);

/// comm.bucket-mb in floats, a multiple of 1,024 (4 KiB), so that a bucket's sums are those of
/// the whole buffer (the kernels' vector loops start where they would); 0 without buckets.
std::size_t bucket_floats(const config::run_config& config);

/// The buckets the run's reductions cut `model`'s gradient into (none without comm.bucket-mb):
/// bucket_floats(config) floats at least, cut where the model's backward makes a layer final
/// (comm::bucket_layout::for_backward). Every process of a run computes the same.
comm::bucket_layout gradient_buckets(const config::run_config& config, const models::model& model);

/// Whether comm.bucket-mb takes effect, so that workers announce their steps while backward
/// runs: buckets are set, and the algorithm's rounds reduce gradients (sync, solo, majority,
/// quorum). The others exchange models or go through a parameter server.
bool announces_steps(const config::run_config& config);

/// Aggregators in the pool: the gradient algorithms have one round in flight, preduce up to one
/// group per two workers.
int aggregator_count(const config::run_config& config);

/// Refuses (config::invalid_config naming the [model] key that sized it, or `own_model_key`
/// where given: the caller's name for its own model) a model whose `local_workers` replicas
/// cannot fit in this machine's memory, before anything is allocated: their parameters, gradients
/// and optimizer states, and for a layered model the activations of their batches
/// (train.batch-size; token texts as long as the longest of `train`) and of an evaluator's
/// batches of `evaluation_batch` samples (0: none here).
void check_memory(const config::run_config& config, const models::model& model,
                  const models::dataset& train, int local_workers, std::size_t evaluation_batch,
                  const std::string& own_model_key = {});

/// The run's Prometheus metrics in `registry` (labels job = metrics.job, node = `node_name`, or
/// this host's name when empty; a worker's node = worker_nodes[worker] where given).
std::shared_ptr<monitoring::training_metrics>
make_training_metrics(const config::run_config& config,
                      std::shared_ptr<monitoring::registry> registry, const std::string& node_name,
                      std::vector<std::string> worker_nodes = {});

/// Worker indices for the operator's log: "1, 4, 5".
std::string index_list(const std::vector<std::int32_t>& indices);

/// A run's summary, handed from the actors' callbacks to the thread that waits for it. Shared with
/// those callbacks, which CAF may still run after await_all_actors_done() returned (an attached
/// functor runs late in an actor's cleanup), so it may outlive its session.
class run_outcome {
public:
  /// The first summary wins; later ones (a coordinator exiting after it finished) are dropped.
  void deliver(run_summary ended) {
    std::lock_guard<std::mutex> guard(mutex_);
    if (summary_)
      return;
    summary_ = std::move(ended);
    finished_.notify_all();
  }

  /// Whether a summary came within `timeout`.
  bool wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return finished_.wait_for(lock, timeout, [this] { return summary_.has_value(); });
  }

  std::optional<run_summary> summary() {
    std::lock_guard<std::mutex> guard(mutex_);
    return summary_;
  }

private:
  std::mutex mutex_;
  std::condition_variable finished_;
  std::optional<run_summary> summary_;
};

} // namespace herd::actors
