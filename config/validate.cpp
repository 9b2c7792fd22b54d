// Semantic checks of a run_config: ranges and known names, each failure a sentence that names the
// key, the value and what is allowed.
#include "config/checker.hpp"
#include "config/front_end.hpp"
#include "config/ini_limits.hpp"
#include "config/ini_values.hpp"
#include "herd/config.hpp"
#include "kernels/regular_file.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace herd::config {

namespace validation {

void checker::require_one_of(const std::vector<std::string>& names, const std::string& key,
                             const std::string& value, const std::string& what) {
  if (contains(names, value))
    return;
  std::string allowed = (what.empty() ? "" : "unknown " + what + "; ") + "allowed: " + join(names);
  // A near miss: the same name in other case, else one a letter or two off (not for a value so
  // short that two letters make it anything).
  std::string lower = value;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string* closest = nullptr;
  std::size_t best = value.size() > 3 ? 3 : 2;
  for (const auto& name : names) {
    if (name == lower) {
      closest = &name;
      break;
    }
    if (value.size() >= name.size() + best) // the distance is at least the lengths' difference
      continue;
    if (const auto distance = edit_distance(value, name); distance < best) {
      best = distance;
      closest = &name;
    }
  }
  if (closest != nullptr)
    allowed += "; did you mean " + *closest + "?";
  require(false, key, '"' + value + '"', allowed);
}

} // namespace validation

