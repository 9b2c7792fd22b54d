// One training run in this process; see train_session.hpp.
#include "actors/train_session.hpp"

#include "actors/aggregator.hpp"
#include "actors/control_costs.hpp"
#include "actors/evaluator.hpp"
#include "actors/group_coordinator.hpp"
#include "actors/messages.hpp"
#include "actors/parameter_server.hpp"
#include "actors/run_parts.hpp"
#include "actors/worker.hpp"
#include "comm/buffer_pool.hpp"
#include "comm/data_plane.hpp"
#include "config/loader.hpp"
#include "kernels/cuda/cuda_ops.hpp"
#include "models/sampler.hpp"
#include "models/sequential.hpp"
#include "monitoring/training_metrics.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace herd::actors {

namespace {

// Different streams for sharding and for each worker's shuffles, all from train.seed.
constexpr std::uint64_t shard_stream = 0x5348415244ull;     // "SHARD"
constexpr std::uint64_t shuffle_stream = 0x53485546464cull; // "SHUFFL"
constexpr std::uint64_t bucket_stream = 0x4255434b4554ull;  // "BUCKET"

std::uint64_t mix(std::uint64_t seed, std::uint64_t stream) {
  // splitmix64 of seed ^ stream: nearby seeds give unrelated streams.
  std::uint64_t z = seed ^ stream;
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

} // namespace

std::vector<std::size_t> worker_shard(const config::run_config& config,
                                      std::size_t training_samples, int worker) {
  return models::shard_indices(training_samples, worker, config.train.workers,
                               mix(config.train.seed, shard_stream));
}

std::uint64_t worker_shuffle_seed(const config::run_config& config, int worker) {
  return mix(config.train.seed, shuffle_stream + static_cast<std::uint64_t>(worker));
}

std::shared_ptr<const models::model> make_model(const config::run_config& config,
                                                const models::dataset& data) {
  models::model_choice choice;
  choice.preset = config.model.preset;
  choice.layers = config.model.layers;
  choice.hidden = config.model.hidden;
  try {
    return models::build_model(choice, data.input_shape(), static_cast<std::size_t>(data.classes));
  } catch (const models::model_error& unfit) {
    throw config::invalid_config({{unfit.key(), unfit.what()}});
  }
}

void check_model_fits(const models::model& model, const models::train_test_split& data) {
  const std::string key = "session_options.model";
  const std::string who = "the model \"" + model.name() + "\" (" + model.describe() + ")";
  const std::size_t inputs = models::elements(model.input_shape());
  // "1x28x28 = 784 floats", or "20 floats" for a flat shape.
  auto size_of = [](const models::shape& shape) {
    const std::string count = std::to_string(models::elements(shape)) + " floats";
    return shape.size() > 1 ? models::shape_text(shape) + " = " + count : count;
  };
  for (const models::dataset* set : {&data.train, &data.test}) {
    if (set->features() != inputs)
      throw config::invalid_config(
          {{key, key + ": " + who + " takes samples of " + size_of(model.input_shape()) +
                     ", but the dataset \"" + set->name + "\" has samples of " +
                     size_of(set->input_shape())}});
    if (set->classes > 0 && model.classes() < static_cast<std::size_t>(set->classes))
      throw config::invalid_config(
          {{key, key + ": " + who + " scores " + std::to_string(model.classes()) +
                     " classes, but the dataset \"" + set->name + "\" has " +
                     std::to_string(set->classes) + " (labels 0 to " +
                     std::to_string(set->classes - 1) + "); the model needs at least " +
                     std::to_string(set->classes)}});
  }
  if (model.parameter_count() == 0)
    throw config::invalid_config({{key, key + ": " + who + " has no parameters to train"}});
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0')
    return "localhost";
  return name;
}

std::string index_list(const std::vector<std::int32_t>& indices) {
  std::string text;
  for (std::size_t i = 0; i < indices.size(); ++i)
    text += (i > 0 ? ", " : "") + std::to_string(indices[i]);
  return text;
}

// Each worker holds parameters, gradients and momentum, and the aggregators' result buffers come
// on top.
void check_memory(const config::run_config& config, const models::model& model, int local_workers,
                  bool embedded) {
  const auto parameters = static_cast<double>(model.parameter_count());
  const double bytes = parameters * sizeof(float) * (3.0 * local_workers + 4.0);
  const double available = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                           static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  if (available > 0.0 && bytes > 0.8 * available) {
    const char* key = embedded                       ? "session_options.model"
                      : !config.model.layers.empty() ? "model.layers"
                      : config.model.preset == "mlp" ? "model.hidden"
                                                     : "model.preset";
    char message[320];
    std::snprintf(message, sizeof message,
                  "%s: the model has %.3g parameters; %d workers need about %.1f GiB "
                  "for parameters, gradients and momentum, more than 80%% of this machine's "
                  "%.1f GiB; use smaller layers or fewer workers",
                  key, parameters, local_workers, bytes / (1u << 30), available / (1u << 30));
    throw config::invalid_config({{key, message}});
  }
}

kernels::sgd_hyper optimizer_of(const config::run_config& config) {
  kernels::sgd_hyper optimizer;
  optimizer.learning_rate = static_cast<float>(config.train.lr);
  optimizer.momentum = static_cast<float>(config.train.momentum);
  optimizer.weight_decay = static_cast<float>(config.train.weight_decay);
  return optimizer;
}

worker_setup make_worker_setup(const config::run_config& config, int index,
                               std::shared_ptr<const models::model> model,
                               std::shared_ptr<const models::dataset> train,
                               const kernels::ops* ops, std::shared_ptr<comm::data_plane> plane,
                               std::shared_ptr<const imbalance_model> imbalance,
                               std::shared_ptr<worker_probe> probe) {
  const auto* partial = policy::partial_settings(config);
  const auto grouping = policy::make_policy(config);
  worker_setup setup;
  setup.index = index;
  setup.model = std::move(model);
  setup.shard = worker_shard(config, train->size(), index);
  setup.train = std::move(train);
  setup.batch_size = static_cast<std::size_t>(config.train.batch_size);
  setup.optimizer = optimizer_of(config);
  setup.init_seed = config.train.seed;
  setup.shuffle_seed = worker_shuffle_seed(config, index);
  if (config.data.bucket_by_length)
    setup.bucket_order_seed = mix(config.train.seed, bucket_stream);
  setup.ops = ops;
  setup.plane = std::move(plane);
  setup.accumulate_late_gradients = partial == nullptr || partial->late_gradients == "accumulate";
  setup.exchange_models = grouping->exchanges_models();
  setup.blend_late_models = grouping->blends_late_models();
  setup.blend_on_time_models = grouping->blends_on_time_models();
  setup.take_server_parameters = grouping->applies_at_server();
  setup.global_average_every = config.wagma.sync_every;
  if (imbalance && imbalance->active())
    setup.imbalance = std::move(imbalance);
  setup.probe = std::move(probe);
  return setup;
}

std::size_t epoch_samples(const config::run_config& config, std::size_t training_samples) {
  const auto workers = static_cast<std::size_t>(config.train.workers);
  const auto batch = static_cast<std::size_t>(config.train.batch_size);
  return workers * (training_samples / workers / batch) * batch;
}

int aggregator_count(const config::run_config& config) {
  return std::clamp(config.train.workers / 2, 1, 16);
}

void set_blas_threads_for(const config::run_config& config, int local_workers) {
  int blas_threads = config.train.blas_threads;
  if (blas_threads == 0)
    blas_threads = local_workers == 1 ? 0 : 1;
  kernels::set_blas_threads(blas_threads);
}

std::shared_ptr<monitoring::training_metrics>
make_training_metrics(const config::run_config& config,
                      std::shared_ptr<monitoring::registry> registry, const std::string& node_name,
                      std::vector<std::string> worker_nodes) {
  monitoring::training_metrics::identity who;
  who.job = config.metrics.job;
  who.node = node_name.empty() ? host_name() : node_name;
  who.algorithm = config.train.algorithm;
  who.workers = config.train.workers;
  who.window_seconds = config.metrics.window_seconds;
  who.worker_nodes = std::move(worker_nodes);
  return std::make_shared<monitoring::training_metrics>(std::move(registry), who);
}

// Where the workers compute and the local data plane reduces: the session's ops (CPU), or, with
// train.backend = cuda, CUDA ops made here (each with its own stream on train.device).
struct compute_placement {
  std::vector<std::unique_ptr<kernels::ops>> owned;
  const kernels::ops* reduce = nullptr;
  const kernels::ops* serve = nullptr;    // async's parameter server (in the results' memory);
                                          // on a GPU made only under async
  const kernels::ops* evaluate = nullptr; // the evaluator's: host memory (snapshots are there)
  std::vector<const kernels::ops*> step;  // per worker: its compute thread's
  std::vector<const kernels::ops*> apply; // per worker: its actor's
  std::string description = "cpu";

