// The typed configuration of one training run. Plain data: the loader fills it from INI files
// and command-line overrides (include/herd/config.hpp), validate() checks it, everything else reads it.
// Key names (section.key) are a contract that scripts and docs rely on: see docs/configuration.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace herd::config {

struct train_section {
  std::string algorithm = "sync"; // train.algorithm
  int workers = 4;                // train.workers
  int batch_size = 32;            // train.batch-size: per worker
  double lr = 0.05;               // train.lr
  std::string lr_schedule = "constant"; // train.lr-schedule: constant | cosine | step
  double lr_warmup_epochs = 0.0;        // train.lr-warmup-epochs: a linear ramp to train.lr
  double lr_warmup_start = 0.1;         // train.lr-warmup-start: the ramp's first factor
  double lr_min = 0.0;                  // train.lr-min: cosine's rate at train.epochs
  double lr_decay = 0.1;                // train.lr-decay: step's multiplier every period
  double lr_decay_epochs = 0.0;         // train.lr-decay-epochs: step's period
  std::string optimizer = "sgd";        // train.optimizer: sgd | adamw
  double momentum = 0.9;                // train.momentum (sgd)
  double weight_decay = 0.0;            // train.weight-decay: sgd's L2, adamw's decoupled decay
  double adam_beta1 = 0.9;              // train.adam-beta1
  double adam_beta2 = 0.999;            // train.adam-beta2
  double adam_eps = 1e-8;               // train.adam-eps
  int epochs = 3;                       // train.epochs
  double target_accuracy = 0.0;         // train.target-accuracy: 0 = no target
  std::uint64_t patience = 0; // train.patience: evaluations without a better accuracy before the
                              // run stops, keeping the best one's parameters; 0 = never
  double max_seconds = 0.0;             // train.max-seconds: 0 = no limit
  std::uint64_t seed = 1;               // train.seed
  int eval_every = 100;                 // train.eval-every: rounds between test evaluations
  double eval_every_epochs = 0.0;       // train.eval-every-epochs: > 0, epochs between them instead
  int blas_threads = 0;                 // train.blas-threads: 0 = one per worker thread
  std::string backend = "cpu";    // train.backend: where workers compute: cpu | cuda
  int device = 0;                 // train.device: the CUDA device of every worker (backend cuda)
};

struct data_section {
  std::string dataset = "fashion-mnist";                  // data.dataset
  std::string path = "/usr/share/datasets/fashion-mnist"; // data.path
  std::uint64_t max_bytes = 0; // data.max-bytes: memory the loaded dataset may take, checked
                               // against the files' headers before reading; 0 = half the
                               // physical memory
  // data.dataset = npy: the .npy files of the training and test features and labels.
  std::string train_features; // data.train-features
  std::string train_labels;   // data.train-labels
  std::string test_features;  // data.test-features
  std::string test_labels;    // data.test-labels
  // Optional: a validation set of its own (instead of data.validation-fraction's share).
  std::string validation_features; // data.validation-features
  std::string validation_labels;   // data.validation-labels
  // data.dataset = fortunes (docs/text.md).
  std::uint64_t max_length = 4096; // data.max-length: longest text a batch row holds, in bytes
  std::string cache_dir;           // data.cache-dir: "" = $XDG_CACHE_HOME/herd or ~/.cache/herd
  std::uint64_t max_texts = 0;     // data.max-texts: a stratified subset of the texts (0 = all)
  bool bucket_by_length = false;   // data.bucket-by-length: batches of similar lengths, the same
                                   // length rank for every worker at each step
  double validation_fraction = 0.0; // data.validation-fraction: the share of the training set held
                                    // out to evaluate on (0 = none: evaluations use the test set)

  /// Whether the evaluations measure a validation set: a share held out, or files of its own.
  bool has_validation_set() const {
    return validation_fraction > 0.0 || !validation_features.empty();
  }
};