namespace {

using validation::checker;
using validation::contains;
using validation::join;

// Free-form strings have bounds too: a path longer than PATH_MAX names no file, and a metrics
// label or address of a megabyte would be repeated in every scrape.
constexpr std::size_t max_path_bytes = 4096;
constexpr std::size_t max_label_bytes = 256;
const std::string too_long_path = "is longer than " + std::to_string(max_path_bytes) +
                                  " bytes, longer than any path the system can open";
// More slow workers or hidden layers than this is a mistake; the lists' values are checked one by
// one, and a long list would bury the one message that matters.
constexpr std::size_t max_list_entries = 1024;
constexpr std::size_t max_hidden_layers = 64;
// The workers of a run in one process or a cluster, and of a job herd simulate sweeps.
constexpr int max_run_workers = 1024;
constexpr int max_swept_workers = 65536;
// model.layers is a line or two; the model's own checks bound the layers it holds.
constexpr std::size_t max_layers_bytes = 65536;

// Why `file` cannot be read, or "" when it can. Without opening it for reading in a way that
// blocks: a FIFO would wait for a writer forever.
std::string readable_file_problem(const std::string& file) {
  try {
    kernels::regular_file opened(file);
    return {};
  } catch (const kernels::file_problem& problem) {
    return problem.what();
  }
}

std::string quoted(const std::string& text) {
  return '"' + text + '"';
}

// sync-every and late-gradients of [solo], [majority] or [quorum], checked whichever algorithm
// runs: a typo in an unused section is still a typo.
void check_partial(checker& check, const std::string& section, const partial_section& partial) {
  check.require(partial.sync_every >= 0 && partial.sync_every <= 1000000, section + ".sync-every",
                partial.sync_every, "must be between 0 (never) and 1000000 rounds");
  check.require_one_of(known_late_gradient_modes(), section + ".late-gradients",
                       partial.late_gradients, "mode");
  check.require_one_of(known_missing_member_modes(), section + ".missing-members",
                       partial.missing_members, "mode");
}

// The job size an algorithm's settings must fit, and how a message names it: train.workers for a
// run; for herd simulate's sweep (which never runs train.workers), the size of the sweep that is
// hardest for the setting. 0 when that size is itself refused.
struct job_size {
  int workers = 0;
  std::string name; // "train.workers = 4", "simulate.workers' P = 8"
};

job_size sized(int workers, bool swept) {
  return {workers,
          (swept ? "simulate.workers' P = " : "train.workers = ") + std::to_string(workers)};
}

// An explicit connect-every is checked against the job's size only when both are valid.
void check_preduce(checker& check, const preduce_section& preduce, const job_size& job) {
  const int workers = job.workers;
  check.require(preduce.group_size >= 2 && preduce.group_size <= 4096, "preduce.group-size",
                preduce.group_size, "must be between 2 and 4096 workers");
  check.require(preduce.wait_window_ms >= 0.0 && preduce.wait_window_ms <= 600000.0,
                "preduce.wait-window-ms", preduce.wait_window_ms,
                "must lie between 0 and 600000 ms");
  check.require(preduce.staleness_decay >= 0.0 && preduce.staleness_decay <= 100.0,
                "preduce.staleness-decay", preduce.staleness_decay,
                "must lie between 0 (uniform weights) and 100");
  check.require(preduce.connect_every >= -1 && preduce.connect_every <= 1000000,
                "preduce.connect-every", preduce.connect_every,
                "must be between 1 and 1000000 groups, -1 (automatic) or 0 (guard off)");
  if (preduce.connect_every > 0 && preduce.group_size >= 2 && workers >= 1) {
    const std::size_t needed = min_connecting_groups(static_cast<std::size_t>(workers),
                                                     static_cast<std::size_t>(preduce.group_size));
    check.require(static_cast<std::size_t>(preduce.connect_every) >= needed,
                  "preduce.connect-every", preduce.connect_every,
                  "cannot be met: connecting " + job.name +
                      " workers in groups of preduce.group-size = " +
                      std::to_string(preduce.group_size) + " takes at least " +
                      std::to_string(needed) + " groups (ceil((P - 1) / (g - 1))); set at least " +
                      std::to_string(needed) + ", -1 (automatic) or 0 (guard off)");
  }
  check.require(preduce.connect_wait_ms >= 0.0 && preduce.connect_wait_ms <= 600000.0,
                "preduce.connect-wait-ms", preduce.connect_wait_ms,
                "must lie between 0 and 600000 ms");
  check.require(preduce.sync_every >= 0 && preduce.sync_every <= 1000000, "preduce.sync-every",
                preduce.sync_every, "must be between 0 (never) and 1000000 groups");
}

// The group size is checked against the job's size only when that is valid itself.
void check_wagma(checker& check, const wagma_section& wagma, const job_size& job) {
  const int workers = job.workers;
  const bool power_of_two =
      wagma.group_size > 0 && (wagma.group_size & (wagma.group_size - 1)) == 0;
  check.require(wagma.group_size == 0 || (power_of_two && wagma.group_size <= 4096),
                "wagma.group-size", wagma.group_size,
                "must be a power of two up to 4096, or 0 for sqrt(workers) rounded down");
  int padded = 1;
  while (padded < workers)
    padded *= 2;
  if (workers >= 1 && power_of_two)
    check.require(wagma.group_size <= padded, "wagma.group-size", wagma.group_size,
                  "exceeds " + job.name + " rounded up to a power of two (" +
                      std::to_string(padded) + ")");
  check.require(wagma.sync_every >= 0 && wagma.sync_every <= 1000000, "wagma.sync-every",
                wagma.sync_every, "must be between 0 (never) and 1000000 steps");
  check.require_one_of(known_wagma_blends(), "wagma.blend", wagma.blend, "blend");
}

void check_local_sgd(checker& check, const local_sgd_section& local_sgd) {
  check.require(local_sgd.period >= 1 && local_sgd.period <= 1000000, "local-sgd.period",
                local_sgd.period, "must be between 1 (every step) and 1000000 steps");
}

// A validation set of its own: a pair of .npy files, in place of data.validation-fraction's share.
void check_validation_files(checker& check, const data_section& data) {
  for (const auto& [key, value] : {std::pair{"data.validation-features", &data.validation_features},
                                   std::pair{"data.validation-labels", &data.validation_labels}}) {
    if (value->empty())
      continue;
    check.require(data.dataset == "npy", key, quoted(*value),
                  "used only with data.dataset = npy, not " + quoted(data.dataset) +
                      "; data.validation-fraction holds a share of any training set out");
    check.require(value->size() <= max_path_bytes, key, quoted(*value), too_long_path);
    check.require(data.validation_fraction == 0.0, key, quoted(*value),
                  "set together with data.validation-fraction; set one of the two");
  }
  const bool features = !data.validation_features.empty();
  if (features != !data.validation_labels.empty())
    check.require(false, features ? "data.validation-labels" : "data.validation-features", "\"\"",
                  std::string("must name the .npy file of the validation ") +
                      (features ? "labels" : "features") + " too (both files, or neither)");
}

// checkpoint.dir is checked where it is used (herd train makes it, and says when it cannot).
void check_checkpoint(checker& check, const checkpoint_section& checkpoint) {
  check.require(checkpoint.dir.size() <= max_path_bytes, "checkpoint.dir", quoted(checkpoint.dir),
                too_long_path);
  check.require(checkpoint.every_seconds >= 0.0 && checkpoint.every_seconds <= 604800.0,
                "checkpoint.every-seconds", checkpoint.every_seconds,
                "must lie between 0 (none by time) and 604800 seconds (a week)");
  check.require(checkpoint.every_rounds >= 0 && checkpoint.every_rounds <= 100000000,
                "checkpoint.every-rounds", checkpoint.every_rounds,
                "must be between 0 (none by rounds) and 100000000 rounds");
  check.require(checkpoint.keep >= 1 && checkpoint.keep <= 1000, "checkpoint.keep", checkpoint.keep,
                "must keep between 1 and 1000 checkpoints");
}

// Range checks of each imbalance value always; checks against train.workers only for the kind
// that uses the value, so the defaults never fail whatever train.workers is.
void check_cluster(checker& check, const cluster_section& cluster) {
  check.require(cluster.min_nodes >= 1 && cluster.min_nodes <= 1024, "cluster.min-nodes",
                cluster.min_nodes, "must be between 1 and 1024 nodes");
  check.require(cluster.heartbeat_ms >= 10 && cluster.heartbeat_ms <= 60000, "cluster.heartbeat-ms",
                cluster.heartbeat_ms, "must be between 10 and 60000 ms");
  // A node is declared down after the timeout without a heartbeat: it needs a few of them.
  check.require(cluster.node_timeout_ms >= 2 * cluster.heartbeat_ms &&
                    cluster.node_timeout_ms <= 3600000,
                "cluster.node-timeout-ms", cluster.node_timeout_ms,
                "must be at least twice cluster.heartbeat-ms (" +
                    std::to_string(cluster.heartbeat_ms) + ") and at most 3600000 ms");
  check.require(cluster.data_timeout_ms >= 100 && cluster.data_timeout_ms <= 3600000,
                "cluster.data-timeout-ms", cluster.data_timeout_ms,
                "must be between 100 and 3600000 ms");
  check.require(cluster.join_timeout_s >= 1 && cluster.join_timeout_s <= 86400,
                "cluster.join-timeout-s", cluster.join_timeout_s,
                "must be between 1 and 86400 seconds");
  check.require(cluster.rejoin_s >= 0 && cluster.rejoin_s <= 86400, "cluster.rejoin-s",
                cluster.rejoin_s, "must be between 0 and 86400 seconds");
  // TLS is all or nothing, and a file that cannot be read is found before anything connects.
  const bool any_tls =
      !cluster.tls_ca.empty() || !cluster.tls_cert.empty() || !cluster.tls_key.empty();
  for (const auto& [key, file] :
       {std::pair<std::string, std::string>{"cluster.tls-ca", cluster.tls_ca},
        {"cluster.tls-cert", cluster.tls_cert},
        {"cluster.tls-key", cluster.tls_key}}) {
    if (!any_tls)
      break;
    check.require(!file.empty(), key, quoted(file),
                  "control-plane TLS needs cluster.tls-ca, cluster.tls-cert and cluster.tls-key");
    if (!file.empty() && file.size() <= max_path_bytes)
      check.require(readable_file_problem(file).empty(), key, quoted(file),
                    "cannot read this file: " + readable_file_problem(file));
    check.require(file.size() <= max_path_bytes, key, quoted(file), too_long_path);
  }
  check.require(cluster.token.size() <= 1024, "cluster.token",
                std::to_string(cluster.token.size()) + " bytes", "must be at most 1024 bytes");
  if (!cluster.token_file.empty()) {
    check.require(cluster.token.empty(), "cluster.token-file", quoted(cluster.token_file),
                  "set cluster.token or cluster.token-file, not both");
    check.require(cluster.token_file.size() <= max_path_bytes, "cluster.token-file",
                  quoted(cluster.token_file), too_long_path);
    if (cluster.token_file.size() <= max_path_bytes)
      check.require(readable_file_problem(cluster.token_file).empty(), "cluster.token-file",
                    quoted(cluster.token_file),
                    "cannot read this file: " + readable_file_problem(cluster.token_file));
  }
  const std::vector<std::string> encryptions{"auto", "on", "off"};
  check.require_one_of(encryptions, "cluster.data-encryption", cluster.data_encryption, "");
  // The keys reach the nodes over the control plane: in the clear without TLS.
  check.require(cluster.data_encryption != "on" || any_tls, "cluster.data-encryption",
                quoted(cluster.data_encryption),
                "needs control-plane TLS (cluster.tls-ca, cluster.tls-cert, cluster.tls-key): the "
                "data plane's keys travel over the control plane");
}

// imbalance.workers; `workers` is train.workers where indices must lie below it (the persistent
// kind with a valid train.workers), else 0.
void check_slow_workers(checker& check, const imbalance_section& imbalance, int workers,
                        const std::string& which) {
  if (imbalance.workers.size() > max_list_entries) {
    check.require(false, "imbalance.workers", std::to_string(imbalance.workers.size()) + " entries",
                  "at most " + std::to_string(max_list_entries) + " slow workers");
    return;
  }
  const std::string listed = render(imbalance.workers);
  // Sorted, so that a repeated index is reported once, as a duplicate.
  auto sorted = imbalance.workers;
  std::sort(sorted.begin(), sorted.end());
  const auto duplicate = std::adjacent_find(sorted.begin(), sorted.end());
  if (duplicate != sorted.end())
    check.require(false, "imbalance.workers", listed,
                  "worker " + std::to_string(*duplicate) + " is listed twice; list each once");
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (int index : sorted) {
    if (workers > 0)
      check.require(index >= 0 && index < workers, "imbalance.workers", listed,
                    "worker index " + std::to_string(index) +
                        " is out of range; indices must lie in [0, " + which + ") = [0, " +
                        std::to_string(workers) + ")");
    else
      check.require(index >= 0, "imbalance.workers", listed,
                    "worker index " + std::to_string(index) + " is negative");
  }
  check.require(imbalance.kind != "persistent" || !imbalance.workers.empty(), "imbalance.workers",
                listed, "imbalance.kind = persistent needs at least one slow worker");
}

// `workers`: the largest job the configuration describes, 0 where its count is itself refused
// (comparing against it would only add noise); `which` names where it comes from
// (train.workers, or herd simulate's largest job size, which caps k and the slow workers for the
// smaller ones).
void check_imbalance(checker& check, const imbalance_section& imbalance, int workers,
                     const std::string& which) {
  check.require_one_of(known_imbalance_kinds(), "imbalance.kind", imbalance.kind, "imbalance kind");
  const bool workers_valid = workers >= 1; // 0: not known (a bad count is reported on its own)
  const bool random = imbalance.kind == "random" && workers_valid;
  const bool persistent = imbalance.kind == "persistent" && workers_valid;
  if (random)
    check.require(imbalance.k >= 1 && imbalance.k <= workers, "imbalance.k", imbalance.k,
                  "must be between 1 and " + which + " (" + std::to_string(workers) + ")");
  else
    check.require(imbalance.k >= 1, "imbalance.k", imbalance.k, "must be at least 1");
  check.require(imbalance.delay_ms >= 0.0 && imbalance.delay_ms <= 60000.0, "imbalance.delay-ms",
                imbalance.delay_ms, "must lie in [0, 60000] milliseconds");
  check_slow_workers(check, imbalance, persistent ? workers : 0, which);
  check.require(imbalance.factor >= 1.0 && imbalance.factor <= 100.0, "imbalance.factor",
                imbalance.factor, "must lie in [1, 100] (how many times slower)");
  check.require(imbalance.sigma >= 0.0 && imbalance.sigma <= 3.0, "imbalance.sigma",
                imbalance.sigma, "must lie in [0, 3]");
}

// [simulate]: read by herd simulate only, checked always like every other section.
void check_simulate(checker& check, const simulate_section& simulate) {
  check.require(simulate.workers.size() <= 64, "simulate.workers",
                std::to_string(simulate.workers.size()) + " entries", "at most 64 job sizes");
  const auto& sizes = simulate.workers;
  check.require(
      std::all_of(sizes.begin(), sizes.end(),
                  [](int workers) { return workers >= 1 && workers <= max_swept_workers; }),
      "simulate.workers", render(sizes),
      "every job size must be between 1 and " + std::to_string(max_swept_workers) +
          " workers"); // once, however many are out of range
  check.require(simulate.step_ms > 0.0 && simulate.step_ms <= 3600000.0, "simulate.step-ms",
                simulate.step_ms, "must lie in (0, 3600000] milliseconds");
  check.require_one_of(known_networks(), "simulate.network", simulate.network, "network");
  check.require_one_of(known_collectives(), "simulate.collective", simulate.collective,
                       "collective");
  check.require(simulate.alpha_us >= 0.0 && simulate.alpha_us <= 1e6, "simulate.alpha-us",
                simulate.alpha_us, "must lie in [0, 1000000] microseconds (0 = the network's)");
  check.require(simulate.bandwidth_gbs >= 0.0 && simulate.bandwidth_gbs <= 1e5,
                "simulate.bandwidth-gbs", simulate.bandwidth_gbs,
                "must lie in [0, 100000] GB/s (0 = the network's)");
  check.require(simulate.model_mb >= 0.0 && simulate.model_mb <= 1e6, "simulate.model-mb",
                simulate.model_mb, "must lie in [0, 1000000] MB");
  check.require(simulate.message_us >= 0.0 && simulate.message_us <= 1e6, "simulate.message-us",
                simulate.message_us, "must lie in [0, 1000000] microseconds");
  check.require(simulate.steps >= 1 && simulate.steps <= 1000000, "simulate.steps", simulate.steps,
                "must be between 1 and 1000000 step times");
  check.require(simulate.aggregators >= 0 && simulate.aggregators <= 65536, "simulate.aggregators",
                simulate.aggregators, "must be between 0 (independent rounds) and 65536");
}

// Which [model] keys may go together; the layers themselves are checked against the data's shape
// when the model is built (actors::make_model).
void check_model(checker& check, const model_section& model) {
  check.require(contains(known_model_presets(), model.preset), "model.preset", quoted(model.preset),
                "unknown preset; the presets are: " + join(known_model_presets()));
  check.require(model.layers.size() <= max_layers_bytes, "model.layers", quoted(model.layers),
                "is longer than " + std::to_string(max_layers_bytes) + " bytes");
  check.require(model.layers.empty() || model.preset == model_section{}.preset, "model.preset",
                quoted(model.preset),
                "model.layers is set too, and it defines the model; set one of the two");
  const bool mlp = model.layers.empty() && model.preset == "mlp";
  check.require(mlp || model.hidden == model_section{}.hidden, "model.hidden", render(model.hidden),
                model.layers.empty()
                    ? "sizes the mlp preset only, not model.preset = " + quoted(model.preset)
                    : "sizes the mlp preset only; with model.layers, write the dense layers there");
}

} // namespace

