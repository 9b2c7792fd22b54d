// The registry actor's state and handlers, shared by registry.cpp (the cluster forming, the
// run, its end) and registry_joins.cpp (nodes joining the running job, re-keys). Included by
// those two only: it pulls CAF in.
#pragma once

#include "actors/aggregator.hpp"
#include "actors/checkpoint_state.hpp"
#include "actors/checkpoint_writer.hpp"
#include "actors/errors.hpp"
#include "actors/evaluator.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/messages.hpp"
#include "actors/train_session.hpp"
#include "actors/unexpected_messages.hpp"
#include "comm/buffer_pool.hpp"
#include "comm/sealing.hpp"
#include "herd/config.hpp"
#include "monitoring/cluster_metrics.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "cluster/admission.hpp"
#include "cluster/join_ledger.hpp"
#include "cluster/node_join.hpp"
#include "cluster/registry.hpp"
#include "cluster/rendezvous_keys.hpp"
#include "cluster/run_assembly.hpp"

namespace herd::cluster {

// The actors of one process, which a cluster connects across processes.
using namespace herd::actors;

using bytes = actors::wire_bytes; // a rendezvous value on the wire

class registry_actor : public caf::event_based_actor {
public:
  registry_actor(caf::actor_config& actor_config, std::shared_ptr<registry_context> context)
      : caf::event_based_actor(actor_config), context_(std::move(context)) {
    set_down_handler([this](caf::down_msg& down) { on_down(down); });
    // Published to every peer: what no handler takes is dropped in a line, not printed.
    set_default_handler(
        actors::drop_unexpected("the registry", [this](const std::string& text) { notice(text); }));
    if (context_->options.metrics)
      cluster_metrics_.emplace(context_->options.metrics, context_->config.metrics.job,
                               nodes_required());
  }

  const char* name() const override { return "herd.registry"; }

  // The run's actors go with the registry: the system's shutdown waits for every one of them.
  void on_exit() override {
    for (const auto& aggregator : aggregators_)
      caf::anon_send_exit(aggregator, caf::exit_reason::user_shutdown);
    for (const auto& actor : {evaluator_, coordinator_})
      if (actor)
        caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
    coordinator_ = nullptr;
    aggregators_.clear();
    evaluator_ = nullptr;
    nodes_.clear();
    // A promise holds this actor: one still waiting for a key (a rendezvous that failed) would
    // keep it alive forever.
    keys_.drop_reads("");
  }

  caf::behavior make_behavior() override {
    return {
        [this](const node_hello& hello) { return on_hello(hello); },
        [this](const node_ready& ready) { on_ready(ready); },
        [this](store_set_atom, const std::string& key, const bytes& value) { on_set(key, value); },
        [this](store_get_atom, const std::string& key) { return on_get(key); },
        [this](store_peek_atom, const std::string& key) { return on_peek(key); },
        [this](leave_atom, const std::string& why) { on_leaving(why); },
        [this](depart_atom, const std::string& why) { on_depart(why); },
        [this](stop_atom) { on_stop(); },
        [this](job_over_atom, const std::string& failure, const std::string& ending) {
          return on_job_over(failure, ending);
        },
        [this](join_done_atom, std::int32_t node, const comm::status& result) {
          on_join_done(node, result);
        },
        [this](const plane_refusal& refusal) { on_refusal(refusal); },
        [this](plane_wait_atom, std::int32_t seconds) { on_plane_wait(seconds); },
    };
  }

private:
  // (plane_wait_atom, seconds), to itself: the cluster formed `seconds` ago, its data plane may
  // still be connecting.
  using plane_wait_atom = caf::atom_constant<caf::atom("planewait")>;
  struct node_entry {
    node_hello hello;
    caf::response_promise welcome;
    std::vector<std::int32_t> slots; // the worker indices it hosts
    bool ready = false;
    std::vector<caf::actor> workers; // same order
    caf::actor reducer;
    caf::actor control;
    caf::actor_addr link;  // the node's joining actor: lives as long as the node's part of the job
    caf::node_id process;  // the node's process, as CAF knows it
    bool answered = false; // its welcome (or refusal) was delivered
    bool live = true;
    bool departed = false; // let go after asking to leave: no plane or slot counts it, though
                           // it is live until its connection closes
    std::string turned_away;         // why its join failed
    std::string farewell;            // why it said it leaves, if it did
    std::optional<std::size_t> part; // resuming: the checkpoint part it holds
  };