/// [model]: what Herd trains (docs/models.md). model.layers, when set, defines the model;
/// otherwise model.preset does, and model.hidden sizes the mlp preset's hidden layers.
struct model_section {
  std::string preset = "mlp";        // model.preset: a named model (known_model_presets())
  std::string layers;                // model.layers: "flatten, dense 128, relu, dense 10"; "" = the
                                     // preset
  std::vector<int> hidden{256, 128}; // model.hidden: the mlp preset's hidden layer sizes
};

struct metrics_section {
  int port = 0;                   // metrics.port: the Prometheus endpoint's TCP port, 0 = off
  std::string bind = "127.0.0.1"; // metrics.bind: the address it listens on
  std::string job = "herd";       // metrics.job: the `job` label of every metric
  double window_seconds = 30.0;   // metrics.window-seconds: recent window of the straggler score
  double linger_seconds = 10.0;   // metrics.linger-seconds: `herd train` and `herd coordinator`
                                  // serve the final metrics this long after the run ends
};

/// Settings of one partial-collective algorithm (sections [solo], [majority], [quorum]);
/// docs/algorithms.md, "Gradient exchange".
struct partial_section {
  int sync_every = 32; // <algorithm>.sync-every: a full synchronous round every this many rounds
                       // (the reference library's default); 0 = never
  std::string late_gradients = "discard"; // <algorithm>.late-gradients: discard|accumulate|scale
  std::string missing_members = "renormalise"; // <algorithm>.missing-members: renormalise (a round
                                               // without some members divides by those that
                                               // answered) | zero (by P: the missing add zero)
};

/// [quorum]: the fraction of fresh arrivals that activates a round (solo = 1/P, majority = 1/2,
/// sync = 1).
struct quorum_section : partial_section {
  double fraction = 0.5; // quorum.fraction, in (0, 1]
};

/// [preduce]: partial reduce (docs/algorithms.md, "Partial reduce"). Workers exchange models: a
/// group forms from the first `group-size` ready workers, or from the (at least two) ready ones
/// once the oldest has waited `wait-window-ms`; members average with weights
/// exp(-staleness-decay * s_i), s_i the versions a member's model is behind the group's freshest.
struct preduce_section {
  int group_size = 2;             // preduce.group-size: members of a group, at least 2
  double wait_window_ms = 20.0;   // preduce.wait-window-ms: the oldest ready worker waits at most
                                  // this long for a full group before a smaller one forms
  double staleness_decay = 0.1;   // preduce.staleness-decay: lambda of the weights (0 = uniform)
  int connect_every = -1;         // preduce.connect-every: groups that may pass without all live
                                  // workers connected before the isolation guard steps in
                                  // (-1 = automatic, from the workers and the group size; 0 = off)
  double connect_wait_ms = 200.0; // preduce.connect-wait-ms: how long a group the guard builds
                                  // waits for a worker of another component
  int sync_every = 0;             // preduce.sync-every: a global average every this many groups
                                  // (0 = never)
};

/// [wagma]: WAGMA-SGD (docs/algorithms.md, "WAGMA-SGD"). Workers exchange models; each step's round
/// averages them in groups of the butterfly schedule, activated by the first arrival
/// (wait-avoiding).
struct wagma_section {
  int group_size = 0;  // wagma.group-size: a power of two; 0 = sqrt(workers) rounded down to one
  int sync_every = 10; // wagma.sync-every: a blocking global average every this many steps (tau);
                       // 0 = never
  std::string blend = "reference"; // wagma.blend: reference (every member (sum + own) / (S + 1))
                                   // | herd (an on-time member takes sum / S, a late one the former)
};

/// [local-sgd]: local SGD (docs/algorithms.md, "Local SGD"), the baseline WAGMA-SGD compares
/// against. Every worker steps alone with its own optimizer; every `period` local steps all live
/// workers average their models, in a round that waits for every one of them.
struct local_sgd_section {
  // local-sgd.period: local steps between global model averages (1 = every step). The default is
  // wagma.sync-every's, so that with both at their defaults wagma is local SGD plus its group
  // averages between the global ones, and the comparison measures what those groups add.
  int period = 10;
};

