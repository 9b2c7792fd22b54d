// The keys each command uses; see command_keys.hpp.
#include "cli/command_keys.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

namespace herd::cli {

namespace {

// "train" of "train.lr".
std::string section_of(const std::string& key) {
  return key.substr(0, key.find('.'));
}

// The algorithms' own sections: every command that runs a policy reads them.
const std::set<std::string> algorithm_sections{"solo",  "majority",  "quorum", "preduce",
                                               "wagma", "local-sgd", "async"};

// Keys in `sections`, plus `extra`, less `without`.
config::key_scope scope(std::set<std::string> sections, std::set<std::string> extra,
                        std::set<std::string> without,
                        std::map<std::string, std::string> meanings = {}) {
  config::key_scope keys;
  keys.uses = [sections = std::move(sections), extra = std::move(extra),
               without = std::move(without)](const std::string& key) {
    if (without.count(key) != 0)
      return false;
    return extra.count(key) != 0 || sections.count(section_of(key)) != 0;
  };
  keys.meanings = std::move(meanings);
  return keys;
}

std::set<std::string> with_algorithms(std::set<std::string> sections) {
  sections.insert(algorithm_sections.begin(), algorithm_sections.end());
  return sections;
}

// The same without [async]: for the commands that never run it (it runs in one process only, and
// herd simulate has no model of its parameter server).
std::set<std::string> with_algorithms_but_async(std::set<std::string> sections) {
  sections = with_algorithms(std::move(sections));
  sections.erase("async");
  return sections;
}

// The keys a node takes on its own command line: how to reach and trust the cluster. Everything
// else comes from the coordinator.
const std::set<std::string> node_keys{
    "cluster.heartbeat-ms", "cluster.node-timeout-ms", "cluster.join-timeout-s", "cluster.rejoin-s",
    "cluster.token",        "cluster.token-file",      "cluster.tls-ca",         "cluster.tls-cert",
    "cluster.tls-key",      "cluster.tls-check-names"};

const std::map<std::string, config::key_scope>& scopes() {
  static const std::map<std::string, config::key_scope> all = [] {
    std::set<std::string> coordinator_cluster{
        "cluster.min-nodes",       "cluster.heartbeat-ms",   "cluster.node-timeout-ms",
        "cluster.data-timeout-ms", "cluster.token",          "cluster.token-file",
        "cluster.tls-ca",          "cluster.tls-cert",       "cluster.tls-key",
        "cluster.tls-check-names", "cluster.data-encryption"};
    std::map<std::string, config::key_scope> made;
    made["train"] =
        scope(with_algorithms({"train", "data", "model", "metrics", "imbalance", "checkpoint"}),
              {"comm.bucket-mb"}, {});
    made["bench"] = scope(
        with_algorithms({"train", "data", "model"}), {"imbalance.seed"},
        {"train.algorithm", "train.eval-every", "train.eval-every-epochs"},
        {{"train.epochs", "passes over the training set in every run (runs do not stop at the "
                          "target, so accuracies compare at equal epochs)"},
         {"train.target-accuracy",
          "the accuracy whose time to reach the table shows (0 = no target)"},
         {"imbalance.seed", "seed of every scenario's imbalance generator"}});
    made["simulate"] = scope(
        with_algorithms_but_async({"imbalance", "simulate"}),
        {"train.workers", "train.batch-size", "train.seed"}, {},
        {{"train.workers", "the job size when simulate.workers is []"},
         {"train.batch-size", "samples per worker per step, for the samples rounds count"},
         {"train.seed", "seeds the step times drawn from a --step-trace"},
         // Accepted (one file serves herd train too), but they weigh values the
         // simulator does not have: said, so that nobody sweeps them.
         {"preduce.staleness-decay", "the members' weights; no effect on the simulated timing"},
         {"solo.missing-members", "no effect here: no member goes missing"},
         {"majority.missing-members", "no effect here: no member goes missing"},
         {"quorum.missing-members", "no effect here: no member goes missing"},
         {"solo.late-gradients", "discard, accumulate or scale; accumulate and scale "
                                 "time alike here (they differ in weights only)"},
         {"majority.late-gradients", "as solo.late-gradients"},
         {"quorum.late-gradients", "as solo.late-gradients"}});
    made["coordinator"] = scope(
        with_algorithms_but_async(
            {"train", "data", "model", "metrics", "imbalance", "comm", "checkpoint"}),
        coordinator_cluster, {"train.workers"},
        {{"train.algorithm", "how workers combine their updates: sync, solo, majority, quorum, "
                             "preduce, wagma or local-sgd (async runs in one process only: "
                             "herd train)"},
         {"train.backend", "the device workers compute on: cpu (across processes workers compute "
                           "on the CPU; cuda runs in one process only: herd train)"},
         {"data.path", "directory holding the Fashion-MNIST IDX files, here (for evaluation) "
                       "and on every node"},
         {"metrics.port", "serve Prometheus metrics of the whole run on this TCP port at "
                          "/metrics (0 = off)"}});
    made["node"] = scope({}, node_keys, {});
    made["evaluate"] = scope({"data"}, {}, {},
                             {{"data.path", "directory holding the dataset's files now (the "
                                            "checkpoint's run read them from its own)"}});
    made["evaluate"].default_note = "the checkpoint's";
    made["predict"] = made["evaluate"];
    made["export"] = made["evaluate"];
    return made;
  }();
  return all;
}

// Where a command takes the place of a key it does not use: said with the refusal.
std::string replacement(const std::string& command, const std::string& key) {
  if ((command == "bench" || command == "simulate") && key == "train.algorithm")
    return "; --algorithms chooses the algorithms here";
  if (command == "bench" && section_of(key) == "imbalance")
    return "; --scenarios chooses the imbalance here";
  if (command == "coordinator" && key == "train.workers")
    return "; the workers are the sum of the nodes' --workers";
  if (command == "node")
    return "; a node takes the run's settings from the coordinator";
  return "";
}

} // namespace

const config::key_scope& keys_of(const std::string& command) {
  const auto found = scopes().find(command);
  if (found == scopes().end())
    throw std::invalid_argument("no command '" + command + "' has settings");
  return found->second;
}

std::string commands_using(const std::string& key) {
  std::vector<std::string> users;
  for (const auto& [command, keys] : scopes())
    if (keys.uses(key))
      users.push_back("herd " + command);
  std::string text;
  for (std::size_t i = 0; i < users.size(); ++i)
    text += (i == 0 ? "" : i + 1 == users.size() ? " and " : ", ") + users[i];
  return text;
}

void check_settings(const std::string& command, const std::vector<std::string>& settings) {
  const auto& keys = keys_of(command);
  const auto known = config::key_names();
  for (const auto& setting : settings) {
    const std::string text = setting.rfind("--", 0) == 0 ? setting.substr(2) : setting;
    const std::string key = text.substr(0, text.find('='));
    if (keys.uses(key) || std::find(known.begin(), known.end(), key) == known.end())
      continue;
    const auto users = commands_using(key);
    const bool several = users.find(" and ") != std::string::npos;
    throw std::invalid_argument(
        "--" + key + ": herd " + command + " does not use this setting" +
        (users.empty() ? "" : " (" + users + (several ? " do)" : " does)")) +
        replacement(command, key));
  }
}

std::string ignored_file_keys(const std::string& command, const std::string& file,
                              const config::value_origins& origins) {
  const auto& keys = keys_of(command);
  // Keys that the same commands use are named together, those commands once: a shared training
  // file read by herd simulate names a dozen [train] keys, all of herd train's and bench's.
  std::vector<std::pair<std::string, std::string>> groups; // (users, keys), in --help's order
  for (const auto& key : config::key_names()) {
    const auto origin = origins.find(key);
    if (origin == origins.end() || origin->second == "command line" || keys.uses(key))
      continue;
    const auto users = commands_using(key);
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&users](const auto& named) { return named.first == users; });
    if (group == groups.end())
      groups.emplace_back(users, key);
    else
      group->second += ", " + key;
  }
  if (groups.empty())
    return "";
  std::string listed;
  for (const auto& [users, named] : groups)
    listed += (listed.empty() ? "" : ", ") + named + (users.empty() ? "" : " (" + users + ")");
  return file + " sets what herd " + command + " does not use, ignored here: " + listed;
}

} // namespace herd::cli
