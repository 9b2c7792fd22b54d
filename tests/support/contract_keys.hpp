// The configuration keys that scripts and docs rely on (docs/configuration.md): every help text
// must list them. One list for the loader's help and `herd train --help`.
#pragma once

#include <vector>

namespace herd::testing {

inline const std::vector<const char*>& contract_keys() {
  static const std::vector<const char*> keys{"train.algorithm",
                                             "train.workers",
                                             "train.batch-size",
                                             "train.lr",
                                             "train.momentum",
                                             "train.weight-decay",
                                             "train.epochs",
                                             "train.target-accuracy",
                                             "train.max-seconds",
                                             "train.seed",
                                             "data.path",
                                             "data.max-bytes",
                                             "model.hidden",
                                             "metrics.port",
                                             "metrics.bind",
                                             "metrics.job",
                                             "metrics.window-seconds",
                                             "solo.sync-every",
                                             "solo.late-gradients",
                                             "majority.sync-every",
                                             "majority.late-gradients",
                                             "quorum.fraction",
                                             "quorum.sync-every",
                                             "quorum.late-gradients",
                                             "preduce.group-size",
                                             "preduce.wait-window-ms",
                                             "preduce.staleness-decay",
                                             "preduce.connect-every",
                                             "preduce.connect-wait-ms",
                                             "preduce.sync-every",
                                             "wagma.group-size",
                                             "wagma.sync-every",
                                             "imbalance.kind",
                                             "imbalance.seed",
                                             "imbalance.k",
                                             "imbalance.delay-ms",
                                             "imbalance.workers",
                                             "imbalance.factor",
                                             "imbalance.sigma",
                                             "cluster.min-nodes",
                                             "cluster.heartbeat-ms",
                                             "cluster.node-timeout-ms",
                                             "cluster.data-timeout-ms",
                                             "cluster.join-timeout-s",
                                             "cluster.rejoin-s",
                                             "cluster.token",
                                             "cluster.token-file",
                                             "cluster.tls-ca",
                                             "cluster.tls-cert",
                                             "cluster.tls-key",
                                             "simulate.workers",
                                             "simulate.step-ms",
                                             "simulate.network",
                                             "simulate.alpha-us",
                                             "simulate.bandwidth-gbs",
                                             "simulate.model-mb",
                                             "simulate.message-us",
                                             "simulate.steps",
                                             "simulate.aggregators"};
  return keys;
}

} // namespace herd::testing
