// The worker actor; see worker.hpp. The actor's thread owns the parameters (it alone writes
// them, and only while no step runs); the compute thread reads them and writes the gradient,
// into the send buffer when that is empty and free, else into a scratch buffer whose contents
// the actor then adds into the send buffer. The data plane reads the send buffer from a
// contribution until the round's result arrives. What goes where, and when, is decided by
// policy::send_buffer; the handlers below move the tensors it names.
//
// On a GPU the two threads queue work on two streams (setup.ops, setup.apply_ops), and the
// hand-overs between them, and to the data plane, are host-side: a step's job waits for its
// stream before it reports, and every handler that queued work on the actor's stream waits for
// it before it returns (settle()), so whatever a message says is done is done on the device.
#include "actors/worker.hpp"

#include "actors/checkpoint_messages.hpp"
#include "actors/checkpoint_state.hpp"
#include "actors/compute_thread.hpp"
#include "actors/errors.hpp"
#include "actors/messages.hpp"
#include "actors/step_inbox.hpp"
#include "actors/worker_parts.hpp"
#include "comm/gradient_marks.hpp"
#include "kernels/check.hpp"
#include "models/optimizer.hpp"
#include "models/sampler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <utility>

#include "policy/send_buffer.hpp"

namespace herd::actors {

namespace {

using clock_type = std::chrono::steady_clock;

using step_done_atom = caf::atom_constant<caf::atom("stepdone")>;
using announce_atom = caf::atom_constant<caf::atom("announce")>;

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

class worker_actor : public caf::event_based_actor {
public:
  worker_actor(caf::actor_config& config, worker_setup setup, caf::actor coordinator)
      : caf::event_based_actor(config), setup_(std::move(setup)),
        coordinator_(std::move(coordinator)),
        apply_ops_(setup_.apply_ops != nullptr ? setup_.apply_ops : setup_.ops),
        params_(starting_parameters(*setup_.model, setup_.init_seed, setup_.initial_parameters),
                memory()),
        grads_(std::vector<std::size_t>{setup_.model->parameter_count()}, memory()),
        send_(std::vector<std::size_t>{setup_.model->parameter_count()}, memory()),
        optimizer_(setup_.model->parameter_count(), setup_.optimizer, memory()),
        sampler_(setup_.shard, setup_.batch_size, setup_.shuffle_seed, length_buckets_of(setup_)),
        workspace_(setup_.model->make_workspace()), batch_x_(memory()),
        buffer_(policy::send_buffer_family_of(setup_.exchange_models, setup_.blend_late_models,
                                              setup_.late_gradients, setup_.blend_on_time_models,
                                              setup_.take_server_parameters),
                static_cast<std::uint64_t>(std::max(setup_.global_average_every, 0))),
        compute_(std::make_unique<compute_thread>("herd-w" + std::to_string(setup_.index))) {
    HERD_CHECK(&apply_ops_->memory() == &memory(),
               "worker " << setup_.index << ": its actor's ops compute in "
                         << apply_ops_->memory().name() << " memory, its steps in "
                         << memory().name());
    if (buffer_.exchanges_models()) { // the stored model a round asking before the first step gets
      write_send_buffer(policy::buffer_write::copy_model);
      settle();
    }
    if (setup_.resume)
      restore(*setup_.resume);
    // Last: nothing above may throw with the buffer attached.
    const auto attached = setup_.plane->attach(setup_.index, send_.data(), send_.size());
    HERD_CHECK(attached.ok(), "worker " << setup_.index << ": " << attached.message());
    if (setup_.announce_steps && memory().host_accessible()) {
      marks_ = std::make_shared<comm::gradient_marks>(send_.size());
      const auto marked = setup_.plane->attach_marks(setup_.index, marks_);
      HERD_CHECK(marked.ok(), "worker " << setup_.index << ": " << marked.message());
    }
  }

  const char* name() const override { return "herd.worker"; }

