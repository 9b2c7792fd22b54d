// Load-imbalance injection; see imbalance.hpp. Every random choice comes from splitmix64 hashes of
// the seed and the step (and the worker, for lognormal), never from <random>'s distributions,
// whose output differs between standard libraries: two builds of Herd must delay the same workers.
#include "policy/imbalance.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <locale>
#include <sstream>
#include <unordered_map>
#include <utility>

namespace herd::policy {

namespace {

constexpr double pi = 3.14159265358979323846; // M_PI is POSIX, not C++17

/// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
/// a 64-bit counter stepped by the golden gamma and passed through a bijective finaliser.
class splitmix64 {
public:
  explicit splitmix64(std::uint64_t state) : state_(state) {}

  std::uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return finalise(state_);
  }

  static std::uint64_t finalise(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, bound), without modulo bias: draws below 2^64 mod bound are redrawn.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t rejected = (0 - bound) % bound; // 2^64 mod bound
    for (;;)
      if (auto draw = next(); draw >= rejected)
        return draw % bound;
  }

  /// Uniform in the open interval (0, 1): the top 53 bits, offset by half a unit in the last place.
  double open_unit() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }

private:
  std::uint64_t state_;
};

/// A generator whose whole stream is fixed by the seed and the values mixed in, so that
/// (seed, 3) and (seed, 4) give unrelated streams.
splitmix64 stream_of(std::uint64_t seed, std::initializer_list<std::uint64_t> values) {
  std::uint64_t state = splitmix64::finalise(seed);
  for (auto value : values)
    state = splitmix64::finalise(state ^ splitmix64::finalise(value + 0x9e3779b97f4a7c15ULL));
  return splitmix64{state};
}

/// 40 -> "40", 2.5 -> "2.5", independent of the global locale.
std::string compact(double value) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(12);
  out << value;
  return out.str();
}

bool is_kind(const config::imbalance_section& settings, const char* kind) {
  return settings.kind == kind;
}

} // namespace

imbalance_model::imbalance_model(config::imbalance_section settings, int workers)
    : settings_(std::move(settings)), workers_(workers) {
  HERD_CHECK_GE(workers_, 1);
  const auto& s = settings_;
  HERD_CHECK(is_kind(s, "none") || is_kind(s, "random") || is_kind(s, "persistent") ||
                 is_kind(s, "lognormal"),
             "imbalance.kind \"" << s.kind << "\": use none, random, persistent or lognormal");
  if (is_kind(s, "random")) {
    HERD_CHECK_GE(s.k, 1);
    HERD_CHECK_LE(s.k, workers_);
    HERD_CHECK(std::isfinite(s.delay_ms) && s.delay_ms >= 0.0,
               "imbalance.delay-ms " << s.delay_ms << " must be a finite number >= 0");
  } else if (is_kind(s, "persistent")) {
    HERD_CHECK(std::isfinite(s.factor) && s.factor >= 1.0,
               "imbalance.factor " << s.factor
                                   << " must be finite and >= 1 (a step cannot speed up)");
    for (int slow : s.workers)
      HERD_CHECK(slow >= 0 && slow < workers_, "imbalance.workers lists worker "
                                                   << slow << " of a job with " << workers_
                                                   << " workers");
    // Sorted and unique: membership is a binary search, and describe() lists each worker once.
    std::sort(settings_.workers.begin(), settings_.workers.end());
    settings_.workers.erase(std::unique(settings_.workers.begin(), settings_.workers.end()),
                            settings_.workers.end());
  } else if (is_kind(s, "lognormal")) {
    HERD_CHECK(std::isfinite(s.sigma) && s.sigma >= 0.0,
               "imbalance.sigma " << s.sigma << " must be a finite number >= 0");
  }
}

bool imbalance_model::active() const {
  return !is_kind(settings_, "none");
}

