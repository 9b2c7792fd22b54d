// The public job API (herd/job.hpp, herd/job_actor.hpp): the facade, spawn_job in the caller's
// actor system, job::start in one of its own, and the registration of Herd's messages.
#include "herd/job.hpp"

#include "actors/job_actor.hpp"
#include "actors/messages.hpp"
#include "actors/scheduling.hpp"
#include "herd/config.hpp"
#include "herd/job_actor.hpp"

#include <caf/logger.hpp>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "checkpoint/format.hpp"

namespace herd {

const char* to_string(job_state state) {
  switch (state) {
  case job_state::starting:
    return "starting";
  case job_state::running:
    return "running";
  case job_state::stopping:
    return "stopping";
  case job_state::finished:
    return "finished";
  case job_state::failed:
    return "failed";
  }
  return "unknown";
}

void add_message_types(caf::actor_system_config& config) {
  // The job messages of herd/job_actor.hpp stay in the process: they need no registration.
  actors::add_message_types(config);
}

void use_herd_scheduler(caf::actor_system_config& config, std::size_t threads) {
  actors::use_herd_scheduler(config, threads);
}

void actors::require_message_types(caf::actor_system& system) {
  if (!system.types().make_value("herd.run_start"))
    throw std::logic_error(
        "herd::spawn_job: this actor system was made without Herd's message types; call "
        "herd::add_message_types(config) on its actor_system_config before constructing the "
        "actor_system");
}

namespace {

// The threads that shut down the systems of jobs destroyed from their own callbacks (~job), for
// job::await_detached_shutdowns. Never destroyed: such a thread may outlive main()'s statics.
struct detached_shutdowns {
  std::mutex mutex;
  std::condition_variable done;
  std::size_t count = 0;

