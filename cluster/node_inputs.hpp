// What a welcomed node needs before it hosts workers: the run's settings, dataset and model,
// checked against the coordinator's, and the states its workers resume from. Apart from the
// node's actors so that tests meet every refusal directly. No CAF.
#pragma once

#include "actors/checkpoint_state.hpp"
#include "cluster/cluster_node.hpp"
#include "herd/dataset.hpp"
#include "herd/model.hpp"
#include "herd/run_config.hpp"

#include <memory>
#include <string>
#include <vector>

namespace herd::actors {
struct node_welcome;
} // namespace herd::actors

namespace herd::cluster {

struct node_inputs {
  config::run_config config;
  std::shared_ptr<const models::train_test_split> data;
  std::shared_ptr<const models::model> model;
  /// Where this node's checkpoint parts go: herd node --checkpoint-dir, else the run's
  /// checkpoint.dir ("" when the run writes no checkpoints and none was set).
  std::string parts_dir;
  /// Resuming: the checkpoint part read (its path) and its workers' states, in the order of the
  /// welcome's workers; empty otherwise.
  std::string resumed_from;
  std::vector<actors::worker_record> resumed;
};

/// Loads the run the coordinator's `welcome` describes with this node's `options`: its settings,
/// its dataset (as options.load_data does; a node reads no validation files), its model, and the
/// checkpoint part it resumes from. `parts_dir`: the directory the node knows so far (its
/// --checkpoint-dir, or what an earlier run of its named); without --checkpoint-dir, a run that
/// writes checkpoints puts the node's parts in its own checkpoint.dir. Throws std::runtime_error
/// saying what does not fit: settings that do not load, a dataset that fails to load or has another
/// number of training samples than the coordinator's, a model too large for this machine, a
/// checkpoint directory it cannot write, a part that holds other workers or does not read.
node_inputs load_node_inputs(const actors::node_welcome& welcome, const node_options& options,
                             const std::string& parts_dir);

} // namespace herd::cluster
