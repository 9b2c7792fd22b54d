// The job actor, which supervises the run it spawned; see job_actor.hpp (the run's preparation:
// job_plan.cpp; spawning its actors: job_parts.cpp).
#include "actors/job_actor.hpp"

#include "actors/evaluation_schedule.hpp"
#include "actors/job_parts.hpp"
#include "actors/job_plan.hpp"
#include "actors/messages.hpp"
#include "actors/run_counters.hpp"
#include "actors/run_parts.hpp"
#include "actors/run_so_far.hpp"
#include "comm/data_plane.hpp"
#include "herd/config.hpp"
#include "monitoring/training_metrics.hpp"

#include <caf/event_based_actor.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace herd::actors {

/// The job actor's own timer: the run's actors had this long to exit after the run ended.
using parts_timeout_atom = caf::atom_constant<caf::atom("partstime")>;

// -- the job actor --------------------------------------------------------------------------------

namespace {

// What the end of a job waits for: each worker's (and the server's) last parameters, then every
// actor of the run to exit (a worker finishing a long step on a loaded machine takes seconds).
constexpr std::chrono::seconds final_parameters_reply{10};
constexpr std::chrono::seconds parts_exit{60};

class job_actor : public caf::event_based_actor {
public:
  job_actor(caf::actor_config& config, std::shared_ptr<job_plan> plan,
            std::vector<caf::actor> subscribers)
      : caf::event_based_actor(config), plan_(std::move(plan)), shared_(plan_->shared),
        setup_(plan_->setup), first_subscribers_(std::move(subscribers)) {}

  const char* name() const override { return "herd.job"; }

  caf::behavior make_behavior() override {
    // A running job is its own owner: a caller may keep only the facade (whose reference is
    // weak), or drop the handle, and the run still goes on to its end. Let go in on_exit.
    keeps_itself_ = caf::actor_cast<caf::actor>(this);
    set_down_handler([this](caf::down_msg& down) { on_down(down); });
    set_exit_handler([this](caf::exit_msg& exit) { on_exit_message(exit); });
    for (const auto& listener : first_subscribers_)
      on_subscribe(listener);
    first_subscribers_.clear();
    return starting();
  }

private:
  // -- the phases: each answers what it can (CAF's become), and status and subscriptions -------

  // Until launch_job hands over the run's actors.
  caf::behavior starting() {
    return caf::message_handler{
        [this](job_parts& parts) { on_parts(std::move(parts)); },
        [this](herd::stop_job_atom) { stop_requested_ = true; },
    }
        .or_else(common());
  }

  // Training, until the coordinator's summary.
  caf::behavior running() {
    return caf::message_handler{
        [this](herd::stop_job_atom) { on_stop(); },
        [this](const run_ended& ended) { on_run_ended(ended); },
    }
        .or_else(events())
        .or_else(common());
  }

  // The run ended: its final parameters are collected and its actors shut down.
  caf::behavior ending() {
    return caf::message_handler{
        [](herd::stop_job_atom) { /* it is ending already */ },
        [this](parts_timeout_atom) { on_parts_timeout(); },
    }
        .or_else(events())
        .or_else(common());
  }

  caf::message_handler events() {
    return {
        [this](const job_progress& event) { on_progress(event); },
        [this](const job_evaluation& event) { on_evaluation(event); },
        [this](const job_notice& event) { on_notice(event); },
    };
  }

  caf::message_handler common() {
    return {
        [this](herd::status_atom) { return on_status(); },
        [this](herd::subscribe_atom, const caf::actor& listener) { return on_subscribe(listener); },
        [this](herd::unsubscribe_atom, const caf::actor& listener) { on_unsubscribe(listener); },
    };
  }

  // -- the handlers ------------------------------------------------------------------------------

  job_status on_status() const {
    std::lock_guard<std::mutex> guard(shared_->mutex);
    return shared_->status;
  }

  job_status on_subscribe(const caf::actor& listener) {
    if (listener &&
        std::find(subscribers_.begin(), subscribers_.end(), listener) == subscribers_.end()) {
      subscribers_.push_back(listener);
      monitor(listener);
    }
    return on_status();
  }

  void on_unsubscribe(const caf::actor& listener) {
    subscribers_.erase(std::remove(subscribers_.begin(), subscribers_.end(), listener),
                       subscribers_.end());
    demonitor(listener);
  }