  void on_exit() override {
    delay_.cancel();  // a step waiting out an injected delay finishes now
    compute_.reset(); // lets a running step finish: it reads params_ and writes a gradient buffer
    self_while_computing_ = nullptr;
    (void)setup_.plane->detach(setup_.index); // a plane that attached it detaches it
    coordinator_ = nullptr;
    deferred_.clear();
    exports_.clear();
    checkpoints_.clear();
  }

  caf::behavior make_behavior() override {
    return {
        [this](start_atom, float lr_scale) { on_start(lr_scale); },
        [this](announce_atom, std::uint64_t step, std::uint32_t samples) {
          on_announce(step, samples);
        },
        [this](step_done_atom, const step_outcome& outcome) { on_step_done(outcome); },
        [this](contribute_atom, std::uint64_t round, std::uint64_t step) {
          return on_contribute(round, step);
        },
        [this](contribute_atom, std::uint64_t round) { return on_contribute(round, 0); },
        [this](const round_result& result) { on_round_result(result); },
        [this](snapshot_atom) { return on_snapshot(); },
        [this](export_atom) { return on_export(); },
        [this](adopt_atom, const worker_state& state) { return adopt(state); },
        [this](stop_atom) { return on_stop(true); },
        [this](stop_atom, bool settle) { return on_stop(settle); },
        [this](checkpoint_atom) { return on_checkpoint(); },
    };
  }

private:
  const kernels::memory& memory() const { return setup_.ops->memory(); }

  // Waits for what this thread queued on the actor's stream (nothing to wait for on the CPU).
  void settle() const { apply_ops_->synchronize(); }

  // A host copy of n floats of this worker's memory (a view would do on the CPU; these are for
  // snapshots, exports and probes, not the training loop).
  std::vector<float> on_host(const float* values, std::size_t n) const {
    std::vector<float> copy(n);
    apply_ops_->download(copy.data(), values, n * sizeof(float));
    return copy;
  }

  void on_start(float lr_scale) {
    if (!started_ && !stopping_) {
      started_ = true;
      optimizer_.scale_learning_rate(lr_scale);
      idle_since_ = clock_type::now(); // a resumed worker's first wait counts from here
      begin_step_when_due();
    }
  }

  // Gradient buckets: the running step's round may begin now; its reduction waits for backward
  // through the marks.
  void on_announce(std::uint64_t step, std::uint32_t samples) {
    if (!buffer_.computing() || buffer_.steps() + 1 != step || !buffer_.announce(samples))
      return;
    step_ready ready;
    ready.worker = setup_.index;
    ready.step = step;
    ready.samples = samples;
    ready.part = step_report::announcement;
    report(ready);
  }

  // Answered at once, or once the send buffer is released (policy::send_buffer::must_wait).
  caf::result<contribution> on_contribute(std::uint64_t round, std::uint64_t step) {
    if (auto loan = buffer_.on_request(round, step))
      return contribution_of(*loan);
    return deferred_.emplace(round, make_response_promise<contribution>()).first->second;
  }

  contribution contribution_of(const policy::loan& loan) const {
    return contribution{setup_.index, loan.round,   loan.step,       loan.kind,
                        loan.samples, loan.version, loan.in_backward};
  }

  void on_round_result(const round_result& result) {
    pending_results_[result.round] = result;
    write_send_buffer(buffer_.on_result(result.round));
    settle(); // before the buffer goes out again below
    while (auto loan = buffer_.answer_waiting()) {
      auto request = deferred_.find(loan->round);
      request->second.deliver(contribution_of(*loan));
      deferred_.erase(request);
    }
    apply_ready_results();
    deliver_stop();
  }

  parameter_snapshot on_snapshot() const {
    return parameter_snapshot{
        setup_.index, buffer_.steps(),
        std::make_shared<const std::vector<float>>(on_host(params_.data(), params_.size()))};
  }