  static detached_shutdowns& instance() {
    static auto* const shutdowns = new detached_shutdowns;
    return *shutdowns;
  }
};

// More scheduler threads than this for one job's handlers is a mistake, not a setting.
constexpr std::size_t max_scheduler_threads = 256;

actors::job_setup setup_from(const config::run_config& config,
                             const std::shared_ptr<const models::train_test_split>& data,
                             job_options options) {
  if (!data)
    throw config::invalid_config({config::config_error{
        "data", "data: no dataset (a null train_test_split); load one (herd/data.hpp) or make "
                "your own (docs/embedding.md)"}});
  if (options.progress_interval <= std::chrono::milliseconds(0))
    throw config::invalid_config({config::config_error{
        "job_options.progress_interval",
        "job_options.progress_interval = " + std::to_string(options.progress_interval.count()) +
            " ms: must be positive (progress is reported once per interval)"}});
  actors::job_setup setup;
  setup.session.model = std::move(options.model);
  setup.session.metrics = std::move(options.metrics);
  setup.session.progress_interval = options.progress_interval;
  setup.name = std::move(options.name);
  if (!options.blas_threads) {
    setup.blas_threads = actors::blas_threads_for(config, config.train.workers);
    setup.blas_threads_chosen = config.train.blas_threads == 0; // a count the config gives is set
  }
  else if (*options.blas_threads >= 0)
    setup.blas_threads = *options.blas_threads;
  setup.on_progress = std::move(options.on_progress);
  setup.on_evaluation = std::move(options.on_evaluation);
  setup.on_notice = std::move(options.on_notice);
  setup.on_finished = std::move(options.on_finished);
  if (options.initial_parameters)
    setup.session.initial_parameters = *options.initial_parameters;
  setup.initial_parameters_key = "job_options.initial_parameters";
  setup.model_key = "job_options.model";
  setup.resume_key = "job_options.resume_from";
  return setup;
}

// Checkpoints go where they may: an unusable directory, or another run's, is refused as herd
// train refuses it (invalid_config, key checkpoint.dir).
void check_checkpoint_dir(const config::run_config& config, const std::string& resume_path) {
  if (!config.checkpoint.enabled())
    return;
  if (auto problem = checkpoint::run_directory_problem(config.checkpoint.dir, resume_path,
                                                       "job_options.resume_from");
      !problem.empty())
    throw config::invalid_config({config::config_error{"checkpoint.dir", std::move(problem)}});
}

// The checkpoint options.resume_from names, read for this run (throws checkpoint_error).
void resume_from(const std::string& path, const config::run_config& config,
                 const models::train_test_split& data, actors::job_setup& setup) {
  if (path.empty())
    return;
  setup.session.resume = actors::load_checkpoint(config, data, path, setup.session.model).state;
  setup.session.resume_path = path;
  setup.session.resume_option = "job_options.resume_from";
}

} // namespace

job_handle spawn_job(caf::actor_system& system, config::run_config config,
                     std::shared_ptr<const models::train_test_split> data, job_options options) {
  return spawn_job(system, std::move(config), std::move(data), std::move(options), {});
}

job_handle spawn_job(caf::actor_system& system, config::run_config config,
                     std::shared_ptr<const models::train_test_split> data, job_options options,
                     std::vector<caf::actor> subscribers) {
  actors::require_message_types(system); // before anything of the job exists (its metrics)
  if (options.scheduler_threads != 0)
    throw config::invalid_config({config::config_error{
        "job_options.scheduler_threads",
        "job_options.scheduler_threads = " + std::to_string(options.scheduler_threads) +
            ": a spawned job runs on your actor system's scheduler; size that one "
            "(scheduler.max-threads, or herd::use_herd_scheduler(config, threads))"}});
  const std::string resume_path = options.resume_from;
  auto setup = setup_from(config, data, std::move(options));
  check_checkpoint_dir(config, resume_path);
  resume_from(resume_path, config, *data, setup);
  return actors::launch_job(
      system, actors::prepare_job(std::move(config), std::move(data), std::move(setup)),
      std::move(subscribers));
}

// -- the facade ----------------------------------------------------------------------------------

struct job::own_system {
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  caf::actor actor;
};

job::job(std::shared_ptr<shared_state> state) : state_(std::move(state)) {
  if (!state_)
    throw std::invalid_argument("herd::job: made without a job's state; a job comes from "
                                "herd::job::start or herd::spawn_job");
}

std::unique_ptr<job> job::start(config::run_config config,
                                std::shared_ptr<const models::train_test_split> data,
                                job_options options) {
  const std::string resume_path = options.resume_from;
  const std::size_t scheduler_threads = options.scheduler_threads;
  if (scheduler_threads > max_scheduler_threads)
    throw config::invalid_config({config::config_error{
        "job_options.scheduler_threads",
        "job_options.scheduler_threads = " + std::to_string(scheduler_threads) + ": at most " +
            std::to_string(max_scheduler_threads) +
            " (they only run message handlers; 0 = one per core, from 2 to 8)"}});
  auto setup = setup_from(config, data, std::move(options));
  check_checkpoint_dir(config, resume_path);
  resume_from(resume_path, config, *data, setup);
  // Checked and prepared before any thread starts.
  auto plan = actors::prepare_job(std::move(config), std::move(data), std::move(setup));
  auto own = std::make_unique<own_system>();
  add_message_types(own->config);
  // As train_session's: work sharing keeps control-path latency low on few cores; the scheduler
  // only runs message handlers, the compute happens on the workers' own threads.
  actors::use_herd_scheduler(own->config, scheduler_threads);
  own->system = std::make_unique<caf::actor_system>(own->config);
  auto handle = actors::launch_job(*own->system, std::move(plan));
  own->actor = handle.actor;
  auto started = std::unique_ptr<job>(new job(handle.facade->state_));
  started->own_ = std::move(own);
  // Making the system, and every spawn, made its logger this thread's current one: a reference
  // that the system's destructor waits to see released. Run on a thread of its own (a job
  // destroyed in its own callback), the destructor would wait until this thread made another.
  caf::logger::set_current_actor_system(nullptr);
  return started;
}

job::~job() {
  if (!own_)
    return; // a spawned job's facade: the job runs on in the caller's system
  if (state_->calling.load() == std::this_thread::get_id()) {
    // Destroyed from one of its own callbacks (a service dropping a finished job from its table
    // in on_finished): the job waits for the callback, and its actor system cannot be shut down
    // from one of its own threads. A thread of its own does that once the job has ended.
    stop();
    auto& pending = detached_shutdowns::instance();
    {
      std::lock_guard<std::mutex> guard(pending.mutex);
      ++pending.count;
    }
    std::thread([own = std::move(own_), state = state_, &pending]() mutable {
      {
        std::unique_lock<std::mutex> lock(state->mutex);
        state->ended_signal.wait(lock, [&state] { return state->ended; });
      }
      own->actor = nullptr;
      own->system->await_all_actors_done();
      // The system and the callbacks (what they capture) go before the count says so.
      own.reset();
      state.reset();
      std::lock_guard<std::mutex> guard(pending.mutex);
      --pending.count;
      pending.done.notify_all();
    }).detach();
    return;
  }
  if (!wait_for(std::chrono::milliseconds(0))) {
    stop();
    if (!wait_for(std::chrono::seconds(60)))
      abort();
  }
  own_->actor = nullptr;
  own_->system->await_all_actors_done();
}

bool job::await_detached_shutdowns(std::chrono::milliseconds timeout) {
  auto& pending = detached_shutdowns::instance();
  std::unique_lock<std::mutex> lock(pending.mutex);
  return pending.done.wait_for(lock, timeout, [&pending] { return pending.count == 0; });
}

job_status job::status() const {
  std::lock_guard<std::mutex> guard(state_->mutex);
  return state_->status;
}

namespace {

// The job actor of a job that is to stop, if it still runs; status() says stopping from now on,
// as the job actor will once it hears of it.
caf::actor stopping(job::shared_state& state) {
  caf::actor_addr address;
  {
    std::lock_guard<std::mutex> guard(state.mutex);
    address = state.actor;
    auto& now = state.status.state;
    if (now == job_state::starting || now == job_state::running)
      now = job_state::stopping;
  }
  return caf::actor_cast<caf::actor>(address);
}

} // namespace

void job::stop() {
  if (auto actor = stopping(*state_))
    caf::anon_send(actor, stop_job_atom::value);
}

void job::abort() {
  if (auto actor = stopping(*state_))
    caf::anon_send_exit(actor, caf::exit_reason::user_shutdown);
}

actors::run_summary job::wait() {
  // The job's own thread waiting for the job hung for good (and its destructor with it).
  if (state_->calling.load() == std::this_thread::get_id())
    throw std::logic_error("herd::job::wait() called from one of the job's own callbacks: the job "
                           "cannot end while its callback waits for it; use status() or "
                           "summary() there, and wait() on another thread");
  for (;;)
    if (auto summary = wait_for(std::chrono::hours(1)))
      return *summary;
}

std::optional<actors::run_summary> job::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->ended_signal.wait_for(lock, timeout, [this] { return state_->ended; }))
    return std::nullopt;
  return state_->summary;
}

std::optional<actors::run_summary> job::summary() const {
  std::lock_guard<std::mutex> guard(state_->mutex);
  if (!state_->results_in)
    return std::nullopt;
  return state_->summary;
}

std::vector<float> job::final_parameters() const {
  std::lock_guard<std::mutex> guard(state_->mutex);
  return state_->results_in ? state_->final_parameters : std::vector<float>{};
}

std::vector<float> job::kept_parameters() const {
  std::lock_guard<std::mutex> guard(state_->mutex);
  if (!state_->results_in)
    return {};
  return state_->kept_parameters.empty() ? state_->final_parameters : state_->kept_parameters;
}

std::shared_ptr<const models::model> job::model() const {
  return state_->model;
}

const std::string& job::name() const {
  return state_->name;
}

} // namespace herd
