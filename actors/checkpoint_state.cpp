// A run's checkpoint payload; see checkpoint_state.hpp. The one translation unit that knows how
// each part is archived: cereal stays out of the headers.
#include "actors/checkpoint_state.hpp"

#include "herd/config.hpp"
#include "models/npy.hpp"
#include "models/optimizer.hpp"

#include <algorithm>
#include <cereal/archives/binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/deque.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/set.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "checkpoint/bounded_archive.hpp"

namespace herd::policy {

template <class Archive>
void serialize(Archive& archive, arrival& x) {
  archive(x.worker, x.step, x.at_seconds, x.compute_seconds);
}

template <class Archive>
void serialize(Archive& archive, member_contribution& x) {
  archive(x.worker, x.kind, x.step);
}

template <class Archive>
void serialize(Archive& archive, group_outcome& x) {
  archive(x.members, x.contributions);
}

template <class Archive>
void serialize(Archive& archive, group_decision& x) {
  archive(x.members, x.kind, x.weights, x.member_weights, x.staleness, x.fresh_arrivals,
          x.intervention, x.step);
}

} // namespace herd::policy

namespace herd::models {

template <class Archive>
void serialize(Archive& archive, batch_sampler::position& x) {
  archive(x.epoch, x.offset, x.drawn);
}

} // namespace herd::models