  caf::result<worker_state> on_export() {
    if (!buffer_.owes_rounds())
      return export_state();
    // Only now: a promise takes the request's answer over.
    exports_.push_back(make_response_promise<worker_state>());
    return exports_.back();
  }

  caf::result<worker_checkpoint> on_checkpoint() {
    checkpoints_.push_back(make_response_promise<worker_checkpoint>());
    auto answer = checkpoints_.back();
    deliver_checkpoints();
    return answer;
  }

  // At rest: a checkpoint of this state is one the worker can go on from. Rounds it still owes
  // (wagma: blended in after a step a stopped worker will not begin) have their results here.
  bool at_rest() const {
    if (!buffer_.at_rest() || !deferred_.empty() || (started_ && !stopping_ && buffer_.step_due()))
      return false;
    return pending_results_.size() == buffer_.owed_rounds().size() && results_in();
  }

  void deliver_checkpoints() {
    if (checkpoints_.empty() || !at_rest() || !relay_caught_up())
      return;
    auto record = std::make_shared<worker_record>();
    const std::size_t count = params_.size();
    record->index = setup_.index;
    record->parameters = on_host(params_.data(), count);
    record->velocity = on_host(optimizer_.state().data(), optimizer_.state().size());
    record->send = on_host(send_.data(), count);
    record->optimizer_steps = optimizer_.steps();
    record->sampler = sampler_.where(); // the compute thread is idle: no step runs
    record->buffer = buffer_;
    for (const auto& [round, result] : pending_results_) {
      pending_result pending{round, result.members, {}};
      if (result.data)
        pending.data = on_host(result.data->data(), count);
      record->pending.push_back(std::move(pending));
    }
    for (auto& promise : checkpoints_)
      promise.deliver(worker_checkpoint{record});
    checkpoints_.clear();
  }

  // Constructor only: the state a checkpoint saved (deliver_checkpoints()).
  void restore(const worker_record& record) {
    const std::size_t count = params_.size();
    HERD_CHECK(record.parameters.size() == count && record.send.size() == count &&
                   record.velocity.size() == optimizer_.state().size(),
               "worker " << setup_.index << ": a checkpointed state of " << record.parameters.size()
                         << " parameters and " << record.velocity.size()
                         << " floats of optimizer state for a model of " << count);
    HERD_CHECK(record.buffer.family() == buffer_.family(),
               "worker " << setup_.index << ": a checkpoint of another algorithm's worker");
    apply_ops_->upload(params_.data(), record.parameters.data(), count * sizeof(float));
    apply_ops_->upload(send_.data(), record.send.data(), count * sizeof(float));
    optimizer_.restore_state(record.velocity.data());
    optimizer_.restore_steps(record.optimizer_steps);
    sampler_.seek(record.sampler);
    buffer_ = record.buffer;
    setup_.model->set_passes(*workspace_, buffer_.steps()); // dropout draws on from there
    if (!record.pending.empty()) {
      // Results to blend in later, in this worker's memory; freed once applied (the pool goes).
      const auto pool = comm::buffer_pool::create(count, memory());
      for (const auto& pending : record.pending) {
        HERD_CHECK(pending.data.empty() || pending.data.size() == count,
                   "worker " << setup_.index << ": a checkpointed round result of "
                             << pending.data.size() << " floats");
        round_result result{pending.round, nullptr, pending.members, std::nanf("")}; // factor kept
        if (!pending.data.empty()) {
          result.data = pool->acquire();
          apply_ops_->upload(result.data->data(), pending.data.data(), count * sizeof(float));
        }
        pending_results_[pending.round] = std::move(result);
      }
    }
    settle();
  }

  // Answered once no step runs and, when `settle`, every round this worker answered has its result
  // here. Across processes a result comes through the worker's node and the coordinator's stop
  // can overtake it; the final evaluation, which follows the stop, must see that round. Without
  // `settle` (the coordinator gave up on rounds in flight) it waits for no result.
  caf::result<worker_stopped> on_stop(bool settle) {
    stopping_ = true;
    stop_settles_ = settle;
    delay_.cancel(); // no step starts after this one: its injected delay may end now
    stop_promise_ = make_response_promise();
    auto answer = *stop_promise_;
    deliver_stop();
    return answer;
  }

