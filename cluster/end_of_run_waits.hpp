// How long the coordinator's end of a run waits, named once because the waits nest: the cluster
// session waits for the registry's job-over round, in which the registry waits for each node's
// acknowledgement, all nodes at once; the outer wait must outlast the inner one, or a slow node
// cuts the round short for every other.
#pragma once

#include <chrono>

namespace herd::cluster {

/// A node's acknowledgement that the job is over (the registry asks every node at once).
inline constexpr std::chrono::seconds node_job_over_reply{3};
/// The registry's whole job-over round, as the cluster session waits for it.
inline constexpr std::chrono::seconds job_over_round{5};
static_assert(job_over_round > node_job_over_reply,
              "the session's wait must outlast a node's acknowledgement");
/// Refusals and the job's end on their way through the gate, read by the nodes before the
/// connections close.
inline constexpr std::chrono::seconds gate_drain{3};

} // namespace herd::cluster