namespace herd::actors {

template <class Archive>
void serialize(Archive& archive, evaluation_point& x) {
  archive(x.round, x.elapsed_seconds, x.epoch, x.test_accuracy, x.test_loss);
}

template <class Archive>
void serialize(Archive& archive, worker_counters& x) {
  archive(x.steps, x.late_steps, x.samples, x.step_seconds, x.wait_seconds);
}

// The counters' fields after the workers' (save and load share them).
template <class Archive, class Counters>
void archive_run_totals(Archive& archive, Counters& x) {
  archive(x.steps, x.rounds, x.full_sync_rounds, x.partial_rounds, x.isolation_interventions,
          x.aborted_rounds, x.workers_joined, x.contributions, x.samples_applied, x.reduce_seconds,
          x.reduce_bytes, x.recent_losses, x.ledger);
}

// The workers as a vector of (live, counters) records, as they were when liveness was a field of
// worker_counters: checkpoints written before and after read alike.
template <class Archive>
void save(Archive& archive, const run_counters& x) {
  archive(x.samples_per_epoch);
  archive(cereal::make_size_tag(static_cast<cereal::size_type>(x.workers.size())));
  for (std::size_t i = 0; i < x.workers.size(); ++i)
    archive(x.live[i] != 0, x.workers[i]);
  archive_run_totals(archive, x);
}

template <class Archive>
void load(Archive& archive, run_counters& x) {
  archive(x.samples_per_epoch);
  cereal::size_type count = 0;
  archive(cereal::make_size_tag(count));
  // Grown as each worker is read: a count a damaged file claims costs no memory of its own.
  x.set_workers(0);
  for (cereal::size_type i = 0; i < count; ++i) {
    bool live = true;
    x.workers.emplace_back();
    archive(live, x.workers.back());
    x.live.push_back(live ? 1 : 0);
  }
  archive_run_totals(archive, x);
}

template <class Archive>
void serialize(Archive& archive, pending_result& x) {
  archive(x.round, x.members, x.data);
}

template <class Archive>
void serialize(Archive& archive, worker_record& x) {
  archive(x.index, x.parameters, x.velocity, x.send, x.optimizer_steps, x.sampler, x.buffer,
          x.pending);
}

template <class Archive>
void serialize(Archive& archive, part_record& x) {
  archive(x.node, x.workers, x.file, x.bytes, x.payload_hash);
}

template <class Archive>
void serialize(Archive& archive, policy_input& x) {
  archive(x.is_arrival, x.arrival, x.outcome);
}

template <class Archive>
void serialize(Archive& archive, model_inputs& x) {
  archive(x.sample_shape, x.classes, x.mean, x.stddev);
}

template <class Archive>
void serialize(Archive& archive, worker_event& x) {
  archive(x.seconds, x.worker, x.node, x.joined, x.why);
}

template <class Archive>
void serialize(Archive& archive, coordinator_record& x) {
  archive(x.elapsed_seconds, x.counters, x.evaluations, x.policy_state, x.unstarted, x.unheard,
          x.next_round, x.next_aggregator, x.samples_committed, x.consecutive_aborted_rounds);
}

namespace {

// Each part under its own name, so that a payload that cannot be read says where it broke.
template <class Archive, class Part>
void part(Archive& archive, const char* name, Part& value, std::string& at) {
  at = name;
  archive(value);
}

} // namespace

checkpoint::structure structure_of(const config::run_config& config, const models::model& model,
                                   std::size_t training_samples) {
  checkpoint::structure shape;
  shape.model = model.describe();
  shape.algorithm = config.train.algorithm;
  shape.workers = config.train.workers;
  shape.training_samples = training_samples;
  shape.batch_size = config.train.batch_size;
  shape.seed = config.train.seed;
  return shape;
}

namespace {

// Under the algorithms whose replicas go through the same states (sync, solo, majority, quorum)
// every worker's parameters and momentum are the same bytes: each distinct tensor is written
// once, and these say, per worker, whose written tensor its own is equal to (-1: its own is
// written). Version 6 and later.
struct replica_copies {
  std::vector<std::int32_t> parameters_of;
  std::vector<std::int32_t> velocity_of;
};

template <class Archive>
void serialize(Archive& archive, replica_copies& x) {
  archive(x.parameters_of, x.velocity_of);
}

// The best evaluation and its parameters (train.patience): none, or both. Version 8 and later.
struct best_evaluation {
  std::optional<evaluation_point> point;
  std::vector<float> parameters;
};

template <class Archive>
void serialize(Archive& archive, best_evaluation& x) {
  archive(x.point, x.parameters);
}

using tensor_of = const std::vector<float>& (*)(const worker_record&);
const std::vector<float>& parameters_of(const worker_record& x) {
  return x.parameters;
}
const std::vector<float>& velocity_of(const worker_record& x) {
  return x.velocity;
}

// For each worker, the first earlier one whose written tensor equals its own bit for bit (a
// -0.0 is not a 0.0), or -1.
std::vector<std::int32_t> copies_of(const std::vector<worker_record>& workers, tensor_of field) {
  std::vector<std::int32_t> of(workers.size(), -1);
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const auto& mine = field(workers[i]);
    for (std::size_t j = 0; j < i && !mine.empty(); ++j)
      if (of[j] < 0 && field(workers[j]).size() == mine.size() &&
          std::memcmp(field(workers[j]).data(), mine.data(), mine.size() * sizeof(float)) == 0) {
        of[i] = static_cast<std::int32_t>(j);
        break;
      }
  }
  return of;
}

// A worker's record as written: its copied tensors empty.
struct written_record {
  const worker_record* record;
  bool without_parameters;
  bool without_velocity;
};

template <class Archive>
void save(Archive& archive, const written_record& written) {
  static const std::vector<float> none;
  auto& x = const_cast<worker_record&>(*written.record); // the archive only reads it
  archive(x.index, written.without_parameters ? none : x.parameters,
          written.without_velocity ? none : x.velocity, x.send, x.optimizer_steps, x.sampler,
          x.buffer, x.pending);
}

// Fills the tensors `copies` says are copies from the workers they name; throws checkpoint_error
// naming `file` for a reference to anything but an earlier worker whose tensor was written.
void restore_copies(std::vector<worker_record>& workers, const replica_copies& copies,
                    const std::string& file) {
  const auto fill = [&](const std::vector<std::int32_t>& of,
                        std::vector<float> worker_record::*field, const char* what) {
    if (of.size() != workers.size())
      throw checkpoint::checkpoint_error(file, std::string("payload: the field 'copies' lists ") +
                                                   std::to_string(of.size()) + " workers' " + what +
                                                   " for " + std::to_string(workers.size()));
    for (std::size_t i = 0; i < of.size(); ++i) {
      if (of[i] < 0)
        continue;
      const auto source = static_cast<std::size_t>(of[i]);
      if (source >= i || of[source] >= 0 || !(workers[i].*field).empty())
        throw checkpoint::checkpoint_error(
            file, "payload: the field 'copies' gives worker " + std::to_string(i) + "'s " + what +
                      " as worker " + std::to_string(of[i]) + "'s, which are not written before");
      workers[i].*field = workers[source].*field;
    }
  };
  fill(copies.parameters_of, &worker_record::parameters, "parameters");
  fill(copies.velocity_of, &worker_record::velocity, "momentum");
}

} // namespace