  void deliver_stop() {
    if (!stop_promise_ || buffer_.computing() || (stop_settles_ && !results_in()))
      return;
    if (!relay_caught_up())
      return;
    // Last: once the answer is out the owner may destroy what the worker borrowed (its ops).
    report_unsent();
    stop_promise_->deliver(worker_stopped{setup_.index, buffer_.steps()});
    stop_promise_.reset();
  }

  void report(const step_ready& ready) {
    report_step(this, coordinator_, setup_.inbox.get(), ready);
    ++reports_sent_;
  }

  // Across processes the step reports go through the node's relay, two hops to the coordinator,
  // while a stop's or a checkpoint's answer goes straight back: the answer must not overtake a
  // report (a checkpoint would lack an arrival the worker's saved state has used, and a resumed
  // run wait for it forever). True once the relay has passed on every report sent; else it is
  // asked to, and the answers are tried again once it has.
  bool relay_caught_up() {
    if (!setup_.relayed_reports || reports_flushed_ == reports_sent_)
      return true;
    if (!std::exchange(relay_flushing_, true)) {
      const std::uint64_t sent = reports_sent_;
      const auto flushed = [this, sent] {
        relay_flushing_ = false;
        reports_flushed_ = sent;
        deliver_checkpoints();
        deliver_stop(); // last: once it is answered the owner may destroy what the worker borrowed
      };
      request(coordinator_, caf::infinite, flush_atom::value)
          .then([flushed] { flushed(); }, [flushed](caf::error&) { flushed(); });
    }
    return false;
  }

  // Every round answered and not applied yet has its result here (applied at once, or kept for a
  // wagma blend after a step a stopped worker will not begin).
  bool results_in() const {
    const auto& owed = buffer_.owed_rounds();
    return std::all_of(owed.begin(), owed.end(),
                       [this](std::uint64_t round) { return pending_results_.count(round) > 0; });
  }

  void begin_step_when_due() {
    if (started_ && !stopping_ && buffer_.step_due())
      begin_step();
  }

  void begin_step() {
    last_wait_seconds_ = buffer_.steps() == 0 ? 0.0 : seconds_since(idle_since_);
    step_wrote_buffer_ = buffer_.begin_step();
    float* gradient = step_wrote_buffer_ ? send_.data() : grads_.data();
    // While the job runs the actor keeps itself alive, so the job's message below never drops
    // the last reference: the actor is then never destroyed on (and joined from) its own
    // compute thread.
    self_while_computing_ = caf::actor_cast<caf::strong_actor_ptr>(this);
    // The job captures a weak handle: the compute thread must not keep the actor alive.
    caf::actor_addr self_address = address();
    const std::uint64_t step_number = buffer_.steps() + 1;
    comm::gradient_marks* marks = step_wrote_buffer_ ? marks_.get() : nullptr;
    if (marks)
      marks->begin(); // no round reads the buffer now: it was empty and lent to none
    compute_->post([this, self_address, gradient, step_number, marks] {
      caf::anon_send(caf::actor_cast<caf::actor>(self_address), step_done_atom::value,
                     compute_step(self_address, gradient, step_number, marks));
    });
  }

