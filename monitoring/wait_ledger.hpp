// What waiting cost, and what a synchronous barrier would have cost on the same steps.
//
// Workers report, for every local step, its compute time and how long they then waited before
// their next step began. Under a barrier every worker's step number t ends together, when the
// slowest one finishes: worker i would wait max_j compute(j, t) - compute(i, t). The ledger pairs
// steps by number and compares, over the step numbers every live worker has finished and reported
// the wait after, the waiting that really happened with the waiting a barrier would have imposed.
// A plain class: the coordinator feeds it, tests drive it directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace herd::monitoring {

class wait_ledger {
public:
  explicit wait_ledger(int workers = 1);

  /// Worker `worker` finished its step number `step` (1-based) after `compute_seconds`.
  void step_finished(int worker, std::uint64_t step, double compute_seconds);

  /// Worker `worker` waited `seconds` after its step number `step` before the next one began.
  void waited_after(int worker, std::uint64_t step, double seconds);

  /// The worker is gone: step numbers no longer wait for its reports (steps it already
  /// completed with everyone stay counted).
  void worker_lost(int worker);

  /// A lost worker's slot is live again (a node joined the running job in its place). It counts
  /// again from the first step it reports on: that step number and the later ones wait for it.
  void worker_joined(int worker);

  struct comparison {
    std::uint64_t steps_compared = 0; // step numbers every live worker completed
    std::vector<double> waited;       // per worker, over those steps
    std::vector<double> barrier;      // per worker, what a barrier would have imposed
    double waited_total = 0.0;
    double barrier_total = 0.0;

    template <class Archive>
    void serialize(Archive& archive) {
      archive(steps_compared, waited, barrier, waited_total, barrier_total);
    }
  };

  comparison compare() const;

  /// Every field, for checkpoints (a cereal archive; the caller includes cereal's types).
  template <class Archive>
  void serialize(Archive& archive) {
    archive(live_, since_, joining_, open_, settled_);
  }

private:
  struct step_record {
    std::vector<std::optional<double>> compute;
    std::vector<std::optional<double>> waited;
    // Derived, not saved: how many of the slots above the workers that count for this step have
    // yet to fill. Unknown (recounted on the next report) after a load, and whenever who counts
    // changes (a worker lost or back), so that a report costs O(1) rather than a scan of every
    // worker: a scan per report made a step of P workers cost O(P^2).
    std::optional<std::size_t> missing;

    template <class Archive>
    void serialize(Archive& archive) {
      archive(compute, waited);
    }
  };

  // Fills one report's slot of `step`'s record and settles the step once it is complete.
  void record_report(std::uint64_t step, step_record& record, std::optional<double>& slot,
                     double seconds);
  void forget_missing_counts(); // who counts changed: every open record recounts
  void settle(std::uint64_t step);
  bool counts(std::size_t worker, std::uint64_t step) const; // a live worker, from since_ on

  std::vector<bool> live_;
  std::vector<std::uint64_t> since_; // the first step each worker counts for (0: from the start)
  std::vector<bool> joining_;        // came back; counts from its next reported step
  // Steps not yet completed by every live worker, and markers of settled ones (see the .cpp).
  std::map<std::uint64_t, step_record> open_;
  comparison settled_;
};

} // namespace herd::monitoring