  void on_parts(job_parts parts) {
    coordinator_ = parts.coordinator;
    run_ = parts.run;
    for (const auto& part : all_parts()) {
      monitor(part);
      parts_alive_.insert(part.address());
    }
    update([](job_status& status) { // not over a stop() that came first
      if (status.state == job_state::starting)
        status.state = job_state::running;
    });
    send(coordinator_, std::move(parts.run));
    become(running());
    if (stop_requested_)
      on_stop();
  }

  void on_stop() {
    stop_requested_ = true;
    update([](job_status& status) {
      if (status.state == job_state::starting || status.state == job_state::running)
        status.state = job_state::stopping;
    });
    send(coordinator_, stop_atom::value);
  }

  void on_progress(const job_progress& event) {
    so_far_.heard(event.progress);
    update([&](job_status& status) {
      const auto& now = event.progress;
      status.rounds = now.rounds;
      status.steps = now.steps;
      status.epochs_done = now.epoch;
      status.elapsed_seconds = now.elapsed_seconds;
      if (now.test_accuracy)
        status.test_accuracy = now.test_accuracy;
      if (now.straggler)
        status.straggler = now.straggler;
    });
    if (auto* observer = setup_.session.observer)
      observer->on_progress(event.progress);
    call("on_progress", setup_.on_progress, event.progress);
    tell_subscribers(event);
  }

  void on_evaluation(const job_evaluation& event) {
    so_far_.heard(event.evaluation);
    update([&](job_status& status) { status.test_accuracy = event.evaluation.test_accuracy; });
    if (auto* observer = setup_.session.observer)
      observer->on_evaluation(event.evaluation);
    call("on_evaluation", setup_.on_evaluation, event.evaluation);
    tell_subscribers(event);
  }

  void on_notice(const job_notice& event) {
    if (auto* observer = setup_.session.observer)
      observer->on_notice(event.text);
    call("on_notice", setup_.on_notice, event.text);
    tell_subscribers(event);
  }

  void on_run_ended(const run_ended& ended) {
    summary_ = ended.summary;
    kept_parameters_ = ended.kept;
    update([](job_status& status) { status.state = job_state::stopping; });
    become(ending());
    collect_final_parameters();
  }

  void on_down(const caf::down_msg& down) {
    if (std::find(subscribers_.begin(), subscribers_.end(), down.source) != subscribers_.end()) {
      subscribers_.erase(std::remove(subscribers_.begin(), subscribers_.end(), down.source),
                         subscribers_.end());
      return;
    }
    if (parts_alive_.erase(down.source) == 0)
      return;
    if (!summary_ && down.source == coordinator_.address()) {
      // A coordinator that dies without finishing (a bug, or killed) must not leave the job
      // waiting forever: its exit becomes an error summary.
      fail("the group coordinator stopped: " + system().render(down.reason));
      return;
    }
    if (shutting_down_ && parts_alive_.empty())
      finish();
  }

  // An exit message (the service shutting the job down, or a linked actor failing) ends the job
  // at once, without a final evaluation (on_exit). A user_shutdown is on purpose: interrupted.
  void on_exit_message(const caf::exit_msg& exit) {
    if (!summary_) {
      const bool deliberate = exit.reason == caf::exit_reason::user_shutdown;
      auto ended =
          error_summary(deliberate ? "" : "the job was shut down: " + system().render(exit.reason));
      ended.stop_reason = deliberate ? stop_cause::interrupted : ended.stop_reason;
      summary_ = std::make_shared<const run_summary>(std::move(ended));
    }
    quit(exit.reason);
  }

  // However the job actor ends before its run did (an exit message, a kill, which no handler
  // sees, or a bug): the run's actors go with it, and the end is heard as any end is, so that
  // wait() never waits forever.
  void on_exit() override {
    if (!finished_) {
      for (const auto& part : all_parts())
        caf::anon_send_exit(part, caf::exit_reason::user_shutdown);
      if (!summary_)
        summary_ = std::make_shared<const run_summary>(error_summary("the job actor was killed"));
      complete();
    }
    // The parts' timeout, a message to itself, keeps this object up to a minute after the job
    // ended: what it refers to goes now (the run's actors, the evaluator's thread among them,
    // and through the plan the job's data), not once the timeout has fired.
    run_ = {};
    coordinator_ = nullptr;
    subscribers_.clear();
    worker_parameters_.clear();
    server_parameters_.clear();
    kept_parameters_.reset();
    plan_.reset(); // setup_ refers into it: no handler runs after this
    keeps_itself_ = nullptr;
  }