  static compute_placement make(const config::run_config& config, const kernels::ops& cpu,
                                const std::function<std::unique_ptr<kernels::ops>()>& stream_ops) {
    compute_placement placement;
    const auto workers = static_cast<std::size_t>(config.train.workers);
    placement.evaluate = cpu.memory().host_accessible() ? &cpu : &kernels::cpu_ops();
    if (config.train.backend != "cuda") {
      placement.reduce = &cpu;
      placement.serve = &cpu;
      placement.step.assign(workers, &cpu);
      placement.apply.assign(workers, &cpu);
      placement.description = std::string(cpu.name());
      return placement;
    }
    auto make = [&] {
      placement.owned.push_back(stream_ops ? stream_ops()
                                           : kernels::cuda::make_cuda_ops(config.train.device));
      return placement.owned.back().get();
    };
    auto place = [&] {
      placement.reduce = make();
      if (policy::make_policy(config)->applies_at_server())
        placement.serve = make(); // its own stream: the server steps while reductions run
      for (std::size_t i = 0; i < workers; ++i) {
        placement.step.push_back(make());
        placement.apply.push_back(make());
      }
    };
    if (stream_ops) {
      place();
      placement.description = std::string(placement.reduce->memory().name());
      return placement;
    }
    const int device = config.train.device;
    const auto query = kernels::cuda::query_devices();
    if (query.devices.empty())
      throw config::invalid_config(
          {{"train.backend", "train.backend = cuda: no CUDA device can be used here (" +
                                 query.unavailable_reason + "); use train.backend = cpu"}});
    if (static_cast<std::size_t>(device) >= query.devices.size())
      throw config::invalid_config(
          {{"train.device", "train.device = " + std::to_string(device) + ": this machine has " +
                                std::to_string(query.devices.size()) + " CUDA device(s), 0 to " +
                                std::to_string(query.devices.size() - 1)}});
    place();
    const auto& gpu = query.devices[static_cast<std::size_t>(device)];
    placement.description = "cuda:" + std::to_string(device) + " (" + gpu.name + ")";
    return placement;
  }
};

struct train_session::impl {
  config::run_config config;
  std::shared_ptr<const models::train_test_split> data;
  session_options options;
  std::shared_ptr<const models::model> model;
  std::size_t samples_per_epoch = 0;
  // Before the actor system: destroyed after it, so no actor outlives the ops it borrows.
  compute_placement compute;

