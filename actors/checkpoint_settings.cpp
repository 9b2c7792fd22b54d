// A checkpoint's settings against this run's: what changed, and the changes a resume refuses; see
// checkpoint_state.hpp.
#include "actors/checkpoint_state.hpp"
#include "actors/run_parts.hpp"
#include "herd/config.hpp"
#include "models/optimizer.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "policy/policy.hpp"

namespace herd::actors {

namespace {

// The settings of a to_ini() text, by "section.key", their values as written (strings quoted).
std::map<std::string, std::string> ini_values(const std::string& ini) {
  std::map<std::string, std::string> values;
  std::istringstream lines(ini);
  std::string line, section;
  while (std::getline(lines, line)) {
    if (line.size() > 2 && line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const auto equals = line.find(" = ");
    if (equals != std::string::npos)
      values[section + "." + line.substr(0, equals)] = line.substr(equals + 3);
  }
  return values;
}

// A setting of a checkpoint's run, unquoted; `absent` where the checkpoint's version predates it.
std::string saved_value(const std::map<std::string, std::string>& saved, const std::string& key,
                        const std::string& absent) {
  const auto found = saved.find(key);
  std::string value = found == saved.end() ? absent : found->second;
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
    value = value.substr(1, value.size() - 2);
  return value;
}

// Whether `key` names a file or a directory.
bool is_path_key(const std::string& key) {
  const auto ends = [&key](const std::string& end) {
    return key.size() > end.size() && key.compare(key.size() - end.size(), end.size(), end) == 0;
  };
  return key == "checkpoint.dir" || key == "data.path" || ends("-features") || ends("-labels") ||
         ends("-file") || key.rfind("cluster.tls-", 0) == 0;
}

// Whether two written values of a path name one place ("ckpt" and "/srv/run/ckpt" from
// /srv/run): a resume from a directory given another way changed nothing.
bool same_place(const std::string& before, const std::string& after) {
  const auto unquoted = [](std::string value) {
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    return value;
  };
  const auto a = unquoted(before);
  const auto b = unquoted(after);
  if (a.empty() || b.empty())
    return false;
  std::error_code first, second;
  const auto place_a = std::filesystem::weakly_canonical(a, first);
  const auto place_b = std::filesystem::weakly_canonical(b, second);
  return !first && !second && place_a == place_b;
}

} // namespace

std::vector<std::string> changed_settings(const std::string& saved_ini,
                                          const config::run_config& now) {
  const auto before = ini_values(saved_ini);
  const auto after = ini_values(config::to_ini(config::without_secrets(now)));
  // A resumed cluster waits for the checkpoint's parts, not for cluster.min-nodes nodes.
  const std::set<std::string> unused_by_a_resumed_run{"cluster.min-nodes"};
  std::vector<std::string> lines;
  for (const auto& [key, value] : after) {
    const auto old = before.find(key);
    if (old != before.end() && old->second != value && unused_by_a_resumed_run.count(key) == 0 &&
        !(is_path_key(key) && same_place(old->second, value)))
      lines.push_back(key + ": " + old->second + " in the checkpoint, " + value + " now");
  }
  return lines;
}

namespace {

// Whether the run of a checkpoint older than format version 9 had a validation set: its settings.
bool had_validation_keys(const run_checkpoint& state) {
  const auto saved = ini_values(state.settings);
  double fraction = 0.0;
  try {
    fraction = std::stod(saved_value(saved, "data.validation-fraction", "0"));
  } catch (const std::exception&) { // the settings were checked when the checkpoint was read
  }
  return fraction > 0.0 || !saved_value(saved, "data.validation-features", "").empty();
}

} // namespace

void check_same_evaluation_set(const std::string& file, const run_checkpoint& state,
                               const config::run_config& now,
                               const models::train_test_split& data) {
  const std::uint64_t has = data.validation.size();
  const bool had =
      state.validation_samples ? *state.validation_samples > 0 : had_validation_keys(state);
  const bool same_size = !state.validation_samples || *state.validation_samples == has;
  if (had == (has > 0) && same_size)
    return;
  const std::string key = now.data.validation_features.empty() ? "data.validation-fraction"
                                                               : "data.validation-features";
  // Where this run's validation set comes from: a key, or the split the caller built.
  const std::string source = now.data.has_validation_set() ? key : "the data's validation set";
  std::string problem, remedy;
  if (had && has > 0) {
    problem = "was written by a run whose evaluations measured a validation set of " +
              std::to_string(*state.validation_samples) + " samples, and this run's has " +
              std::to_string(has) + " (" + source + ")";
    remedy = "give it the validation set its run had, or start a new run from its parameters "
             "(herd train --init-from)";
  } else if (had) {
    problem = "was written by a run whose evaluations measured a validation set, and this run's "
              "would measure the test set";
    remedy = "set the validation keys as its run did (data.validation-features, "
             "data.validation-fraction)";
  } else {
    problem = "was written by a run whose evaluations measured the test set, and this run's would "
              "measure a validation set (" +
              source + ")";
    remedy = "resume without " + source +
             ", or start a new run from its parameters (herd train --init-from)";
  }
  throw checkpoint::checkpoint_error(
      file, problem +
                ": its best evaluation and its target would compare accuracies of two sets; " +
                remedy);
}

void check_same_optimizer(const std::string& file, const run_checkpoint& state,
                          const config::run_config& now) {
  // Written before train.optimizer existed: SGD's.
  const std::string before = saved_value(ini_values(state.settings), "train.optimizer", "sgd");
  if (before != now.train.optimizer)
    throw checkpoint::checkpoint_error(
        file, "was written by a run of another optimizer, whose state its workers hold: "
              "train.optimizer: the checkpoint has " +
                  before + ", this run " + now.train.optimizer);
  // Its settings name the optimizer; its workers' states must be of its size too.
  const auto kind = models::optimizer_kind_of(now.train.optimizer);
  for (const auto& worker : state.workers)
    if (worker.velocity.size() != models::optimizer::state_floats(kind, worker.parameters.size()))
      throw checkpoint::checkpoint_error(
          file, "payload: worker " + std::to_string(worker.index) + "'s optimizer state holds " +
                    std::to_string(worker.velocity.size()) + " floats, not " + before + "'s for " +
                    std::to_string(worker.parameters.size()) + " parameters");
}

void check_policy_state(const std::string& file, const run_checkpoint& state,
                        const config::run_config& now) {
  const auto policy = policy::make_policy(now);
  try {
    policy->load_state(state.coordinator.policy_state);
  } catch (const std::exception& bad) { // runtime_error, or a count past what a vector holds
    throw checkpoint::checkpoint_error(file, std::string("payload: ") + bad.what());
  }
  // The coordinator's own records index its workers with what they hold, unchecked.
  const auto& record = state.coordinator;
  const auto workers = static_cast<std::size_t>(std::max(now.train.workers, 0));
  const auto outside = [workers](int worker) {
    return worker < 0 || static_cast<std::size_t>(worker) >= workers;
  };
  const auto refuse_index = [&](const std::string& where, int worker) {
    throw checkpoint::checkpoint_error(file, "payload: " + where + " names worker " +
                                                 std::to_string(worker) + " of a run of " +
                                                 std::to_string(workers));
  };
  if (record.counters.live.size() != workers || record.counters.workers.size() != workers)
    throw checkpoint::checkpoint_error(file, "payload: the coordinator's counters count " +
                                                 std::to_string(record.counters.workers.size()) +
                                                 " workers for a run of " +
                                                 std::to_string(workers));
  for (const auto& decision : record.unstarted)
    for (int member : decision.members)
      if (outside(member))
        refuse_index("a round decided before the checkpoint", member);
  for (const auto& input : record.unheard) {
    if (input.is_arrival && outside(input.arrival.worker))
      refuse_index("an arrival not yet heard", input.arrival.worker);
    for (int member : input.outcome.members)
      if (outside(member))
        refuse_index("a round's outcome not yet heard", member);
    for (const auto& given : input.outcome.contributions)
      if (outside(given.worker))
        refuse_index("a round's outcome not yet heard", given.worker);
  }
  const auto counted = policy->live_workers();
  const auto live = record.counters.live_workers();
  if (counted != live)
    throw checkpoint::checkpoint_error(
        file, "payload: the " + now.train.algorithm + " policy state counts " +
                  std::to_string(counted.size()) + " workers live, the coordinator's counters " +
                  std::to_string(live.size()) + " (" + index_list(live) + ")");
}

} // namespace herd::actors