std::string encode_payload(const run_checkpoint& state) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(out);
    auto& x = const_cast<run_checkpoint&>(state); // part() takes what it reads and writes alike
    std::string at;
    part(archive, "settings", x.settings, at);
    part(archive, "coordinator", x.coordinator, at);
    replica_copies copies{copies_of(x.workers, parameters_of), copies_of(x.workers, velocity_of)};
    at = "workers"; // laid out as a vector of records, whatever is copied
    archive(cereal::make_size_tag(static_cast<cereal::size_type>(x.workers.size())));
    for (std::size_t i = 0; i < x.workers.size(); ++i)
      archive(
          written_record{&x.workers[i], copies.parameters_of[i] >= 0, copies.velocity_of[i] >= 0});
    part(archive, "parts", x.parts, at);
    part(archive, "inputs", x.inputs, at);
    part(archive, "input bytes", x.inputs.scaled_bytes, at);
    part(archive, "copies", copies, at);
    const auto& evaluations = x.coordinator.evaluations;
    best_evaluation best;
    if (evaluations.best_point() && evaluations.best_parameters()) {
      best.point = evaluations.best_point();
      best.parameters = *evaluations.best_parameters();
    }
    part(archive, "best", best, at);
    std::uint64_t validation_samples = x.validation_samples.value_or(0);
    part(archive, "validation samples", validation_samples, at);
    part(archive, "worker events", x.coordinator.worker_events, at);
  }
  return out.str();
}

namespace {

// Why `inputs`, read from a checkpoint, cannot be a trained model's (empty when they can): the
// checksums catch damage, not a crafted file, and these sizes build the model and read samples.
std::string unusable_inputs(const model_inputs& inputs) {
  if (!inputs.known())
    return {};
  constexpr std::uint64_t most_values = std::uint64_t{1} << 31;
  std::uint64_t values = 1;
  std::string shape;
  for (const auto extent : inputs.sample_shape)
    shape += (shape.empty() ? "" : "x") + std::to_string(extent);
  if (inputs.sample_shape.size() > 4)
    return "a sample shape of " + std::to_string(inputs.sample_shape.size()) +
           " extents (" + shape + "; at most 4)";
  for (const auto extent : inputs.sample_shape) {
    if (extent == 0 || extent >= most_values || values * extent > most_values)
      return "a sample shape of " + shape + " (each extent at least 1, at most " +
             std::to_string(most_values) + " values in all)";
    values *= extent;
  }
  if (inputs.classes < 1 || inputs.classes > models::npy_max_classes)
    return "classes = " + std::to_string(inputs.classes) + " (from 1 to " +
           std::to_string(models::npy_max_classes) + ")";
  if (!std::isfinite(inputs.mean) || !std::isfinite(inputs.stddev) || !(inputs.stddev > 0.0f))
    return "a normalisation of mean " + std::to_string(inputs.mean) + " and deviation " +
           std::to_string(inputs.stddev) + " (finite, the deviation above 0)";
  return {};
}

} // namespace

