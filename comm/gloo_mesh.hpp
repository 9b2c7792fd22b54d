// Inside the gloo data plane (internal: included by comm/gloo_*.cpp only): the mesh of Gloo tcp
// pairs built once (gloo_plane.cpp: connecting, deadlines, failures) and the group collectives
// over Gloo's unbound buffers, point to point and tagged by slot (gloo_collectives.cpp).
//
// What Gloo (Debian's 0.0~git20220518 snapshot) does and does not guarantee, and what follows:
//
// * UnboundBuffer::waitRecv/waitSend with a timeout that expires calls Context::signalException,
//   which closes *every* pair of the context ("Application timeout caused pair closure"; checked:
//   after rank 1 times out waiting for rank 0, its pair with rank 2 is closed too): one slow peer
//   would cut this rank off from all others. So Gloo's waits get a timeout that never
//   expires, and our deadline comes from the watchdog's expire hook (comm/watchdog.hpp): it calls
//   abortWaitRecv/Send, which only wakes the waiter (the wait returns false) and closes nothing.
// * An aborted or failed operation stays queued in the pair (localPendingRecv_/Send_). Destroying
//   its UnboundBuffer does stop Gloo from touching the memory (a weak pointer, see
//   gloo/common/memory.h), but when the peer's payload for it arrives later, Pair::prepareRead
//   finds the buffer gone and returns without consuming the payload: the pair stops reading for
//   good (checked: a later message on another slot of that pair never arrives, and the device
//   thread keeps polling); a send fares the same (Pair::write never drains tx_). So a
//   buffer with an operation pending on a live pair must stay alive. Hence: every send and
//   receive goes through staging memory that the plane owns, never through the caller's buffers;
//   after a failure the operation's staging and buffers are parked until each pending transfer
//   completes late or its pair is known dead, and only then freed. The caller's buffers are read
//   and written only by the calling thread, so they are never written after return.
// * A pair that sees an error (EOF, reset) signals the buffers queued on it, but not one whose
//   payload it is reading at that moment, nor a send already handed to its tx_ queue: those
//   waiters learn nothing and end at our deadline. Every error therefore ends within `timeout`,
//   sometimes at it rather than at once.
// * Gloo writes with writev(2) and never ignores SIGPIPE: a write to a peer that died would kill
//   this process. The first plane sets SIGPIPE to SIG_IGN when it is still at SIG_DFL.
// * Thread safety: Pair::send/recv take the pair's mutex and then the context's (the Mutator);
//   the device thread only try_locks a pair; an UnboundBuffer guards its counters with its own
//   mutex. Operations from several threads on one context are therefore safe as long as each
//   buffer belongs to one operation (here: one buffer per message) and concurrent operations use
//   distinct slots (here: distinct tags). Messages on one pair and slot match in posting order.
//   The one unlocked shared state found (helgrind) is in device creation; see the constructor.
#pragma once

#include "comm/gloo_plane.hpp"
#include "comm/task_pool.hpp"
#include "comm/watchdog.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace herd::comm::gloo_detail {

using steady_clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// One message carries at most this many floats (1 MiB), so that a rank adds (or copies) one segment
// while the next ones are on the wire, and forwards each segment as soon as it is ready
// (pipelining, as Gloo's allreduce_ring_chunked does).
constexpr std::size_t segment_floats = std::size_t{256} * 1024;

// A slot is tag << 16 | kind << 15 | step: 15 bits for the step of the algorithm, one for the
// collective, the upper 48 for the tag. Distinct steps use distinct slots, so messages of
// concurrent operations (distinct tags) or of different steps never match each other.
constexpr int tag_shift = 16;
constexpr std::uint64_t max_tag = (std::uint64_t{1} << (64 - tag_shift)) - 1;
constexpr int max_steps = 1 << 15;
enum class operation_kind : std::uint64_t { allreduce = 0, broadcast = 1 };

inline std::uint64_t slot_of(std::uint64_t tag, operation_kind kind, int step) {
  return (tag << tag_shift) | (static_cast<std::uint64_t>(kind) << 15) |
         static_cast<std::uint64_t>(step);
}

// Long enough never to expire (see the top of the file: an expiring Gloo wait closes every pair),
// short enough not to overflow steady_clock::now() + timeout in nanoseconds.
constexpr milliseconds never = std::chrono::hours(24 * 365 * 10);

/// "{0, 2, 3}".
std::string describe(const std::vector<int>& ranks);

