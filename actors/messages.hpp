// Herd's message vocabulary: every atom and message struct the actors exchange, in one place,
// and the one function that registers them with an actor system config. Control messages are
// small; tensors stay in the data plane (comm/), except the in-process handles marked below.
//
// This header includes CAF: include it only from actor implementation files and tests.
#pragma once

#include "actors/checkpoint_part.hpp"
#include "actors/cluster_protocol.hpp"
#include "comm/buffer_pool.hpp"
#include "comm/errors.hpp"
#include "herd/run_summary.hpp"

#include <caf/all.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace herd::comm {
class data_plane;
} // namespace herd::comm

namespace herd::actors {

// The policy's words that messages carry (policy/policy.hpp), part of this vocabulary.
using policy::freshness;
using policy::round_kind;
using policy::weighting;

// -- atoms (CAF 0.17 allows at most 10 characters) ------------------------------------------------

using start_atom = caf::atom_constant<caf::atom("start")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using contribute_atom = caf::atom_constant<caf::atom("contrib")>;
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;
using evaluate_atom = caf::atom_constant<caf::atom("evaluate")>;
/// (evaluate_atom, test_set_atom, parameter_snapshot): the test set, also where the evaluations
/// measure a validation set.
using test_set_atom = caf::atom_constant<caf::atom("testset")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using commit_atom = caf::atom_constant<caf::atom("commit")>;
using store_set_atom = caf::atom_constant<caf::atom("storeset")>;
using store_get_atom = caf::atom_constant<caf::atom("storeget")>;
using store_peek_atom = caf::atom_constant<caf::atom("storepeek")>;
/// (job_over_atom, failure, ending): the job is over; `failure` says why the run failed, empty
/// where it ended well (a node's exit status follows it); `ending`, in words, how it ended (what
/// stopped it, the rounds, the accuracy, the final checkpoint), for the node's last line.
using job_over_atom = caf::atom_constant<caf::atom("jobover")>;
using export_atom = caf::atom_constant<caf::atom("export")>;
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;
using join_done_atom = caf::atom_constant<caf::atom("joindone")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;
/// (depart_atom, why): a node about to leave the running job (a stop signal) asks the registry to
/// let it go once the rounds it is in have ended. The registry answers with a message of its own,
/// (depart_atom, bool), to the node's control actor: true once it may close its data plane (no
/// round needs it), false where there was nothing to wait for. Before that, (depart_atom,
/// std::string under_way) tells the node its departure waits for a join or re-key under way, and
/// (depart_atom) that its departure has begun.
using depart_atom = caf::atom_constant<caf::atom("depart")>;
/// (run_stopped_atom, why): the registry to a welcomed node still connecting its data plane when
/// the coordinator is stopped before the run starts ("stopped while the nodes were connecting").
using run_stopped_atom = caf::atom_constant<caf::atom("runstopped")>;
/// (cancel_atom, round, why): an aggregator to the nodes still reducing a round that failed on
/// another node, or whose node was lost: end it now rather than at the data-plane deadline.
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
// The group coordinator's own timers.
using drain_timeout_atom = caf::atom_constant<caf::atom("draintime")>;
/// An aggregator's own timer: (answer_timeout_atom, round): the round's members had
/// contribution_timeout to answer.
using answer_timeout_atom = caf::atom_constant<caf::atom("answertime")>;
using policy_time_atom = caf::atom_constant<caf::atom("policytime")>;
/// (flush_atom): a worker whose step reports go through its node's relay, before it answers a
/// stop: the relay answers once every report it holds is on its way to the coordinator.
using flush_atom = caf::atom_constant<caf::atom("flush")>;
/// (inbox_atom): in one process, step reports wait in the coordinator's step inbox
/// (step_inbox.hpp); sent by the worker whose report found it empty.
using inbox_atom = caf::atom_constant<caf::atom("inbox")>;

// -- worker -> coordinator ----------------------------------------------------------------------

/// What a step report stands for. With gradient buckets (comm.bucket-mb) a worker announces
/// its step as soon as backward has made part of the gradient final: the coordinator takes the
/// announcement as the step's arrival, so that its round, and the round's reduction, begin while
/// backward runs. The report at the step's end then only counts what the step measured.
enum class step_report : std::uint8_t {
  whole,              // the step ended: its arrival and its measurements
  announcement,       // the step runs and its gradient is being made final: its arrival only
  after_announcement, // the announced step ended: its measurements only
};

/// A worker finished a local step (docs/algorithms.md, "One round, end to end", step 1). A fresh
/// result waits in its send buffer for the next round; a late one (a round asked for the worker's
/// contribution while the step ran) has already missed its round, and is accumulated or discarded.
struct step_ready {
  std::int32_t worker = 0;
  std::uint64_t step = 0;       // the worker's step counter after this step
  double compute_seconds = 0.0; // this step's local compute, injected imbalance included
  double wait_seconds = 0.0;    // idle time between the previous step and this one
  double loss = 0.0;            // the batch's mean training loss
  std::uint32_t samples = 0;
  bool late = false;
  step_report part = step_report::whole; // an announcement carries only worker, step, samples
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_ready& x) {
  return f(caf::meta::type_name("herd.step_ready"), x.worker, x.step, x.compute_seconds,
           x.wait_seconds, x.loss, x.samples, x.late, x.part);
}

/// Across processes: the step reports of a node's workers that reached its relay meanwhile, in
/// the order they came (cluster/step_relay.hpp); the coordinator takes them one by one.
struct step_batch {
  std::vector<step_ready> reports;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_batch& x) {
  return f(caf::meta::type_name("herd.step_batch"), x.reports);
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
  /// train.lr-schedule's factor at the run's epochs when the round began: whoever applies the
  /// round's result with an optimizer step (its members, the parameter server) steps at
  /// train.lr (async.lr) times it, and a model-averaging member takes it for its next local steps.
  float lr_scale = 1.0f;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_plan& x) {
  return f(caf::meta::type_name("herd.group_plan"), x.round, x.members, x.member_handles, x.kind,
           x.weights, x.member_weights, x.step, x.lr_scale);
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
  bool in_backward = false;  // an announced step's gradient: backward still writes it
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, contribution& x) {
  return f(caf::meta::type_name("herd.contribution"), x.worker, x.round, x.step, x.kind, x.samples,
           x.version, x.in_backward);
}

/// Across processes, aggregator -> node reducer: ask these workers of the node for their
/// contributions to `round` ((contribute_atom, round, step) to each), one message per node
/// rather than one per member.
struct contribution_asks {
  std::uint64_t round = 0;
  std::uint64_t step = 0;
  std::vector<std::int32_t> workers;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, contribution_asks& x) {
  return f(caf::meta::type_name("herd.contribution_asks"), x.round, x.step, x.workers);
}

/// The node reducer's answer: every worker asked, either among `answers` or among `failed`
/// (with why: not on this node, or its request failed).
struct contribution_answers {
  std::vector<contribution> answers;
  std::vector<std::int32_t> failed;
  std::vector<std::string> reasons; // by failed worker
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, contribution_answers& x) {
  return f(caf::meta::type_name("herd.contribution_answers"), x.answers, x.failed, x.reasons);
}

/// A round's reduced buffer, shared by every member of the group (zero copy, in-process only).
/// No data: the round was aborted (a node was lost during its reduction); every member skips it,
/// so the replicas still go through the same states.
struct round_result {
  std::uint64_t round = 0;
  comm::shared_buffer data;
  std::uint32_t members = 0;
  float lr_scale = 1.0f; // group_plan::lr_scale; NaN: unknown (a result a checkpoint held), so
                         // the worker's factor stays as it is
};

// -- aggregator -> coordinator ------------------------------------------------------------------

/// A round finished (docs/algorithms.md, "One round, end to end", step 4).
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
  comm::status result;         // not ok: the reduction failed and nobody got a result
  bool aborted = false;        // with a failed result: the members were told to skip the round
  std::vector<std::int32_t> unanswered;        // members whose contribution request failed
  std::vector<std::string> unanswered_reasons; // why, same order
  /// async: the staleness of each gradient the parameter server applied (server versions since
  /// the parameters it was computed on), for each member that gave one; empty otherwise.
  std::vector<std::uint64_t> server_staleness;
  /// Members whose gradient backward was still writing when they answered (gradient buckets):
  /// the round's reduction overlapped their backward passes.
  std::uint32_t in_backward = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, group_done& x) {
  return f(caf::meta::type_name("herd.group_done"), x.round, x.members, x.kinds, x.steps,
           x.versions, x.fresh, x.stale, x.samples, x.bytes, x.reduce_seconds, x.seconds, x.result,
           x.aborted, x.unanswered, x.unanswered_reasons, x.server_staleness, x.in_backward);
}

