// The parts of a run that one process and a cluster build the same way; see run_parts.hpp.
#include "actors/run_parts.hpp"

#include "actors/train_session.hpp"
#include "herd/config.hpp"
#include "herd/sequential.hpp"
#include "kernels/machine.hpp"
#include "models/sampler.hpp"
#include "monitoring/training_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "policy/policy.hpp"

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

std::string index_list(const std::vector<std::int32_t>& indices) {
  std::string text;
  for (std::size_t i = 0; i < indices.size(); ++i)
    text += (i > 0 ? ", " : "") + std::to_string(indices[i]);
  return text;
}

namespace {

// What a workspace holds for a batch of `batch` samples whose input is `steps` wide (a token
// model's: its batch's longest text): each layer's output and, `training`, its input gradient, its
// scratch (a convolution's columns), and the scores; and the layer that gives the most values.
struct activation_bytes {
  double bytes = 0.0;
  std::size_t widest = 0; // index of the layer
  std::size_t widest_values = 0;
};

activation_bytes activations_of(const models::sequential& model, std::size_t batch,
                                std::size_t steps, bool training) {
  activation_bytes need;
  std::size_t width = steps;
  const auto& layers = model.layers();
  double values = 2.0 * static_cast<double>(model.classes()); // probabilities, their gradient
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::size_t out = layers[i]->output_elements(width);
    const auto scratch = layers[i]->scratch(batch, width);
    values += static_cast<double>(training ? out + width : out) + // evaluating: no gradients
              static_cast<double>(scratch.floats + scratch.ints) / static_cast<double>(batch);
    if (out > need.widest_values) {
      need.widest = i;
      need.widest_values = out;
    }
    width = out;
  }
  need.bytes = values * static_cast<double>(batch) * sizeof(float);
  return need;
}

} // namespace

// Each worker holds parameters, gradients, its send buffer's share and its optimizer's state (one
// float a parameter for SGD, two for AdamW), and the aggregators' result buffers come on top.
// A layered model's workspaces come on top of those: one per worker, and the evaluator's.
void check_memory(const config::run_config& config, const models::model& model,
                  const models::dataset& train, int local_workers, std::size_t evaluation_batch,
                  const std::string& own_model_key) {
  const auto parameters = static_cast<double>(model.parameter_count());
  // In floats a parameter: the parameters and gradients, and the optimizer's state.
  const double optimizer_state = static_cast<double>(models::optimizer::state_floats(
      optimizer_of(config).kind, model.parameter_count()));
  const double per_worker = 2.0 + optimizer_state / std::max(parameters, 1.0);
  const double for_parameters = parameters * sizeof(float) * (per_worker * local_workers + 4.0);
  activation_bytes working;
  activation_bytes evaluating;
  if (const auto* layers = dynamic_cast<const models::sequential*>(&model)) {
    // A batch of texts is as long as its longest: at most the longest training text.
    const std::size_t length = models::elements(layers->input_shape());
    std::size_t longest = 0;
    if (layers->takes_tokens() && train.ragged())
      for (std::size_t i = 0; i < train.size() && longest < length; ++i)
        longest = std::max(longest, train.length(i));
    const std::size_t steps = longest > 0 ? std::min(longest, length) : length;
    working =
        activations_of(*layers, static_cast<std::size_t>(config.train.batch_size), steps, true);
    if (evaluation_batch > 0 && layers->takes_tokens()) // by their positions, as evaluate() does
      evaluation_batch = models::sequential::evaluation_rows(evaluation_batch, length);
    if (evaluation_batch > 0)
      evaluating = activations_of(*layers, evaluation_batch, length, false);
  }
  const double for_activations = working.bytes * local_workers + evaluating.bytes;
  const double bytes = for_parameters + for_activations;
  const auto memory = kernels::this_process_memory();
  const auto available = static_cast<double>(memory.usable());
  if (available <= 0.0 || bytes <= 0.8 * available)
    return;
  const char* key = !own_model_key.empty()         ? own_model_key.c_str()
                    : !config.model.layers.empty() ? "model.layers"
                    : config.model.preset == "mlp" ? "model.hidden"
                                                   : "model.preset";
  const double gib = 1u << 30;
  char message[640];
  if (for_activations <= for_parameters) {
    // The layer that holds the most of them (a dense layer after a wide flatten, as a rule).
    std::string largest;
    if (const auto* layers = dynamic_cast<const models::sequential*>(&model)) {
      const auto& all = layers->layers();
      const auto most = std::max_element(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return a->parameter_count() < b->parameter_count();
      });
      char text[160];
      std::snprintf(text, sizeof text, " (layer %zu, %s, holds %.3g)",
                    static_cast<std::size_t>(most - all.begin()) + 1, (*most)->describe().c_str(),
                    static_cast<double>((*most)->parameter_count()));
      largest = text;
    }
    std::snprintf(message, sizeof message,
                  "%s: the model has %.3g parameters%s; %d worker%s need about %.1f GiB "
                  "for parameters, gradients and momentum, more than 80%% of the %.1f GiB %s; "
                  "use smaller layers or fewer workers",
                  key, parameters, largest.c_str(), local_workers, local_workers == 1 ? "" : "s",
                  bytes / gib, available / gib,
                  memory.limited() ? "its container's memory limit allows" : "of this machine");
  } else {
    const auto& widest = dynamic_cast<const models::sequential&>(model).layers()[working.widest];
    const std::string evaluator =
        evaluation_batch > 0 ? " and an evaluator's of " + std::to_string(evaluation_batch) : "";
    std::snprintf(message, sizeof message,
                  "%s: %d worker%s with batches of %d%s need about %.1f GiB, %.1f of it for "
                  "activations (layer %zu, %s, gives %zu values per sample), more than 80%% of "
                  "the %.1f GiB %s; use smaller layers, a smaller train.batch-size or fewer "
                  "workers",
                  key, local_workers, local_workers == 1 ? "" : "s", config.train.batch_size,
                  evaluator.c_str(), bytes / gib, for_activations / gib, working.widest + 1,
                  widest->describe().c_str(), working.widest_values, available / gib,
                  memory.limited() ? "its container's memory limit allows" : "of this machine");
  }
  throw config::invalid_config({{key, message}});
}

