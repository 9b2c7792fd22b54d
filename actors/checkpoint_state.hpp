// What a checkpoint of a run in one process holds (docs/checkpoints.md): every worker's state, the
// group coordinator's, and the policy inputs it had not yet passed on when it was taken; and the
// functions that turn it into a checkpoint file's payload and back. Plain data, no CAF.
//
// A checkpoint is taken at a quiescent point: no round in flight, no step running, every round a
// worker answered applied. Workers then wait with a finished step's result in their send buffer
// (the coordinator holds the arrivals back from the policy while it collects the states), so the
// state of each is its tensors plus its send buffer's bookkeeping, and the coordinator's is its
// counters, the policy's state and those held arrivals. The workers are one section each, so a
// cluster's nodes can write their own workers' sections later.
#pragma once

#include "actors/checkpoint_part.hpp"
#include "actors/evaluation_schedule.hpp"
#include "actors/run_counters.hpp"
#include "herd/dataset.hpp"
#include "herd/model.hpp"
#include "herd/run_config.hpp"
#include "herd/run_summary.hpp"
#include "models/sampler.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/format.hpp"
#include "policy/policy.hpp"
#include "policy/send_buffer.hpp"

namespace herd::actors {

/// A round's result a worker holds to apply later (wagma: a late member blends it in once it has
/// finished the round's step). No data: the round was aborted.
struct pending_result {
  std::uint64_t round = 0;
  std::uint32_t members = 0;
  std::vector<float> data;
};

/// One worker's whole state at a checkpoint, in host memory.
struct worker_record {
  std::int32_t index = 0;
  std::vector<float> parameters;
  std::vector<float> velocity; // the optimizer's state: SGD's velocity, or AdamW's m then v
  std::vector<float> send;     // its send buffer: a finished step's result waiting for a round
  std::uint64_t optimizer_steps = 0;
  models::batch_sampler::position sampler;
  policy::send_buffer buffer;          // steps, rounds applied, what the send buffer holds
  std::vector<pending_result> pending; // by round
};

/// An input of the grouping policy that the coordinator had not passed on yet: a fresh arrival or
/// a finished round's outcome. On resume they are passed on in order.
struct policy_input {
  bool is_arrival = true;
  policy::arrival arrival;
  policy::group_outcome outcome;
};

/// The group coordinator's state at a checkpoint.
struct coordinator_record {
  double elapsed_seconds = 0.0; // training time so far; a resumed run's clock goes on from here
  run_counters counters;
  evaluation_schedule evaluations{evaluation_schedule::settings{}};
  std::string policy_state;                      // grouping_policy::save_state()
  std::vector<policy::group_decision> unstarted; // decided, not started (the epoch limit)
  std::vector<policy_input> unheard;             // not yet passed to the policy, in order
  std::uint64_t next_round = 0;
  std::uint64_t next_aggregator = 0;
  std::uint64_t samples_committed = 0;
  std::uint64_t consecutive_aborted_rounds = 0;
  std::vector<worker_event> worker_events; // lost and joined so far; since format version 10
};

/// What serving the run's model takes besides its parameters, from its training set: one
/// sample's shape, the classes it scores, and what was done to the source's values (new samples
/// get the same). With them `herd predict` rebuilds the model without the run's data. A
/// checkpoint of format version 5 has none (known() is false).
struct model_inputs {
  std::vector<std::uint64_t> sample_shape; // models::dataset::input_shape()
  std::int32_t classes = 0;
  float mean = 0.0f; // models::normalisation
  float stddev = 1.0f;
  bool scaled_bytes = false; // since format version 7

  bool known() const { return !sample_shape.empty(); }
};

/// The model inputs of a run trained on `training`.
model_inputs inputs_of(const models::dataset& training);

/// A dataset without samples that has `inputs`' shape, classes and normalisation: what building
/// the model (models::build_model) and preparing new samples read of a training set.
models::dataset shaped_like(const model_inputs& inputs);

struct run_checkpoint {
  std::string settings; // the run's configuration as config::to_ini writes it
  coordinator_record coordinator;
  std::vector<worker_record> workers; // by index; empty in a cluster's checkpoint
  std::vector<part_record> parts;     // a cluster's: where its nodes wrote the workers' states
  model_inputs inputs;                // since format version 6
  /// The size of the validation set the run's evaluations measured, 0 where they measured the
  /// test set; since format version 9 (nothing in an older file).
  std::optional<std::uint64_t> validation_samples;

