// Pieces of a worker outside its actor: its starting parameters and their check, its sampler's
// text lengths, the state a joining worker adopts, and a probe's defaults (see worker.hpp,
// worker_parts.hpp, worker_probe.hpp).
#include "actors/worker_parts.hpp"

#include "actors/messages.hpp"
#include "herd/config.hpp"
#include "kernels/check.hpp"

#include <algorithm>

namespace herd::actors {

worker_state state_of(const kernels::ops& ops, const models::tensor& params,
                      const models::optimizer& optimizer, std::uint64_t steps,
                      std::uint64_t rounds_applied) {
  const std::size_t count = params.size();
  const auto& held = optimizer.state();
  auto state = worker_state::make(count, held.size(), steps, rounds_applied, optimizer.steps());
  ops.download(state.parameters(), params.data(), count * sizeof(float));
  ops.download(state.optimizer_state(count), held.data(), held.size() * sizeof(float));
  return state;
}

models::length_buckets length_buckets_of(const worker_setup& setup) {
  models::length_buckets buckets;
  if (!setup.bucket_order_seed || !setup.train->ragged())
    return buckets;
  buckets.order_seed = *setup.bucket_order_seed;
  buckets.lengths.reserve(setup.shard.size());
  for (std::size_t sample : setup.shard)
    buckets.lengths.push_back(setup.train->length(sample));
  return buckets;
}

void worker_probe::gradient_computed(int, std::uint64_t, const float*, std::size_t) {}
void worker_probe::gradient_scaled(int, std::uint64_t, float) {}
void worker_probe::round_applied(int, std::uint64_t, const float*, const float*, std::size_t) {}
void worker_probe::stopped(int, const float*, std::size_t) {}

models::tensor starting_parameters(const models::model& model, std::uint64_t init_seed,
                                   const std::shared_ptr<const std::vector<float>>& given) {
  if (!given)
    return model.initial_parameters(init_seed);
  HERD_CHECK(given->size() == model.parameter_count(),
             given->size() << " starting parameters for a model of " << model.parameter_count());
  models::tensor parameters({model.parameter_count()});
  std::copy(given->begin(), given->end(), parameters.data());
  return parameters;
}

void check_initial_parameters(const models::model& model, const std::vector<float>& given,
                              const std::string& key) {
  if (given.empty() || given.size() == model.parameter_count())
    return;
  throw config::invalid_config(
      {{key, key + ": " + std::to_string(given.size()) + " parameters, but the model \"" +
                 model.name() + "\" (" + model.describe() + ") has " +
                 std::to_string(model.parameter_count()) +
                 "; give that many (a run's final parameters, or a checkpoint's, of the same "
                 "model), or none for the model's own initialisation"}});
}

} // namespace herd::actors