  // -- handlers ----------------------------------------------------------------------------------

  caf::result<node_welcome> on_hello(const node_hello& hello);
  void on_ready(const node_ready& ready);
  // Says which nodes have not connected the data plane yet, and why that may be; again a minute
  // later while the run has not started.
  void on_plane_wait(std::int32_t seconds);

  // Only nodes this cluster welcomed take part in the data plane's rendezvous.
  void on_set(const std::string& key, const bytes& value);
  caf::result<bytes> on_get(const std::string& key);

  // A failed rendezvous asks which ranks' addresses are missing, to name them.
  caf::result<bool, bytes> on_peek(const std::string& key);

  // A node about to leave says why (its data plane did not connect, say); its loss names that.
  // Only the node's own joining actor speaks for it, and a log line is all it can change.
  void on_leaving(const std::string& why);

  void on_stop();

  // Answers once every live node acknowledged (or did not within a few seconds), so the
  // session closes the connections only after the nodes know.
  caf::result<bool> on_job_over(const std::string& failure, const std::string& ending);

  void on_join_done(std::int32_t node, const comm::status& result);
  void on_down(const caf::down_msg& down);

  // -- the cluster forming -----------------------------------------------------------------------

  // The node that sent `hello`, watched (its joining actor lives as long as its part of the job),
  // with the promise of its welcome.
  node_entry entry_for(const node_hello& hello);

  // Every node is known: give out the slots, check the settings against them, build the
  // coordinator and welcome the nodes.
  void form_cluster();
  void spawn_coordinator();
  void welcome(std::size_t index, bool running);

  // The workers of the live nodes on node `index`'s machine, its own included; 0 when its machine
  // is unknown.
  std::int32_t workers_on_machine_of(std::size_t index) const;

  // Ends a run that never started: nodes still waiting for their welcome hear why.
  void refuse_all(const std::string& why,
                  actors::stop_cause stop_reason = actors::stop_cause::error);
  void start_run();

  // A node of the formed cluster was lost (not the one joining now).
  void lost_after_forming(std::size_t index, const std::string& why);

  // -- a node joining the running job ------------------------------------------------------------
  //
  // It takes lost workers' slots (the run's worker count never changes). One node joins at a
  // time, the others wait for their welcome: every live node connects a new generation of the
  // data plane with it (a full mesh cannot grow), then the coordinator pauses the rounds, has the
  // new workers adopt a live worker's state through that plane, and counts them live.

  caf::result<node_welcome> on_hello_running(const node_hello& hello);
  // Starts what may start now, in this order: a re-key (a failed one's retry holds the rounds,
  // and the coordinator lets no node go meanwhile), a departure, a join.
  void next_turn();
  // Whether `node` takes part in the next generation of the data plane: live, ready and not
  // departed.
  static bool in_plane(const node_entry& node) { return node.live && node.ready && !node.departed; }
  void begin_join(std::size_t index);

  // Every one of `peers` connects data plane `generation` and answers.
  void rebuild_planes(std::uint32_t generation, const std::vector<std::size_t>& peers);

  // `peer` answered for `generation` (or was lost, and will not).
  void rebuilt(std::uint32_t generation, std::size_t peer, const comm::status& result);
  void admit_when_connected();

  // Where every worker lives, and the newest generation of the data plane.
  cluster_topology topology() const;

  // The node is turned away (told why, if it is still there); its slots are free again.
  void join_failed(const std::string& why);