run_checkpoint decode_payload(const std::string& payload, const std::string& file,
                              std::uint32_t version) {
  run_checkpoint state;
  std::string at;
  try {
    std::istringstream in(payload, std::ios::binary);
    checkpoint::bounded_input_archive archive(in, payload.size());
    part(archive, "settings", state.settings, at);
    part(archive, "coordinator", state.coordinator, at);
    part(archive, "workers", state.workers, at);
    part(archive, "parts", state.parts, at);
    if (version >= 6)
      part(archive, "inputs", state.inputs, at);
    if (version >= 7) {
      part(archive, "input bytes", state.inputs.scaled_bytes, at);
      replica_copies copies;
      part(archive, "copies", copies, at);
      restore_copies(state.workers, copies, file);
    }
    if (version >= 8) {
      best_evaluation best;
      part(archive, "best", best, at);
      if (best.point && !best.parameters.empty())
        state.coordinator.evaluations.restore_best(
            *best.point, std::make_shared<const std::vector<float>>(std::move(best.parameters)));
    }
    if (version >= 9) {
      std::uint64_t validation_samples = 0;
      part(archive, "validation samples", validation_samples, at);
      state.validation_samples = validation_samples;
    }
    if (version >= 10)
      part(archive, "worker events", state.coordinator.worker_events, at);
    if (in.peek() != std::char_traits<char>::eof())
      throw checkpoint::checkpoint_error(file, "payload: bytes left over after the parts");
  } catch (const cereal::Exception& failure) {
    throw checkpoint::checkpoint_error(file, "payload: the field '" + at + "' cannot be read (" +
                                                 failure.what() + ")");
  } catch (const std::length_error&) { // a count no container of its type holds
    throw checkpoint::checkpoint_error(file, "payload: the field '" + at +
                                                 "' claims more values than there can be");
  } catch (const std::bad_alloc&) {
    throw checkpoint::checkpoint_error(file, "payload: the field '" + at +
                                                 "' claims more memory than there is");
  }
  if (const auto why = unusable_inputs(state.inputs); !why.empty())
    throw checkpoint::checkpoint_error(file, "payload: the model inputs hold " + why +
                                                 ", which no trained model has");
  return state;
}

run_checkpoint read_run_checkpoint(const std::string& file) {
  const auto loaded = checkpoint::read_file(file);
  return decode_payload(loaded.payload, file, loaded.head.version);
}

model_inputs inputs_of(const models::dataset& training) {
  model_inputs inputs;
  for (const auto extent : training.input_shape())
    inputs.sample_shape.push_back(extent);
  inputs.classes = training.classes;
  inputs.mean = training.input_normalisation.mean;
  inputs.stddev = training.input_normalisation.stddev;
  inputs.scaled_bytes = training.input_normalisation.scaled_bytes;
  return inputs;
}

models::dataset shaped_like(const model_inputs& inputs) {
  models::dataset shape;
  shape.sample_shape.assign(inputs.sample_shape.begin(), inputs.sample_shape.end());
  shape.classes = inputs.classes;
  shape.input_normalisation = {inputs.mean, inputs.stddev, inputs.scaled_bytes};
  shape.name = "the checkpoint's model inputs";
  return shape;
}

std::string encode_part(const std::vector<worker_record>& workers) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(out);
    archive(workers);
  }
  return out.str();
}

std::vector<worker_record> decode_part(const std::string& payload, const std::string& file) {
  std::vector<worker_record> workers;
  try {
    std::istringstream in(payload, std::ios::binary);
    checkpoint::bounded_input_archive archive(in, payload.size());
    archive(workers);
    if (in.peek() != std::char_traits<char>::eof())
      throw checkpoint::checkpoint_error(file, "payload: bytes left over after the workers");
  } catch (const cereal::Exception& failure) {
    throw checkpoint::checkpoint_error(
        file, std::string("payload: the field 'workers' cannot be read (") + failure.what() + ")");
  } catch (const std::length_error&) {
    throw checkpoint::checkpoint_error(
        file, "payload: the field 'workers' claims more values than there can be");
  } catch (const std::bad_alloc&) {
    throw checkpoint::checkpoint_error(
        file, "payload: the field 'workers' claims more memory than there is");
  }
  return workers;
}