// -- aggregator -> parameter server (async; in-process only) --------------------------------------

/// Apply the gradient in `buffer` (a round's reduced result) from `worker`, then overwrite
/// `buffer` with the parameters after it; without `apply` (the member had nothing to give) only
/// the latter. Answered with server_applied.
struct server_update {
  std::uint64_t round = 0;
  std::int32_t worker = 0;
  comm::shared_buffer buffer;
  bool apply = true;
  float lr_scale = 1.0f; // group_plan::lr_scale: the server steps at async.lr times it
};

struct server_applied {
  std::uint64_t version = 0;   // gradients the server has applied, this one included
  std::uint64_t staleness = 0; // see parameter_store::update
  bool applied = false;
};

// -- session -> coordinator ---------------------------------------------------------------------

/// Everything the coordinator drives, sent once all actors are spawned.
struct run_start {
  std::vector<caf::actor> workers; // index = worker number
  std::vector<caf::actor> aggregators;
  caf::actor evaluator;
  caf::actor parameter_server; // async: what evaluations read; otherwise none
  // Across processes: the node reducer of each node, and the node of each worker (a checkpoint
  // asks each node for its workers' part). Empty in one process.
  std::vector<caf::actor> node_reducers;
  std::vector<std::int32_t> worker_nodes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_start& x) {
  return f(caf::meta::type_name("herd.run_start"), x.workers, x.aggregators, x.evaluator,
           x.parameter_server, x.node_reducers, x.worker_nodes);
}

