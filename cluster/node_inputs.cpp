// A welcomed node's run; see node_inputs.hpp.
#include "cluster/node_inputs.hpp"

#include "actors/messages.hpp"
#include "actors/run_parts.hpp"
#include "actors/train_session.hpp"
#include "checkpoint/format.hpp"
#include "herd/config.hpp"

#include <stdexcept>

namespace herd::cluster {

namespace {

[[noreturn]] void refuse(const std::string& what, const std::exception& why) {
  throw std::runtime_error(what + ": " + why.what());
}

std::vector<actors::worker_record> read_part(const actors::node_welcome& welcome,
                                             const node_inputs& inputs, const std::string& file) {
  const auto& part = welcome.resume;
  if (part.workers != welcome.workers)
    throw std::runtime_error("the part holds " + actors::index_list(part.workers) +
                             ", the welcome gives this node " +
                             actors::index_list(welcome.workers));
  return actors::load_part(file, part,
                           actors::structure_of(inputs.config, *inputs.model,
                                                inputs.data->train.size()),
                           inputs.model->parameter_count());
}

} // namespace

node_inputs load_node_inputs(const actors::node_welcome& welcome, const node_options& options,
                             const std::string& parts_dir) {
  node_inputs inputs;
  try {
    inputs.config = config::from_ini(welcome.settings, "the coordinator's settings");
  } catch (const std::exception& bad) {
    refuse("the coordinator's settings do not load here", bad);
  }
  const auto& config = inputs.config;
  auto to_load = config; // only the coordinator evaluates: a node reads no validation files
  to_load.data.validation_features = to_load.data.validation_labels = "";
  try {
    inputs.data = options.load_data(to_load);
  } catch (const std::exception& bad) {
    refuse("cannot load the run's dataset on this node", bad);
  }
  if (inputs.data->train.size() != welcome.training_samples)
    throw std::runtime_error(
        "this node's training set (" +
        (config.data.dataset == "npy" ? config.data.train_features : config.data.path) + ") has " +
        std::to_string(inputs.data->train.size()) + " samples, the coordinator's " +
        std::to_string(welcome.training_samples) + "; every node needs the same dataset");
  try {
    inputs.model = actors::make_model(config, inputs.data->train);
    actors::check_memory(config, *inputs.model, inputs.data->train, options.workers,
                         0); // no evaluator here
  } catch (const std::exception& unfit) {
    refuse("the coordinator's model does not fit here", unfit);
  }
  // herd node --checkpoint-dir, else this run's checkpoint.dir, else what an earlier run named.
  inputs.parts_dir = options.checkpoint_dir.empty() && config.checkpoint.enabled()
                         ? config.checkpoint.dir
                         : parts_dir;
  if (config.checkpoint.enabled()) // found now, not at the first checkpoint
    if (auto problem = checkpoint::directory_problem(inputs.parts_dir); !problem.empty())
      throw std::runtime_error("cannot write checkpoint parts to " + inputs.parts_dir + " (" +
                               problem +
                               "): set herd node --checkpoint-dir to a directory it can write");
  if (welcome.resume.file.empty())
    return inputs;
  inputs.resumed_from = inputs.parts_dir + "/" + welcome.resume.file;
  try {
    inputs.resumed = read_part(welcome, inputs, inputs.resumed_from);
  } catch (const std::exception& bad) {
    refuse("cannot resume from the checkpoint part", bad);
  }
  return inputs;
}

} // namespace herd::cluster