models::optimizer_settings optimizer_of(const config::run_config& config) {
  models::optimizer_settings optimizer;
  optimizer.learning_rate = static_cast<float>(config.train.lr);
  optimizer.momentum = static_cast<float>(config.train.momentum);
  optimizer.weight_decay = static_cast<float>(config.train.weight_decay);
  optimizer.kind = models::optimizer_kind_of(config.train.optimizer);
  optimizer.beta1 = static_cast<float>(config.train.adam_beta1);
  optimizer.beta2 = static_cast<float>(config.train.adam_beta2);
  optimizer.eps = static_cast<float>(config.train.adam_eps);
  return optimizer;
}

models::optimizer_settings server_optimizer_of(const config::run_config& config) {
  auto optimizer = optimizer_of(config);
  optimizer.learning_rate = static_cast<float>(server_learning_rate(config));
  return optimizer;
}

double server_learning_rate(const config::run_config& config) {
  return config.async.lr > 0.0 ? config.async.lr : config.train.lr / config.train.workers;
}

worker_setup make_worker_setup(const config::run_config& config, int index,
                               std::shared_ptr<const models::model> model,
                               std::shared_ptr<const models::dataset> train,
                               const kernels::ops* ops, std::shared_ptr<comm::data_plane> plane,
                               std::shared_ptr<const imbalance_model> imbalance,
                               std::shared_ptr<worker_probe> probe) {
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
  setup.late_gradients = policy::late_gradients_of(config);
  setup.exchange_models = grouping->exchanges_models();
  setup.blend_late_models = grouping->blends_late_models();
  setup.blend_on_time_models = grouping->blends_on_time_models();
  setup.take_server_parameters = grouping->applies_at_server();
  setup.global_average_every = config.wagma.sync_every;
  if (imbalance && imbalance->active())
    setup.imbalance = std::move(imbalance);
  setup.probe = std::move(probe);
  setup.announce_steps = announces_steps(config);
  setup.announce_delayed_steps = config.train.algorithm == "sync";
  return setup;
}

bool announces_steps(const config::run_config& config) {
  if (bucket_floats(config) == 0)
    return false;
  const auto& algorithm = config.train.algorithm;
  return algorithm == "sync" || policy::partial_settings(config) != nullptr;
}

std::size_t bucket_floats(const config::run_config& config) {
  if (config.comm.bucket_mb <= 0.0)
    return 0;
  const double floats = config.comm.bucket_mb * 1024.0 * 1024.0 / sizeof(float);
  const auto blocks = static_cast<std::size_t>(std::llround(floats / 1024.0));
  return std::max<std::size_t>(blocks, 1) * 1024;
}

comm::bucket_layout gradient_buckets(const config::run_config& config, const models::model& model) {
  const std::size_t floats = bucket_floats(config);
  if (floats == 0)
    return {};
  return comm::bucket_layout::for_backward(model.parameter_count(), floats,
                                           model.gradient_final_points());
}

std::size_t epoch_samples(const config::run_config& config, std::size_t training_samples) {
  const auto workers = static_cast<std::size_t>(config.train.workers);
  const auto batch = static_cast<std::size_t>(config.train.batch_size);
  return workers * (training_samples / workers / batch) * batch;
}

int aggregator_count(const config::run_config& config) {
  return std::clamp(config.train.workers / 2, 1, 16);
}

int blas_threads_for(const config::run_config& config, int local_workers, int workers_on_machine) {
  if (config.train.blas_threads > 0)
    return config.train.blas_threads;
  if (local_workers > 1)
    return 1;
  if (workers_on_machine > 1) // other nodes' workers share this machine's cores
    return std::max(1, kernels::usable_cores() / workers_on_machine);
  // Alone: every core, which OpenBLAS counts by the affinity. A container's CPU quota allows
  // fewer, and threads beyond it only wait for their turn.
  const auto cores = kernels::this_process_cores();
  return cores.quota_limited() ? cores.usable() : 0;
}

std::shared_ptr<monitoring::training_metrics>
make_training_metrics(const config::run_config& config,
                      std::shared_ptr<monitoring::registry> registry, const std::string& node_name,
                      std::vector<std::string> worker_nodes) {
  monitoring::training_metrics::identity who;
  who.job = config.metrics.job;
  who.node = node_name.empty() ? kernels::host_name() : node_name;
  who.algorithm = config.train.algorithm;
  who.workers = config.train.workers;
  who.window_seconds = config.metrics.window_seconds;
  who.worker_nodes = std::move(worker_nodes);
  return std::make_shared<monitoring::training_metrics>(std::move(registry), who);
}

} // namespace herd::actors