// -- worker lifecycle ---------------------------------------------------------------------------

/// A worker's reply to stop_atom, once its compute thread is idle (and the results it waits for
/// are in).
struct worker_stopped {
  std::int32_t worker = 0;
  std::uint64_t steps = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_stopped& x) {
  return f(caf::meta::type_name("herd.worker_stopped"), x.worker, x.steps);
}

/// Bytes in a message between processes. CAF 0.17 sizes (and zeroes) a std::vector<char> to the
/// count its sender wrote before it checks that the bytes are there, so 85 bytes from a peer could
/// make a process allocate 4 GiB; these are read only as far as the message holds them
/// (load_wire_bytes). Written as CAF writes a std::vector<char>.
struct wire_bytes {
  std::vector<char> data;
};

/// Reads what a std::vector<char> is written as (its count, then the bytes) into `data`, failing
/// with caf::sec::end_of_stream, before it allocates, when the count is more than `source` has
/// left; a deserializer that cannot say what it has left is read a MiB at a time.
caf::error load_wire_bytes(caf::deserializer& source, std::vector<char>& data);

template <class Inspector>
typename std::enable_if<Inspector::reads_state, typename Inspector::result_type>::type
inspect(Inspector& f, wire_bytes& x) {
  return f(caf::meta::type_name("herd.bytes"), x.data);
}

