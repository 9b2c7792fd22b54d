// The notes a run says before it starts; see run_notes.hpp.
#include "cli/run_notes.hpp"

#include "actors/run_parts.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <map>
#include <sstream>

namespace herd::cli {

namespace {

// Each key's value as to_ini() writes it, by "section.key".
std::map<std::string, std::string> ini_values(const config::run_config& config) {
  std::map<std::string, std::string> values;
  std::istringstream lines(config::to_ini(config));
  std::string section;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.front() == '[')
      section = line.substr(1, line.find(']') - 1);
    else if (const auto equals = line.find(" = "); equals != std::string::npos)
      values[section + "." + line.substr(0, equals)] = line.substr(equals + 3);
  }
  return values;
}

} // namespace

// An epoch takes whole batches from equal shards (the last partial batch of a shard, and the
// remainder of the split into shards, are left out): a note when that leaves out more than a
// tenth of the training set, as it does with many workers and few samples each.
std::string epoch_coverage_note(const config::run_config& config, std::size_t samples) {
  const auto workers = static_cast<std::size_t>(config.train.workers);
  const auto batch = static_cast<std::size_t>(config.train.batch_size);
  if (workers == 0 || batch == 0 || samples == 0)
    return {};
  const std::size_t shard = samples / workers;
  const std::size_t used = actors::epoch_samples(config, samples);
  if (used * 10 >= samples * 9)
    return {};
  return "an epoch takes " + std::to_string(used) + " of the " + std::to_string(samples) +
         " training samples (" + std::to_string(used * 100 / samples) + "%): " +
         (workers == 1 ? std::string("the 1 worker's shard of ")
                       : "each of the " + std::to_string(workers) + " workers' shards of ") +
         std::to_string(shard) + " samples gives " + std::to_string(shard / batch) +
         " whole batch(es) of " + std::to_string(batch) +
         "; fewer workers or a smaller train.batch-size use more";
}

// The model has a class for every label from 0 to the largest; a class no training sample has is
// most often labels counted from 1 (R, MATLAB, many CSV files): a note names it.
std::string missing_classes_note(const models::dataset& train) {
  if (train.classes <= 0 || train.labels.empty())
    return {};
  std::vector<std::size_t> count(static_cast<std::size_t>(train.classes), 0);
  for (const auto label : train.labels)
    if (label >= 0 && label < train.classes)
      ++count[static_cast<std::size_t>(label)];
  std::vector<int> missing;
  for (int c = 0; c < train.classes; ++c)
    if (count[static_cast<std::size_t>(c)] == 0)
      missing.push_back(c);
  if (missing.empty())
    return {};
  std::string listed;
  for (std::size_t i = 0; i < missing.size() && i < 5; ++i)
    listed += (i ? ", " : "") + std::to_string(missing[i]);
  if (missing.size() > 5)
    listed += " and " + std::to_string(missing.size() - 5) + " more";
  std::string note = std::string(missing.size() == 1 ? "class " : "classes ") + listed +
                     (missing.size() == 1 ? " has" : " have") + " no training sample; the model " +
                     "has a class for every label from 0 to the largest (" +
                     std::to_string(train.classes - 1) + ")";
  if (missing.front() == 0 && (missing.size() == 1 || missing[1] != 1))
    note += ": labels that start at 1 are 1-based; subtract 1 from them";
  return note;
}

// comm.bucket-mb set where it changes nothing: said, not refused (one file may serve several
// algorithms).
std::string bucket_note(const config::run_config& config) {
  if (config.comm.bucket_mb <= 0.0)
    return {};
  if (!actors::announces_steps(config))
    return "comm.bucket-mb changes nothing under train.algorithm = " + config.train.algorithm +
           ": only the algorithms whose rounds reduce gradients (sync, solo, majority, quorum) "
           "begin a round while backward runs (" +
           config.train.algorithm + "'s exchange models or go through a parameter server)";
  if (config.train.backend != "cpu")
    return "comm.bucket-mb changes nothing for workers on a GPU: what backward has queued there "
           "is not yet done, so their steps are not announced early";
  return {};
}