double imbalance_model::extra_seconds(int worker, std::uint64_t step,
                                      double compute_seconds) const {
  HERD_CHECK(worker >= 0 && worker < workers_,
             "worker " << worker << " of a job with " << workers_ << " workers");
  compute_seconds = std::max(compute_seconds, 0.0);
  if (is_kind(settings_, "random")) {
    const auto delayed = delayed_at(step);
    return std::binary_search(delayed->begin(), delayed->end(), worker)
               ? settings_.delay_ms / 1000.0
               : 0.0;
  }
  if (is_kind(settings_, "persistent")) {
    const auto& slow = settings_.workers;
    return std::binary_search(slow.begin(), slow.end(), worker)
               ? (settings_.factor - 1.0) * compute_seconds
               : 0.0;
  }
  if (is_kind(settings_, "lognormal")) {
    // Box-Muller: one standard normal from two uniforms in (0, 1), so the log is finite.
    auto rng = stream_of(settings_.seed, {static_cast<std::uint64_t>(worker), step});
    const double u1 = rng.open_unit();
    const double u2 = rng.open_unit();
    const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * pi * u2);
    const double multiplier = std::exp(settings_.sigma * normal);
    return std::max(multiplier - 1.0, 0.0) * compute_seconds;
  }
  return 0.0;
}

std::vector<int> imbalance_model::delayed_workers(std::uint64_t step) const {
  if (!is_kind(settings_, "random"))
    return {};
  return *delayed_at(step);
}

std::shared_ptr<const std::vector<int>> imbalance_model::delayed_at(std::uint64_t step) const {
  {
    std::lock_guard<std::mutex> guard(latest_->mutex);
    if (latest_->delayed && latest_->step == step)
      return latest_->delayed;
  }
  // Partial Fisher-Yates: the first k places of a shuffle of 0..workers-1, drawn from (seed, step)
  // alone, so that every worker computes the same set. Only the places a swap touched differ
  // from the identity, so they are kept in a map: O(k) whatever the worker count.
  const auto workers = static_cast<std::uint64_t>(workers_);
  const auto k = std::min(static_cast<std::uint64_t>(std::max(settings_.k, 0)), workers);
  std::unordered_map<std::uint64_t, std::uint64_t> moved; // place -> the worker there
  auto at = [&moved](std::uint64_t place) {
    const auto found = moved.find(place);
    return found == moved.end() ? place : found->second;
  };
  auto rng = stream_of(settings_.seed, {step});
  auto delayed = std::make_shared<std::vector<int>>();
  delayed->reserve(static_cast<std::size_t>(k));
  for (std::uint64_t place = 0; place < k; ++place) {
    const auto pick = place + rng.below(workers - place);
    const auto chosen = at(pick);
    moved[pick] = at(place);
    delayed->push_back(static_cast<int>(chosen));
  }
  std::sort(delayed->begin(), delayed->end());
  std::lock_guard<std::mutex> guard(latest_->mutex);
  latest_->step = step;
  latest_->delayed = delayed;
  return delayed;
}

std::string imbalance_model::describe() const {
  const auto& s = settings_;
  if (is_kind(s, "random"))
    return "random: " + std::to_string(s.k) + " of " + std::to_string(workers_) +
           (workers_ == 1 ? " worker" : " workers") + " delayed " + compact(s.delay_ms) +
           " ms per step";
  if (is_kind(s, "persistent")) {
    std::string listed;
    for (std::size_t i = 0; i < s.workers.size(); ++i)
      listed += (i ? ", " : "") + std::to_string(s.workers[i]);
    if (s.workers.empty())
      return "persistent: no workers listed, none run slower";
    const bool one = s.workers.size() == 1;
    return std::string{"persistent: "} + (one ? "worker " : "workers ") + listed +
           (one ? " runs " : " run ") + compact(s.factor) + "x slower";
  }
  if (is_kind(s, "lognormal"))
    return "lognormal: step times x max(1, LogNormal(0, " + compact(s.sigma) + "))";
  return "none";
}

} // namespace herd::policy