  // One step on the compute thread: the next batch's loss and gradient into `gradient` (its
  // buckets marked as backward finishes them, and announced to the actor at `self_address` as
  // backward begins), the injected delay, and a failure caught as the outcome's error.
  step_outcome compute_step(const caf::actor_addr& self_address, float* gradient,
                            std::uint64_t step_number, comm::gradient_marks* marks) {
    step_outcome outcome;
    const auto start = clock_type::now();
    try {
      const auto& batch = sampler_.next();
      load_batch(batch);
      const kernels::ops& ops = *setup_.ops;
      const auto samples = static_cast<std::uint32_t>(batch.size());
      announcing_progress progress(setup_, step_number, marks,
                                   [self_address, step_number, samples] {
                                     caf::anon_send(caf::actor_cast<caf::actor>(self_address),
                                                    announce_atom::value, step_number, samples);
                                   });
      outcome.loss = setup_.model->loss_and_gradient_with_progress(
          ops, params_.data(), batch_x_, batch_y_, gradient, *workspace_, progress);
      ops.synchronize(); // the gradient is complete before the actor hears of it
      outcome.samples = samples;
      if (setup_.probe) {
        const std::size_t count = setup_.model->parameter_count();
        std::vector<float> host_gradient(count);
        ops.download(host_gradient.data(), gradient, count * sizeof(float));
        setup_.probe->gradient_computed(setup_.index, step_number, host_gradient.data(), count);
      }
      if (setup_.imbalance) {
        const double extra =
            setup_.imbalance->extra_seconds(setup_.index, step_number, seconds_since(start));
        delay_.wait(extra); // cut short by a stop; compute_seconds says how long it took
      }
      if (marks)
        marks->end();
    } catch (const std::exception& failure) {
      outcome.error = failure.what();
      if (marks) // a round reading the gradient fails instead of waiting for the rest
        marks->abandon("worker " + std::to_string(setup_.index) + "'s step " +
                       std::to_string(step_number) + " failed: " + outcome.error);
    }
    outcome.compute_seconds = seconds_since(start);
    return outcome;
  }

  // The batch's rows into batch_x_ (through a host staging tensor when that is on a GPU: the one
  // transfer in of a step) and its labels into batch_y_. Compute thread.
  void load_batch(const std::vector<std::size_t>& batch) {
    if (batch_x_.on_host()) {
      models::gather_batch(*setup_.train, batch, batch_x_, batch_y_);
      return;
    }
    models::gather_batch(*setup_.train, batch, staged_x_, batch_y_);
    batch_x_.reshape(staged_x_.shape());
    setup_.ops->upload(batch_x_.data(), staged_x_.data(), staged_x_.size() * sizeof(float));
  }

  void on_step_done(const step_outcome& outcome) {
    self_while_computing_ = nullptr;
    if (!outcome.error.empty()) {
      quit(make_error(herd_errc::compute_failed,
                      "worker " + std::to_string(setup_.index) + ": " + outcome.error));
      return;
    }
    idle_since_ = clock_type::now();
    const bool announced = buffer_.announced();
    const auto end = buffer_.end_step(outcome.samples);
    if (buffer_.exchanges_models()) // the local optimizer step; its model is what goes out
      optimizer_.step(*apply_ops_, params_.data(), grads_.data());
    if (end.scale != 1.0f) { // late-gradients = scale: the late gradient, where the step wrote it
      auto& late = step_wrote_buffer_ ? send_ : grads_;
      const float* inputs[] = {late.data()};
      apply_ops_->weighted_sum(late.data(), inputs, &end.scale, 1, late.size());
      if (setup_.probe)
        setup_.probe->gradient_scaled(setup_.index, buffer_.steps(), end.scale);
    }
    write_send_buffer(end.write);
    step_ready ready;
    ready.worker = setup_.index;
    ready.step = buffer_.steps();
    ready.compute_seconds = outcome.compute_seconds;
    ready.wait_seconds = last_wait_seconds_;
    ready.loss = outcome.loss;
    ready.samples = outcome.samples;
    ready.late = end.late;
    ready.part = announced ? step_report::after_announcement : step_report::whole;
    report(ready);
    apply_ready_results(); // any that arrived while the step ran; may start the next step
    deliver_stop();
  }