/// The plane's boundary: what the operation threw, as a status.
status guarded(const std::function<void()>& call);

// Memory that Gloo reads and writes on behalf of an operation; recycled across operations, since
// fresh pages of a large buffer cost more to fault in than a reduction of them.
struct staging_block {
  std::unique_ptr<float[]> floats;
  std::size_t capacity = 0;
};

// Ranks split `count` floats into k chunks of count/k (the first count%k one more), each cut into
// segments of at most segment_floats.
struct partition {
  std::size_t count = 0;
  int parts = 1;
  // A part of a larger buffer (operation_options): the chunks are the whole buffer's, cut to
  // the `count` floats at `offset` (some of them empty), and offsets count from the part's start.
  std::size_t whole = 0; // 0: the part is the whole buffer
  std::size_t offset = 0;

  std::size_t begin(int chunk) const {
    const std::size_t of = whole == 0 ? count : whole;
    auto base = of / static_cast<std::size_t>(parts);
    auto extra = of % static_cast<std::size_t>(parts);
    auto c = static_cast<std::size_t>(chunk);
    return std::clamp(c * base + std::min(c, extra), offset, offset + count) - offset;
  }
  std::size_t size(int chunk) const { return begin(chunk + 1) - begin(chunk); }
  std::size_t segments(int chunk) const {
    return (size(chunk) + segment_floats - 1) / segment_floats;
  }
  std::size_t segment_begin(int chunk, std::size_t segment) const {
    return begin(chunk) + segment * segment_floats;
  }
  std::size_t segment_size(int chunk, std::size_t segment) const {
    return std::min(segment_floats, size(chunk) - segment * segment_floats);
  }
  // Segment `segment` of `chunk` among every segment, in order.
  std::size_t ordinal(int chunk, std::size_t segment) const {
    std::size_t before = 0;
    for (int c = 0; c < chunk; ++c)
      before += segments(c);
    return before + segment;
  }
  std::size_t total_segments() const { return ordinal(parts, 0); }
  std::size_t most_segments() const {
    std::size_t most = 0;
    for (int c = 0; c < parts; ++c)
      most = std::max(most, segments(c));
    return most;
  }
};

// Error feedback's residual of one rank: by element of the buffer reduced (of a part's whole
// buffer), what the rank's last rounding of that element lost. Held in blocks allocated, zeroed,
// when a reduction first rounds an element of theirs, so that a plane of several lanes, each of
// which reduces its own part of every buffer, holds about one buffer's worth among them rather
// than one each. Not thread-safe: the mesh guards it.
class residual_blocks {
public:
  static constexpr std::size_t block_floats = std::size_t{64} * 1024;

  // Reductions of a buffer of `whole` floats from now on: another length than before starts
  // from nothing.
  void use_for(std::size_t whole) {
    if (whole == whole_)
      return;
    whole_ = whole;
    blocks_.clear();
    blocks_.resize((whole + block_floats - 1) / block_floats);
  }
  // The residual of element `first` onward, up to the end of its block (floats_from(first)).
  float* at(std::size_t first) {
    auto& block = blocks_.at(first / block_floats);
    if (!block)
      block = std::make_unique<float[]>(block_floats); // zeroed
    return block.get() + first % block_floats;
  }
  static std::size_t floats_from(std::size_t first) { return block_floats - first % block_floats; }
  // The floats held now.
  std::size_t held() const {
    std::size_t blocks = 0;
    for (const auto& block : blocks_)
      blocks += block ? 1 : 0;
    return blocks * block_floats;
  }

private:
  std::size_t whole_ = 0;
  std::vector<std::unique_ptr<float[]>> blocks_;
};

// One message's memory: what it carries (`bytes` at `plain`) and where it travels from or into:
// `plain` itself, or, sealed, message_sealer::sealed_bytes(bytes) at `message`.
struct message_memory {
  void* plain = nullptr;
  void* message = nullptr;
  std::size_t bytes = 0;
};

class gloo_mesh final : public gloo_plane {
public:
  gloo_mesh(int rank, int size, const std::shared_ptr<rendezvous_store>& store,
            const gloo_plane_options& options);
  ~gloo_mesh() override;

