// Herd's message vocabulary: every atom and message struct the actors exchange, in one place,
// and the one function that registers them with an actor system config. Control messages are
// small; tensors stay in the data plane (comm/), except the in-process handles marked below.
//
// This header includes CAF: include it only from actor implementation files and tests.
#pragma once

#include "actors/policy.hpp"
#include "actors/run_summary.hpp"
#include "comm/buffer_pool.hpp"

#include <caf/all.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace herd::actors {

// -- atoms (CAF 0.17 allows at most 10 characters) ------------------------------------------------

using start_atom = caf::atom_constant<caf::atom("start")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using contribute_atom = caf::atom_constant<caf::atom("contrib")>;
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;
using evaluate_atom = caf::atom_constant<caf::atom("evaluate")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using commit_atom = caf::atom_constant<caf::atom("commit")>;
using store_set_atom = caf::atom_constant<caf::atom("storeset")>;
using store_get_atom = caf::atom_constant<caf::atom("storeget")>;
using job_over_atom = caf::atom_constant<caf::atom("jobover")>;

// -- worker -> coordinator ----------------------------------------------------------------------

/// A worker finished a local step (DESIGN.md section 3, step 1). A fresh result waits in its send
/// buffer for the next round; a late one (a round asked for the worker's contribution while the
/// step ran) has already missed its round, and is accumulated or discarded.
struct step_ready {
  std::int32_t worker = 0;
  std::uint64_t step = 0;       // the worker's step counter after this step
  double compute_seconds = 0.0; // this step's local compute, injected imbalance included
  double wait_seconds = 0.0;    // idle time between the previous step and this one
  double loss = 0.0;            // the batch's mean training loss
  std::uint32_t samples = 0;
  bool late = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_ready& x) {
  return f(caf::meta::type_name("herd.step_ready"), x.worker, x.step, x.compute_seconds,
           x.wait_seconds, x.loss, x.samples, x.late);
}

// -- coordinator -> aggregator ------------------------------------------------------------------

/// A round the policy activated: who reduces, how the contributions are weighted.
struct group_plan {
  std::uint64_t round = 0;
  std::vector<std::int32_t> members;
  std::vector<caf::actor> member_handles; // same order as members
  round_kind kind = round_kind::full_sync;
  weighting weights = weighting::uniform;
  std::vector<float> member_weights; // weighting::given: one per member, same order
  std::uint64_t step = 0;            // wagma: the local step whose models this round averages
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_plan& x) {
  return f(caf::meta::type_name("herd.group_plan"), x.round, x.members, x.member_handles, x.kind,
           x.weights, x.member_weights, x.step);
}

// -- aggregator <-> worker ----------------------------------------------------------------------

/// A member's answer to (contribute_atom, round, step): what its send buffer holds. `step` is the
/// local step whose models the round averages (wagma), 0 for the other algorithms. The data itself
/// stays where it is; the data plane reads it.
struct contribution {
  std::int32_t worker = 0;
  std::uint64_t round = 0;
  std::uint64_t step = 0;
  freshness kind = freshness::fresh;
  std::uint32_t samples = 0; // samples behind the gradients contributed (fresh and accumulated)
  std::uint64_t version = 0; // rounds applied to the parameters the oldest of them was computed on
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, contribution& x) {
  return f(caf::meta::type_name("herd.contribution"), x.worker, x.round, x.step, x.kind, x.samples,
           x.version);
}

/// A round's reduced buffer, shared by every member of the group (zero copy, in-process only).
/// No data: the round was aborted (a node was lost during its reduction); every member skips it,
/// so the replicas still go through the same states.
struct round_result {
  std::uint64_t round = 0;
  comm::shared_buffer data;
  std::uint32_t members = 0;
};

// -- aggregator -> coordinator ------------------------------------------------------------------

/// A round finished (DESIGN.md section 3, step 4).
struct group_done {
  std::uint64_t round = 0;
  std::vector<std::int32_t> members;   // those that answered
  std::vector<freshness> kinds;        // what each of them gave, same order
  std::vector<std::uint64_t> steps;    // each one's step counter when it answered
  std::vector<std::uint64_t> versions; // each one's contribution.version
  std::uint32_t fresh = 0;
  std::uint32_t stale = 0;
  std::uint64_t samples = 0;   // samples behind the contributions
  std::uint64_t bytes = 0;     // bytes the data plane read and wrote
  double reduce_seconds = 0.0; // data-plane time
  double seconds = 0.0;        // plan received until results sent
  std::string error;           // the data plane failed; nobody got a result
  bool aborted = false; // with error: the members were told to skip the round (a node was lost)
  std::vector<std::int32_t> unanswered;        // members whose contribution request failed
  std::vector<std::string> unanswered_reasons; // why, same order
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_done& x) {
  return f(caf::meta::type_name("herd.group_done"), x.round, x.members, x.kinds, x.steps,
           x.versions, x.fresh, x.stale, x.samples, x.bytes, x.reduce_seconds, x.seconds, x.error,
           x.aborted, x.unanswered, x.unanswered_reasons);
}

// -- session -> coordinator ---------------------------------------------------------------------

/// Everything the coordinator drives, sent once all actors are spawned.
struct run_start {
  std::vector<caf::actor> workers; // index = worker number
  std::vector<caf::actor> aggregators;
  caf::actor evaluator;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_start& x) {
  return f(caf::meta::type_name("herd.run_start"), x.workers, x.aggregators, x.evaluator);
}

// -- worker lifecycle ---------------------------------------------------------------------------