// Settings given (in the file or on the command line) that another setting leaves unused: said,
// not refused, as comm.bucket-mb is (one file may serve several runs; config/quickstart.ini sets
// train.eval-every, and the docs add train.eval-every-epochs to it). Not those given at their
// defaults: a file that writes every key (a report's config, --print-config's) says nothing.
std::vector<std::string> unused_settings_notes(const config::run_config& config,
                                               const config::value_origins& origins) {
  std::vector<std::string> notes;
  const auto values = ini_values(config);
  const auto defaults = ini_values(config::run_config{});
  const auto given = [&](const std::string& key) {
    const auto found = origins.find(key);
    const auto value = values.find(key);
    const auto by_default = defaults.find(key);
    if (found == origins.end() || (value != values.end() && by_default != defaults.end() &&
                                   value->second == by_default->second))
      return std::string();
    return " (" + found->second + ")";
  };
  const auto& train = config.train;
  if (const auto where = given("train.eval-every"); !where.empty() && train.eval_every_epochs > 0)
    notes.push_back("train.eval-every = " + std::to_string(train.eval_every) + where +
                    " is not used: train.eval-every-epochs sets when the evaluations come");
  if (const auto where = given("train.device"); !where.empty() && train.backend != "cuda")
    notes.push_back("train.device = " + std::to_string(train.device) + where +
                    " is not used: it picks a GPU, and train.backend = " + train.backend);
  if (const auto where = given("data.max-bytes");
      !where.empty() && config.data.dataset == "synthetic")
    notes.push_back("data.max-bytes" + where +
                    " is not used: data.dataset = synthetic is generated, not read");
  for (const char* key : {"metrics.bind", "metrics.linger-seconds"})
    if (const auto where = given(key); !where.empty() && config.metrics.port == 0)
      notes.push_back(std::string(key) + where +
                      " is not used: metrics.port = 0 serves no metrics (give it a port)");
  // Each kind of imbalance reads its own keys: a delay given with kind none delays nothing. Only
  // those given on the command line: a file's scenario, its kind turned off there for a baseline
  // run, goes unsaid.
  const auto& kind = config.imbalance.kind;
  const auto typed = [&origins](const std::string& key) {
    const auto found = origins.find(key);
    return found != origins.end() && found->second == "command line" ? " (command line)"
                                                                     : std::string();
  };
  const std::vector<std::pair<const char*, const char*>> imbalance_keys{
      {"imbalance.k", "random"},
      {"imbalance.delay-ms", "random"},
      {"imbalance.workers", "persistent"},
      {"imbalance.factor", "persistent"},
      {"imbalance.sigma", "lognormal"}};
  for (const auto& [key, reader] : imbalance_keys)
    if (const auto where = typed(key); !where.empty() && kind != reader)
      notes.push_back(std::string(key) + where + " is not used: only imbalance.kind = " + reader +
                      " reads it, and this run's is " + kind);
  for (const char* key : {"checkpoint.every-seconds", "checkpoint.every-rounds", "checkpoint.keep"})
    if (const auto where = given(key); !where.empty() && !config.checkpoint.enabled())
      notes.push_back(std::string(key) + where +
                      " is not used: no checkpoint.dir is set, so no checkpoint is written");
  for (const char* key : {"data.max-texts", "data.max-length"})
    if (const auto where = given(key); !where.empty() && config.data.dataset != "fortunes")
      notes.push_back(std::string(key) + where +
                      " is not used: it is for data.dataset = "
                      "fortunes, and this run's is " +
                      config.data.dataset);
  return notes;
}

// Where comm.bucket-mb cuts the model's gradient, said at the start: the cuts follow the model's
// layers, so the setting alone does not tell how much of the gradient can be reduced early.
std::string bucket_layout_note(const config::run_config& config, const models::model& model) {
  if (!actors::announces_steps(config) || config.train.backend != "cpu")
    return {};
  const auto buckets = actors::gradient_buckets(config, model);
  std::ostringstream note;
  note << "comm.bucket-mb = " << config.comm.bucket_mb << " cuts the gradient of "
       << buckets.count() << " floats where the model's layers begin into ";
  if (buckets.size() == 1) {
    note << "1 bucket: the layers that backward finishes before the first hold fewer floats "
            "than that, so a round's reduction waits for the whole backward pass (a smaller "
            "comm.bucket-mb may cut it)";
    return note.str();
  }
  note << buckets.size() << " buckets, reduced from its end as backward finishes them:";
  for (std::size_t end = buckets.count(); end > 0;) {
    const std::size_t begin = buckets.begin_before(end);
    note << (end == buckets.count() ? " " : ", ") << end - begin;
    end = begin;
  }
  note << " floats";
  return note.str();
}

} // namespace herd::cli