  caf::actor_system_config system_config;
  std::unique_ptr<caf::actor_system> system;
  std::shared_ptr<comm::data_plane> plane;
  caf::actor coordinator;
  std::vector<caf::actor> workers;
  std::vector<caf::actor> aggregators;
  caf::actor evaluator;
  caf::actor parameter_server; // async only
  bool started = false;
  bool shut_down = false;

  // Guards the coordinator handle against request_stop() from another thread.
  std::mutex mutex;

  // The run's result (see run_outcome).
  std::shared_ptr<run_outcome> result = std::make_shared<run_outcome>();
  std::vector<std::vector<float>> final_parameters;
  std::vector<float> final_server_parameters;

  void collect_final_parameters() {
    final_parameters.assign(workers.size(), {});
    caf::scoped_actor self{*system};
    if (parameter_server)
      self->request(parameter_server, std::chrono::seconds(10), snapshot_atom::value)
          .receive(
              [&](const parameter_snapshot& snapshot) {
                if (snapshot.parameters)
                  final_server_parameters = *snapshot.parameters;
              },
              [](caf::error&) { /* it failed: the summary says so */ });
    for (std::size_t i = 0; i < workers.size(); ++i) {
      self->request(workers[i], std::chrono::seconds(10), snapshot_atom::value)
          .receive(
              [&](const parameter_snapshot& snapshot) {
                if (snapshot.parameters)
                  final_parameters[i] = *snapshot.parameters;
              },
              [](caf::error&) { /* a lost worker has no parameters */ });
    }
  }

