// The workers slower all along; see stragglers.hpp.
#include "cli/stragglers.hpp"

#include "cli/report.hpp"

#include <algorithm>

namespace herd::cli {

namespace {

std::string straggler_line(const straggler_found& found) {
  const auto& w = *found.worker;
  std::string text = "worker " + std::to_string(w.worker) +
                     (w.node.empty() ? std::string() : " (node " + w.node + ")") + ": mean step " +
                     fixed(found.ratio(), 2) + "x the others' (" +
                     fixed(w.step_seconds.mean * 1e3, 2) + " ms against " +
                     fixed(found.others_median * 1e3, 2) + " ms)";
  if (w.late_steps > 0)
    text += "; " +
            fixed(100.0 * static_cast<double>(w.late_steps) / static_cast<double>(w.steps), 0) +
            "% of its steps were late";
  return text;
}

// The summary names this many stragglers a line each, and the rest by number in one more.
constexpr std::size_t shown_stragglers = 4;

std::string unshown_stragglers(const std::vector<straggler_found>& stragglers) {
  std::string text = stragglers.size() == shown_stragglers + 1 ? "worker" : "workers";
  for (std::size_t i = shown_stragglers; i < stragglers.size(); ++i)
    text += (i == shown_stragglers ? " " : ", ") + std::to_string(stragglers[i].worker->worker);
  return text;
}

} // namespace

std::vector<straggler_found> stragglers_of(const actors::run_summary& s) {
  std::vector<const actors::worker_summary*> live;
  for (const auto& w : s.per_worker)
    if (w.live && w.steps > 0)
      live.push_back(&w);
  if (live.size() < 2)
    return {};
  std::stable_sort(live.begin(), live.end(),
                   [](auto* a, auto* b) { return a->step_seconds.mean < b->step_seconds.mean; });
  // The others of the worker at sorted position p are the sorted means without p: their k-th
  // is the k-th of all below p and the (k+1)-th from p on.
  const std::size_t others = live.size() - 1;
  const auto others_at = [&](std::size_t p, std::size_t k) {
    return live[k < p ? k : k + 1]->step_seconds.mean;
  };
  // Of an even count of others, the upper of the two middle ones: their mean would let a
  // majority pass (means 1, 3, 3 ms: each 3 ms worker is 1.5x the mean of 1 and 3).
  std::vector<straggler_found> found;
  for (std::size_t p = live.size(); p-- > 0;) {
    const double median = others_at(p, others / 2);
    if (median <= 0.0 || live[p]->step_seconds.mean < straggler_ratio * median)
      break; // the faster ones are further from their others' median still
    found.push_back(straggler_found{live[p], median});
  }
  return found;
}

std::vector<std::string> straggler_lines(const actors::run_summary& s) {
  const auto stragglers = stragglers_of(s);
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < std::min(stragglers.size(), shown_stragglers); ++i)
    lines.push_back(straggler_line(stragglers[i]));
  if (stragglers.size() > shown_stragglers)
    lines.push_back("and " + std::to_string(stragglers.size() - shown_stragglers) +
                    " more at least " + fixed(straggler_ratio, 1) +
                    "x the others' mean step: " + unshown_stragglers(stragglers));
  return lines;
}

} // namespace herd::cli