/// [async]: the asynchronous parameter server (docs/algorithms.md, "Asynchronous parameter
/// server"), the baseline eager-SGD compares against.
struct async_section {
  // async.lr: the server's learning rate; 0 = train.lr / train.workers. A sync round applies the
  // mean of P gradients at train.lr, so each of them moves the model by train.lr / P; the server
  // applies every gradient alone, and at train.lr / P each sample moves the model as far as under
  // sync. At train.lr itself the bench's job (lr 0.05, momentum 0.9, 8 workers) diverges.
  double lr = 0.0;
};

/// [imbalance]: seeded, reproducible load imbalance injected into the compute step as real
/// elapsed time (docs/algorithms.md, "Load imbalance").
struct imbalance_section {
  std::string kind = "none";   // imbalance.kind: none | random | persistent | lognormal
  std::uint64_t seed = 1;      // imbalance.seed
  int k = 1;                   // imbalance.k (random): workers delayed per step
  double delay_ms = 10.0;      // imbalance.delay-ms (random): the delay of each of them
  std::vector<int> workers{0}; // imbalance.workers (persistent): the slow workers
  double factor = 2.0;         // imbalance.factor (persistent): how many times slower they run
  double sigma = 0.5;          // imbalance.sigma (lognormal): sigma of the step-time multiplier
};

/// [simulate]: `herd simulate`, a discrete-event simulation of the configured job on a virtual
/// clock (docs/simulation.md). Step times come from simulate.step-ms and [imbalance]; a round's
/// reduction takes 2(k-1) alpha + 2(k-1)/k n / bandwidth for its k members (a ring).
struct simulate_section {
  std::vector<int> workers;            // simulate.workers: the job sizes P to simulate; empty =
                                       // train.workers
  double step_ms = 10.0;               // simulate.step-ms: a local step without imbalance
  std::string network = "one-machine"; // simulate.network: one-machine | 25gbe | nvlink
  std::string collective = "ring";     // simulate.collective: ring | halving-doubling
  double alpha_us = 0.0;               // simulate.alpha-us: per-message latency; 0 = the network's
  double bandwidth_gbs = 0.0;          // simulate.bandwidth-gbs: GB/s per link; 0 = the network's
  double model_mb = 1.0;               // simulate.model-mb: bytes a round reduces, in MB (10^6)
  double message_us = 20.0;            // simulate.message-us: one control-plane message's latency
  int steps = 200;                     // simulate.steps: simulated time, in step-ms units
  int aggregators = 0;                 // simulate.aggregators: 0 = every round reduces at once (as
                                       // across processes); N = N aggregators, one round each at a
                                       // time (as herd train in one process)
};

/// Many processes (`herd coordinator`, `herd node`; docs/deploy.md).
struct cluster_section {
  int min_nodes = 1;           // cluster.min-nodes: nodes that must join before the first step
  int heartbeat_ms = 500;      // cluster.heartbeat-ms: control-plane heartbeat between processes
  int node_timeout_ms = 4000;  // cluster.node-timeout-ms: silence after which a node is down
  int data_timeout_ms = 30000; // cluster.data-timeout-ms: longest wait of one data-plane transfer
  int join_timeout_s = 600;    // cluster.join-timeout-s: how long a node waits for the cluster
  int rejoin_s = 60;           // cluster.rejoin-s: how long a node that lost the coordinator
                               // tries to join the running job again (0 = exit at once)
  std::string token;           // cluster.token: a node must present it to join ("" = none)
  std::string token_file;      // cluster.token-file: read cluster.token from this file instead
  std::string tls_ca;          // cluster.tls-ca: the cluster CA's certificate (PEM); "" = no TLS
  std::string tls_cert;        // cluster.tls-cert: this process's certificate, signed by that CA
  std::string tls_key;         // cluster.tls-key: its private key (PEM)
  bool tls_check_names = true; // cluster.tls-check-names: certificates must name their holders
  std::string data_encryption = "auto"; // cluster.data-encryption: on | off | auto (= on with TLS)

