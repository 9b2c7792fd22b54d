// The worker actor: one model replica, its optimizer state and data shard, and a compute thread.
// Parameters, gradients, the send buffer and the optimizer's velocity live in ops->memory(): on
// a GPU (CUDA ops) they stay on the device, and only the batches (in), evaluation snapshots and
// a joining peer's state (out) cross to the host.
//
// Messages it answers:
//   (start_atom, lr_scale)            begin the first local step; local optimizer steps run at
//                                     train.lr times lr_scale until a round's result brings its
//                                     own factor (group_plan::lr_scale)
//   (announce_atom, step, samples)    from its compute thread: backward has begun to make the
//                                     running step's gradient final (announce_steps)
//   (contribute_atom, round, step) -> contribution   what its send buffer holds for that round,
//                                     answered while a step runs too; a request the send
//                                     buffer's rule holds back (send_buffer::must_wait: the buffer
//                                     is lent to another round) is answered once it is released
//                                     (step: the local step the round averages, wagma; 0
//                                     otherwise; (contribute_atom, round) means step 0)
//   round_result                      a round's reduced buffer; applied strictly in round order
//                                     (no buffer: the round was aborted, and is skipped)
//   snapshot_atom                  -> parameter_snapshot   a copy of its parameters
//   export_atom                    -> worker_state   its whole state (parameters, optimizer state
//                                     and steps, step, rounds applied), once every round it
//                                     contributed to is applied; in-process only (its node reducer)
//   (adopt_atom, worker_state)     -> bool   before its first step: continue from that state (a
//                                     node joining the running job takes a live peer's)
//   (stop_atom, settle)            -> worker_stopped once no step is running and, with settle,
//                                     every round it answered has its result (the coordinator's
//                                     stop can overtake a result that comes through the node);
//                                     starts no more steps (stop_atom alone: settle)
//   checkpoint_atom                -> worker_checkpoint   its whole state
//   (checkpoint_messages.hpp),
//                                     once it is at rest: no step running, every round it answered
//                                     applied, and no step due (the coordinator starts no round
//                                     meanwhile) or stopped
// Messages it sends: step_ready to the coordinator after every local step (in the coordinator's
// process posted into its step inbox instead, worker_setup::inbox; across processes to its node's
// step relay, which it asks to flush, (flush_atom), before it answers a stop), and with
// announce_steps a step_ready announcing the step while backward runs.
//
// What goes into the send buffer, what a contribution request gets and whether it waits, when
// the next step may start and how a round's result changes the model are policy::send_buffer's
// decisions (policy/send_buffer.hpp), for the family worker_setup's switches choose: gradients
// with late ones accumulated or discarded (sync, solo, majority, quorum), models averaged
// (preduce), or models with late rounds blended in (wagma). Results are applied between steps, in
// round order, so under the gradient algorithms every replica goes through the same states.
#pragma once

#include "actors/imbalance.hpp"
#include "actors/worker_probe.hpp"
#include "comm/data_plane.hpp"
#include "herd/dataset.hpp"
#include "herd/model.hpp"
#include "herd/ops.hpp"
#include "models/optimizer.hpp"

#include <caf/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace herd::actors {

struct worker_record;
class step_inbox;