  void on_parts_timeout() {
    if (finished_)
      return;
    notice_here(std::to_string(parts_alive_.size()) + " of the run's actors did not exit within " +
                std::to_string(parts_exit.count()) + " s of its end; the job ends without them");
    parts_alive_.clear();
    finish();
  }

  // -- ending ------------------------------------------------------------------------------------

  // Every worker's parameters, and under async the server's, as the run left them; a part that
  // does not answer within final_parameters_reply has none (a lost worker).
  void collect_final_parameters() {
    worker_parameters_.assign(run_.workers.size(), {});
    awaiting_ = run_.workers.size() + (run_.parameter_server ? 1 : 0);
    if (awaiting_ == 0) {
      shut_down_parts();
      return;
    }
    auto answered = [this] {
      if (--awaiting_ == 0)
        shut_down_parts();
    };
    if (run_.parameter_server)
      request(run_.parameter_server, final_parameters_reply, snapshot_atom::value)
          .then(
              [this, answered](const parameter_snapshot& snapshot) {
                if (snapshot.parameters)
                  server_parameters_ = *snapshot.parameters;
                answered();
              },
              [answered](caf::error&) { answered(); }); // the summary says what failed
    for (std::size_t i = 0; i < run_.workers.size(); ++i)
      request(run_.workers[i], final_parameters_reply, snapshot_atom::value)
          .then(
              [this, i, answered](const parameter_snapshot& snapshot) {
                if (snapshot.parameters)
                  worker_parameters_[i] = *snapshot.parameters;
                answered();
              },
              [answered](caf::error&) { answered(); }); // a lost worker has no parameters
  }

  // The job ends once every actor of the run has exited: they borrow the plan's ops and plane.
  void shut_down_parts() {
    shutting_down_ = true;
    for (const auto& part : all_parts())
      caf::anon_send_exit(part, caf::exit_reason::user_shutdown);
    if (parts_alive_.empty()) {
      finish();
      return;
    }
    delayed_send(this, parts_exit, parts_timeout_atom::value);
  }

  void finish() {
    if (finished_)
      return;
    complete();
    quit();
  }

  // The results go to the facades, the callbacks and the subscribers; then wait() returns.
  void complete() {
    if (finished_)
      return;
    finished_ = true;
    if (!callback_error_.empty() && summary_->stop_reason != stop_cause::error) // as status() says
      summary_ = std::make_shared<const run_summary>(failed_with(*summary_, callback_error_));
    const auto final_parameters = trained_model(worker_parameters_, server_parameters_);
    job_status final_status;
    {
      std::lock_guard<std::mutex> guard(shared_->mutex);
      auto& status = shared_->status;
      const auto& summary = *summary_;
      const bool failed = summary.stop_reason == stop_cause::error || !callback_error_.empty();
      status.state = failed ? job_state::failed : job_state::finished;
      status.error = !callback_error_.empty() ? callback_error_ : summary.error;
      status.rounds = std::max(status.rounds, summary.rounds);
      status.steps = std::max(status.steps, summary.steps);
      status.epochs_done = std::max(status.epochs_done, summary.epochs);
      status.elapsed_seconds = std::max(status.elapsed_seconds, summary.wall_seconds);
      if (summary.final_test_accuracy)
        status.test_accuracy = summary.final_test_accuracy;
      shared_->summary = summary;
      auto replicas = std::exchange(worker_parameters_, {});
      auto server = std::exchange(server_parameters_, {});
      if (setup_.keep_replicas)
        std::tie(shared_->worker_parameters, shared_->server_parameters) =
            std::forward_as_tuple(std::move(replicas), std::move(server));
      shared_->kept_parameters = kept_parameters_ ? *kept_parameters_ : std::vector<float>{};
      shared_->final_parameters = final_parameters;
      shared_->results_in = true;
      final_status = status;
    }
    // The run's actors have exited (or are told to): the job lets go of its name, free for the
    // next job once the coordinator has too (the plan may live a little longer, in their cleanup).
    plan_->claims.clear();
    if (!shared_->abandoned.load() &&
        call("on_finished", setup_.on_finished, *summary_, after_a_throw::called)) {
      // The summary on_finished was given cannot say it threw; the one wait() returns does,
      // without failing a run that ended well.
      auto noted = *summary_;
      noted.error += (noted.error.empty() ? "" : "; ") + callback_error_;
      summary_ = std::make_shared<const run_summary>(std::move(noted));
      std::lock_guard<std::mutex> guard(shared_->mutex);
      shared_->summary = *summary_;
    }
    tell_subscribers(job_finished{shared_->name, final_status, summary_});
    subscribers_.clear();
    {
      std::lock_guard<std::mutex> guard(shared_->mutex);
      shared_->ended = true;
    }
    shared_->ended_signal.notify_all();
  }

