// What the command line (its progress printer) and the cluster's coordinator hear of a run as it
// goes: the observer interface the run's actors call. Not installed: an embedder hears a job
// through job_options' callbacks or its messages (herd/job.hpp, herd/job_actor.hpp).
#pragma once

#include "herd/run_summary.hpp"

#include <string_view>

namespace herd::actors {

/// Receives a run's events, one call at a time: session_options' on the run's job actor (a
/// scheduler thread), coordinator_setup's on the coordinator's.
class run_observer {
public:
  virtual ~run_observer() = default;
  virtual void on_progress(const progress&) {}
  virtual void on_evaluation(const evaluation_point&) {}
  /// A notable event in words ("worker 2 lost: ...").
  virtual void on_notice(std::string_view) {}
};

} // namespace herd::actors
