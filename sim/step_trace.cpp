// Step times drawn from measured histograms; see step_trace.hpp.
#include "sim/step_trace.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>

namespace herd::sim {

namespace {

// SplitMix64: one well-mixed 64-bit value per input, so that a draw depends on its arguments
// only.
std::uint64_t mix(std::uint64_t value) {
  value += 0x9e3779b97f4a7c15ull;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ull;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebull;
  return value ^ (value >> 31);
}

// A step time of a trace is at most an hour, as simulate.step-ms is.
constexpr double longest_step_seconds = 3600.0;

// "0.001", "inf", "-nan": what a bar said, not std::to_string's "0.001000".
std::string seconds_text(double seconds) {
  std::ostringstream text;
  text << seconds;
  return text.str();
}

// A uniform double in [0, 1) from 53 bits of `bits`.
double unit(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

} // namespace

step_trace::step_trace(std::vector<std::vector<actors::histogram_bar>> workers) {
  if (workers.empty())
    throw std::invalid_argument("the trace has no worker");
  double total_seconds = 0.0;
  double total_steps = 0.0; // of every worker: a sum past 2^64 stays a number
  for (std::size_t w = 0; w < workers.size(); ++w) {
    worker_bars made;
    std::uint64_t steps = 0;
    for (const auto& bar : workers[w]) {
      if (!(bar.lower_seconds >= 0.0) || !(bar.upper_seconds >= bar.lower_seconds) ||
          !(bar.upper_seconds <= longest_step_seconds))
        throw std::invalid_argument(
            "worker " + std::to_string(w) + ": a bar from " + seconds_text(bar.lower_seconds) +
            " s to " + seconds_text(bar.upper_seconds) +
            " s (bars run from 0 s up, each upper bound at least its lower one, at most 3600 s)");
      if (steps + bar.count < steps)
        throw std::invalid_argument("worker " + std::to_string(w) +
                                    ": its bars' counts add up past 2^64 steps");
      steps += bar.count;
      total_seconds += 0.5 * (bar.lower_seconds + bar.upper_seconds) * bar.count;
      made.cumulative.push_back(steps);
    }
    if (steps == 0)
      throw std::invalid_argument("worker " + std::to_string(w) + " has no step");
    made.bars = std::move(workers[w]);
    total_steps += static_cast<double>(steps);
    workers_.push_back(std::move(made));
  }
  mean_seconds_ = total_seconds / total_steps;
  if (!(mean_seconds_ > 0.0))
    throw std::invalid_argument("its steps take no time on average: every counted bar is 0 s");
  // A mean of 1e-300 s simulated no round at all, and gnuplot failed on the empty plot.
  if (mean_seconds_ < 1e-6)
    throw std::invalid_argument("its steps take " + std::to_string(mean_seconds_ * 1e9) +
                                " ns on average; a step of less than a microsecond is no step "
                                "of training");
}

double step_trace::draw(int worker, std::uint64_t step, std::uint64_t seed) const {
  const auto& measured = workers_[static_cast<std::size_t>(worker) % workers_.size()];
  const std::uint64_t bits = mix(mix(mix(seed) ^ static_cast<std::uint64_t>(worker)) ^ step);
  const std::uint64_t steps = measured.cumulative.back();
  const std::uint64_t pick = bits % steps; // steps << 2^64: the modulus's bias is negligible
  const auto bar = static_cast<std::size_t>(
      std::upper_bound(measured.cumulative.begin(), measured.cumulative.end(), pick) -
      measured.cumulative.begin());
  const auto& chosen = measured.bars[bar];
  return chosen.lower_seconds + unit(mix(bits)) * (chosen.upper_seconds - chosen.lower_seconds);
}

} // namespace herd::sim
