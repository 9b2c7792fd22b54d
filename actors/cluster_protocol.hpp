// The version of the messages nodes and coordinators exchange (actors/messages.hpp), apart from
// them so that the control gate, which reads only plain bytes, includes no CAF.
#pragma once

#include <cstdint>

namespace herd::actors {

/// Bumped whenever a message of messages.hpp changes shape. The control gate's preamble carries it,
/// so a node of another version is refused by name before any message (one whose hello CAF could
/// not read would otherwise wait out cluster.join-timeout-s in silence).
/// 4: reduce orders carry the ticket and sequence number; 5: round results carry the server's
/// staleness and run_start the parameter server (async); 6: welcomes and plane rebuilds carry the
/// data plane's key; 7: checkpoints across processes (hellos list the parts a node holds,
/// welcomes name the one to resume from, part_request); 8: nodes report refused data-plane peers
/// (plane_refusal), and aggregators cancel a failed round's reductions (cancel_atom); 9: a failed
/// rendezvous asks the registry which ranks' keys are set without waiting (store_peek_atom), and a
/// failing node tells the registry why it leaves (leave_atom); 10: hellos name the node's machine
/// and welcomes count the workers on it; 11: the registry tells welcomed nodes that the
/// coordinator stopped before the run (run_stopped_atom); 12: the coordinator's stop says whether
/// a worker waits for the results of the rounds it answered ((stop_atom, bool)); 13: sealed
/// data-plane messages travel in pieces of 128 KiB (comm/sealing.hpp), which a node of 12 cannot
/// open; 14: nodes connect comm.connections lanes to each other (a node of 13 would connect one
/// and leave its peers waiting for the others); 15: a node's workers report their steps through
/// its relay in batches (step_batch), and aggregators ask a node's members for their
/// contributions through its node reducer, once per node (contribution_asks); 16: gradient
/// buckets: workers announce steps whose backward runs (step_ready.part), and contributions say
/// when backward still writes them (contribution.in_backward); 17: rounds and a worker's start
/// carry the learning-rate schedule's factor (reduce_order.lr_scale, (start_atom, float)); 18: a
/// transferred worker_state carries its optimizer's steps and a state of its optimizer's size;
/// 19: a node's hello carries its heartbeat and node timeout; 20: the control gate's preamble
/// carries this version (it carried a gate version, 2, of its own); 21: a node leaving the running
/// job asks to depart (depart_atom) and closes its data plane once the rounds it is in have ended;
/// 22: the departure is a message each way ((depart_atom, bool) answers it), so that a leaving
/// node still connects the plane of a join under way, which the registry lets end first; 23: the
/// registry tells a leaving node that its departure waits for a join under way, and when it
/// begins, so that the node waits for a join longer than its own bound; 24: the job's end says
/// whether the run failed, and why ((job_over_atom, failure)), so that a node exits 1 with it;
/// 25: and how it ended ((job_over_atom, failure, ending)), which the node's last line says;
/// bytes travel as herd.bytes (wire_bytes), never as CAF's @charbuf, which the gate refuses.
constexpr std::uint32_t cluster_protocol_version = 25;

} // namespace herd::actors