namespace {

// Refuses a file whose structure is not `now`, naming each difference.
void check_shape(const std::string& file, const checkpoint::structure& saved,
                 const checkpoint::structure& now) {
  const auto differ = checkpoint::differences(saved, now);
  if (differ.empty())
    return;
  std::string text = "was written by a run of another shape: ";
  for (std::size_t i = 0; i < differ.size(); ++i)
    text += (i ? "; " : "") + differ[i];
  throw checkpoint::checkpoint_error(file, text, checkpoint::checkpoint_error::kind::other_shape);
}

// Refuses a worker's record that is not worker `index`'s, whose tensors are of another size, or
// whose sampler stands past the last batch of its shard in a run of structure `now` (the worker
// would seek there and fail an internal check).
void check_fits(const std::string& file, const worker_record& worker, std::int32_t index,
                std::size_t parameter_count, const checkpoint::structure& now) {
  const std::uint64_t shard =
      now.workers > 0 ? now.training_samples / static_cast<std::uint64_t>(now.workers) : 0;
  const auto batch = static_cast<std::uint64_t>(std::max(now.batch_size, 0));
  const auto& at = worker.sampler;
  if (batch > 0 && (at.offset > shard || shard - at.offset < batch))
    throw checkpoint::checkpoint_error(
        file, "payload: worker " + std::to_string(index) + "'s sampler stands at sample " +
                  std::to_string(at.offset) + " of its shard of " + std::to_string(shard) +
                  ", past its last batch of " + std::to_string(now.batch_size));
  const bool fits =
      worker.index == index && worker.parameters.size() == parameter_count &&
      (worker.velocity.size() == parameter_count || // SGD's velocity or AdamW's two moments
       worker.velocity.size() == 2 * parameter_count) &&
      worker.send.size() == parameter_count &&
      std::all_of(worker.pending.begin(), worker.pending.end(),
                  [parameter_count](const pending_result& result) {
                    return result.data.empty() || result.data.size() == parameter_count;
                  });
  if (!fits)
    throw checkpoint::checkpoint_error(file, "payload: worker " + std::to_string(index) +
                                                 "'s state does not fit a model of " +
                                                 std::to_string(parameter_count) + " parameters");
}

// A cluster's checkpoint names every worker in exactly one part.
void check_parts(const std::string& file, const std::vector<part_record>& parts, int workers) {
  std::vector<int> named(static_cast<std::size_t>(workers), 0);
  for (const auto& part : parts)
    for (std::int32_t worker : part.workers) {
      if (worker < 0 || worker >= workers)
        throw checkpoint::checkpoint_error(file, "payload: part " + part.file + " names worker " +
                                                     std::to_string(worker) + " of a run of " +
                                                     std::to_string(workers));
      ++named[static_cast<std::size_t>(worker)];
    }
  for (std::size_t worker = 0; worker < named.size(); ++worker)
    if (named[worker] != 1)
      throw checkpoint::checkpoint_error(
          file, "payload: the parts name worker " + std::to_string(worker) + " " +
                    std::to_string(named[worker]) + " times (once is whole)");
}

} // namespace

std::vector<worker_record> load_part(const std::string& file, const part_record& expected,
                                     const checkpoint::structure& now,
                                     std::size_t parameter_count) {
  const auto loaded = checkpoint::read_file(file);
  check_shape(file, loaded.head.shape, now);
  if (loaded.head.payload_hash != expected.payload_hash)
    throw checkpoint::checkpoint_error(
        file, "is not the part the checkpoint names: another write of it (payload hash differs)");
  auto workers = decode_part(loaded.payload, file);
  if (workers.size() != expected.workers.size())
    throw checkpoint::checkpoint_error(file, "payload: holds " + std::to_string(workers.size()) +
                                                 " workers, the checkpoint " +
                                                 std::to_string(expected.workers.size()));
  for (std::size_t i = 0; i < workers.size(); ++i)
    check_fits(file, workers[i], expected.workers[i], parameter_count, now);
  return workers;
}

