// A run checked and made ready to spawn; see job_plan.hpp and job_actor.hpp.
#include "actors/job_plan.hpp"

#include "actors/checkpoint_writer.hpp"
#include "actors/evaluator.hpp"
#include "actors/run_parts.hpp"
#include "herd/config.hpp"
#include "herd/dataset_sources.hpp"
#include "herd/sequential.hpp"
#include "kernels/cuda/cuda_ops.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "policy/policy.hpp"

namespace herd::actors {

namespace {

// The names claimed in each scope, keyed by address: a claim holds its scope, so no other object
// takes that address while a claim on it lives.
using name_table = std::map<const void*, std::set<std::string>>;

std::mutex& table_mutex() {
  static std::mutex mutex;
  return mutex;
}

name_table& table() {
  static name_table names;
  return names;
}

} // namespace

compute_placement
compute_placement::make(const config::run_config& config, const kernels::ops& cpu,
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
    // Evaluations too, on a stream of their own: on the CPU a CNN's evaluation took longer than
    // the whole run on an H200.
    placement.evaluate = make();
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

namespace {

// The jobs of this process whose actors have not all let go of their plan.
std::atomic<int> running_jobs{0};

// Counts a job as running until the last copy goes; `others`: the jobs running before it, read
// in the same step (two jobs starting at once do not both see none).
std::shared_ptr<const void> count_running(int& others) {
  others = running_jobs.fetch_add(1);
  return std::shared_ptr<const void>(nullptr, [](const void*) { --running_jobs; });
}

} // namespace

job_claim::job_claim(std::shared_ptr<const void> scope, std::string name,
                     config::config_error refusal)
    : scope_(std::move(scope)), name_(std::move(name)) {
  std::lock_guard<std::mutex> guard(table_mutex());
  if (!table()[scope_.get()].insert(name_).second)
    throw config::invalid_config({std::move(refusal)});
}

job_claim::~job_claim() {
  std::lock_guard<std::mutex> guard(table_mutex());
  auto& names = table()[scope_.get()];
  names.erase(name_);
  if (names.empty())
    table().erase(scope_.get());
}

std::shared_ptr<job_plan> prepare_job(config::run_config config,
                                      std::shared_ptr<const models::train_test_split> data,
                                      job_setup setup) {
  if (auto errors = config::validate_run(config); !errors.empty())
    throw config::invalid_config(std::move(errors));
  // A split given without the validation set data.validation-fraction asks for (load_dataset
  // holds it out; dataset_from_memory does not): held out here, from a copy, as load_dataset would.
  if (config.data.validation_fraction > 0.0 && data->validation.size() == 0) {
    auto held = std::make_shared<models::train_test_split>(*data);
    try {
      models::hold_out_validation(*held, config.data.validation_fraction, config.train.seed);
    } catch (const models::data_error& too_few) { // as every other refusal at the start
      throw config::invalid_config(
          {config::config_error{"data.validation-fraction", too_few.what()}});
    }
    data = std::move(held);
  }
  for (const auto* set : {&data->train, &data->test})
    if (set->size() == 0)
      throw config::invalid_config({config::config_error{
          "data", std::string{"data: the "} + (set == &data->train ? "training" : "test") + " set" +
                      (set->name.empty() ? "" : " \"" + set->name + "\"") +
                      " is empty; a run needs samples in both"}});
  // The split's structs are public: one built by hand is checked as dataset_from_memory checks
  // its input (labels of more samples than there are rows were read past the features' end).
  for (const auto* set : {&data->train, &data->test, &data->validation}) {
    try {
      models::check_dataset(*set);
    } catch (const std::invalid_argument& bad) {
      throw config::invalid_config(
          {config::config_error{"data", "data: " + std::string(bad.what())}});
    }
  }
  if (auto errors = config::validate_against_data(config, data->train.size()); !errors.empty())
    throw config::invalid_config(std::move(errors));
  auto plan = std::make_shared<job_plan>();
  plan->config = std::move(config);
  plan->data = std::move(data);
  plan->setup = std::move(setup);
  const auto& options = plan->setup.session;
  const auto& train = plan->config.train;
  if (options.resume && options.resume->workers.size() != static_cast<std::size_t>(train.workers))
    throw config::invalid_config(
        {{"train.workers", "train.workers = " + std::to_string(train.workers) +
                               ": the checkpoint to resume from holds " +
                               std::to_string(options.resume->workers.size()) + " workers"}});
  // The one place the run's model is chosen: the workers, the evaluator, the aggregators' buffers
  // and the checkpoints' structure all take plan->model.
  const bool embedded = options.model != nullptr;
  if (embedded) {
    check_model_fits(*options.model, *plan->data, plan->setup.model_key);
    // Every replica starts from this tensor: one of another size would be read past its end.
    if (!options.resume && options.initial_parameters.empty())
      if (const auto size = options.model->initial_parameters(train.seed).size();
          size != options.model->parameter_count())
        throw config::invalid_config(
            {{plan->setup.model_key,
              plan->setup.model_key + ": the model \"" + options.model->name() +
                  "\"'s initial_parameters() gives " + std::to_string(size) +
                  " floats, but its parameter_count() is " +
                  std::to_string(options.model->parameter_count()) + "; they must agree"}});
    // A workspace is made by every worker as it is spawned; one that cannot be made throws here
    // instead, before any part of the job exists.
    (void)options.model->make_workspace();
    plan->model = options.model;
  } else {
    plan->model = make_model(plan->config, plan->data->train);
    // Made to fit the training set: the test and validation sets must fit it too, or every
    // evaluation fails (token texts of other widths are check_token_input's, below).
    const auto* layers = dynamic_cast<const models::sequential*>(plan->model.get());
    if (layers == nullptr || !layers->takes_tokens())
      check_model_fits(*plan->model, *plan->data, "data");
  }
  // make_model() checked the training set's tokens.
  const std::string model_key = embedded                            ? plan->setup.model_key
                                : plan->config.model.layers.empty() ? "model.preset"
                                                                    : "model.layers";
  if (embedded)
    check_token_input(*plan->model, plan->data->train, data_role::training, plan->config,
                      model_key);
  check_token_input(*plan->model, plan->data->test, data_role::test, plan->config, model_key);
  if (plan->data->validation.size() > 0) // held out of the training features
    check_token_input(*plan->model, plan->data->validation, data_role::validation, plan->config,
                      model_key);
  const auto& initial_key = plan->setup.initial_parameters_key;
  check_initial_parameters(*plan->model, options.initial_parameters, initial_key);
  if (options.resume && !options.initial_parameters.empty())
    throw config::invalid_config({config::config_error{
        initial_key, initial_key + ": set together with " + plan->setup.resume_key +
                         ", which restores the checkpoint's parameters; set one of the two"}});
  if (train.backend == "cpu")
    check_memory(plan->config, *plan->model, plan->data->train, train.workers,
                 evaluator_setup{}.batch_size, embedded ? plan->setup.model_key : std::string{});
  plan->compute = compute_placement::make(plan->config, *options.ops, options.stream_ops);
  plan->samples_per_epoch = epoch_samples(plan->config, plan->data->train.size());
  plan->name = plan->setup.name.empty() ? plan->config.metrics.job : plan->setup.name;
  // A job without a registry of the caller's keeps its metrics in its own: the straggler its
  // status names comes from them.
  auto registry = options.metrics ? options.metrics : std::make_shared<monitoring::registry>();
  if (options.metrics)
    plan->claims.push_back(std::make_shared<job_claim>(
        options.metrics, plan->name,
        config::config_error{
            "job_options.name",
            "job_options.name = \"" + plan->name +
                "\": a running job records its metrics under this name in the same registry; "
                "give each job its own name (job_options.name, or metrics.job)"}));
  if (const auto& session = plan->setup.session; plan->config.checkpoint.enabled())
    plan->checkpoint_lock = lock_checkpoint_dir( // in this process or another
        plan->config,
        session.resume && session.resume_path.empty() ? std::nullopt
                                                      : std::optional(session.resume_path),
        session.resume_option);
  auto named = plan->config;
  named.metrics.job = plan->name;
  plan->metrics = make_training_metrics(named, std::move(registry), options.node_name);
  plan->plane = comm::make_local_plane(*plan->compute.reduce);
  int others = 0;
  plan->running = count_running(others);
  if (const auto& wanted = plan->setup.blas_threads) {
    // Another job's workers may be in their GEMMs: a count Herd chose never raises theirs (0 is
    // one thread per core).
    const bool raises = *wanted == 0 || *wanted > kernels::blas_threads();
    if (!plan->setup.blas_threads_chosen || others == 0 || !raises)
      kernels::set_blas_threads(*wanted);
  }

  auto& shared = *plan->shared;
  shared.name = plan->name;
  shared.model = plan->model;
  shared.status.name = plan->name;
  shared.status.epochs_total = static_cast<double>(train.epochs);
  return plan;
}

std::size_t samples_per_epoch(const job_plan& plan) {
  return plan.samples_per_epoch;
}

std::shared_ptr<herd::job::shared_state> shared_state_of(const job_plan& plan) {
  return plan.shared;
}

coordinator_setup job_plan::coordination(run_observer* observer) const {
  coordinator_setup coordination;
  coordination.config = config;
  coordination.config.metrics.job = name;
  coordination.data_plane = std::string(plane->name());
  coordination.compute = compute.description;
  coordination.samples_per_epoch = samples_per_epoch;
  coordination.validation_samples = data->validation.size();
  coordination.observer = observer;
  coordination.progress_interval = setup.session.progress_interval;
  coordination.snapshot_interval = setup.session.snapshot_interval;
  coordination.metrics = metrics;
  coordination.close_metrics_at_end = !setup.keep_metrics;
  coordination.claims.assign(claims.begin(), claims.end());
  if (config.checkpoint.enabled()) {
    auto checkpoints = checkpoint_options_for(config, *model, data->train);
    checkpoints->on_written = setup.session.on_checkpoint;
    checkpoints->write_limit = setup.session.checkpoint_write_limit;
    checkpoints->write_notice_every = setup.session.checkpoint_write_notice_every;
    checkpoints->lock = checkpoint_lock;
    coordination.checkpoints = std::move(checkpoints);
  }
  coordination.resume = setup.session.resume;
  return coordination;
}

} // namespace herd::actors