  // Each operation has ended when it returns; what it threw is its result.
  std::shared_ptr<work> group_reduce(const std::vector<weighted_input>& inputs, const float* send,
                                     float* out, std::size_t count,
                                     const operation_options& options) override {
    return ended_work(guarded([&] { reduce(inputs, send, out, count, options); }));
  }
  std::shared_ptr<work> broadcast(float* data, std::size_t count, const std::vector<int>& ranks,
                                  int root, const operation_options& options) override {
    return ended_work(guarded([&] { broadcast_from(root, data, count, ranks, options); }));
  }
  void cancel(std::uint64_t tag, const std::string& why) override;
  std::size_t feedback_floats() const override {
    std::lock_guard<std::mutex> guard(residual_mutex_);
    return residual_.held();
  }
  int seal_threads() const override { return sealer_ ? sealer_->threads() : 0; }

private:
  class operation;
  struct parked_operation;

  void reduce(const std::vector<weighted_input>& inputs, const float* send, float* out,
              std::size_t count, const operation_options& options);
  void broadcast_from(int root, float* data, std::size_t count, const std::vector<int>& ranks,
                      const operation_options& options);
  // Throws std::invalid_argument (naming both operands, and `null_buffer`, the name of a null
  // buffer if any) for a bad call; returns rank()'s position.
  int check_call(const char* name, const char* null_buffer, std::size_t count,
                 const std::vector<int>& ranks, std::uint64_t tag) const;
  // `staging_floats`: the staging memory the operation needs, in floats.
  void run(std::string description, const operation_options& options, std::size_t staging_floats,
           const std::function<void(operation&)>& body);
  void ring_allreduce(operation& op, const float* send, float weight, float* out,
                      const partition& parts, int position, const std::vector<int>& ranks);
  void chain_broadcast(operation& op, float* data, std::size_t count, const std::vector<int>& ranks,
                       int position, int root_position);

  staging_block take_staging(std::size_t count);
  void give_back_staging(staging_block block);

  // True when `peer` was not lost before.
  bool mark_lost(int peer, const std::string& reason);
  bool is_lost(int peer) const;
  void fail(std::unique_ptr<operation> op);
  void park(std::unique_ptr<operation> op);
  void reap(parked_operation& parked);
  void free_reaped();

  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;

  const milliseconds default_timeout_;
  const wire_format compression_;          // how reductions put their floats on the wire
  std::unique_ptr<message_sealer> sealer_; // seals every message; null: messages go in the clear
  // With the sealer: seals and posts the sends of operations that pipeline them, in the order
  // they were posted (operation::pipeline).
  std::unique_ptr<ordered_thread> sender_;
  // With the sealer: operations that pipeline have each receive opened, as it arrives, by a
  // thread of their own (operation::pipeline).
  bool pipeline_opening_ = false;
  const std::function<void(int, const std::string&)> on_refused_;
  const bool error_feedback_;
  mutable std::mutex residual_mutex_;
  residual_blocks residual_;
  std::unique_ptr<watchdog> watchdog_; // each operation's deadline: its expire hook wakes its waits

  std::mutex staging_mutex_;
  std::vector<staging_block> spare_staging_;

  mutable std::mutex state_mutex_;
  std::map<int, std::string> lost_peers_; // peer -> what Gloo said when its pair failed
  std::set<std::uint64_t> failed_tags_;
  std::map<std::uint64_t, std::string> cancelled_tags_; // and why: one not started yet never runs
  std::map<std::uint64_t, operation*> running_;         // by tag, while run() runs its body
  std::list<std::unique_ptr<parked_operation>> parked_;
  std::atomic<bool> closing_{false};
};

/// A plane of options.lanes (2 or more) meshes (gloo_lanes.cpp).
std::unique_ptr<gloo_plane> make_gloo_lanes(int rank, int size,
                                            const std::shared_ptr<rendezvous_store>& store,
                                            const gloo_plane_options& options);

// The resources of one collective: its staging memory and one Gloo buffer per message, each
// remembered with its peer so that a failure names the peer and a parked operation knows which
// pair it waits on.
class gloo_mesh::operation {
public:
  struct transfer {
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    int peer = -1;
    bool sending = false;
    bool pending = true; // posted and not seen complete
    // A pipelined sealed send: with the plane's sender, not yet given to Gloo; a pipelined sealed
    // receive: with the operation's opener, not yet arrived and opened. And what sealing and
    // posting, or waiting and opening, threw, for its wait.
    bool queued = false;
    bool opened_by_opener = false; // a pipelined receive: its wait waits for the opener
    std::exception_ptr error;
    // Where the message belongs (the sealer's associated data), and for a sealed receive where
    // it opens to.
    std::uint64_t slot = 0;
    std::uint32_t index = 0;
    message_memory memory;
  };