  // What buffer_ decided goes into the send buffer (on the actor's stream: settle() follows).
  void write_send_buffer(policy::buffer_write write) {
    const std::size_t count = send_.size();
    if (write == policy::buffer_write::add_gradient) {
      const float* inputs[] = {send_.data(), grads_.data()};
      const float weights[] = {1.0f, 1.0f};
      apply_ops_->weighted_sum(send_.data(), inputs, weights, 2, count);
    } else if (write != policy::buffer_write::none) {
      const bool model = write == policy::buffer_write::copy_model;
      apply_ops_->copy(send_.data(), model ? params_.data() : grads_.data(), count);
    }
  }

  // Results are applied in round order among the rounds this worker contributed to, and only
  // between steps (on_step_done() comes back here).
  void apply_ready_results() {
    bool model_changed = false;
    // The results applied below go back to their pool only once the device has read them.
    std::vector<comm::shared_buffer> applied;
    while (const auto next = buffer_.next_application()) {
      auto found = pending_results_.find(next->round);
      if (found == pending_results_.end())
        break;
      if (found->second.data) {
        const float* data = found->second.data->data();
        if (!std::isnan(found->second.lr_scale)) // and for the local steps after
          optimizer_.scale_learning_rate(found->second.lr_scale);
        if (next->use == policy::result_use::blend_model)
          blend(data, found->second.members);
        else if (next->use == policy::result_use::replace_model)
          apply_ops_->copy(params_.data(), data, params_.size());
        else
          optimizer_.step(*apply_ops_, params_.data(), data);
        model_changed = model_changed || next->use != policy::result_use::optimizer_step;
        if (setup_.probe)
          probe_round(next->round, data);
        applied.push_back(std::move(found->second.data));
      } // else the round was aborted: every member skips it, the replicas stay in step
      pending_results_.erase(found);
      buffer_.applied(next->round);
    }
    if (model_changed)
      write_send_buffer(buffer_.after_model_changed());
    settle();
    applied.clear();
    deliver_exports();
    begin_step_when_due();
    deliver_checkpoints();
  }

  // The state a worker joining the running job adopts: taken once every round this worker
  // contributed to is applied, so it is the state after a known number of rounds.
  worker_state export_state() const {
    return state_of(*apply_ops_, params_, optimizer_, buffer_.steps(), buffer_.rounds_applied());
  }

  void deliver_exports() {
    if (buffer_.owes_rounds())
      return;
    for (auto& promise : exports_)
      promise.deliver(export_state());
    exports_.clear();
  }

  // Before its first step only: the worker continues from a live peer's state (its parameters,
  // velocity, step counter and rounds applied), so under the gradient algorithms it is a replica
  // of the others again.
  caf::result<bool> adopt(const worker_state& state) {
    const std::size_t count = params_.size();
    if (started_)
      return make_error(herd_errc::join_refused,
                        "worker " + std::to_string(setup_.index) + " has started already");
    if (!state.data ||
        state.data->size() != worker_state::floats_for(count, optimizer_.state().size()))
      return make_error(herd_errc::join_refused,
                        "a model state of " + std::to_string(state.data ? state.data->size() : 0) +
                            " floats for a model of " + std::to_string(count) + " parameters");
    apply_ops_->upload(params_.data(), state.parameters(), count * sizeof(float));
    optimizer_.restore_state(state.optimizer_state(count));
    optimizer_.restore_steps(state.optimizer_steps());
    buffer_.adopt(state.step(), state.rounds_applied());
    idle_since_ = clock_type::now(); // its first step's wait: until the coordinator counts it live
    if (buffer_.exchanges_models())
      write_send_buffer(policy::buffer_write::copy_model);
    settle();
    return true;
  }

  // WAGMA's late member: its round averaged `members` models (its stored one among them) into
  // `average`; with its fresh model the result is (sum + fresh) / (members + 1). Alone in its
  // group (P not a power of two, or its partners lost) the average is its own older model:
  // averaging a group of one changes nothing, and its fresh model stays.
  void blend(const float* average, std::uint32_t members) {
    if (members <= 1)
      return;
    const float n = static_cast<float>(members);
    const float* inputs[] = {params_.data(), average}; // out may alias inputs[0] only
    const float weights[] = {1.0f / (n + 1.0f), n / (n + 1.0f)};
    apply_ops_->weighted_sum(params_.data(), inputs, weights, 2, params_.size());
  }