std::vector<config_error> validate(const run_config& config, const value_origins& origins) {
  checker check(origins);
  const auto& train = config.train;
  check.require_one_of(known_algorithms(), "train.algorithm", train.algorithm, "algorithm");
  const bool run_valid = train.workers >= 1 && train.workers <= max_run_workers;
  const std::string run_range = "must be between 1 and " + std::to_string(max_run_workers);
  check.require(run_valid, "train.workers", train.workers,
                train.workers > max_run_workers
                    ? run_range + " (herd simulate takes larger jobs, up to " +
                          std::to_string(max_swept_workers) + " workers, in simulate.workers)"
                    : run_range);
  check.require(train.batch_size >= 1, "train.batch-size", train.batch_size, "must be at least 1");
  check.require(train.lr > 0.0, "train.lr", train.lr, "the learning rate must be positive");
  validation::check_lr_schedule(check, train);
  validation::check_optimizer(check, train);
  check.require(train.weight_decay >= 0.0, "train.weight-decay", train.weight_decay,
                "must not be negative");
  check.require(train.epochs >= 1, "train.epochs", train.epochs, "must be at least 1");
  check.require(train.target_accuracy >= 0.0 && train.target_accuracy <= 1.0,
                "train.target-accuracy", train.target_accuracy,
                "must lie in [0, 1] (0 = no target)");
  check.require(train.patience <= 1000000, "train.patience", train.patience,
                "must be at most 1000000 evaluations (0 = never stop for a plateau)");
  check.require(train.max_seconds >= 0.0, "train.max-seconds", train.max_seconds,
                "must not be negative (0 = no limit)");
  check.require(train.eval_every >= 1, "train.eval-every", train.eval_every,
                "must be at least 1 round");
  check.require(train.eval_every_epochs == 0.0 ||
                    (std::isfinite(train.eval_every_epochs) && train.eval_every_epochs >= 0.001),
                "train.eval-every-epochs", train.eval_every_epochs,
                "must be 0 (count rounds: train.eval-every) or at least 0.001 epochs");
  check.require(train.blas_threads >= 0 && train.blas_threads <= 256, "train.blas-threads",
                train.blas_threads, "must be between 0 (automatic) and 256");
  check.require_one_of(known_backends(), "train.backend", train.backend, "backend");
  check.require(train.device >= 0, "train.device", train.device,
                "must not be negative (a CUDA device index)");
  check.require_one_of(known_datasets(), "data.dataset", config.data.dataset, "dataset");
  check.require(config.data.dataset != "fashion-mnist" || !config.data.path.empty(), "data.path",
                "\"\"", "must name the directory holding the Fashion-MNIST files");
  check.require(config.data.path.size() <= max_path_bytes, "data.path", quoted(config.data.path),
                too_long_path);
  for (const auto& [key, value, what] :
       {std::tuple{"data.train-features", &config.data.train_features, "training features"},
        std::tuple{"data.train-labels", &config.data.train_labels, "training labels"},
        std::tuple{"data.test-features", &config.data.test_features, "test features"},
        std::tuple{"data.test-labels", &config.data.test_labels, "test labels"}}) {
    check.require(config.data.dataset != "npy" || !value->empty(), key, "\"\"",
                  std::string("must name the .npy file of the ") + what +
                      " (required with data.dataset = npy)");
    // Set for another dataset, it would be ignored and the run train on that dataset instead.
    check.require(config.data.dataset == "npy" || value->empty(), key, quoted(*value),
                  "used only with data.dataset = npy, not " + quoted(config.data.dataset) +
                      "; set data.dataset = npy to train on your files, or leave it out");
    check.require(value->size() <= max_path_bytes, key, quoted(*value), too_long_path);
  }
  // data.max-bytes is an unsigned integer: the conversion already refused a negative value.
  check.require(config.data.max_length >= 1 && config.data.max_length <= 65536, "data.max-length",
                config.data.max_length, "must be between 1 and 65536 bytes");
  check.require(config.data.cache_dir.size() <= max_path_bytes, "data.cache-dir",
                quoted(config.data.cache_dir), too_long_path);
  check.require(config.data.max_texts == 0 || config.data.max_texts >= 100, "data.max-texts",
                config.data.max_texts, "must be 0 (all texts) or at least 100");
  check.require(!config.data.bucket_by_length || config.data.dataset == "fortunes",
                "data.bucket-by-length", "true",
                "needs samples of different lengths: data.dataset = \"fortunes\" (data.dataset is " +
                    quoted(config.data.dataset) + ")");
  check.require(config.data.validation_fraction >= 0.0 && config.data.validation_fraction <= 0.5,
                "data.validation-fraction", config.data.validation_fraction,
                "must be between 0 (no validation set) and 0.5");
  check_validation_files(check, config.data);
  const auto& hidden = config.model.hidden;
  check.require(hidden.size() <= max_hidden_layers, "model.hidden",
                std::to_string(hidden.size()) + " layers",
                "at most " + std::to_string(max_hidden_layers) + " hidden layers");
  if (hidden.size() <= max_hidden_layers) {
    const auto bad = std::find_if(hidden.begin(), hidden.end(),
                                  [](int size) { return size < 1 || size > 65536; });
    if (bad != hidden.end()) {
      check.require(false, "model.hidden", render(hidden),
                    "hidden layer " + std::to_string(bad - hidden.begin() + 1) + " has " +
                        std::to_string(*bad) +
                        " units; every hidden layer size must be between 1 and 65536");
    }
  }
  check_model(check, config.model);
  check.require(config.metrics.port >= 0 && config.metrics.port <= 65535, "metrics.port",
                config.metrics.port, "must be a TCP port between 0 and 65535 (0 = off)");
  check.require(!config.metrics.bind.empty(), "metrics.bind", "\"\"",
                "must name an address to listen on, e.g. 127.0.0.1 or 0.0.0.0");
  check.require(config.metrics.bind.size() <= max_label_bytes, "metrics.bind",
                quoted(config.metrics.bind),
                "must be at most " + std::to_string(max_label_bytes) + " bytes");
  check.require(!config.metrics.job.empty(), "metrics.job", "\"\"",
                "must not be empty: it labels every metric");
  check.require(config.metrics.job.size() <= max_label_bytes, "metrics.job",
                quoted(config.metrics.job),
                "must be at most " + std::to_string(max_label_bytes) + " bytes");
  check.require(config.metrics.window_seconds >= 1.0 && config.metrics.window_seconds <= 3600.0,
                "metrics.window-seconds", config.metrics.window_seconds,
                "must lie between 1 and 3600 seconds");
  check.require(config.metrics.linger_seconds >= 0.0 && config.metrics.linger_seconds <= 3600.0,
                "metrics.linger-seconds", config.metrics.linger_seconds,
                "must lie between 0 and 3600 seconds");
  check_partial(check, "solo", config.solo);
  check_partial(check, "majority", config.majority);
  check.require(config.quorum.fraction > 0.0 && config.quorum.fraction <= 1.0, "quorum.fraction",
                config.quorum.fraction, "must lie in (0, 1]");
  check_partial(check, "quorum", config.quorum);
  // herd simulate's sweep: preduce's period and wagma's group against its largest P (the most
  // groups to connect; a group that fits some P). A smaller P caps the group at its own size, as
  // it caps preduce's (sim::for_workers), and herd simulate says so.
  const auto& swept = config.simulate.workers;
  const bool sweep_valid = !swept.empty() && std::all_of(swept.begin(), swept.end(), [](int size) {
    return size >= 1 && size <= max_swept_workers;
  });
  const int largest_swept = sweep_valid ? *std::max_element(swept.begin(), swept.end()) : 0;
  const job_size job =
      swept.empty() ? sized(run_valid ? train.workers : 0, false) : sized(largest_swept, true);
  check_preduce(check, config.preduce, job);
  check_wagma(check, config.wagma, job);
  check_local_sgd(check, config.local_sgd);
  check.require(std::isfinite(config.async.lr) && config.async.lr >= 0.0 && config.async.lr <= 100.0,
                "async.lr", config.async.lr,
                "must lie between 0 (train.lr / train.workers) and 100");
  // The parameter server's parameters and velocity are not in a checkpoint's records yet, so a
  // resumed async run could not continue where it stopped.
  check.require(train.algorithm != "async" || !config.checkpoint.enabled(), "checkpoint.dir",
                quoted(config.checkpoint.dir),
                "train.algorithm = async takes no checkpoints (the parameter server's state is "
                "not in them); leave checkpoint.dir empty");
  // One file may serve herd simulate, which sweeps [simulate] workers with one [imbalance]
  // (capped at each size), and the commands that train train.workers: checked here against the
  // largest job of either, and by a run against its own workers (validate_run).
  if (swept.empty())
    check_imbalance(check, config.imbalance, run_valid ? train.workers : 0, "train.workers");
  else
    check_imbalance(check, config.imbalance,
                    run_valid && sweep_valid ? std::max(train.workers, largest_swept) : 0,
                    "the largest of train.workers and simulate.workers");
  check_cluster(check, config.cluster);
  check_checkpoint(check, config.checkpoint);
  check.require_one_of(known_compressions(), "comm.compression", config.comm.compression,
                       "compression");
  check.require(!config.comm.error_feedback || config.comm.compression != "none",
                "comm.error-feedback", "true",
                "feeds back what comm.compression's rounding loses; set comm.compression = fp16 "
                "or bf16 (it is none)");
  check.require(config.comm.seal_threads >= 0 && config.comm.seal_threads <= 64,
                "comm.seal-threads", config.comm.seal_threads,
                "must be between 0 (automatic) and 64 threads");
  check.require(config.comm.connections >= 1 && config.comm.connections <= 16, "comm.connections",
                config.comm.connections,
                "must be between 1 and 16 connections between each pair of nodes");
  check.require(config.comm.bucket_mb == 0.0 ||
                    (config.comm.bucket_mb >= 0.004 && config.comm.bucket_mb <= 1024.0),
                "comm.bucket-mb", config.comm.bucket_mb,
                "must be 0 (no buckets) or between 0.004 (4 KiB) and 1024 MiB");
  check_simulate(check, config.simulate);
  // A configuration made in code may hold what no file can (a seed above 2^63 - 1, an infinite
  // rate): refused here, as the loader refuses it, so that its checkpoints' settings load again.
  auto errors = check.take();
  for (auto& beyond : values_beyond_ini(config))
    errors.push_back(std::move(beyond));
  return errors;
}

std::vector<config_error> validate_run(const run_config& config, const value_origins& origins) {
  auto run = config;
  run.simulate.workers.clear(); // a run trains train.workers, whatever herd simulate would sweep
  return validate(run, origins);
}

std::vector<config_error> validate_against_data(const run_config& config,
                                                std::size_t training_samples,
                                                const value_origins& origins) {
  checker check(origins);
  const auto workers = static_cast<std::size_t>(config.train.workers);
  const std::size_t shard = training_samples / workers;
  if (shard == 0) {
    check.require(false, "train.workers", config.train.workers,
                  "more workers than the " + std::to_string(training_samples) +
                      " training samples; each worker needs at least one batch of its own");
    return check.take();
  }
  std::ostringstream allowed;
  allowed << "larger than a worker's shard of " << shard << " samples (" << training_samples
          << " training samples / " << workers << " workers); use at most " << shard;
  check.require(static_cast<std::size_t>(config.train.batch_size) <= shard, "train.batch-size",
                config.train.batch_size, allowed.str());
  return check.take();
}

} // namespace herd::config