  operation(gloo_mesh& plane, std::string description, std::uint64_t tag, milliseconds timeout,
            staging_block staging)
      : plane_(plane), description_(std::move(description)), tag_(tag), timeout_(timeout),
        staging_(std::move(staging)) {}

  float* staging() { return staging_.floats.get(); }
  // Only on success, once no transfer is pending (Gloo touches no completed buffer).
  staging_block release_staging() { return std::move(staging_); }
  const std::string& description() const { return description_; }
  std::uint64_t tag() const { return tag_; }

  // From now on, with a sealer, each send is sealed and posted by the plane's sender thread, in
  // the order posted, while this thread goes on (opening and adding the next segment): for
  // operations of several segments a chunk, where the two overlap. A send's wait waits for it
  // to be posted first. With the plane's pipeline_opening, each receive posted from now on is
  // also waited for and opened by a thread of this operation's own, in the order posted, while
  // this thread adds the segment before it; the receive's wait waits for the opener. The opener
  // is the operation's own, not the plane's: it blocks in Gloo's wait for a message, and a thread
  // shared by concurrent operations would make one's messages wait behind another's.
  void pipeline() {
    pipelined_ = plane_.sender_ != nullptr;
    if (plane_.sealer_ && plane_.pipeline_opening_ && !opener_)
      opener_ = std::make_unique<ordered_thread>();
  }

  // Blocks until the sender has posted every send handed to it and the opener has ended every
  // receive handed to it: before the operation fails, is parked or ends, since their jobs refer
  // to its transfers. `failing`: the operation's thread gave up, so nobody will wait for the
  // receives still with the opener: their waits are woken (a receive whose message never comes
  // would hold the opener for good), and those not begun are skipped.
  void drain(bool failing) {
    std::unique_lock<std::mutex> lock(transfers_mutex_);
    if (failing) {
      abandoned_ = true;
      for (auto& t : transfers_)
        if (t.queued && !t.sending)
          abort(t);
    }
    posted_.wait(lock, [this] { return queued_ == 0; });
  }

  // One message from or into memory the operation owns; returns its transfer. With the plane's
  // sealer, a send is sealed from `plain` into `message`: here, or once pipeline() was
  // called, by the plane's sender.
  std::size_t post_send(int peer, std::uint64_t slot, const message_memory& memory) {
    return post(peer, slot, memory, true);
  }
  std::size_t post_recv(int peer, std::uint64_t slot, const message_memory& memory) {
    return post(peer, slot, memory, false);
  }

  // Blocks until transfer `index` completes; throws comm_error naming its peer when the deadline
  // passes or the peer's pair fails. A sealed receive is opened into its plain memory; one that
  // does not open throws peer_lost, and the plane takes the peer as lost.
  void wait(std::size_t index) {
    transfer& t = transfers_[index];
    if (t.sending || t.opened_by_opener)
      return await_handed_over(t, t.sending);
    wait_for(t);
    if (plane_.sealer_)
      open_arrived(t);
  }

  // The watchdog's expire hook, once the deadline has passed.
  void expire() {
    std::lock_guard<std::mutex> guard(transfers_mutex_);
    timed_out_.store(true);
    for (auto& t : transfers_)
      abort(t);
  }

  // Another member failed (gloo_mesh::cancel): every wait ends now, `aborted`.
  void cancel(const std::string& why) {
    std::lock_guard<std::mutex> guard(transfers_mutex_);
    cancelled_why_ = why;
    cancelled_.store(true);
    for (auto& t : transfers_)
      abort(t);
  }

  // Wakes the waits on transfers with `peer` (every one when peer is -1); the parked operation's
  // reaper then looks again at why it waits. (Reads no `pending`: the reaper writes it.)
  void abort_pending(int peer) {
    std::lock_guard<std::mutex> guard(transfers_mutex_);
    for (auto& t : transfers_)
      if (peer < 0 || t.peer == peer)
        abort(t);
  }

