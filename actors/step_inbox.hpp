// Step reports in one process, without a message each. Every worker of a run that shares the
// coordinator's process posts its step_ready here; only a report that finds the inbox empty
// wakes the coordinator with a message ((inbox_atom)), and the coordinator takes every report
// posted by then, in the order they came. At 256 workers the coordinator thus handles a message
// per batch of reports rather than one per report: what CAF spends per message (an allocation,
// the mailbox, scheduling the coordinator, the dispatch) is paid once a batch.
//
// Order: a worker wakes the coordinator while it holds the inbox's lock, so the wake reaches the
// coordinator's mailbox before anything a worker sends after posting into a non-empty inbox (its
// answer to a stop, its death's down message). The coordinator therefore handles every report
// before any later message of the worker that posted it, as it would have handled the report's
// own message; a report may only be handled sooner. Across processes a node's step relay does
// the batching instead (cluster/step_relay.hpp).
//
// Includes the message vocabulary (CAF): include it only from actor implementation files and
// tests.
#pragma once

#include "actors/messages.hpp"

#include <mutex>
#include <utility>
#include <vector>

namespace herd::actors {

class step_inbox {
public:
  /// Appends `report`. If the inbox was empty, calls `wake()` (which sends the coordinator
  /// (inbox_atom)) before anyone else may post: see the order above.
  template <class Wake>
  void post(const step_ready& report, Wake&& wake) {
    std::lock_guard<std::mutex> guard(mutex_);
    reports_.push_back(report);
    if (reports_.size() == 1)
      std::forward<Wake>(wake)();
  }

  /// Every report posted since the last take, in the order they came, into `reports` (its
  /// contents replaced; its memory is reused by the next posts, so that a coordinator that keeps
  /// one vector for its takes allocates nothing once both have grown).
  void take(std::vector<step_ready>& reports) {
    reports.clear();
    std::lock_guard<std::mutex> guard(mutex_);
    reports_.swap(reports);
  }

private:
  std::mutex mutex_;
  std::vector<step_ready> reports_;
};

/// A worker's step report: posted into `inbox` where there is one (the worker shares the
/// coordinator's process), waking `coordinator` if it was empty; otherwise sent to `coordinator`
/// (across processes, the node's step relay).
inline void report_step(caf::event_based_actor* self, const caf::actor& coordinator,
                        step_inbox* inbox, const step_ready& ready) {
  if (inbox != nullptr)
    inbox->post(ready, [&] { self->send(coordinator, inbox_atom::value); });
  else
    self->send(coordinator, ready);
}

} // namespace herd::actors
