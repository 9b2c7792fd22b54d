// The `gloo` data plane: CPU processes connected by Facebook Gloo's TCP transport, built once as a
// full mesh, over which any subset of ranks reduces through Gloo's unbound buffers (point to point)
// without building a context per group. No Gloo header here: Gloo stays a private dependency.
#pragma once

#include "comm/data_plane.hpp"
#include "comm/rendezvous_store.hpp"
#include "comm/sealing.hpp"
#include "comm/wire_format.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace herd::comm {

struct gloo_plane_options {
  std::string hostname = "127.0.0.1";       // the address this rank listens on and peers dial
  std::string prefix;                       // namespaces this job's keys in the store
  std::chrono::milliseconds timeout{30000}; // the rendezvous, and an operation's default deadline
  // How group_reduce sends its floats: fp16 or bf16 halve the bytes. Every rank of a reduction
  // gets the same result, bit for bit, in any format; broadcasts always send floats as they are.
  wire_format compression = wire_format::fp32;
  // With fp16 or bf16: what rounding takes from each element this rank rounds is kept, by element
  // index, and added to that element the next time this rank rounds it (error feedback), so the
  // errors do not accumulate over rounds. The residual is reset when a reduction of another length
  // comes (of a part, the length of its whole buffer); a failed reduction loses what it carried.
  bool error_feedback = false;
  // With a key (the same on every rank, from the control plane), every message is sealed with
  // AES-256-GCM (comm/sealing.hpp): a message that does not open fails its operation, naming the
  // peer, and that peer is lost to the plane. Without one, messages cross the wire in the clear.
  std::optional<plane_key> seal_key;
  // With a key: how many threads seal and open the pieces of one message (1: the operation's own
  // thread alone; 0: seal_threads_for(0)). The bytes on the wire are the same for any number.
  int seal_threads = 0;
  // With a key: the sends of an operation whose chunks are several segments long are sealed and
  // posted by a thread of the plane's own, in order, while the operation's thread opens and adds
  // the next segment. false seals each send on the operation's thread before it is posted
  // (bench_gloo's --seal-pipeline compares the two). The bytes on the wire are the same.
  bool pipeline_sealing = true;
  // With a key: the receives of such an operation are each waited for and opened, as they arrive
  // and in order, by a thread of the operation's own, while its thread adds the segment before.
  // false opens each on the operation's thread once it waits for it (bench_gloo's
  // --open-pipeline compares the two). The floats received are the same.
  bool pipeline_opening = true;
  // Connections between each pair of ranks (1 to 16), each lane a mesh of its own with its own
  // network thread (Gloo's device) and, sealed, its own key (lane_key): a reduction or broadcast
  // of at least two lanes' worth of floats (lane_floats each) is cut into that many contiguous
  // parts, moved at once, one per lane on a thread of its own. A reduction so cut ends with the
  // bits of one reduction of the whole (operation_options' parts). Every rank must use the same
  // number. With sealing, each lane seals by seal_threads / lanes threads (at least 1).
  int lanes = 1;
  // Called once for each peer whose messages were refused (on a thread of the operation that
  // refused it), with why: for the node's log, since the operation's failure alone only aborts a
  // round. May be empty.
  std::function<void(int peer, const std::string& why)> on_refused;
};

/// The fewest floats one lane of a plane of several moves in a cut operation (2 MiB): below
/// that, one transfer per ring step does not keep a lane busy long enough to pay for its thread.
constexpr std::size_t lane_floats = std::size_t{512} * 1024;
constexpr int max_lanes = 16;

/// The threads that seal a plane's messages for the setting `seal_threads` (comm.seal-threads):
/// itself, or for 0 half the cores this process may run on, between 1 and 4. Throws
/// std::invalid_argument for a negative setting.
int seal_threads_for(int seal_threads);

/// The threads that seal each lane's messages in a plane of `lanes`: seal_threads_for's number
/// divided among them, at least 1 each (so more in all than the setting when lanes outnumber it).
int lane_seal_threads(int seal_threads, int lanes);

/// "sealed by N threads": how a plane of `lanes` seals for the setting `seal_threads`, every
/// lane's threads together, in the words of a node's log.
std::string sealing_text(int seal_threads, int lanes);

/// One process's rank in a full mesh of TCP connections (Gloo's tcp transport), built once; any
/// subset of ranks (sorted, unique) then reduces (a ring, 1 MiB segments pipelined) or broadcasts
/// (a chain) through unbound buffers, in host memory. An operation runs on the calling thread and
/// has ended when it returns; the caller's buffers are never touched afterwards.
///
/// Operations may run concurrently from several threads as long as their tags (below 2^48)
/// differ. A failed operation's tag is refused from then on: its messages may still be in flight.
/// A lost peer stays lost (`peer_lost`): operations that include it fail at once, the others go
/// on. A deadline that passes ends that operation alone (`timeout`), through the watchdog, and
/// cancel() ends it alone at once (`aborted`).
class gloo_plane : public data_plane {
public:
  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string_view name() const override { return "gloo"; }
  bool supports(operation op) const override { return op != operation::attach; }
  const kernels::memory& memory() const override { return kernels::host_memory(); }

  /// The floats this rank keeps for error feedback now (4 bytes each): in blocks of the elements
  /// its reductions have rounded, so about one buffer's worth whatever the number of lanes.
  virtual std::size_t feedback_floats() const = 0;

  /// The threads that seal and open this rank's messages, every lane's together (0 in the clear).
  virtual int seal_threads() const = 0;

protected:
  gloo_plane(int rank, int size) : rank_(rank), size_(size) {}
  const int rank_;
  const int size_;
};

/// Connects rank `rank` of `size` to every other rank through `store`; throws comm_error naming
/// the rank(s) whose addresses are not in the store when the rendezvous does not complete:
/// `timeout` when options.timeout passed, `failed` when it ended sooner (the store refused a read,
/// or a connect failed); std::invalid_argument for lanes outside 1 to max_lanes.
/// Destroying the plane closes every connection (peers' operations that include this rank fail);
/// no operation may be running on it then.
std::unique_ptr<gloo_plane> make_gloo_plane(int rank, int size,
                                            const std::shared_ptr<rendezvous_store>& store,
                                            const gloo_plane_options& options);

/// The text of a Gloo exception with the ports of its addresses ("[10.0.0.2]:6022") as a reader
/// means them: Gloo prints a socket address's port as it is stored, in network byte order, so on
/// this (little-endian) host "6022" is port 34327, and an operator would check the wrong one.
std::string gloo_error_text(const std::string& gloo_text);

} // namespace herd::comm