  // After a failure, on the operation's own thread: which peers' pairs have failed, as far as the
  // pending transfers can tell. An abort followed by a wait never blocks: the wait rethrows the
  // error the pair signalled to the buffer, or returns false for the abort.
  std::map<int, std::string> probe_lost_peers() {
    std::map<int, std::string> lost;
    for (auto& t : transfers_) {
      if (!t.pending)
        continue;
      abort(t);
      try {
        bool completed =
            t.sending ? t.buffer->waitSend(nullptr, never) : t.buffer->waitRecv(nullptr, never);
        if (completed)
          t.pending = false;
      } catch (const gloo::Exception& failure) {
        lost.emplace(t.peer, gloo_error_text(failure.what()));
        plane_.mark_lost(t.peer, gloo_error_text(failure.what()));
      }
    }
    return lost;
  }

  std::deque<transfer>& transfers() { return transfers_; }

private:
  std::size_t post(int peer, std::uint64_t slot, const message_memory& memory, bool sending) {
    const bool sealed = plane_.sealer_ != nullptr;
    const bool handed_over = sealed && (sending ? pipelined_ : opener_ != nullptr);
    // Both ends post a slot's messages in the same order: their count is the message's index.
    const std::uint32_t place = next_index_[{peer, slot, sending}]++;
    if (sealed && sending && !handed_over)
      plane_.sealer_->seal(peer, slot, place, memory.plain, memory.bytes, memory.message);
    void* wire = sealed ? memory.message : memory.plain;
    const std::size_t bytes = sealed ? message_sealer::sealed_bytes(memory.bytes) : memory.bytes;
    std::size_t index = 0;
    {
      std::lock_guard<std::mutex> guard(transfers_mutex_);
      transfer& t = transfers_.emplace_back();
      t.buffer = plane_.context_->createUnboundBuffer(wire, bytes);
      t.peer = peer;
      t.sending = sending;
      t.slot = slot;
      t.index = place;
      t.memory = memory;
      t.queued = handed_over;
      t.opened_by_opener = handed_over && !sending;
      queued_ += handed_over ? 1 : 0;
      index = transfers_.size() - 1;
      // A transfer posted after the deadline (or a cancel) must not wait: nobody comes by again.
      if (timed_out_.load() || cancelled_.load())
        abort(transfers_.back());
    }
    transfer& t = transfers_[index]; // stays where it is while later transfers are added
    if (!handed_over || !sending)
      give_to_gloo(t); // a receive is posted here, and its opener waits for it
    if (!handed_over)
      return index;
    try {
      if (sending)
        plane_.sender_->give([this, &t] { seal_and_send(t); });
      else
        opener_->give([this, &t] { open_when_arrived(t); });
    } catch (...) { // never given to the thread (no memory): nothing waits for it
      std::lock_guard<std::mutex> guard(transfers_mutex_);
      t.queued = false;
      t.opened_by_opener = false;
      if (sending)
        t.pending = false; // a receive is with Gloo all the same
      --queued_;
      throw;
    }
    return index;
  }

  // The transfer's message to Gloo, to send or to receive into.
  void give_to_gloo(transfer& t) {
    try {
      if (t.sending)
        t.buffer->send(t.peer, t.slot, 0, t.buffer->size);
      else
        t.buffer->recv(t.peer, t.slot, 0, t.buffer->size);
    } catch (const gloo::Exception& failure) {
      plane_.mark_lost(t.peer, gloo_error_text(failure.what()));
      throw comm_error(outcome::peer_lost,
                       description_ + ": rank " + std::to_string(t.peer) +
                           " is unreachable: " + gloo_error_text(failure.what()));
    }
  }

  // On the plane's sender thread: a pipelined send sealed and given to Gloo. What fails is kept
  // for the send's wait; a message never given to Gloo is not pending.
  void seal_and_send(transfer& t) {
    std::exception_ptr error;
    bool given = false;
    try {
      plane_.sealer_->seal(t.peer, t.slot, t.index, t.memory.plain, t.memory.bytes,
                           t.memory.message);
      given = true;
      give_to_gloo(t);
    } catch (...) {
      error = std::current_exception();
    }
    t.pending = given;
    handed_back(t, error);
  }

  // On the operation's opener: a pipelined receive waited for and opened (unless the operation
  // gave up on it: drain). What fails is kept for the receive's wait.
  void open_when_arrived(transfer& t) {
    std::exception_ptr error;
    try {
      bool skip = false;
      {
        std::lock_guard<std::mutex> guard(transfers_mutex_);
        skip = abandoned_;
      }
      if (!skip) {
        wait_for(t);
        open_arrived(t);
      }
    } catch (...) {
      error = std::current_exception();
    }
    handed_back(t, error);
  }