/// A worker's reply to stop_atom, once its compute thread is idle.
struct worker_stopped {
  std::int32_t worker = 0;
  std::uint64_t steps = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_stopped& x) {
  return f(caf::meta::type_name("herd.worker_stopped"), x.worker, x.steps);
}

/// A copy of a worker's parameters, for evaluation. Between processes the floats travel as one
/// byte block (CAF 0.17 moves a vector<char> about 5x faster than a vector<float>), in the host's
/// byte order: every node of a cluster must share it (x86-64 and arm64 both are little-endian).
struct parameter_snapshot {
  std::int32_t worker = 0;
  std::uint64_t step = 0;
  std::shared_ptr<const std::vector<float>> parameters;
};

template <class Inspector>
typename std::enable_if<Inspector::reads_state, typename Inspector::result_type>::type
inspect(Inspector& f, parameter_snapshot& x) {
  std::vector<char> bytes;
  if (x.parameters)
    bytes.assign(reinterpret_cast<const char*>(x.parameters->data()),
                 reinterpret_cast<const char*>(x.parameters->data() + x.parameters->size()));
  return f(caf::meta::type_name("herd.parameter_snapshot"), x.worker, x.step, bytes);
}

template <class Inspector>
typename std::enable_if<Inspector::writes_state, typename Inspector::result_type>::type
inspect(Inspector& f, parameter_snapshot& x) {
  std::vector<char> bytes;
  auto loaded = caf::meta::load_callback([&]() -> caf::error {
    auto parameters = std::make_shared<std::vector<float>>(bytes.size() / sizeof(float));
    std::memcpy(parameters->data(), bytes.data(), parameters->size() * sizeof(float));
    x.parameters = std::move(parameters);
    return caf::none;
  });
  return f(caf::meta::type_name("herd.parameter_snapshot"), x.worker, x.step, bytes, loaded);
}

/// The evaluator's answer.
struct evaluation_result {
  double test_accuracy = 0.0;
  double test_loss = 0.0;
  double seconds = 0.0; // how long the evaluation took
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, evaluation_result& x) {
  return f(caf::meta::type_name("herd.evaluation_result"), x.test_accuracy, x.test_loss, x.seconds);
}

// -- many processes (cluster_session and node) -----------------------------------------------

/// A node's request to join (herd node -> the coordinator's registry).
struct node_hello {
  std::uint32_t protocol = 0; // cluster_protocol_version: both sides must speak the same
  std::string name;           // the node's host name, for logs and metrics
  std::int32_t workers = 0;
  std::string data_host; // the address its data-plane (Gloo) endpoint listens on
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_hello& x) {
  return f(caf::meta::type_name("herd.node_hello"), x.protocol, x.name, x.workers, x.data_host);
}

/// The registry's answer once the cluster has formed: the node's place in it and the run.
struct node_welcome {
  std::int32_t node = 0; // also its data-plane rank
  std::int32_t nodes = 0;
  std::int32_t first_worker = 0;      // its workers are first_worker .. first_worker + workers - 1
  std::string settings;               // the run's configuration, as config::to_ini writes it
  std::uint64_t training_samples = 0; // the coordinator's training set, to check the node's
  std::string job;                    // names this run's keys in the rendezvous store
  caf::actor coordinator;             // the group coordinator the workers report to
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_welcome& x) {
  return f(caf::meta::type_name("herd.node_welcome"), x.node, x.nodes, x.first_worker, x.settings,
           x.training_samples, x.job, x.coordinator);
}

/// A node's workers are spawned and its data plane is connected.
struct node_ready {
  std::int32_t node = 0;
  std::vector<caf::actor> workers; // first_worker onwards
  caf::actor reducer;
  caf::actor control; // hears job_over_atom when the job is over
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_ready& x) {
  return f(caf::meta::type_name("herd.node_ready"), x.node, x.workers, x.reducer, x.control);
}

/// An aggregator's order to one node of a round's group: reduce the weighted contributions of
/// `inputs` (workers on that node) into a buffer, then sum that buffer over `nodes` through the
/// data plane. The node holds the result until (commit_atom, round, deliver).
struct reduce_order {
  std::uint64_t round = 0;
  std::vector<std::int32_t> inputs;
  std::vector<float> weights;           // same order as inputs
  std::vector<std::int32_t> deliver_to; // its workers that get the result
  std::vector<std::int32_t> nodes;      // data-plane ranks of the group, sorted
  std::uint32_t members = 0;            // the round's answering members, for round_result
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reduce_order& x) {
  return f(caf::meta::type_name("herd.reduce_order"), x.round, x.inputs, x.weights, x.deliver_to,
           x.nodes, x.members);
}

/// A node's answer to reduce_order.
struct reduce_done {
  std::uint64_t round = 0;
  std::int32_t node = 0;
  std::string error; // empty: the node holds the round's result
  double seconds = 0.0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reduce_done& x) {
  return f(caf::meta::type_name("herd.reduce_done"), x.round, x.node, x.error, x.seconds);
}

/// Bumped whenever a message above changes shape: a node of another version is refused by name.
constexpr std::uint32_t cluster_protocol_version = 1;

/// Registers every message type above that can cross a process boundary. Call it on every
/// actor_system_config that hosts Herd actors (CAF silently delivers an empty message for an
/// unregistered type on the receiving node).
void add_message_types(caf::actor_system_config& config);

} // namespace herd::actors

// A buffer shared by pointer: valid only inside one process, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::actors::round_result)