struct worker_setup {
  int index = 0;
  std::shared_ptr<const models::model> model;
  std::shared_ptr<const models::dataset> train;
  std::vector<std::size_t> shard; // this worker's sample indices
  std::size_t batch_size = 32;
  models::optimizer_settings optimizer;
  std::uint64_t init_seed = 1; // the same for every worker: identical replicas
  /// Non-null: the parameters every replica starts from (session_options::initial_parameters),
  /// in place of model->initial_parameters(init_seed).
  std::shared_ptr<const std::vector<float>> initial_parameters;
  std::uint64_t shuffle_seed = 1; // this worker's epoch shuffles
  /// data.bucket-by-length (token texts only): the seed of the batch order every worker of the run
  /// shares, so that at each step all draw texts of similar length (models::length_buckets).
  std::optional<std::uint64_t> bucket_order_seed;
  const kernels::ops* ops = nullptr; // borrowed, for the compute thread's steps: the worker no
                                     // longer uses it once it answered stop (unless round
                                     // results still come after that)
  const kernels::ops* apply_ops = nullptr; // borrowed likewise, for what the actor's thread does
                                           // (applying results, filling the send buffer); null:
                                           // `ops`. On a GPU its own stream, on the same device
  std::shared_ptr<comm::data_plane> plane; // attaches the send buffer
  policy::late_gradients late_gradients = policy::late_gradients::accumulate; // gradient rounds
  bool exchange_models = false;   // true: the worker applies its own optimizer step and contributes
                                  // its model; a round's result replaces the model (preduce)
  bool blend_late_models = false; // with exchange_models (wagma): a round of a step the worker has
                                  // not finished gets its stored model, and its result is blended
                                  // in when the step finishes: (sum + fresh) / (members + 1)
  bool blend_on_time_models = false;   // with blend_late_models (wagma.blend = reference): an
                                       // on-time member blends its round's result in as well
  bool take_server_parameters = false; // async: a round's result is the parameter server's
                                       // parameters, which replace the model (the server, not
                                       // the worker, applies the gradient)
  int global_average_every = 0;        // with blend_on_time_models: the steps whose rounds are
                                       // global averages, taken as they are (wagma.sync-every)
  std::shared_ptr<const imbalance_model> imbalance; // null: no injected imbalance
  std::shared_ptr<worker_probe> probe;              // null: none
  /// Gradient buckets (comm.bucket-mb, the algorithms whose rounds reduce gradients): a step that
  /// writes its gradient straight into the send buffer is announced (step_ready with
  /// step_report::announcement) once backward has made part of it final, and the buffer's marks
  /// (comm::gradient_marks, attached to `plane`) follow backward, so that the step's round
  /// reduces each part as soon as it is final. Only in host memory (on a GPU, what backward has
  /// queued is not yet done). A step the injected imbalance delays stands for a slower step: its
  /// marks say nothing is final until the delay ends.
  bool announce_steps = false;
  /// With announce_steps: a delayed step is announced early too (sync, whose round waits for
  /// every live worker anyway, so the round's messages overlap the step). Otherwise it is only
  /// reported when it ends: a partial algorithm's round, which does not wait for stragglers,
  /// would wait out the delay of a step it took as announced.
  bool announce_delayed_steps = false;
  /// Across processes: the actor the worker reports to is its node's step relay
  /// (cluster/step_relay.hpp), which it asks to flush before it answers a stop or a checkpoint.
  bool relayed_reports = false;
  /// In the coordinator's process: the worker posts its step reports into the coordinator's
  /// inbox (coordinator_setup::inbox, step_inbox.hpp) instead of sending one message each.
  std::shared_ptr<step_inbox> inbox;
  /// Non-null: the worker goes on from this checkpointed state (checkpoint_state.hpp) instead of
  /// the initial parameters.
  std::shared_ptr<const worker_record> resume;
};

/// The parameters a replica starts from, in host memory: `given` where it is set, else
/// model.initial_parameters(init_seed). Every worker and async's parameter server start from it,
/// so the replicas begin identical either way.
models::tensor starting_parameters(const models::model& model, std::uint64_t init_seed,
                                   const std::shared_ptr<const std::vector<float>>& given);

/// Refuses starting parameters that do not fit `model`: throws config::invalid_config (`key`, the
/// option that holds them) naming both sizes unless `given` is empty (the model's own
/// initialisation) or model.parameter_count() floats.
void check_initial_parameters(const models::model& model, const std::vector<float>& given,
                              const std::string& key = "session_options.initial_parameters");

/// Spawns a worker that reports to `coordinator`. Its send buffer is attached to the data plane
/// as rank `setup.index` for as long as it lives.
caf::actor spawn_worker(caf::actor_system& system, worker_setup setup,
                        const caf::actor& coordinator);

} // namespace herd::actors
