// The worker actor; see worker.hpp. The actor's thread owns the parameters (it alone writes
// them, and only while no step runs); the compute thread reads them and writes the gradient,
// which is also the send buffer the data plane reads between ready and result.
#include "actors/worker.hpp"

#include "actors/compute_thread.hpp"
#include "actors/errors.hpp"
#include "actors/messages.hpp"
#include "models/sampler.hpp"
#include "models/sgd.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <set>

namespace herd::actors {

namespace {

using clock_type = std::chrono::steady_clock;

using step_done_atom = caf::atom_constant<caf::atom("stepdone")>;

/// What the compute thread reports after a local step (local message, never serialized).
struct step_outcome {
  double loss = 0.0;
  double compute_seconds = 0.0;
  std::uint32_t samples = 0;
  std::string error; // non-empty when the step threw
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_outcome& x) {
  return f(caf::meta::type_name("herd.step_outcome"), x.loss, x.compute_seconds, x.samples,
           x.error);
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

class worker_actor : public caf::event_based_actor {
public:
  worker_actor(caf::actor_config& config, worker_setup setup, caf::actor coordinator)
      : caf::event_based_actor(config), setup_(std::move(setup)),
        coordinator_(std::move(coordinator)),
        params_(setup_.model->initial_parameters(setup_.init_seed)),
        grads_({setup_.model->parameter_count()}),
        optimizer_(setup_.model->parameter_count(), setup_.optimizer),
        sampler_(setup_.shard, setup_.batch_size, setup_.shuffle_seed),
        compute_(std::make_unique<compute_thread>("herd-w" + std::to_string(setup_.index))) {
    setup_.backend->attach(setup_.index, grads_.data(), grads_.size());
  }

  const char* name() const override { return "herd.worker"; }

  void on_exit() override {
    compute_.reset(); // lets a running step finish: it reads params_ and writes grads_
    self_while_computing_ = nullptr;
    setup_.backend->detach(setup_.index);
    coordinator_ = nullptr;
  }

  caf::behavior make_behavior() override {
    return {
        [this](start_atom) {
          if (!started_ && !stopping_) {
            started_ = true;
            begin_step();
          }
        },
        [this](step_done_atom, const step_outcome& outcome) { on_step_done(outcome); },
        [this](contribute_atom, std::uint64_t round) { return contribute(round); },
        [this](const round_result& result) {
          pending_results_[result.round] = result.data;
          apply_ready_results();
        },
        [this](snapshot_atom) {
          return parameter_snapshot{setup_.index, step_,
                                    std::make_shared<const std::vector<float>>(
                                        params_.data(), params_.data() + params_.size())};
        },
        [this](stop_atom) -> caf::result<worker_stopped> {
          stopping_ = true;
          if (!computing_)
            return worker_stopped{setup_.index, step_};
          stop_promise_ = make_response_promise();
          return *stop_promise_;
        },
    };
  }

private:
  void begin_step() {
    computing_ = true;
    // While the job runs the actor keeps itself alive, so the job's message below never drops
    // the last reference: the actor is then never destroyed on (and joined from) its own
    // compute thread.
    self_while_computing_ = caf::actor_cast<caf::strong_actor_ptr>(this);
    // The job captures a weak handle: the compute thread must not keep the actor alive.
    caf::actor_addr self_address = address();
    compute_->post([this, self_address] {
      step_outcome outcome;
      const auto start = clock_type::now();
      try {
        const auto& batch = sampler_.next();
        models::gather_batch(*setup_.train, batch, batch_x_, batch_y_);
        outcome.loss = setup_.model->loss_and_gradient(*setup_.ops, params_.data(), batch_x_,
                                                       batch_y_, grads_.data(), workspace_);
        outcome.samples = static_cast<std::uint32_t>(batch.size());
      } catch (const std::exception& failure) {
        outcome.error = failure.what();
      }
      outcome.compute_seconds = seconds_since(start);
      caf::anon_send(caf::actor_cast<caf::actor>(self_address), step_done_atom::value, outcome);
    });
  }

  void on_step_done(const step_outcome& outcome) {
    computing_ = false;
    self_while_computing_ = nullptr;
    if (!outcome.error.empty()) {
      quit(make_error(herd_errc::compute_failed,
                      "worker " + std::to_string(setup_.index) + ": " + outcome.error));
      return;
    }
    ++step_;
    has_fresh_ = true;
    ready_at_ = clock_type::now();
    step_ready ready;
    ready.worker = setup_.index;
    ready.step = step_;
    ready.compute_seconds = outcome.compute_seconds;
    ready.wait_seconds = last_wait_seconds_;
    ready.loss = outcome.loss;
    ready.samples = outcome.samples;
    send(coordinator_, ready);
    if (stop_promise_) {
      stop_promise_->deliver(worker_stopped{setup_.index, step_});
      stop_promise_.reset();
    }
    apply_ready_results(); // any that arrived while the step ran
  }

  contribution contribute(std::uint64_t round) {
    contribution reply;
    reply.worker = setup_.index;
    reply.round = round;
    reply.step = step_;
    if (has_fresh_) {
      reply.kind = freshness::fresh;
      reply.samples = static_cast<std::uint32_t>(setup_.batch_size);
      has_fresh_ = false;
      awaiting_round_ = round;
    } else {
      reply.kind = freshness::none;
    }
    member_of_.insert(round);
    return reply;
  }

  // Results are applied in round order among the rounds this worker contributed to, and only
  // between steps (the compute thread reads the parameters while a step runs). The next step
  // starts once the round holding this worker's gradient has been applied.
  void apply_ready_results() {
    if (computing_)
      return; // on_step_done() comes back here
    bool own_round_applied = false;
    while (!member_of_.empty()) {
      const std::uint64_t next = *member_of_.begin();
      auto found = pending_results_.find(next);
      if (found == pending_results_.end())
        break;
      optimizer_.step(*setup_.ops, params_.data(), found->second->data());
      pending_results_.erase(found);
      member_of_.erase(member_of_.begin());
      if (awaiting_round_ == next) {
        awaiting_round_.reset();
        last_wait_seconds_ = seconds_since(ready_at_);
        own_round_applied = true;
      }
    }
    if (own_round_applied && !stopping_)
      begin_step();
  }

  worker_setup setup_;
  caf::actor coordinator_;
  models::tensor params_;
  models::tensor grads_; // the send buffer
  models::sgd optimizer_;
  models::batch_sampler sampler_;     // compute thread only
  models::mlp_workspace workspace_;   // compute thread only
  models::tensor batch_x_;            // compute thread only
  std::vector<std::int32_t> batch_y_; // compute thread only

  std::uint64_t step_ = 0;
  bool started_ = false;
  bool computing_ = false;
  bool stopping_ = false;
  bool has_fresh_ = false;
  std::optional<std::uint64_t> awaiting_round_;
  std::set<std::uint64_t> member_of_;
  std::map<std::uint64_t, comm::shared_buffer> pending_results_;
  clock_type::time_point ready_at_;
  double last_wait_seconds_ = 0.0;
  std::optional<caf::response_promise> stop_promise_;
  caf::strong_actor_ptr self_while_computing_;

  // Last member: destroyed (joined) first, while everything its job touches still exists.
  std::unique_ptr<compute_thread> compute_;
};

} // namespace

caf::actor spawn_worker(caf::actor_system& system, worker_setup setup,
                        const caf::actor& coordinator) {
  return system.spawn<worker_actor>(std::move(setup), coordinator);
}

} // namespace herd::actors