template <class Inspector>
typename std::enable_if<Inspector::writes_state, typename Inspector::result_type>::type
inspect(Inspector& f, wire_bytes& x) {
  return load_wire_bytes(f, x.data);
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
  wire_bytes bytes;
  if (x.parameters)
    bytes.data.assign(reinterpret_cast<const char*>(x.parameters->data()),
                      reinterpret_cast<const char*>(x.parameters->data() + x.parameters->size()));
  return f(caf::meta::type_name("herd.parameter_snapshot"), x.worker, x.step, bytes);
}

template <class Inspector>
typename std::enable_if<Inspector::writes_state, typename Inspector::result_type>::type
inspect(Inspector& f, parameter_snapshot& x) {
  wire_bytes bytes;
  auto loaded = caf::meta::load_callback([&]() -> caf::error {
    auto parameters = std::make_shared<std::vector<float>>(bytes.data.size() / sizeof(float));
    std::memcpy(parameters->data(), bytes.data.data(), parameters->size() * sizeof(float));
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
  // The checkpoint parts in its checkpoint directory (file names): a coordinator that resumes
  // gives it the workers of the part it holds.
  std::vector<std::string> parts;
  // The machine it runs on (its kernel's boot id; "" unknown): nodes with the same share cores.
  std::string machine;
  // Its cluster.heartbeat-ms and cluster.node-timeout-ms: the coordinator refuses a node whose
  // heartbeats its own timeout would miss, and the other way round.
  std::int32_t heartbeat_ms = 0;
  std::int32_t node_timeout_ms = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_hello& x) {
  return f(caf::meta::type_name("herd.node_hello"), x.protocol, x.name, x.workers, x.data_host,
           x.parts, x.machine, x.heartbeat_ms, x.node_timeout_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, part_record& x) {
  return f(caf::meta::type_name("herd.part_record"), x.node, x.workers, x.file, x.bytes,
           x.payload_hash);
}

/// The coordinator's order to a node reducer: write the node's workers' states, at rest, as its
/// part of checkpoint `stem` (answered with the part_record once the file is on disk).
struct part_request {
  std::string stem;      // the checkpoint's name without ".ckpt"
  std::string keep_from; // parts of older checkpoints than this stem are not needed ("": keep all)
  std::int32_t node = 0; // the node's index: names the part
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, part_request& x) {
  return f(caf::meta::type_name("herd.part_request"), x.stem, x.keep_from, x.node);
}

/// The registry's answer once the cluster has formed (or, joining a running job, once the node
/// was given the slots of lost workers): the node's place in it and the run.
struct node_welcome {
  std::int32_t node = 0;                 // its index among every node the job has admitted
  std::vector<std::int32_t> workers;     // the worker indices it hosts, ascending
  std::uint32_t generation = 0;          // of the data plane it connects
  std::vector<std::int32_t> plane_nodes; // that plane's ranks: the node index of each
  bool running = false;                  // the job runs: its workers take a live peer's model
  std::string settings;                  // the run's configuration, as config::to_ini writes it
  std::uint64_t training_samples = 0;    // the coordinator's training set, to check the node's
  std::string job;                       // names this run's keys in the rendezvous store
  caf::actor coordinator;                // the group coordinator the workers report to
  std::string data_key; // 32 bytes that seal that plane's messages; "" = they go in the clear
  part_record resume;   // the run resumes: the part its workers go on from (file "": none)
  // The live workers on its machine, its own included (0: its machine is unknown): they share
  // that machine's cores.
  std::int32_t workers_on_machine = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_welcome& x) {
  return f(caf::meta::type_name("herd.node_welcome"), x.node, x.workers, x.generation,
           x.plane_nodes, x.running, x.settings, x.training_samples, x.job, x.coordinator,
           x.data_key, x.resume, x.workers_on_machine);
}

/// A node's workers are spawned and its data plane is connected.
struct node_ready {
  std::int32_t node = 0;
  std::vector<caf::actor> workers; // in the order of node_welcome::workers
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
  std::vector<std::int32_t> nodes;      // node indices of the group, sorted
  std::uint32_t generation = 0;         // the data plane those nodes reduce through
  std::uint32_t members = 0;            // the round's answering members, for round_result
  // The reduction's place in the one global order (comm/sequencer.hpp): its ticket, and this
  // node's sequence number in `generation`, which the node issues in order. 0: not sequenced.
  std::uint64_t ticket = 0;
  std::uint64_t sequence = 0;
  float lr_scale = 1.0f; // group_plan::lr_scale, for round_result
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reduce_order& x) {
  return f(caf::meta::type_name("herd.reduce_order"), x.round, x.inputs, x.weights, x.deliver_to,
           x.nodes, x.generation, x.members, x.ticket, x.sequence, x.lr_scale);
}

/// A node's answer to reduce_order.
struct reduce_done {
  std::uint64_t round = 0;
  std::int32_t node = 0;
  comm::status result; // ok: the node holds the round's result (or its transfer ended)
  double seconds = 0.0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, reduce_done& x) {
  return f(caf::meta::type_name("herd.reduce_done"), x.round, x.node, x.result, x.seconds);
}

/// Where every worker lives, and the data plane rounds use from now on: the registry tells the
/// coordinator when a node joins a running job, the coordinator tells its aggregators before any
/// round that includes the new node's workers.
struct cluster_topology {
  std::uint32_t generation = 0;
  std::vector<std::int32_t> worker_nodes; // the node index of every worker
  std::vector<caf::actor> node_reducers;  // by node index (a lost node's stays, unused)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cluster_topology& x) {
  return f(caf::meta::type_name("herd.cluster_topology"), x.generation, x.worker_nodes,
           x.node_reducers);
}

/// A node joined the running job (registry -> coordinator): its data plane is connected on every
/// live node. The coordinator drains the rounds in flight, has the new workers take a live peer's
/// state, counts them live, and answers (join_done_atom, node, error) to the registry.
struct node_admission {
  std::int32_t node = 0;
  std::string name;                  // its --name, for logs and the metrics' node label
  std::vector<std::int32_t> workers; // the slots it fills
  std::vector<caf::actor> handles;   // its workers, same order
  cluster_topology topology;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_admission& x) {
  return f(caf::meta::type_name("herd.node_admission"), x.node, x.name, x.workers, x.handles,
           x.topology);
}

/// A node leaves the running job (registry -> coordinator, one process; the node asked with
/// depart_atom). The coordinator holds new rounds, lets those in flight end, counts the node's
/// workers lost, and answers true (the registry tells the node); false at once when it cannot
/// wait (the run ending; the registry lets no join or re-key run meanwhile).
struct node_departure {
  std::int32_t node = 0;
  std::string name;
  std::vector<std::int32_t> workers; // the slots it holds
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_departure& x) {
  return f(caf::meta::type_name("herd.node_departure"), x.node, x.name, x.workers);
}

/// The coordinator's order to two node reducers: `source` (a live worker on node `from`) exports
/// its state (worker_state) and the data plane broadcasts it to node `to`, whose reducer has
/// every worker in `targets` adopt it. Both answer with reduce_done (round = tag).
struct state_transfer {
  std::uint64_t tag = 0; // the data-plane tag; above every round number
  std::uint32_t generation = 0;
  std::int32_t from = 0;
  std::int32_t to = 0;
  std::int32_t source = 0;
  std::vector<std::int32_t> targets;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, state_transfer& x) {
  return f(caf::meta::type_name("herd.state_transfer"), x.tag, x.generation, x.from, x.to, x.source,
           x.targets);
}

/// A worker's whole state in one buffer (in-process only: a worker and its node reducer): a header
/// of its step counter, rounds applied and optimizer steps (each a uint64 in two floats' bits), its
/// parameters, then its optimizer's state (models::optimizer::state()). What a worker joining a
/// running job adopts.
struct worker_state {
  std::shared_ptr<std::vector<float>> data; // host memory, wherever the worker computes

  static constexpr std::size_t header_floats = 6;

  /// The buffer's length for a model of `count` parameters and `state` floats of optimizer state.
  static std::size_t floats_for(std::size_t count, std::size_t state) {
    return header_floats + count + state;
  }

  /// A state of that size with the header filled in; the caller copies the rest.
  static worker_state make(std::size_t count, std::size_t state, std::uint64_t step,
                           std::uint64_t rounds_applied, std::uint64_t optimizer_steps) {
    std::vector<float> floats(floats_for(count, state));
    std::memcpy(&floats[0], &step, sizeof step);
    std::memcpy(&floats[2], &rounds_applied, sizeof rounds_applied);
    std::memcpy(&floats[4], &optimizer_steps, sizeof optimizer_steps);
    return worker_state{std::make_shared<std::vector<float>>(std::move(floats))};
  }

  std::uint64_t step() const { return header(0); }
  std::uint64_t rounds_applied() const { return header(1); }
  std::uint64_t optimizer_steps() const { return header(2); }
  float* parameters() const { return data->data() + header_floats; }
  float* optimizer_state(std::size_t count) const { return parameters() + count; }

private:
  std::uint64_t header(std::size_t index) const {
    std::uint64_t value = 0;
    std::memcpy(&value, data->data() + 2 * index, sizeof value);
    return value;
  }
};

/// The rendezvous keys of data plane `generation` of job `job` start with this (generation 0 is
/// the plane the cluster formed with; every join makes a new one).
inline std::string plane_prefix(const std::string& job, std::uint32_t generation) {
  return generation == 0 ? job : job + "/g" + std::to_string(generation);
}

/// The registry's request to every live node when another joins the running job: connect data
/// plane `generation` among `plane_nodes` (answered with true once connected).
struct plane_rebuild {
  std::uint32_t generation = 0;
  std::vector<std::int32_t> plane_nodes; // the node index of each rank
  std::string data_key;                  // as node_welcome's, for this generation
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plane_rebuild& x) {
  return f(caf::meta::type_name("herd.plane_rebuild"), x.generation, x.plane_nodes, x.data_key);
}

/// A node refused a peer's data-plane messages (node -> registry): one did not open with the
/// generation's key (comm/sealing.hpp). The registry answers by re-keying the data plane: a new
/// generation among the same nodes, with a fresh key and fresh connections.
struct plane_refusal {
  std::uint32_t generation = 0;
  std::int32_t node = 0; // the node that refused
  std::int32_t peer = 0; // the node whose message did not open
  std::string why;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plane_refusal& x) {
  return f(caf::meta::type_name("herd.plane_refusal"), x.generation, x.node, x.peer, x.why);
}

/// The registry re-keys the data plane (registry -> coordinator, one process). `hold`: a node
/// refused a peer, and the nodes connect a new generation; no round starts meanwhile. `connected`:
/// every live node has it (`topology`); once the rounds in flight have ended the coordinator hands
/// it to the aggregators, resumes, and answers (join_done_atom, -1, error). `failed`: it did not
/// connect (`why`); rounds resume on the generation in use.
struct plane_rekey {
  enum stage_code : std::uint8_t { hold = 0, connected = 1, failed = 2 };
  std::uint8_t stage = hold;
  std::string why;
  cluster_topology topology;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, plane_rekey& x) {
  return f(caf::meta::type_name("herd.plane_rekey"), x.stage, x.why, x.topology);
}

/// A data plane a node connected (in-process only: the node's control loop -> its reducer). The
/// reducer keeps it, and older ones until an order names it (a failed join's is never named).
struct plane_update {
  std::uint32_t generation = 0;
  std::vector<std::int32_t> plane_nodes; // the node index of each rank
  std::shared_ptr<comm::data_plane> plane;
};

/// Registers every message type above that can cross a process boundary. Call it on every
/// actor_system_config that hosts Herd actors (CAF silently delivers an empty message for an
/// unregistered type on the receiving node).
void add_message_types(caf::actor_system_config& config);

} // namespace herd::actors

// A buffer shared by pointer: valid only inside one process, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::actors::round_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::actors::worker_state)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::actors::plane_update)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::actors::server_update)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(herd::actors::server_applied)
