// The one table of configuration keys (key_table.hpp) and what is made from it alone: --help's
// lines, the INI a configuration writes back to, the names of the keys.
#include "config/key_table.hpp"

#include "config/ini_values.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <type_traits>

namespace herd::config {

namespace {

// `field` is a generic lambda returning a reference to the key's member, for const and non-const
// configurations alike.
// `expected`, when given, replaces the conversion's own wording of what a value must look like
// (the generic list message speaks of hidden layers, which is wrong for a list of workers).
template <class T, class Field>
key_spec make_key(std::string name, value_kind kind, std::string help, Field field,
                  std::string expected = {}) {
  key_spec spec;
  spec.name = std::move(name);
  spec.kind = kind;
  spec.unsigned_64 = std::is_same_v<T, std::uint64_t>;
  spec.help = std::move(help);
  spec.assign = [field, expected = std::move(expected)](const caf::config_value& value,
                                                        run_config& config) {
    T converted{};
    auto problem = convert(value, converted);
    if (problem.empty())
      field(config) = std::move(converted);
    else if (!expected.empty())
      problem = expected;
    return problem;
  };
  spec.show = [field](const run_config& config) { return render(field(config)); };
  return spec;
}

// The keys every partial-collective section ([solo], [majority], [quorum]) shares.
template <class Section>
void add_partial_keys(std::vector<key_spec>& k, const std::string& section,
                      Section run_config::*member) {
  k.push_back(make_key<int>(
      section + ".sync-every", value_kind::integer,
      "a full synchronous round every this many rounds (0 = never)", [member](auto& c) -> auto& {
        return (c.*member).sync_every;
      }));
  k.push_back(make_key<std::string>(
      section + ".late-gradients", value_kind::string,
      "late gradients: discard, accumulate (added to the next contribution) or scale (added "
      "weighted 1 / (1 + rounds it missed))",
      [member](auto& c) -> auto& { return (c.*member).late_gradients; }));
  k.push_back(make_key<std::string>(
      section + ".missing-members", value_kind::string,
      "a round without some members divides by those that answered (renormalise) or by all (zero)",
      [member](auto& c) -> auto& { return (c.*member).missing_members; }));
}

} // namespace

const char* to_string(value_kind kind) {
  switch (kind) {
  case value_kind::boolean:
    return "boolean";
  case value_kind::integer:
    return "integer";
  case value_kind::real:
    return "real";
  case value_kind::string:
    return "string";
  case value_kind::integer_list:
    return "integer list";
  }
  return "value";
}

std::string render(const caf::config_value& value) {
  // Reals as written (CAF prints 1.500000); a whole one keeps its point ("= 4.0", not "= 4").
  if (auto real = caf::get_if<caf::config_value::real>(&value)) {
    auto text = render(*real);
    if (std::isfinite(*real) && text.find_first_of(".e") == std::string::npos)
      text += ".0";
    return text;
  }
  return caf::to_string(value);
}

const std::vector<key_spec>& keys() {
  static const std::vector<key_spec> table = [] {
    std::vector<key_spec> k;
    k.push_back(make_key<std::string>(
        "train.algorithm", value_kind::string,
        "how workers combine their updates: sync, solo, majority, quorum, preduce, wagma, async "
        "or local-sgd",
        [](auto& c) -> auto& { return c.train.algorithm; }));
    k.push_back(make_key<int>(
        "train.workers", value_kind::integer, "worker actors in this process",
        [](auto& c) -> auto& { return c.train.workers; }));
    k.push_back(make_key<int>(
        "train.batch-size", value_kind::integer, "samples per worker per step",
        [](auto& c) -> auto& { return c.train.batch_size; }));
    k.push_back(make_key<double>(
        "train.lr", value_kind::real, "learning rate",
        [](auto& c) -> auto& { return c.train.lr; }));
    k.push_back(make_key<std::string>(
        "train.lr-schedule", value_kind::string,
        "how the learning rate changes with the epochs: constant, cosine (down to train.lr-min "
        "at train.epochs) or step (times train.lr-decay every train.lr-decay-epochs)",
        [](auto& c) -> auto& { return c.train.lr_schedule; }));
    k.push_back(make_key<double>(
        "train.lr-warmup-epochs", value_kind::real,
        "epochs over which the learning rate rises linearly from train.lr-warmup-start times "
        "its value (0 = none)",
        [](auto& c) -> auto& { return c.train.lr_warmup_epochs; }));
    k.push_back(make_key<double>(
        "train.lr-warmup-start", value_kind::real,
        "the factor of the learning rate a warmup starts from, in [0, 1]",
        [](auto& c) -> auto& { return c.train.lr_warmup_start; }));
    k.push_back(make_key<double>(
        "train.lr-min", value_kind::real, "cosine: the learning rate at train.epochs",
        [](auto& c) -> auto& { return c.train.lr_min; }));
    k.push_back(make_key<double>(
        "train.lr-decay", value_kind::real,
        "step: what the learning rate is multiplied by every period",
        [](auto& c) -> auto& { return c.train.lr_decay; }));
    k.push_back(make_key<double>(
        "train.lr-decay-epochs", value_kind::real, "step: epochs between two decays",
        [](auto& c) -> auto& { return c.train.lr_decay_epochs; }));
    k.push_back(make_key<std::string>(
        "train.optimizer", value_kind::string,
        "sgd (with momentum) or adamw (Adam with decoupled weight decay); each worker keeps its "
        "own optimizer state",
        [](auto& c) -> auto& { return c.train.optimizer; }));
    k.push_back(make_key<double>(
        "train.momentum", value_kind::real, "SGD momentum in [0, 1)",
        [](auto& c) -> auto& { return c.train.momentum; }));
    k.push_back(make_key<double>(
        "train.weight-decay", value_kind::real,
        "weight decay: sgd adds it times the weights to the gradient (L2), adamw shrinks the "
        "weights by lr times it every step (decoupled)",
        [](auto& c) -> auto& { return c.train.weight_decay; }));
    k.push_back(make_key<double>(
        "train.adam-beta1", value_kind::real, "adamw: the first moment's decay in [0, 1)",
        [](auto& c) -> auto& { return c.train.adam_beta1; }));
    k.push_back(make_key<double>(
        "train.adam-beta2", value_kind::real, "adamw: the second moment's decay in [0, 1)",
        [](auto& c) -> auto& { return c.train.adam_beta2; }));
    k.push_back(make_key<double>(
        "train.adam-eps", value_kind::real,
        "adamw: added to the second moment's root, in [1e-30, 1]",
        [](auto& c) -> auto& { return c.train.adam_eps; }));
    k.push_back(make_key<int>(
        "train.epochs", value_kind::integer, "passes over the training set",
        [](auto& c) -> auto& { return c.train.epochs; }));
    k.push_back(make_key<double>(
        "train.target-accuracy", value_kind::real,
        "stop once test accuracy (validation accuracy with data.validation-fraction) reaches this "
        "(0 = no target)",
        [](auto& c) -> auto& { return c.train.target_accuracy; }));
    k.push_back(make_key<std::uint64_t>(
        "train.patience", value_kind::integer,
        "stop once this many evaluations in a row have not beaten the best accuracy so far, and "
        "keep the best evaluation's parameters (0 = never)",
        [](auto& c) -> auto& { return c.train.patience; }));
    k.push_back(make_key<double>(
        "train.max-seconds", value_kind::real, "stop after this much wall time (0 = no limit)",
        [](auto& c) -> auto& { return c.train.max_seconds; }));
    k.push_back(make_key<std::uint64_t>(
        "train.seed", value_kind::integer, "seed of initialisation, sharding and shuffling",
        [](auto& c) -> auto& { return c.train.seed; }));
    k.push_back(make_key<int>(
        "train.eval-every", value_kind::integer,
        "rounds between two test-set evaluations (a round is a group under preduce and wagma, "
        "a worker's step under async and local-sgd: compare algorithms by herd bench's "
        "snapshots)",
        [](auto& c) -> auto& { return c.train.eval_every; }));
    k.push_back(make_key<double>(
        "train.eval-every-epochs", value_kind::real,
        "epochs of training between two test-set evaluations, the same for every algorithm "
        "(0 = count rounds: train.eval-every)",
        [](auto& c) -> auto& { return c.train.eval_every_epochs; }));
    k.push_back(make_key<int>(
        "train.blas-threads", value_kind::integer,
        "OpenBLAS threads per GEMM (0 = usable cores for one worker, 1 for several)",
        [](auto& c) -> auto& { return c.train.blas_threads; }));
    k.push_back(make_key<std::string>(
        "train.backend", value_kind::string,
        "where workers compute: cpu (OpenBLAS) or cuda (a GPU: model, gradients and reductions "
        "stay on the device)",
        [](auto& c) -> auto& { return c.train.backend; }));
    k.push_back(make_key<int>(
        "train.device", value_kind::integer,
        "with train.backend = cuda: the CUDA device all workers share",
        [](auto& c) -> auto& { return c.train.device; }));
    k.push_back(make_key<std::string>(
        "data.dataset", value_kind::string,
        "fashion-mnist, npy (your own .npy files: data.train-features and its siblings), "
        "fortunes (language identification of short texts; docs/text.md), or synthetic "
        "(generated, for smoke tests)",
        [](auto& c) -> auto& { return c.data.dataset; }));
    k.push_back(make_key<std::string>(
        "data.path", value_kind::string, "directory holding the Fashion-MNIST IDX files",
        [](auto& c) -> auto& { return c.data.path; }));
    k.push_back(make_key<std::uint64_t>(
        "data.max-bytes", value_kind::integer,
        "memory the loaded dataset may take, in bytes, checked against the files' headers before "
        "they are read (0 = half the physical memory)",
        [](auto& c) -> auto& { return c.data.max_bytes; }));
    k.push_back(make_key<std::string>(
        "data.train-features", value_kind::string,
        "with data.dataset = npy: the .npy file of the training features (n x d, n x h x w or "
        "n x c x h x w; float32, float64, int32, int64 or uint8)",
        [](auto& c) -> auto& { return c.data.train_features; }));
    k.push_back(make_key<std::string>(
        "data.train-labels", value_kind::string,
        "with data.dataset = npy: the .npy file of the training labels (n; int32, int64 or uint8)",
        [](auto& c) -> auto& { return c.data.train_labels; }));
    k.push_back(make_key<std::string>(
        "data.test-features", value_kind::string,
        "with data.dataset = npy: the .npy file of the test features",
        [](auto& c) -> auto& { return c.data.test_features; }));
    k.push_back(make_key<std::string>(
        "data.test-labels", value_kind::string,
        "with data.dataset = npy: the .npy file of the test labels",
        [](auto& c) -> auto& { return c.data.test_labels; }));
    k.push_back(make_key<std::uint64_t>(
        "data.max-length", value_kind::integer,
        "with data.dataset = fortunes: the longest text a batch row holds, in bytes (tokens); "
        "longer texts are truncated",
        [](auto& c) -> auto& { return c.data.max_length; }));
    k.push_back(make_key<std::string>(
        "data.cache-dir", value_kind::string,
        "with data.dataset = fortunes: where the prepared texts are cached (\"\" = "
        "$XDG_CACHE_HOME/herd, else ~/.cache/herd)",
        [](auto& c) -> auto& { return c.data.cache_dir; }));
    k.push_back(make_key<std::uint64_t>(
        "data.max-texts", value_kind::integer,
        "with data.dataset = fortunes: use a stratified subset of this many texts, for quick runs "
        "(0 = all)",
        [](auto& c) -> auto& { return c.data.max_texts; }));
    k.push_back(make_key<bool>(
        "data.bucket-by-length", value_kind::boolean,
        "with data.dataset = fortunes: each step, every worker draws texts of similar length "
        "(less padding, less imbalance)",
        [](auto& c) -> auto& { return c.data.bucket_by_length; }));
    k.push_back(make_key<std::string>(
        "data.validation-features", value_kind::string,
        "with data.dataset = npy: the .npy file of a validation set's features (optional; with "
        "data.validation-labels), which the evaluations then measure",
        [](auto& c) -> auto& { return c.data.validation_features; }));
    k.push_back(make_key<std::string>(
        "data.validation-labels", value_kind::string,
        "with data.dataset = npy: the .npy file of the validation set's labels",
        [](auto& c) -> auto& { return c.data.validation_labels; }));
    k.push_back(make_key<double>(
        "data.validation-fraction", value_kind::real,
        "the share of the training set held out (seeded by train.seed, the same share of every "
        "class) to evaluate on while training: the periodic evaluations, train.target-accuracy; "
        "the test set is then measured once, at the end (0 = none: they measure the test set)",
        [](auto& c) -> auto& { return c.data.validation_fraction; }));
    k.push_back(make_key<std::string>(
        "model.preset", value_kind::string,
        "the model when model.layers is empty: mlp, cnn or textcnn",
        [](auto& c) -> auto& { return c.model.preset; }));
    k.push_back(make_key<std::string>(
        "model.layers", value_kind::string,
        "the model as layers, e.g. \"flatten, dense 128, relu, dense 10\" (docs/models.md; \"\" = "
        "model.preset)",
        [](auto& c) -> auto& { return c.model.layers; }));
    k.push_back(make_key<std::vector<int>>(
        "model.hidden", value_kind::integer_list, "hidden layer sizes of the mlp preset",
        [](auto& c) -> auto& { return c.model.hidden; }));
    k.push_back(make_key<int>(
        "metrics.port", value_kind::integer,
        "serve Prometheus metrics on this TCP port at /metrics (0 = off)",
        [](auto& c) -> auto& { return c.metrics.port; }));
    k.push_back(make_key<std::string>(
        "metrics.bind", value_kind::string,
        "address the metrics endpoint listens on (0.0.0.0 = every interface)",
        [](auto& c) -> auto& { return c.metrics.bind; }));
    k.push_back(make_key<std::string>(
        "metrics.job", value_kind::string, "the job label of every metric",
        [](auto& c) -> auto& { return c.metrics.job; }));
    k.push_back(make_key<double>(
        "metrics.window-seconds", value_kind::real,
        "recent window of step times behind the straggler score and imbalance ratio",
        [](auto& c) -> auto& { return c.metrics.window_seconds; }));
    k.push_back(make_key<double>(
        "metrics.linger-seconds", value_kind::real,
        "serve the final metrics this long after the run ends (0 = exit at once)",
        [](auto& c) -> auto& { return c.metrics.linger_seconds; }));
    // Keys of one section must stay together: to_ini() writes a header whenever the section
    // changes.
    add_partial_keys(k, "solo", &run_config::solo);
    add_partial_keys(k, "majority", &run_config::majority);
    k.push_back(make_key<double>(
        "quorum.fraction", value_kind::real,
        "a round activates once ceil(fraction * workers) fresh gradients arrived, in (0, 1]",
        [](auto& c) -> auto& { return c.quorum.fraction; }));
    add_partial_keys(k, "quorum", &run_config::quorum);
    k.push_back(make_key<int>(
        "preduce.group-size", value_kind::integer, "preduce: members of a group (at least 2)",
        [](auto& c) -> auto& { return c.preduce.group_size; }));
    k.push_back(make_key<double>(
        "preduce.wait-window-ms", value_kind::real,
        "preduce: after this long the oldest ready worker groups with those ready, if any",
        [](auto& c) -> auto& { return c.preduce.wait_window_ms; }));
    k.push_back(make_key<double>(
        "preduce.staleness-decay", value_kind::real,
        "preduce: member weights exp(-decay * versions behind the freshest member); 0 = uniform",
        [](auto& c) -> auto& { return c.preduce.staleness_decay; }));
    k.push_back(make_key<int>(
        "preduce.connect-every", value_kind::integer,
        "preduce: groups that may pass before the isolation guard connects all workers "
        "(-1 = automatic, 0 = off)",
        [](auto& c) -> auto& { return c.preduce.connect_every; }));
    k.push_back(make_key<double>(
        "preduce.connect-wait-ms", value_kind::real,
        "preduce: how long a guard's group waits for a worker of another component",
        [](auto& c) -> auto& { return c.preduce.connect_wait_ms; }));
    k.push_back(make_key<int>(
        "preduce.sync-every", value_kind::integer,
        "preduce: a global average every this many groups (0 = never)",
        [](auto& c) -> auto& { return c.preduce.sync_every; }));
    k.push_back(make_key<int>(
        "wagma.group-size", value_kind::integer,
        "wagma: models averaged per group, a power of two (0 = sqrt(workers) rounded down)",
        [](auto& c) -> auto& { return c.wagma.group_size; }));
    k.push_back(make_key<int>(
        "wagma.sync-every", value_kind::integer,
        "wagma: a blocking global model average every this many steps (0 = never)",
        [](auto& c) -> auto& { return c.wagma.sync_every; }));
    k.push_back(make_key<std::string>(
        "wagma.blend", value_kind::string,
        "wagma: reference (every member (sum + own) / (S + 1)) or herd (on time: sum / S, late: "
        "the former)",
        [](auto& c) -> auto& { return c.wagma.blend; }));
    k.push_back(make_key<int>(
        "local-sgd.period", value_kind::integer,
        "local-sgd: local steps between global model averages (1 = every step)",
        [](auto& c) -> auto& { return c.local_sgd.period; }));
    k.push_back(make_key<double>(
        "async.lr", value_kind::real,
        "async: the parameter server's learning rate (0 = train.lr / train.workers)",
        [](auto& c) -> auto& { return c.async.lr; }));
    k.push_back(make_key<std::string>(
        "imbalance.kind", value_kind::string,
        "injected load imbalance: none, random, persistent or lognormal",
        [](auto& c) -> auto& { return c.imbalance.kind; }));
    k.push_back(make_key<std::uint64_t>(
        "imbalance.seed", value_kind::integer,
        "seed of the imbalance generator, shared by all workers",
        [](auto& c) -> auto& { return c.imbalance.seed; }));
    k.push_back(make_key<int>(
        "imbalance.k", value_kind::integer, "random: workers delayed in each step",
        [](auto& c) -> auto& { return c.imbalance.k; }));
    k.push_back(make_key<double>(
        "imbalance.delay-ms", value_kind::real,
        "random: delay of each delayed worker, in milliseconds",
        [](auto& c) -> auto& { return c.imbalance.delay_ms; }));
    k.push_back(make_key<std::vector<int>>(
        "imbalance.workers", value_kind::integer_list, "persistent: indices of the slow workers",
        [](auto& c) -> auto& { return c.imbalance.workers; },
        "expected a list of worker indices such as [0, 1]"));
    k.push_back(make_key<double>(
        "imbalance.factor", value_kind::real,
        "persistent: how many times slower the slow workers run",
        [](auto& c) -> auto& { return c.imbalance.factor; }));
    k.push_back(make_key<double>(
        "imbalance.sigma", value_kind::real,
        "lognormal: sigma of the LogNormal(0, sigma) multiplier of every step time (below 1 "
        "counts as 1)",
        [](auto& c) -> auto& { return c.imbalance.sigma; }));
    k.push_back(make_key<std::vector<int>>(
        "simulate.workers", value_kind::integer_list,
        "herd simulate: the job sizes to simulate, e.g. [2, 4, 8] ([] = train.workers)",
        [](auto& c) -> auto& { return c.simulate.workers; },
        "expected a list of worker counts such as [2, 64, 1024]"));
    k.push_back(make_key<double>(
        "simulate.step-ms", value_kind::real,
        "herd simulate: a local step's time without imbalance, in ms",
        [](auto& c) -> auto& { return c.simulate.step_ms; }));
    k.push_back(make_key<std::string>(
        "simulate.network", value_kind::string,
        "herd simulate: the data plane's alpha and bandwidth: one-machine, 25gbe or nvlink",
        [](auto& c) -> auto& { return c.simulate.network; }));
    k.push_back(make_key<std::string>(
        "simulate.collective", value_kind::string,
        "herd simulate: how a group reduces: ring (latency 2(k-1) alpha, as Herd's data planes "
        "do) or halving-doubling (2 log2(k) alpha, as large clusters' collectives do); the same "
        "bytes either way",
        [](auto& c) -> auto& { return c.simulate.collective; }));
    k.push_back(make_key<double>(
        "simulate.alpha-us", value_kind::real,
        "herd simulate: latency of one message of a reduction, in microseconds (0 = the "
        "network's)",
        [](auto& c) -> auto& { return c.simulate.alpha_us; }));
    k.push_back(make_key<double>(
        "simulate.bandwidth-gbs", value_kind::real,
        "herd simulate: bandwidth of one link, in GB/s (0 = the network's)",
        [](auto& c) -> auto& { return c.simulate.bandwidth_gbs; }));
    k.push_back(make_key<double>(
        "simulate.model-mb", value_kind::real, "herd simulate: the bytes one round reduces, in MB",
        [](auto& c) -> auto& { return c.simulate.model_mb; }));
    k.push_back(make_key<double>(
        "simulate.message-us", value_kind::real,
        "herd simulate: latency of one control-plane message, in microseconds",
        [](auto& c) -> auto& { return c.simulate.message_us; }));
    k.push_back(make_key<int>(
        "simulate.steps", value_kind::integer,
        "herd simulate: how long to simulate, in undelayed step times (simulate.step-ms)",
        [](auto& c) -> auto& { return c.simulate.steps; }));
    k.push_back(make_key<int>(
        "simulate.aggregators", value_kind::integer,
        "herd simulate: 0 = rounds reduce independently (as across processes); N = N aggregators "
        "reducing one round at a time each (as herd train in one process)",
        [](auto& c) -> auto& { return c.simulate.aggregators; }));
    k.push_back(make_key<int>(
        "cluster.min-nodes", value_kind::integer,
        "herd coordinator: nodes that must join before the first step",
        [](auto& c) -> auto& { return c.cluster.min_nodes; }));
    k.push_back(make_key<int>(
        "cluster.heartbeat-ms", value_kind::integer,
        "coordinator and nodes: control-plane heartbeat interval, in milliseconds",
        [](auto& c) -> auto& { return c.cluster.heartbeat_ms; }));
    k.push_back(make_key<int>(
        "cluster.node-timeout-ms", value_kind::integer,
        "a process silent this long (no heartbeat) is declared down, in milliseconds",
        [](auto& c) -> auto& { return c.cluster.node_timeout_ms; }));
    k.push_back(make_key<int>(
        "cluster.data-timeout-ms", value_kind::integer,
        "longest wait of one data-plane transfer before the round is aborted (and for a joining "
        "node's data plane to connect), in milliseconds",
        [](auto& c) -> auto& { return c.cluster.data_timeout_ms; }));
    k.push_back(make_key<int>(
        "cluster.join-timeout-s", value_kind::integer,
        "herd node: how long to wait for the coordinator and the other nodes, in seconds",
        [](auto& c) -> auto& { return c.cluster.join_timeout_s; }));
    k.push_back(make_key<int>(
        "cluster.rejoin-s", value_kind::integer,
        "how long a node that lost the coordinator tries to join the running job again, in "
        "place of its own lost workers (0 = it exits at once)",
        [](auto& c) -> auto& { return c.cluster.rejoin_s; }));
    k.push_back(make_key<std::string>(
        "cluster.token", value_kind::string,
        "a secret every node must present to join (not encryption; see docs/deploy.md)",
        [](auto& c) -> auto& { return c.cluster.token; }));
    k.push_back(make_key<std::string>(
        "cluster.token-file", value_kind::string,
        "read cluster.token from this file (keeps it off command lines, which other users see)",
        [](auto& c) -> auto& { return c.cluster.token_file; }));
    k.push_back(make_key<std::string>(
        "cluster.tls-ca", value_kind::string,
        "control-plane TLS: the cluster CA certificate (PEM); a peer whose certificate it did not "
        "sign cannot connect (\"\" = no TLS)",
        [](auto& c) -> auto& { return c.cluster.tls_ca; }));
    k.push_back(make_key<std::string>(
        "cluster.tls-cert", value_kind::string,
        "control-plane TLS: this process's certificate (PEM)",
        [](auto& c) -> auto& { return c.cluster.tls_cert; }));
    k.push_back(make_key<std::string>(
        "cluster.tls-key", value_kind::string,
        "control-plane TLS: this process's private key (PEM)",
        [](auto& c) -> auto& { return c.cluster.tls_key; }));
    k.push_back(make_key<bool>(
        "cluster.tls-check-names", value_kind::boolean,
        "control-plane TLS: a node's certificate must name the address it connects from, the "
        "coordinator's the host nodes dial (false = any certificate the CA signed)",
        [](auto& c) -> auto& { return c.cluster.tls_check_names; }));
    k.push_back(make_key<std::string>(
        "cluster.data-encryption", value_kind::string,
        "seal every data-plane message with AES-256-GCM under keys the coordinator hands out over "
        "TLS: on, off, or auto (on whenever TLS is on)",
        [](auto& c) -> auto& { return c.cluster.data_encryption; }));
    k.push_back(make_key<std::string>(
        "comm.compression", value_kind::string,
        "how reductions cross the gloo data plane between nodes: none (floats), fp16 or bf16 "
        "(rounded to 16 bits, half the bytes)",
        [](auto& c) -> auto& { return c.comm.compression; }));
    k.push_back(make_key<bool>(
        "comm.error-feedback", value_kind::boolean,
        "with fp16 or bf16: what rounding takes from a value on the wire is added to the same "
        "value the next time this node rounds it, so that rounding errors do not pile up",
        [](auto& c) -> auto& { return c.comm.error_feedback; }));
    k.push_back(make_key<int>(
        "comm.seal-threads", value_kind::integer,
        "with cluster.data-encryption: threads that seal and open the pieces of one data-plane "
        "message at once (0 = half the cores, 1 to 4)",
        [](auto& c) -> auto& { return c.comm.seal_threads; }));
    k.push_back(make_key<int>(
        "comm.connections", value_kind::integer,
        "connections between each pair of nodes on the data plane, each with a network thread of "
        "its own; a reduction of 4 MiB or more is cut across them and moved at once (1 to 16)",
        [](auto& c) -> auto& { return c.comm.connections; }));
    k.push_back(make_key<double>(
        "comm.bucket-mb", value_kind::real,
        "sync, solo, majority, quorum: reduce the gradient in buckets of at least this many MiB, "
        "cut where the model's layers begin, each as soon as backward has finished it, so that "
        "reducing overlaps backward (0 = after the step; 0.004 to 1024)",
        [](auto& c) -> auto& { return c.comm.bucket_mb; }));
    k.push_back(make_key<std::string>(
        "checkpoint.dir", value_kind::string,
        "herd train: write checkpoints to this directory, for --resume (\"\" = no checkpoints)",
        [](auto& c) -> auto& { return c.checkpoint.dir; }));
    k.push_back(make_key<double>(
        "checkpoint.every-seconds", value_kind::real,
        "a checkpoint after this many seconds of training since the last (0 = none by time)",
        [](auto& c) -> auto& { return c.checkpoint.every_seconds; }));
    k.push_back(make_key<int>(
        "checkpoint.every-rounds", value_kind::integer,
        "a checkpoint every this many rounds (0 = none by rounds)",
        [](auto& c) -> auto& { return c.checkpoint.every_rounds; }));
    k.push_back(make_key<int>(
        "checkpoint.keep", value_kind::integer,
        "how many of the newest checkpoints stay in checkpoint.dir",
        [](auto& c) -> auto& { return c.checkpoint.keep; }));
    return k;
  }();
  return table;
}

const key_spec* find_key(const std::string& name) {
  for (const auto& spec : keys())
    if (spec.name == name)
      return &spec;
  return nullptr;
}

std::vector<std::string> key_names() {
  std::vector<std::string> names;
  for (const auto& spec : keys())
    names.push_back(spec.name);
  return names;
}

namespace {

bool in_scope(const key_scope& scope, const std::string& key) {
  return !scope.uses || scope.uses(key);
}

// A key's meaning for `scope`. A general meaning that names the one command using the key
// ("herd simulate: ...") drops that name: the help it appears in is that command's.
std::string meaning(const key_spec& spec, const key_scope& scope) {
  if (auto special = scope.meanings.find(spec.name); special != scope.meanings.end())
    return special->second;
  if (scope.uses && spec.help.rfind("herd ", 0) == 0)
    if (auto colon = spec.help.find(": "); colon != std::string::npos && colon < 20)
      return spec.help.substr(colon + 2);
  return spec.help;
}

} // namespace

std::string describe_keys(const key_scope& scope) {
  const run_config defaults;
  std::ostringstream out;
  std::size_t width = 0;
  for (const auto& spec : keys())
    if (in_scope(scope, spec.name))
      width = std::max(width, spec.name.size());
  for (const auto& spec : keys()) {
    if (!in_scope(scope, spec.name))
      continue;
    out << "  --" << spec.name << std::string(width + 2 - spec.name.size(), ' ')
        << meaning(spec, scope) << " (" << to_string(spec.kind) << ", default "
        << (scope.default_note.empty() ? spec.show(defaults) : scope.default_note) << ")\n";
  }
  return out.str();
}

std::string to_ini(const run_config& config, const key_scope& scope) {
  std::ostringstream out;
  std::string section;
  for (const auto& spec : keys()) {
    if (!in_scope(scope, spec.name))
      continue;
    const auto dot = spec.name.find('.');
    const std::string key_section = spec.name.substr(0, dot);
    if (key_section != section) {
      out << (section.empty() ? "" : "\n") << '[' << key_section << "]\n";
      section = key_section;
    }
    out << spec.name.substr(dot + 1) << " = " << spec.show(config) << '\n';
  }
  return out.str();
}

} // namespace herd::config
