// A checkpoint's model outside a run; see herd/saved_model.hpp.
#include "herd/saved_model.hpp"

#include "actors/checkpoint_state.hpp"
#include "herd/config.hpp"

#include "checkpoint/format.hpp"
#include "policy/policy.hpp"

namespace herd::checkpoint {

namespace {

// The settings `state` was taken with; settings that do not load here are the checkpoint's
// problem (a newer version's key, say), named as such.
config::run_config settings_of(const actors::run_checkpoint& state, const std::string& file) {
  try {
    return config::from_ini(state.settings, file + " (the settings it was taken with)");
  } catch (const config::invalid_config& unread) {
    throw checkpoint_error(file, std::string("its settings do not load here: ") + unread.what());
  }
}

} // namespace

config::run_config saved_settings(const std::string& path) {
  const auto file = resolve(path);
  return settings_of(actors::read_run_checkpoint(file), file);
}

model_inputs saved_inputs(const std::string& path) {
  const auto file = resolve(path);
  const auto state = actors::read_run_checkpoint(file);
  if (!state.inputs.known())
    throw checkpoint_error(file, "written by Herd " + read_file(file).head.herd_version +
                                     " (format version 5), which does not record its model's "
                                     "inputs; its run's dataset has them");
  const auto shape = actors::shaped_like(state.inputs);
  model_inputs inputs;
  inputs.sample_shape = shape.input_shape();
  inputs.classes = static_cast<std::size_t>(shape.classes);
  inputs.normalisation = shape.input_normalisation;
  return inputs;
}

saved_model read_model(const std::string& path, const models::model& model, bool last) {
  saved_model saved;
  saved.file = resolve(path);
  const auto state = actors::load_for_model(saved.file, model);
  saved.config = settings_of(state, saved.file);
  saved.rounds = state.coordinator.counters.rounds;
  const bool mean = policy::make_policy(saved.config)->exchanges_models();
  auto chosen = actors::parameters_to_serve(state, saved.file, last, mean,
                                            saved.config.data.has_validation_set());
  saved.parameters = std::move(chosen.values);
  saved.parameters_origin = std::move(chosen.origin);
  return saved;
}

} // namespace herd::checkpoint
