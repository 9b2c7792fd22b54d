// A worker probe that records, per worker, what it computed, applied and held back, and a
// fingerprint of its parameters after every round: for tests of whole runs (one process or a
// cluster) that check conservation and that replicas go through the same states.
#pragma once

#include "actors/worker_probe.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace herd::testing {

// Records, per worker, the sum of the gradients it computed, the sum of the results it applied,
// a fingerprint of its parameters after each round, and what it held back when it stopped.
class recording_probe final : public herd::actors::worker_probe {
public:
  recording_probe(int workers, std::size_t count)
      : computed_(static_cast<std::size_t>(workers), std::vector<double>(count, 0.0)),
        weighted_(static_cast<std::size_t>(workers), std::vector<double>(count, 0.0)),
        applied_(static_cast<std::size_t>(workers), std::vector<double>(count, 0.0)),
        unsent_(static_cast<std::size_t>(workers), std::vector<double>(count, 0.0)),
        last_gradient_(static_cast<std::size_t>(workers)),
        fingerprints_(static_cast<std::size_t>(workers)),
        took_result_(static_cast<std::size_t>(workers)),
        last_applied_(static_cast<std::size_t>(workers)),
        stopped_(static_cast<std::size_t>(workers), false) {}

  void gradient_computed(int worker, std::uint64_t, const float* gradient,
                         std::size_t count) override {
    std::lock_guard<std::mutex> guard(mutex_);
    const auto w = static_cast<std::size_t>(worker);
    add(computed_[w], gradient, count);
    add(weighted_[w], gradient, count);
    last_gradient_[w].assign(gradient, gradient + count);
    ++steps_[worker];
  }

  void gradient_scaled(int worker, std::uint64_t, float factor) override {
    std::lock_guard<std::mutex> guard(mutex_);
    const auto w = static_cast<std::size_t>(worker);
    const auto& gradient = last_gradient_[w]; // the step's: scaled before the next one computes
    for (std::size_t i = 0; i < gradient.size(); ++i)
      weighted_[w][i] += (static_cast<double>(factor) - 1.0) * static_cast<double>(gradient[i]);
  }

  void round_applied(int worker, std::uint64_t round, const float* result, const float* parameters,
                     std::size_t count) override {
    std::lock_guard<std::mutex> guard(mutex_);
    add(applied_[static_cast<std::size_t>(worker)], result, count);
    fingerprints_[static_cast<std::size_t>(worker)][round] = fingerprint(parameters, count);
    took_result_[static_cast<std::size_t>(worker)][round] =
        fingerprint(parameters, count) == fingerprint(result, count);
    last_applied_[static_cast<std::size_t>(worker)].assign(parameters, parameters + count);
  }

  void stopped(int worker, const float* unsent, std::size_t count) override {
    std::lock_guard<std::mutex> guard(mutex_);
    stopped_[static_cast<std::size_t>(worker)] = true;
    if (unsent != nullptr)
      add(unsent_[static_cast<std::size_t>(worker)], unsent, count);
  }

  // While the run goes on: local steps computed and rounds applied under worker index `worker`
  // (by every worker that held that index).
  std::size_t steps(int worker) const {
    std::lock_guard<std::mutex> guard(mutex_);
    auto found = steps_.find(worker);
    return found == steps_.end() ? 0 : found->second;
  }
  std::size_t rounds(int worker) const {
    std::lock_guard<std::mutex> guard(mutex_);
    return fingerprints_[static_cast<std::size_t>(worker)].size();
  }

  // The other accessors are for after the run.
  const std::vector<std::vector<double>>& computed() const { return computed_; }
  /// As computed(), each gradient at the weight it went on with (late-gradients = scale).
  const std::vector<std::vector<double>>& weighted_computed() const { return weighted_; }
  const std::vector<std::vector<double>>& applied() const { return applied_; }
  const std::vector<std::vector<double>>& unsent() const { return unsent_; }
  const std::vector<std::map<std::uint64_t, std::uint64_t>>& fingerprints() const {
    return fingerprints_;
  }
  /// Per worker and round: whether its parameters afterwards were the round's result itself
  /// (model averaging on time), not a blend of it.
  const std::vector<std::map<std::uint64_t, bool>>& took_result() const { return took_result_; }
  /// Per worker: its parameters right after the last round it applied.
  const std::vector<std::vector<float>>& last_applied() const { return last_applied_; }
  bool all_stopped() const {
    return std::all_of(stopped_.begin(), stopped_.end(), [](bool s) { return s; });
  }

private:
  static void add(std::vector<double>& sum, const float* values, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
      sum[i] += static_cast<double>(values[i]);
  }

  // FNV-1a over the bytes: equal fingerprints for bit-identical parameters.
  static std::uint64_t fingerprint(const float* values, std::size_t count) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    const auto* bytes = reinterpret_cast<const unsigned char*>(values);
    for (std::size_t i = 0; i < count * sizeof(float); ++i)
      hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    return hash;
  }

  mutable std::mutex mutex_;
  std::map<int, std::size_t> steps_;
  std::vector<std::vector<double>> computed_, weighted_, applied_, unsent_;
  std::vector<std::vector<float>> last_gradient_; // by worker: its latest step's
  std::vector<std::map<std::uint64_t, std::uint64_t>> fingerprints_;
  std::vector<std::map<std::uint64_t, bool>> took_result_;
  std::vector<std::vector<float>> last_applied_;
  std::vector<bool> stopped_;
};

} // namespace herd::testing