  bool tls() const { return !tls_ca.empty(); }
  /// Whether the data plane's messages are sealed (AES-256-GCM with keys from the coordinator).
  bool seals_data() const {
    return data_encryption == "on" || (data_encryption == "auto" && tls());
  }
};

/// [comm]: how the data plane moves tensors between processes.
struct comm_section {
  std::string compression = "none"; // comm.compression: none, fp16 or bf16 on the gloo wire
  bool error_feedback = false; // comm.error-feedback: carry each rounding's residual to the next
  int seal_threads = 0; // comm.seal-threads: threads sealing one data-plane message (0: automatic)
  int connections = 1;  // comm.connections: connections (lanes) between each pair of nodes, 1-16
  /// comm.bucket-mb: under sync, solo, majority and quorum, a step's round may begin while its
  /// backward runs and reduce the gradient in buckets of at least this many MiB, cut where the
  /// model's layers begin, as backward finishes them (0: after the step, at once).
  double bucket_mb = 0.0;
};

/// [checkpoint]: where and how often `herd train` writes checkpoints it can resume from
/// (docs/checkpoints.md). Off while `dir` is empty.
struct checkpoint_section {
  std::string dir;            // checkpoint.dir: the directory checkpoints go to ("" = off)
  double every_seconds = 600; // checkpoint.every-seconds: one at least this often (0 = no timer)
  int every_rounds = 0;       // checkpoint.every-rounds: one every this many rounds (0 = none)
  int keep = 3;               // checkpoint.keep: the newest this many stay, older ones go

  bool enabled() const { return !dir.empty(); }
};

struct run_config;

/// `config` with the cluster's secrets (cluster.token, cluster.token-file) blanked: what may be
/// written to a report or handed to other processes.
run_config without_secrets(run_config config);

struct run_config {
  train_section train;
  data_section data;
  model_section model;
  metrics_section metrics;
  partial_section solo;
  partial_section majority;
  quorum_section quorum;
  preduce_section preduce;
  wagma_section wagma;
  local_sgd_section local_sgd;
  async_section async;
  imbalance_section imbalance;
  cluster_section cluster;
  comm_section comm;
  checkpoint_section checkpoint;
  simulate_section simulate;
};

/// The imbalance kinds imbalance.kind accepts.
const std::vector<std::string>& known_imbalance_kinds();

/// The values <algorithm>.late-gradients accepts.
const std::vector<std::string>& known_late_gradient_modes();

/// The values <algorithm>.missing-members accepts: renormalise, zero.
const std::vector<std::string>& known_missing_member_modes();

/// The fewest groups of `group_size` that connect `workers` workers (preduce's isolation guard):
/// ceil((P - 1) / (g - 1)) with g = min(group_size, P), since a group merges at most g - 1
/// components; 0 for one worker.
std::size_t min_connecting_groups(std::size_t workers, std::size_t group_size);

/// The values wagma.blend accepts: herd, reference.
const std::vector<std::string>& known_wagma_blends();

/// The values comm.compression accepts: none, fp16, bf16.
const std::vector<std::string>& known_compressions();

/// The optimizers train.optimizer names: sgd, adamw.
const std::vector<std::string>& known_optimizers();

/// The learning-rate schedules train.lr-schedule names: constant, cosine, step.
const std::vector<std::string>& known_lr_schedules();

/// Where workers compute (train.backend): cpu, cuda.
const std::vector<std::string>& known_backends();

/// The algorithms this build implements (train.algorithm).
const std::vector<std::string>& known_algorithms();

/// The networks simulate.network names: one-machine, 25gbe, nvlink.
const std::vector<std::string>& known_networks();

/// The reductions simulate.collective names: ring, halving-doubling.
const std::vector<std::string>& known_collectives();

/// The presets model.preset names (those models::preset_names() builds).
const std::vector<std::string>& known_model_presets();

/// The datasets data.dataset accepts.
const std::vector<std::string>& known_datasets();

} // namespace herd::config
