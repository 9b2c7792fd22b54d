// The coordinator's bookkeeping of finished steps, in batches. Each step report updates its
// worker's counters (run_counters) and Prometheus series (training_metrics): several histograms,
// summaries and windows per worker. With 256 workers whose computation keeps evicting the
// coordinator's caches, doing that at every report cost about 1.35 us, one cache miss after
// another. The book keeps the reports instead (a few dozen bytes each, appended) and books them
// together, where a batch's workers' state is in the caches again: at the coordinator's progress
// tick, before anything reads the counters, or once `capacity` reports wait. Plain C++, no CAF.
#pragma once

#include "actors/run_counters.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace herd::monitoring {
class training_metrics;
}

namespace herd::actors {

/// One finished step as the coordinator heard it: step_ready's fields, and when it arrived.
struct finished_step {
  std::int32_t worker = 0;
  std::uint64_t step = 0;
  double at_seconds = 0.0; // the run's clock when the report reached the coordinator
  double compute_seconds = 0.0;
  double wait_seconds = 0.0;
  double loss = 0.0;
  std::uint32_t samples = 0;
  bool late = false;
};

class step_book {
public:
  /// Books into `counters` and, unless it is null, `metrics`; both outlive the book.
  step_book(run_counters& counters, monitoring::training_metrics* metrics);

  /// Keeps `step` for the next booking; books every kept step once `capacity` of them wait.
  void keep(const finished_step& step);
  /// Books every kept step into the counters and the metrics, in the order they came. After it,
  /// the counters and the metrics hold every step so far.
  void book();
  /// Steps kept and not yet booked.
  std::size_t waiting() const { return kept_.size(); }

  /// At most this many steps wait (about 250 KiB). At 256 workers with 1 ms steps on 2 cores
  /// (about 70 rounds a second) a progress tick brings about 4,500 reports, so the book may fill
  /// once between ticks; 4096 steps of 256 workers still find their state in the caches.
  static constexpr std::size_t capacity = 4096;

private:
  run_counters& counters_;
  monitoring::training_metrics* metrics_;
  std::vector<finished_step> kept_;
};

} // namespace herd::actors