  void shutdown() {
    if (shut_down || !system)
      return;
    shut_down = true;
    auto stop = [](const caf::actor& handle) {
      if (handle)
        caf::anon_send_exit(handle, caf::exit_reason::user_shutdown);
    };
    for (const auto& worker : workers)
      stop(worker);
    for (const auto& aggregator : aggregators)
      stop(aggregator);
    stop(evaluator);
    stop(parameter_server);
    stop(coordinator);
    workers.clear();
    aggregators.clear();
    evaluator = nullptr;
    parameter_server = nullptr;
    {
      std::lock_guard<std::mutex> guard(mutex);
      coordinator = nullptr;
    }
    system->await_all_actors_done();
  }
};

loaded_checkpoint load_checkpoint(const config::run_config& config,
                                  const models::train_test_split& data, const std::string& path,
                                  std::shared_ptr<const models::model> model) {
  loaded_checkpoint loaded;
  loaded.file = checkpoint::resolve(path);
  if (!model)
    model = make_model(config, data.train);
  loaded.state = std::make_shared<const run_checkpoint>(load_for_resume(
      loaded.file, structure_of(config, *model, data.train.size()), model->parameter_count()));
  return loaded;
}

train_session::train_session(config::run_config config,
                             std::shared_ptr<const models::train_test_split> data,
                             session_options options)
    : impl_(std::make_unique<impl>()) {
  if (auto errors = config::validate(config); !errors.empty())
    throw config::invalid_config(std::move(errors));
  if (auto errors = config::validate_against_data(config, data->train.size()); !errors.empty())
    throw config::invalid_config(std::move(errors));
  impl_->config = std::move(config);
  impl_->data = std::move(data);
  impl_->options = std::move(options);
  const auto& train = impl_->config.train;
  if (impl_->options.resume &&
      impl_->options.resume->workers.size() != static_cast<std::size_t>(train.workers))
    throw config::invalid_config(
        {{"train.workers", "train.workers = " + std::to_string(train.workers) +
                               ": the checkpoint to resume from holds " +
                               std::to_string(impl_->options.resume->workers.size()) +
                               " workers"}});
  // The one place the session's model is chosen: the workers, the evaluator, the aggregators'
  // buffers and the checkpoints' structure all take impl_->model.
  const bool embedded = impl_->options.model != nullptr;
  if (embedded) {
    check_model_fits(*impl_->options.model, *impl_->data);
    impl_->model = impl_->options.model;
  } else {
    impl_->model = make_model(impl_->config, impl_->data->train);
  }
  check_initial_parameters(*impl_->model, impl_->options.initial_parameters);
  if (impl_->options.resume && !impl_->options.initial_parameters.empty())
    throw config::invalid_config({config::config_error{
        "session_options.initial_parameters",
        "session_options.initial_parameters: set together with session_options.resume, which "
        "restores the checkpoint's parameters; set one of the two"}});
  if (train.backend == "cpu")
    check_memory(impl_->config, *impl_->model, train.workers, embedded);
  impl_->compute =
      compute_placement::make(impl_->config, *impl_->options.ops, impl_->options.stream_ops);
  impl_->samples_per_epoch = epoch_samples(impl_->config, impl_->data->train.size());
  set_blas_threads_for(impl_->config, train.workers);

  add_message_types(impl_->system_config);
  // 'sharing' keeps control-path latency low on few cores (under CAF 0.17's default, 'stealing',
  // idle scheduler threads sleep, and a blocking request takes about three times as long); the
  // scheduler only runs message handlers, the compute happens on the workers' own threads.
  impl_->system_config.set("scheduler.policy", caf::atom("sharing"));
  impl_->system_config.set("scheduler.max-threads",
                           std::clamp<std::size_t>(std::thread::hardware_concurrency(), 2, 8));
  impl_->system = std::make_unique<caf::actor_system>(impl_->system_config);
  impl_->plane = comm::make_local_plane(*impl_->compute.reduce);
}

train_session::~train_session() {
  if (impl_->started && !impl_->shut_down) {
    request_stop();
    wait_for(std::chrono::seconds(60));
  }
  impl_->shutdown();
}

void train_session::start() {
  auto& state = *impl_;
  if (state.started)
    return;
  state.started = true;
  try {
    spawn_and_start();
  } catch (...) {
    // Half a run (a coordinator without workers, say) must not outlive a failed start.
    state.shutdown();
    throw;
  }
}

void train_session::spawn_and_start() {
  auto& state = *impl_;
  const auto& train = state.config.train;
  auto& system = *state.system;

  coordinator_setup coordination;
  coordination.config = state.config;
  coordination.data_plane = std::string(state.plane->name());
  coordination.compute = state.compute.description;
  coordination.samples_per_epoch = state.samples_per_epoch;
  coordination.observer = state.options.observer;
  coordination.progress_interval = state.options.progress_interval;
  coordination.snapshot_interval = state.options.snapshot_interval;
  if (state.options.metrics)
    coordination.metrics =
        make_training_metrics(state.config, state.options.metrics, state.options.node_name);
  if (state.config.checkpoint.enabled()) {
    auto checkpoints = std::make_shared<checkpoint_options>();
    const auto& settings = state.config.checkpoint;
    checkpoints->directory = settings.dir;
    checkpoints->every_seconds = settings.every_seconds;
    checkpoints->every_rounds = static_cast<std::uint64_t>(settings.every_rounds);
    checkpoints->keep = static_cast<std::size_t>(settings.keep);
    checkpoints->shape = structure_of(state.config, *state.model, state.data->train.size());
    checkpoints->settings = config::to_ini(config::without_secrets(state.config));
    checkpoints->herd_version = HERD_VERSION;
    checkpoints->on_written = state.options.on_checkpoint;
    coordination.checkpoints = std::move(checkpoints);
  }
  coordination.resume = state.options.resume;
  const auto costs = std::make_shared<control_costs>();
  coordination.costs = costs;
  coordination.on_finished = [result = state.result](run_summary summary) {
    result->deliver(std::move(summary));
  };
  {
    std::lock_guard<std::mutex> guard(state.mutex);
    state.coordinator = spawn_group_coordinator(system, std::move(coordination));
  }
  // A coordinator that dies without finishing (a bug, or killed) must not leave wait_for()
  // waiting forever: its exit becomes an error summary.
  run_summary failed;
  failed.algorithm = state.config.train.algorithm;
  failed.workers = state.config.train.workers;
  failed.data_plane = std::string(state.plane->name());
  failed.stop_reason = "error";
  state.coordinator->attach_functor(
      [result = state.result, failed](const caf::error& reason) mutable {
        failed.error = "the group coordinator stopped: " + caf::to_string(reason);
        result->deliver(std::move(failed));
      });

  // One copy of the starting parameters, shared by every replica's setup.
  const auto initial =
      state.options.initial_parameters.empty()
          ? nullptr
          : std::make_shared<const std::vector<float>>(state.options.initial_parameters);
  if (policy::make_policy(state.config)->applies_at_server()) {
    parameter_server_setup serving;
    serving.model = state.model;
    serving.init_seed = state.config.train.seed;
    serving.initial_parameters = initial;
    serving.optimizer = optimizer_of(state.config);
    serving.optimizer.learning_rate =
        static_cast<float>(state.config.async.lr > 0.0 ? state.config.async.lr
                                                       : state.config.train.lr / train.workers);
    serving.ops = state.compute.serve;
    serving.workers = train.workers;
    state.parameter_server = spawn_parameter_server(system, std::move(serving));
  }
  aggregator_setup aggregation;
  aggregation.costs = costs;
  aggregation.parameter_server = state.parameter_server;
  aggregation.plane = state.plane;
  aggregation.results =
      comm::buffer_pool::create(state.model->parameter_count(), state.compute.reduce->memory());
  for (int i = 0; i < aggregator_count(state.config); ++i)
    state.aggregators.push_back(spawn_aggregator(system, aggregation, state.coordinator));

  evaluator_setup evaluation;
  evaluation.model = state.model;
  evaluation.test = std::shared_ptr<const models::dataset>(state.data, &state.data->test);
  evaluation.ops = state.compute.evaluate;
  state.evaluator = spawn_evaluator(system, evaluation);

  const auto train_data = std::shared_ptr<const models::dataset>(state.data, &state.data->train);
  auto imbalance = std::make_shared<const imbalance_model>(state.config.imbalance, train.workers);
  for (int index = 0; index < train.workers; ++index) {
    const auto slot = static_cast<std::size_t>(index);
    auto setup =
        make_worker_setup(state.config, index, state.model, train_data, state.compute.step[slot],
                          state.plane, imbalance, state.options.probe);
    setup.apply_ops = state.compute.apply[slot];
    setup.initial_parameters = initial;
    if (state.options.resume)
      setup.resume = std::shared_ptr<const worker_record>(state.options.resume,
                                                          &state.options.resume->workers[slot]);
    state.workers.push_back(spawn_worker(system, std::move(setup), state.coordinator));
  }
  caf::anon_send(state.coordinator, run_start{state.workers, state.aggregators, state.evaluator,
                                             state.parameter_server});
}

void train_session::request_stop() {
  caf::actor coordinator;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex); // shutdown() may be clearing it
    coordinator = impl_->coordinator;
  }
  if (coordinator)
    caf::anon_send(coordinator, stop_atom::value);
}

std::optional<run_summary> train_session::wait_for(std::chrono::milliseconds timeout) {
  auto& state = *impl_;
  if (!state.result->wait_for(timeout))
    return std::nullopt;
  if (!state.shut_down) {
    state.collect_final_parameters();
    state.shutdown();
  }
  return state.result->summary();
}

run_summary train_session::run() {
  start();
  for (;;)
    if (auto summary = wait_for(std::chrono::hours(1)))
      return *summary;
}

const std::vector<std::vector<float>>& train_session::final_parameters() const {
  return impl_->final_parameters;
}

const std::vector<float>& train_session::final_server_parameters() const {
  return impl_->final_server_parameters;
}

std::size_t train_session::samples_per_epoch() const {
  return impl_->samples_per_epoch;
}

} // namespace herd::actors