namespace {

// The payload of `loaded` (read from `file`), checked against a run of structure `now`.
run_checkpoint checked_payload(const std::string& file, const checkpoint::loaded& loaded,
                               const checkpoint::structure& now, std::size_t parameter_count) {
  check_shape(file, loaded.head.shape, now);
  auto state = decode_payload(loaded.payload, file, loaded.head.version);
  if (state.across_processes()) {
    if (!state.workers.empty())
      throw checkpoint::checkpoint_error(file, "payload: holds workers and parts both");
    check_parts(file, state.parts, now.workers);
  } else {
    if (state.workers.size() != static_cast<std::size_t>(now.workers))
      throw checkpoint::checkpoint_error(
          file, "payload: the field 'workers' holds " + std::to_string(state.workers.size()) +
                    " workers for a run of " + std::to_string(now.workers));
    for (std::size_t i = 0; i < state.workers.size(); ++i)
      check_fits(file, state.workers[i], static_cast<std::int32_t>(i), parameter_count, now);
  }
  const auto& evaluations = state.coordinator.evaluations;
  for (const auto& [kept, what] :
       {std::pair{evaluations.target_parameters(), "the parameters that reached the target"},
        std::pair{evaluations.best_parameters(), "the best evaluation's parameters"}})
    if (kept != nullptr && kept->size() != parameter_count)
      throw checkpoint::checkpoint_error(
          file, std::string("payload: ") + what + " hold " + std::to_string(kept->size()) +
                    " values for a model of " + std::to_string(parameter_count) + " parameters");
  return state;
}

} // namespace

run_checkpoint load_for_resume(const std::string& file, const checkpoint::structure& now,
                               std::size_t parameter_count) {
  return checked_payload(file, checkpoint::read_file(file), now, parameter_count);
}

run_checkpoint load_for_model(const std::string& file, const models::model& model) {
  const auto loaded = checkpoint::read_file(file);
  auto now = loaded.head.shape; // the run's own, but for the model
  now.model = model.describe();
  if (loaded.head.shape.model != now.model)
    throw checkpoint::checkpoint_error(file, "holds the model " + loaded.head.shape.model +
                                                 ", not the one given: " + now.model);
  return checked_payload(file, loaded, now, model.parameter_count());
}

serving_parameters parameters_to_serve(const run_checkpoint& state, const std::string& file,
                                       bool last, bool mean_of_replicas, bool validation) {
  serving_parameters chosen;
  const auto& evaluations = state.coordinator.evaluations;
  const auto& target = evaluations.target_parameters();
  const auto& best = evaluations.best_parameters(); // train.patience
  char origin[160];
  if (!last && (target != nullptr || best != nullptr)) {
    const auto& point = target ? *evaluations.target_point() : *evaluations.best_point();
    chosen.values = target ? *target : *best;
    std::snprintf(origin, sizeof origin, "the parameters %s (%s accuracy %.4f at round %llu)",
                  target ? "that reached the target" : "of the best evaluation",
                  validation ? "validation" : "test", point.test_accuracy,
                  static_cast<unsigned long long>(point.round));
  } else {
    if (state.across_processes())
      throw checkpoint::checkpoint_error(
          file, "a cluster's checkpoint (herd coordinator) holds no worker's parameters: they "
                "are in the parts its nodes wrote to their own disks");
    chosen.values = model_parameters(state, mean_of_replicas);
    std::snprintf(origin, sizeof origin, "the workers' last parameters (round %llu)",
                  static_cast<unsigned long long>(state.coordinator.counters.rounds));
  }
  chosen.origin = origin;
  return chosen;
}

std::vector<float> model_parameters(const run_checkpoint& state, bool mean_of_replicas) {
  if (state.workers.empty())
    return {};
  if (!mean_of_replicas)
    return state.workers.front().parameters;
  replica_mean mean(state.workers.size());
  for (const auto& worker : state.workers)
    mean.add(worker.parameters);
  return *mean.mean();
}

} // namespace herd::actors