  // The probe sees host memory: on a GPU the round's result and the parameters after it are
  // copied out (diagnostics and tests only).
  void probe_round(std::uint64_t round, const float* data) {
    const std::size_t count = params_.size();
    if (memory().host_accessible()) {
      setup_.probe->round_applied(setup_.index, round, data, params_.data(), count);
      return;
    }
    const auto host_data = on_host(data, count);
    const auto host_params = on_host(params_.data(), count);
    setup_.probe->round_applied(setup_.index, round, host_data.data(), host_params.data(), count);
  }

  void report_unsent() {
    if (!setup_.probe)
      return;
    // Exchanging models, no gradients are held back: every step went into the model.
    const bool held = buffer_.unsent_in_buffer();
    const bool waiting = buffer_.unsent_in_scratch();
    if (!held && !waiting) {
      setup_.probe->stopped(setup_.index, nullptr, 0);
      return;
    }
    std::vector<float> unsent(send_.size(), 0.0f);
    if (held)
      unsent = on_host(send_.data(), send_.size());
    if (waiting) {
      const auto scratch = on_host(grads_.data(), grads_.size());
      for (std::size_t i = 0; i < unsent.size(); ++i)
        unsent[i] += scratch[i];
    }
    setup_.probe->stopped(setup_.index, unsent.data(), unsent.size());
  }

  worker_setup setup_;
  caf::actor coordinator_;
  const kernels::ops* apply_ops_; // the actor thread's; setup_.ops is the compute thread's
  models::tensor params_;
  models::tensor grads_; // a finished gradient waiting to be added into the send buffer
  models::tensor send_;  // what the data plane reads: attached to it
  models::optimizer optimizer_;
  models::batch_sampler sampler_;                      // compute thread only
  std::unique_ptr<models::model_workspace> workspace_; // compute thread only
  models::tensor batch_x_;                             // compute thread only; in memory()
  models::tensor staged_x_;           // compute thread only; the batch on the host, for a GPU
  std::vector<std::int32_t> batch_y_; // compute thread only

  policy::send_buffer buffer_; // what goes where, and when; send_ is the tensor it stands for
  std::shared_ptr<comm::gradient_marks> marks_; // announce_steps: backward's progress in send_
  bool step_wrote_buffer_ = false; // the running (or last) step computes into send_, not grads_
  bool started_ = false;
  bool stopping_ = false;
  std::map<std::uint64_t, caf::typed_response_promise<contribution>> deferred_; // by round
  std::map<std::uint64_t, round_result> pending_results_;
  clock_type::time_point idle_since_;
  double last_wait_seconds_ = 0.0;
  std::optional<caf::response_promise> stop_promise_;
  bool stop_settles_ = true; // the stop waits for the results of the rounds answered
  // setup_.relayed_reports: the step reports sent, and those the relay has passed on.
  std::uint64_t reports_sent_ = 0, reports_flushed_ = 0;
  bool relay_flushing_ = false;
  std::vector<caf::typed_response_promise<worker_state>> exports_; // waiting for rounds to apply
  std::vector<caf::typed_response_promise<worker_checkpoint>> checkpoints_; // waiting for rest
  caf::strong_actor_ptr self_while_computing_;
  injected_delay delay_; // the compute thread waits in it; outlives compute_

  // Last member: destroyed (joined) first, while everything its job touches still exists.
  std::unique_ptr<compute_thread> compute_;
};

} // namespace

caf::actor spawn_worker(caf::actor_system& system, worker_setup setup,
                        const caf::actor& coordinator) {
  return system.spawn<worker_actor>(std::move(setup), coordinator);
}

} // namespace herd::actors