  void fail(const std::string& error) {
    summary_ = std::make_shared<const run_summary>(error_summary(error));
    become(ending());
    collect_final_parameters();
  }

  // -- helpers -----------------------------------------------------------------------------------

  std::vector<caf::actor> all_parts() const {
    std::vector<caf::actor> parts = run_.workers;
    parts.insert(parts.end(), run_.aggregators.begin(), run_.aggregators.end());
    for (const auto* part : {&run_.evaluator, &run_.parameter_server, &coordinator_})
      if (*part)
        parts.push_back(*part);
    return parts;
  }

  run_summary error_summary(const std::string& error) const {
    run_summary failed;
    failed.algorithm = plan_->config.train.algorithm;
    failed.workers = plan_->config.train.workers;
    failed.data_plane = std::string(plan_->plane->name());
    failed.compute = plan_->compute.description;
    failed.stop_reason = stop_cause::error;
    failed.error = error;
    return so_far_.summary(std::move(failed));
  }

  template <class Change>
  void update(Change change) {
    std::lock_guard<std::mutex> guard(shared_->mutex);
    change(shared_->status);
  }

  template <class Event>
  void tell_subscribers(const Event& event) {
    for (const auto& listener : subscribers_)
      send(listener, event);
  }

  // A notice of the job's own, as the coordinator's reach everyone.
  void notice_here(const std::string& text) { on_notice(job_notice{shared_->name, text}); }

  // Whether a callback is still called once another has thrown: only on_finished is.
  enum class after_a_throw { skipped, called };

  // A caller's callback that throws would kill this actor (an exception in a handler ends it);
  // instead the job stops and ends failed, naming the callback (`which`), and of its callbacks
  // only on_finished comes after. Returns whether this call threw.
  template <class Callback, class Argument>
  bool call(const char* which, const Callback& callback, const Argument& argument,
            after_a_throw after = after_a_throw::skipped) {
    if (!callback || (!callback_error_.empty() && after == after_a_throw::skipped))
      return false;
    const bool failed_before = !callback_error_.empty();
    shared_->calling.store(std::this_thread::get_id()); // every exception is caught below
    try {
      callback(argument);
    } catch (const std::exception& thrown) {
      callback_failed(std::string("job_options.") + which + " threw: " + thrown.what());
    } catch (...) {
      callback_failed(std::string("job_options.") + which + " threw a non-standard exception");
    }
    shared_->calling.store(std::thread::id{});
    return !failed_before && !callback_error_.empty();
  }

  void callback_failed(const std::string& error) {
    if (!callback_error_.empty())
      return;
    callback_error_ = error;
    if (coordinator_ && !summary_)
      send(coordinator_, stop_atom::value);
  }

  // -- state -------------------------------------------------------------------------------------
  std::shared_ptr<job_plan> plan_;
  std::shared_ptr<herd::job::shared_state> shared_;
  const job_setup& setup_; // plan_'s
  std::vector<caf::actor> subscribers_;
  std::vector<caf::actor> first_subscribers_; // spawn_job's, subscribed as the actor starts
  caf::actor keeps_itself_; // until it exits: nobody else need hold the job while it runs
  caf::actor coordinator_;
  run_start run_;
  std::set<caf::actor_addr> parts_alive_;
  bool stop_requested_ = false;
  bool shutting_down_ = false;
  bool finished_ = false;
  std::string callback_error_;
  run_so_far so_far_;
  std::shared_ptr<const run_summary> summary_;
  std::shared_ptr<const std::vector<float>> kept_parameters_; // null: the workers' last
  std::size_t awaiting_ = 0; // final parameters not yet answered
  std::vector<std::vector<float>> worker_parameters_;
  std::vector<float> server_parameters_;
};

} // namespace

job_handle launch_job(caf::actor_system& system, std::shared_ptr<job_plan> plan,
                      std::vector<caf::actor> subscribers) {
  require_message_types(system);
  if (!plan || plan->launched)
    throw std::logic_error("herd::actors::launch_job: a prepared job is launched once");
  plan->launched = true;
  auto shared = plan->shared;
  auto job = system.spawn<job_actor>(plan, std::move(subscribers));
  shared->actor = job.address();
  spawn_parts(system, plan, job);
  return {job, std::make_shared<herd::job>(std::move(shared))};
}

} // namespace herd::actors