  // A job of the sender or the opener has ended with `error` (null: it did its part).
  void handed_back(transfer& t, std::exception_ptr error) {
    std::lock_guard<std::mutex> guard(transfers_mutex_);
    t.error = std::move(error);
    t.queued = false;
    --queued_;
    posted_.notify_all();
  }

  // The wait of a transfer handed to the sender (`sending`) or the opener: until that thread has
  // ended its part; rethrows what that threw. A send is then waited for here; a receive has
  // arrived and is open.
  void await_handed_over(transfer& t, bool sending) {
    {
      std::unique_lock<std::mutex> lock(transfers_mutex_);
      posted_.wait(lock, [&t] { return !t.queued; });
      if (t.error)
        std::rethrow_exception(std::exchange(t.error, nullptr));
    }
    if (sending)
      wait_for(t);
  }

  // A sealed receive that has arrived, opened into its plain memory; one that does not open
  // throws peer_lost, and the plane takes the peer as lost.
  void open_arrived(const transfer& t) {
    const std::string rejected = plane_.sealer_->open(t.peer, t.slot, t.index, t.memory.message,
                                                      t.memory.bytes, t.memory.plain);
    if (rejected.empty())
      return;
    const std::string why = "a message from it was rejected: " + rejected;
    if (plane_.mark_lost(t.peer, why) && plane_.on_refused_)
      plane_.on_refused_(t.peer, why);
    throw comm_error(outcome::peer_lost,
                     description_ + ": rank " + std::to_string(t.peer) + " is refused: " + why);
  }

  // Blocks until transfer `t` completes (wait's first half).
  void wait_for(transfer& t) {
    if (cancelled_.load())
      throw_cancelled();
    if (timed_out_.load())
      throw_timeout(t);
    bool completed = false;
    try {
      completed =
          t.sending ? t.buffer->waitSend(nullptr, never) : t.buffer->waitRecv(nullptr, never);
    } catch (const gloo::Exception& failure) {
      plane_.mark_lost(t.peer, gloo_error_text(failure.what()));
      throw comm_error(outcome::peer_lost, description_ + ": rank " + std::to_string(t.peer) +
                                               " failed: " + gloo_error_text(failure.what()));
    }
    if (!completed && cancelled_.load())
      throw_cancelled();
    if (!completed)
      throw_timeout(t);
    t.pending = false;
  }

  static void abort(transfer& t) {
    if (t.sending)
      t.buffer->abortWaitSend();
    else
      t.buffer->abortWaitRecv();
  }

  [[noreturn]] void throw_cancelled() {
    std::lock_guard<std::mutex> guard(transfers_mutex_);
    throw comm_error(outcome::aborted, description_ + ": cancelled: " + cancelled_why_);
  }

  [[noreturn]] void throw_timeout(const transfer& t) const {
    auto peer = std::to_string(t.peer);
    throw comm_error(outcome::timeout,
                     description_ + ": timed out after " + std::to_string(timeout_.count()) +
                         " ms waiting for rank " + peer +
                         (t.sending ? " to take our data" : " to send its data") + " (rank " +
                         peer + ", or a rank it waits for, failed or is stuck)");
  }

  gloo_mesh& plane_;
  const std::string description_;
  const std::uint64_t tag_;
  const milliseconds timeout_;
  // Declared before the transfers, so destroyed after them: a Gloo buffer must be gone before
  // the memory it points into.
  staging_block staging_;
  std::mutex transfers_mutex_;
  std::deque<transfer> transfers_; // a deque: references stay valid while posting
  std::map<std::tuple<int, std::uint64_t, bool>, std::uint32_t> next_index_; // by peer, slot, send
  bool pipelined_ = false;
  std::size_t queued_ = 0; // transfers with the sender or the opener, under transfers_mutex_
  std::condition_variable posted_; // a queued transfer's job has ended
  bool abandoned_ = false;         // drain(true): the opener skips what it has not begun
  std::atomic<bool> timed_out_{false};
  std::atomic<bool> cancelled_{false};
  std::string cancelled_why_; // under transfers_mutex_
  // Declared after the transfers, so destroyed before them: its jobs refer to them.
  std::unique_ptr<ordered_thread> opener_;
};

// A failed operation whose transfers may still be queued in live pairs, and the thread that
// waits them out.
struct gloo_mesh::parked_operation {
  std::unique_ptr<operation> op;
  std::thread reaper;
  std::atomic<bool> done{false};
};

} // namespace herd::comm::gloo_detail
