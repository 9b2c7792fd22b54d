// One training run in this process; see train_session.hpp.
#include "actors/train_session.hpp"

#include "actors/job_actor.hpp"
#include "actors/messages.hpp"
#include "actors/run_parts.hpp"
#include "actors/scheduling.hpp"
#include "actors/worker.hpp"
#include "herd/config.hpp"
#include "herd/sequential.hpp"

#include <mutex>

namespace herd::actors {

std::shared_ptr<const models::model> make_model(const config::run_config& config,
                                                const models::dataset& data) {
  models::model_choice choice;
  choice.preset = config.model.preset;
  choice.layers = config.model.layers;
  choice.hidden = config.model.hidden;
  std::unique_ptr<models::sequential> built;
  try {
    built = models::build_model(choice, data.input_shape(), static_cast<std::size_t>(data.classes));
  } catch (const models::model_error& unfit) {
    throw config::invalid_config({{unfit.key(), unfit.what()}});
  }
  // Texts are batched at their own lengths: only a model that reads token ids takes them (any
  // other would see rows of another width at every batch).
  if (data.ragged() && !built->takes_tokens()) {
    const bool own = !choice.layers.empty();
    const std::string key = own ? "model.layers" : "model.preset";
    throw config::invalid_config(
        {{key, key + " = \"" + (own ? choice.layers : choice.preset) + "\" reads rows of " +
                   std::to_string(data.max_length) + " numbers, but the dataset \"" + data.name +
                   "\" holds texts of token ids, each of its own length; a model for texts "
                   "starts with an embedding layer: model.preset = \"textcnn\", or "
                   "model.layers = \"embedding 256 32, ...\" (docs/models.md)"}});
  }
  check_token_input(*built, data, data_role::training, config,
                    choice.layers.empty() ? "model.preset" : "model.layers");
  return built;
}

void check_model_fits(const models::model& model, const models::train_test_split& data,
                      const std::string& key) {
  const std::string who = "the model \"" + model.name() + "\" (" + model.describe() + ")";
  const std::size_t inputs = models::elements(model.input_shape());
  // "1x28x28 = 784 floats", or "20 floats" for a flat shape.
  auto size_of = [](const models::shape& shape) {
    const std::string count = std::to_string(models::elements(shape)) + " floats";
    return shape.size() > 1 ? models::shape_text(shape) + " = " + count : count;
  };
  for (const models::dataset* set : {&data.train, &data.test, &data.validation}) {
    if (set->size() == 0 && set == &data.validation)
      continue;
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

void check_token_input(const models::model& model, const models::dataset& set, data_role role,
                       const config::run_config& config, const std::string& model_key) {
  const auto* layers = dynamic_cast<const models::sequential*>(&model);
  if (layers == nullptr || !layers->takes_tokens())
    return;
  const auto& data = config.data;
  const bool files = data.dataset == "npy";
  // A validation set of its own files, or one held out of the training features.
  const bool own_validation = role == data_role::validation && !data.validation_features.empty();
  const auto& [key_of_file, path] =
      role == data_role::test ? std::pair{"data.test-features", &data.test_features}
      : own_validation        ? std::pair{"data.validation-features", &data.validation_features}
                              : std::pair{"data.train-features", &data.train_features};
  // A set held out of the training file numbers its samples in itself, not in the file.
  const bool held_out = role == data_role::validation && !own_validation;
  const std::string where = !files     ? set.name
                            : held_out ? "the validation set held out of " + *path
                                       : *path;
  try {
    models::check_token_rows(set, layers->vocabulary(), where);
  } catch (const models::data_error& bad) {
    const std::string key = set.ragged() ? model_key
                            : !files     ? std::string("data.dataset")
                                         : std::string(key_of_file);
    throw config::invalid_config({{key, key + ": " + bad.what()}});
  }
}

struct train_session::impl {
  std::size_t samples_per_epoch = 0;
  std::shared_ptr<job_plan> plan; // until start() launches it
  std::shared_ptr<herd::job::shared_state> shared;
  caf::actor_system_config system_config;
  std::unique_ptr<caf::actor_system> system;
  job_handle handle;
  bool started = false;
  bool shut_down = false;
  std::mutex mutex; // guards `handle` against request_stop() from another thread

  // Ends what is left of the job (nothing after a summary) and waits for every actor, so that no
  // worker thread outlives the session's wait_for().
  void shutdown() {
    if (shut_down || !system)
      return;
    shut_down = true;
    caf::actor job;
    {
      std::lock_guard<std::mutex> guard(mutex);
      job = std::move(handle.actor);
    }
    if (job)
      caf::anon_send_exit(job, caf::exit_reason::user_shutdown);
    system->await_all_actors_done();
  }
};

namespace {

// "; the settings that differ: data.dataset: ..." for a checkpoint of another shape: a shape's
// difference ("training samples: the checkpoint has 6000, this run 60000") often has its cause
// in a setting. Only settings that shape a run (structure_of: the model, the data, the
// algorithm, workers, batch size and seed), not those a resume may change (train.epochs).
// A setting the shape's own difference names already ("train.workers: the checkpoint has 4,
// this run 2") is not said twice. Nothing when the file's settings cannot be read.
std::string differing_settings(const std::string& file, const config::run_config& now,
                               const std::string& shape_difference) {
  const auto said = [&shape_difference](const std::string& line) {
    return shape_difference.find(line.substr(0, line.find(':')) + ": the checkpoint has") !=
           std::string::npos;
  };
  const auto shapes_the_run = [](const std::string& line) {
    for (const char* key : {"model.", "data.", "train.algorithm:", "train.workers:",
                            "train.batch-size:", "train.seed:"})
      if (line.rfind(key, 0) == 0)
        return true;
    return false;
  };
  try {
    const auto lines = changed_settings(read_run_checkpoint(file).settings, now);
    std::string text;
    for (const auto& line : lines)
      if (shapes_the_run(line) && !said(line))
        text += (text.empty() ? "; the settings that differ: " : "; ") + line;
    return text;
  } catch (const std::exception&) {
    return {};
  }
}

} // namespace

loaded_checkpoint load_checkpoint(const config::run_config& config,
                                  const models::train_test_split& data, const std::string& path,
                                  std::shared_ptr<const models::model> model) {
  loaded_checkpoint loaded;
  loaded.file = checkpoint::resolve(path);
  if (!model)
    model = make_model(config, data.train);
  try {
    loaded.state = std::make_shared<const run_checkpoint>(load_for_resume(
        loaded.file, structure_of(config, *model, data.train.size()), model->parameter_count()));
  } catch (const checkpoint::checkpoint_error& refused) {
    if (refused.problem_kind() != checkpoint::checkpoint_error::kind::other_shape)
      throw;
    throw checkpoint::checkpoint_error(
        loaded.file, refused.problem() + differing_settings(loaded.file, config, refused.problem()),
        refused.problem_kind());
  }
  check_same_optimizer(loaded.file, *loaded.state, config);
  check_policy_state(loaded.file, *loaded.state, config);
  check_same_evaluation_set(loaded.file, *loaded.state, config, data);
  if (loaded.state->across_processes())
    throw checkpoint::checkpoint_error(loaded.file,
                                       "is a cluster's checkpoint: resume it with herd coordinator "
                                       "--resume, with the nodes that hold its parts");
  return loaded;
}

train_session::train_session(config::run_config config,
                             std::shared_ptr<const models::train_test_split> data,
                             session_options options)
    : impl_(std::make_unique<impl>()) {
  job_setup setup;
  setup.keep_replicas = true; // final_worker_parameters(), final_server_parameters()
  setup.keep_metrics = true;  // for its caller to serve the final values
  setup.blas_threads = options.blas_threads;
  setup.session = std::move(options);
  impl_->plan = prepare_job(std::move(config), std::move(data), std::move(setup));
  impl_->samples_per_epoch = actors::samples_per_epoch(*impl_->plan);
  impl_->shared = shared_state_of(*impl_->plan);

  herd::add_message_types(impl_->system_config);
  // Work sharing keeps control-path latency low on few cores (under CAF 0.17's default, work
  // stealing, idle scheduler threads sleep, and a blocking request takes about three times as
  // long); the scheduler only runs message handlers, the compute happens on the workers' own
  // threads (actors/scheduling.hpp).
  use_herd_scheduler(impl_->system_config);
  impl_->system = std::make_unique<caf::actor_system>(impl_->system_config);
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
  // launch_job shuts down half a run (a coordinator without workers, say) before it throws.
  auto handle = launch_job(*state.system, std::move(state.plan));
  std::lock_guard<std::mutex> guard(state.mutex);
  state.handle = std::move(handle);
}

void train_session::request_stop() {
  std::shared_ptr<herd::job> facade;
  {
    std::lock_guard<std::mutex> guard(impl_->mutex); // shutdown() may be clearing it
    facade = impl_->handle.facade;
  }
  if (facade)
    facade->stop();
}

std::optional<run_summary> train_session::wait_for(std::chrono::milliseconds timeout) {
  auto& state = *impl_;
  std::shared_ptr<herd::job> facade;
  {
    std::lock_guard<std::mutex> guard(state.mutex);
    facade = state.handle.facade;
  }
  if (!facade)
    return std::nullopt; // not started
  auto summary = facade->wait_for(timeout);
  if (summary)
    state.shutdown();
  return summary;
}

run_summary train_session::run() {
  start();
  for (;;)
    if (auto summary = wait_for(std::chrono::hours(1)))
      return *summary;
}

const std::vector<std::vector<float>>& train_session::final_parameters() const {
  // Written once, before the job ended, and read only after it ended.
  return impl_->shared->worker_parameters;
}

const std::vector<float>& train_session::final_server_parameters() const {
  return impl_->shared->server_parameters;
}

std::size_t train_session::samples_per_epoch() const {
  return impl_->samples_per_epoch;
}

} // namespace herd::actors
