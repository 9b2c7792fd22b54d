// A run checked and made ready to spawn (prepare_job, job_actor.hpp): where it computes, the
// metrics name it holds, and everything the job actor needs to spawn it. Internal to the job
// actor's two files.
#pragma once

#include "actors/group_coordinator.hpp"
#include "actors/job_actor.hpp"
#include "comm/data_plane.hpp"
#include "herd/config.hpp"
#include "herd/metrics.hpp"
#include "herd/ops.hpp"
#include "monitoring/training_metrics.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace herd::checkpoint {
class directory_lock;
} // namespace herd::checkpoint

namespace herd::actors {

// Where the workers compute and the local data plane reduces: the session's ops (CPU), or, with
// train.backend = cuda, CUDA ops made here (each with its own stream on train.device).
struct compute_placement {
  std::vector<std::unique_ptr<kernels::ops>> owned;
  const kernels::ops* reduce = nullptr;
  const kernels::ops* serve = nullptr;    // async's parameter server (in the results' memory);
                                          // on a GPU made only under async
  const kernels::ops* evaluate = nullptr; // the evaluator's: the workers' device, or the host
  std::vector<const kernels::ops*> step;  // per worker: its compute thread's
  std::vector<const kernels::ops*> apply; // per worker: its actor's
  std::string description = "cpu";

  static compute_placement make(const config::run_config& config, const kernels::ops& cpu,
                                const std::function<std::unique_ptr<kernels::ops>()>& stream_ops);
};

// What a running job holds in its process that no other running job may: its name in a metrics
// registry (two jobs under one name would add to the same series, and neither's numbers would be
// its own). Its checkpoint directory it holds against other processes too (job_plan's
// checkpoint_lock).
class job_claim {
public:
  /// Claims `name` within `scope` (a registry; null for the process); throws
  /// config::invalid_config with `refusal` when a running job holds it.
  job_claim(std::shared_ptr<const void> scope, std::string name, config::config_error refusal);
  ~job_claim();

  job_claim(const job_claim&) = delete;
  job_claim& operator=(const job_claim&) = delete;

private:
  std::shared_ptr<const void> scope_;
  std::string name_;
};

/// The run prepare_job made: launch_job spawns it.
class job_plan {
public:
  config::run_config config;
  std::shared_ptr<const models::train_test_split> data;
  job_setup setup;
  std::string name;
  std::shared_ptr<const models::model> model;
  std::size_t samples_per_epoch = 0;
  compute_placement compute;
  std::shared_ptr<comm::data_plane> plane;
  std::shared_ptr<monitoring::training_metrics> metrics;
  /// Shared with the coordinator, which lets go once the run's series left the registry: the
  /// name is free when both have (a job ended by an exit message completes before that).
  std::vector<std::shared_ptr<job_claim>> claims;
  /// checkpoint.dir, held from here; the coordinator gives it up once its final checkpoint is
  /// written.
  std::shared_ptr<checkpoint::directory_lock> checkpoint_lock;
  std::shared_ptr<herd::job::shared_state> shared = std::make_shared<herd::job::shared_state>();
  bool launched = false;
  /// Counts this job among the process's jobs until the last of its actors has let go of it.
  std::shared_ptr<const void> running;

  /// The group coordinator's setup for this run, its events told to `observer`; the caller adds
  /// what ties it to the actors it spawns (on_finished, the control costs).
  coordinator_setup coordination(run_observer* observer) const;
};

} // namespace herd::actors
