// The group coordinator actor (coordinator_actor.hpp): nodes joining and leaving the running job,
// and the coordinator_port their join_hook (cluster/node_join.hpp) uses.
#include "actors/coordinator_actor.hpp"
#include "comm/errors.hpp"
#include "monitoring/training_metrics.hpp"

namespace herd::actors {

// -- coordinator_port ----------------------------------------------------------------------------

void coordinator_actor::notice(const std::string& text) {
  if (setup_.observer != nullptr)
    setup_.observer->on_notice(text);
}

std::string coordinator_actor::host_of(int index) const {
  const auto slot = static_cast<std::size_t>(index);
  return slot < setup_.worker_hosts.size() ? setup_.worker_hosts[slot] : std::string();
}

void coordinator_actor::lose_worker(int index, const std::string& why) {
  drop_worker(index, why, true);
}

void coordinator_actor::drop_worker(int index, const std::string& why, bool say_so) {
  if (!counters_.is_live(index) || phases_.done())
    return;
  booked_counters().worker_lost(index); // its last steps count before its loss
  worker_events_.push_back({elapsed(), index, host_of(index), false, why});
  if (setup_.metrics)
    setup_.metrics->worker_lost(index);
  if (say_so)
    notice("worker " + std::to_string(index) + " lost: " + why);
  if (joins_)
    joins_->worker_lost(index, why);
  if (phases_.phase() == run_phase::stopping_workers) {
    carry_out(phases_.worker_stopped(index)); // a lost worker has nothing left to stop
    return;
  }
  if (checkpoints_.holding())
    drop_checkpoint("worker " + std::to_string(index) + " was lost");
  auto live = live_workers();
  if (live.empty())
    fail("every worker was lost; the last, worker " + std::to_string(index) + ": " + why);
  else if (phases_.running())
    consult([this] { return policy_->set_live_workers(live_workers()); });
  else
    policy_->set_live_workers(std::move(live));
}

void coordinator_actor::admit_worker(int index, const caf::actor& handle, const std::string& node) {
  workers_[static_cast<std::size_t>(index)] = handle; // monitored since the admission
  booked_counters().worker_joined(index); // the slot's earlier worker's steps stay its own
  if (static_cast<std::size_t>(index) < setup_.worker_hosts.size())
    setup_.worker_hosts[static_cast<std::size_t>(index)] = node;
  worker_events_.push_back({elapsed(), index, node, true, {}});
  if (setup_.metrics)
    setup_.metrics->worker_joined(index, node);
  send(handle, start_atom::value, lr_scale());
}

void coordinator_actor::resume_rounds(bool live_changed) {
  auto held = std::move(held_);
  held_.clear();
  if (!phases_.running())
    return;
  if (live_changed)
    start_rounds(policy_->set_live_workers(live_workers()));
  for (auto& input : held)
    if (phases_.running())
      start_rounds(input());
  schedule_policy_time();
}

// -- the registry's messages --------------------------------------------------------------------

void coordinator_actor::on_admission(node_admission admission) {
  const auto registry = caf::actor_cast<caf::actor>(current_sender());
  if (joins_) {
    // A checkpoint asks the node that hosts each worker now (a failed join leaves its workers
    // lost, and a checkpoint is taken only with every worker live).
    node_reducers_ = admission.topology.node_reducers;
    worker_nodes_ = admission.topology.worker_nodes;
    joins_->admit(std::move(admission), registry);
  } else
    send(registry, join_done_atom::value, admission.node, std::string("no node joins this run"));
}

void coordinator_actor::on_rekey(const plane_rekey& step) {
  const auto registry = caf::actor_cast<caf::actor>(current_sender());
  if (step.stage == plane_rekey::hold && setup_.metrics)
    setup_.metrics->data_plane_rekeyed();
  if (joins_)
    joins_->rekey(step, registry);
  else if (step.stage == plane_rekey::connected)
    send(registry, join_done_atom::value, std::int32_t{-1},
         comm::status{comm::outcome::unsupported, "this run has no data plane to re-key"});
}

caf::result<bool> coordinator_actor::on_departure(const node_departure& departure) {
  if (!joins_) // one process: no node to let go
    return true;
  auto promise = make_response_promise<bool>();
  joins_->depart(departure, [promise](const comm::status& result) mutable {
    promise.deliver(result.ok()); // the node leaves either way; false: without waiting
  });
  return promise;
}

} // namespace herd::actors