  // -- the data plane re-keyed -------------------------------------------------------------------
  //
  // A node refused a peer's data-plane messages: they did not open with the generation's key, so
  // bytes that are not the peer's reached their connection. The rounds that need that pair fail.
  // Every live node connects a new generation (fresh connections, a fresh key) while the
  // coordinator holds the rounds, then the rounds use it. Both nodes of the pair report it; the
  // first report counts. At most max_rekeys times in a run: a peer refused again and again is not
  // a passing stranger, and its rounds then keep aborting, as before.

  static constexpr int max_rekeys = 8;

  void on_refusal(const plane_refusal& refusal);
  void begin_rekey();

  // The pair is still refused: while re-keys are left, the rounds stay paused and another re-key
  // follows once every node has answered for this one (a node lost meanwhile is not in the next);
  // otherwise the rounds go on through the generation in use.
  void rekey_failed(const std::string& why);

  // -- a node leaving the running job ------------------------------------------------------------
  //
  // A node about to leave (a stop signal) asks to depart; the answer, (depart_atom, bool) sent to
  // its control actor, says whether it may close its data plane now. It departs when no join or
  // re-key is under way (either would wait for the node's answer to a plane it is closing): the
  // coordinator holds new rounds, lets those in flight end and counts the node's workers lost,
  // then answers true. No join or re-key starts meanwhile. False at once where there is nothing
  // to wait for (the run is not running, or the node is not ready).
  void on_depart(const std::string& why);
  void begin_departure(std::size_t index);
  void departed(std::size_t index, bool released);

  // -- helpers -----------------------------------------------------------------------------------

  // Delivers a node's welcome or refusal. From then on, while it is live, its process may use the
  // rendezvous keys, once the cluster has formed.
  template <class Answer>
  void answer(node_entry& node, Answer&& reply) {
    node.answered = true;
    if (node.live && phase_ != registry_phase::gathering)
      keys_.admit(node.process);
    node.welcome.deliver(std::forward<Answer>(reply));
  }

  void lose(node_entry& node);

  // The nodes in the cluster, for its metrics: every live one while it forms, the live ones that
  // are ready (connected) once it runs.
  void count_nodes();

  caf::node_id sender_process();
  std::string read_refusal(const caf::node_id& process, const std::string& otherwise) const;
  void notice(const std::string& text);
  // Refuses a node's hello, saying so in the coordinator's log too.
  caf::error refuse(const node_hello& hello, const std::string& why);

  std::string label(std::size_t index) const;
  // "; node 0 is named vm too: ..." where another live node has node `index`'s name; "" else.
  std::string name_clash(std::size_t index) const;

  // The key that seals the messages of data plane `generation`, drawn when first asked for; ""
  // when the data plane is not sealed (cluster.data-encryption). It reaches only the nodes of that
  // generation, in their welcome or rebuild order.
  std::string plane_key(std::uint32_t generation);

  std::string nodes_of_min_nodes(std::size_t nodes) const;
  // The nodes the cluster forms with: cluster.min-nodes, or the checkpoint's parts on a resume.
  std::size_t nodes_required() const;

  bool resuming() const { return context_->resume != nullptr; }
  const std::vector<part_record>& resume_parts() const { return context_->resume->parts; }
  // The parts a node waiting for the cluster to form holds.
  std::vector<bool> claimed_parts() const;

  std::shared_ptr<registry_context> context_;
  registry_phase phase_ = registry_phase::gathering;
  bool over_ = false;    // refused, stopped, or over: no node joins any more
  std::string failure_;  // once over: why the run failed, empty where it ended well
  std::string ending_;   // once over: how the run ended, in words
  std::string over_why_; // ": why", when the run ended before it started
  std::vector<node_entry> nodes_;
  slot_table slots_;
  join_ledger ledger_;
  std::optional<monitoring::cluster_metrics> cluster_metrics_; // with options.metrics
  int rekeys_ = 0;                                             // re-keys begun in this run
  std::map<std::uint32_t, std::string> plane_keys_;            // by data-plane generation
  rendezvous_keys keys_;
  std::shared_ptr<const models::model> model_;
  caf::actor coordinator_;
  std::vector<caf::actor> aggregators_;
  caf::actor evaluator_;
};

} // namespace herd::cluster