  /// A cluster's checkpoint (herd coordinator): the workers' states are in its nodes' parts.
  bool across_processes() const { return !parts.empty(); }
};

/// The structural part of `config` with `model` (its description) over `training_samples`
/// samples.
checkpoint::structure structure_of(const config::run_config& config, const models::model& model,
                                   std::size_t training_samples);

/// The payload bytes (a cereal binary archive).
std::string encode_payload(const run_checkpoint& state);

/// Throws checkpoint::checkpoint_error naming `file` and the field that could not be read.
/// `version` is the file's format version: a version-5 payload ends before `inputs`, a version-6
/// one before the list of copies, a version-7 one before the best evaluation, a version-8 one
/// before the validation set's size, a version-9 one before the worker events.
run_checkpoint decode_payload(const std::string& payload, const std::string& file,
                              std::uint32_t version = checkpoint::format_version);

/// Reads and decodes the checkpoint `file`, unchecked against any run (its settings, say).
/// Throws checkpoint::checkpoint_error naming the file and the problem.
run_checkpoint read_run_checkpoint(const std::string& file);

/// A node part's payload (its workers' records, in order) and back; decode_part throws
/// checkpoint::checkpoint_error naming `file`.
std::string encode_part(const std::vector<worker_record>& workers);
std::vector<worker_record> decode_part(const std::string& payload, const std::string& file);

/// Reads node part `file` of a checkpoint whose manifest names it as `expected`, for a run of
/// structure `now`: throws checkpoint::checkpoint_error when it is damaged, is another part (its
/// payload hash), or holds other workers or tensors of another size.
std::vector<worker_record> load_part(const std::string& file, const part_record& expected,
                                     const checkpoint::structure& now, std::size_t parameter_count);

/// Reads a checkpoint for a run of `config` whose structure is `now`: throws
/// checkpoint::checkpoint_error for a damaged file, one of another structure (naming each
/// difference), or a payload that does not fit the structure (worker count, parameter count).
/// A cluster's checkpoint must name a part for each worker exactly once; its workers' states
/// stay in the parts (load_part).
run_checkpoint load_for_resume(const std::string& file, const checkpoint::structure& now,
                               std::size_t parameter_count);

/// Reads a checkpoint to serve `model`: as load_for_resume for a run of the structure the file
/// names, but for its model, which must be `model`'s describe().
run_checkpoint load_for_model(const std::string& file, const models::model& model);

/// Parameters to serve from a checkpoint, and which they are in words.
struct serving_parameters {
  std::vector<float> values;
  std::string origin; // "the parameters that reached the target (test accuracy 0.8538 at round
                      // 900)" or "the workers' last parameters (round 912)"
};

/// Those that reached the run's target where it stopped there, else (train.patience) those of
/// its best evaluation, unless `last`; else model_parameters(). Throws checkpoint::checkpoint_error
/// naming `file` when those are a cluster's workers' (in the nodes' parts, not in this file).
/// `validation`: the run's evaluations measured a validation set (data.validation-fraction), as the
/// origin says.
serving_parameters parameters_to_serve(const run_checkpoint& state, const std::string& file,
                                       bool last, bool mean_of_replicas, bool validation = false);

/// The model a checkpoint holds: the mean of every replica's parameters when `mean_of_replicas`
/// (model averaging, whose replicas differ between global averages), else the first replica's
/// (the others went through the same states). Empty when it holds no worker.
std::vector<float> model_parameters(const run_checkpoint& state, bool mean_of_replicas);

/// Refuses (checkpoint::checkpoint_error naming `file`) a checkpoint whose run used another
/// train.optimizer than `now` (its workers hold that optimizer's state), or whose workers' states
/// are not of that optimizer's size.
void check_same_optimizer(const std::string& file, const run_checkpoint& state,
                          const config::run_config& now);

/// Refuses (checkpoint::checkpoint_error naming `file`) a checkpoint whose grouping policy's state
/// a policy of `now` cannot take: unreadable, damaged (worker indices outside its tables), or
/// counting other workers live than the coordinator's counters do; or whose coordinator records
/// (counters, rounds decided, inputs not yet heard) name workers outside the run. A crafted state
/// reached the policy and the coordinator unchecked and crashed or stalled the resumed run.
void check_policy_state(const std::string& file, const run_checkpoint& state,
                        const config::run_config& now);

/// Refuses (checkpoint::checkpoint_error naming `file` and the key) a checkpoint whose run's
/// evaluations measured another set than a run of `now` on `data` would: a validation set
/// against the test set, either way, or validation sets of other sizes, so that its best
/// evaluation and target are not compared with accuracies of another set. `data.validation` is
/// this run's set, whether the settings named it or the split came with it. A checkpoint older
/// than format version 9 records no size: its settings say whether it had a validation set.
void check_same_evaluation_set(const std::string& file, const run_checkpoint& state,
                               const config::run_config& now, const models::train_test_split& data);

/// The settings that differ between the checkpoint's run and this one, one line each
/// ("train.lr: 0.05 in the checkpoint, 0.02 now"); the structural keys are checked elsewhere.
std::vector<std::string> changed_settings(const std::string& saved_ini,
                                          const config::run_config& now);

} // namespace herd::actors
