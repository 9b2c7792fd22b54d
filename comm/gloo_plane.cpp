// The gloo data plane: a full mesh of Gloo tcp pairs built once, and group collectives among any
// subset of ranks over Gloo's unbound buffers (point to point, tagged by slot).
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
#include "comm/gloo_plane.hpp"

#include "comm/watchdog.hpp"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <deque>
#include <functional>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace herd::comm {

namespace {

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

std::uint64_t slot_of(std::uint64_t tag, operation_kind kind, int step) {
  return (tag << tag_shift) | (static_cast<std::uint64_t>(kind) << 15) |
         static_cast<std::uint64_t>(step);
}

// Long enough never to expire (see the top of the file: an expiring Gloo wait closes every pair),
// short enough not to overflow steady_clock::now() + timeout in nanoseconds.
constexpr milliseconds never = std::chrono::hours(24 * 365 * 10);

std::string describe(const std::vector<int>& ranks) {
  std::string text = "{";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return text + "}";
}

// The plane's boundary: what the operation threw, as a status.
status guarded(const std::function<void()>& call) {
  try {
    call();
    return {};
  } catch (const comm_error& failure) {
    return failure.to_status();
  } catch (const std::invalid_argument& failure) {
    return {outcome::invalid_argument, failure.what()};
  } catch (const std::exception& failure) {
    return {outcome::failed, failure.what()};
  }
}

void ignore_sigpipe_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL)
      std::signal(SIGPIPE, SIG_IGN);
  });
}

// Gloo's Store on top of ours: keys get the job's prefix, and every wait ends at one deadline for
// the whole rendezvous (Gloo waits for each rank's key in turn; a timeout per key would add up).
class store_adapter final : public gloo::rendezvous::Store {
public:
  store_adapter(rendezvous_store& store, std::string prefix, steady_clock::time_point deadline)
      : store_(store), prefix_(std::move(prefix)), deadline_(deadline) {}

  std::string full_key(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "/" + key;
  }

  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(full_key(key), data);
  }

  std::vector<char> get(const std::string& key) override {
    return store_.get(full_key(key), remaining());
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, remaining()); }

  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    for (const auto& key : keys)
      store_.get(full_key(key), std::min(timeout, remaining()));
  }

private:
  milliseconds remaining() const {
    auto left = std::chrono::duration_cast<milliseconds>(deadline_ - steady_clock::now());
    return std::max(left, milliseconds(0));
  }

  rendezvous_store& store_;
  std::string prefix_;
  steady_clock::time_point deadline_;
};

// Memory that Gloo reads and writes on behalf of an operation; recycled across operations, since
// fresh pages of a large buffer cost more to fault in than a reduction of them.
struct staging_block {
  std::unique_ptr<float[]> floats;
  std::size_t capacity = 0;
};

// Elementwise kernels over the ring's segments; `weight` scales this rank's own values (1 leaves
// them bit for bit). `omp simd` (comm/ builds with -fopenmp-simd: the pragma only, no OpenMP
// runtime) because GCC 12 at -O2 vectorises only loops whose trip count it knows, and these run
// over every byte the ring receives. `out` may be `own` (in place): element i is read first.
void scale_into(float* to, const float* own, float weight, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i)
    to[i] = weight * own[i];
}

void add_into(float* __restrict sum, const float* __restrict own, float weight, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i)
    sum[i] += weight * own[i];
}

void add_into_both(float* __restrict sum, const float* own, float weight, float* out,
                   std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    float total = sum[i] + weight * own[i];
    sum[i] = total;
    out[i] = total;
  }
}

void copy_floats(float* to, const float* from, std::size_t n) {
  if (n > 0)
    std::memcpy(to, from, n * sizeof(float));
}

// Ranks split `count` floats into k chunks of count/k (the first count%k one more), each cut into
// segments of at most segment_floats.
struct partition {
  std::size_t count = 0;
  int parts = 1;

  std::size_t begin(int chunk) const {
    auto base = count / static_cast<std::size_t>(parts);
    auto extra = count % static_cast<std::size_t>(parts);
    auto c = static_cast<std::size_t>(chunk);
    return c * base + std::min(c, extra);
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
  void run(std::string description, const operation_options& options, std::size_t count,
           const std::function<void(operation&)>& body);
  void ring_allreduce(operation& op, const float* send, float weight, float* out, std::size_t count,
                      const std::vector<int>& ranks, int position);
  void chain_broadcast(operation& op, float* data, std::size_t count, const std::vector<int>& ranks,
                       int position, int root_position);

  staging_block take_staging(std::size_t count);
  void give_back_staging(staging_block block);

  void mark_lost(int peer, const std::string& reason);
  bool is_lost(int peer) const;
  void fail(std::unique_ptr<operation> op);
  void park(std::unique_ptr<operation> op);
  void reap(parked_operation& parked);
  void free_reaped();

  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;

  const milliseconds default_timeout_;
  std::unique_ptr<watchdog> watchdog_; // each operation's deadline: its expire hook wakes its waits

  std::mutex staging_mutex_;
  std::vector<staging_block> spare_staging_;

  mutable std::mutex state_mutex_;
  std::map<int, std::string> lost_peers_; // peer -> what Gloo said when its pair failed
  std::set<std::uint64_t> failed_tags_;
  std::list<std::unique_ptr<parked_operation>> parked_;
  std::atomic<bool> closing_{false};
};

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

  std::size_t post_send(int peer, std::uint64_t slot, float* from, std::size_t floats) {
    return post(peer, slot, from, floats, true);
  }
  std::size_t post_recv(int peer, std::uint64_t slot, float* into, std::size_t floats) {
    return post(peer, slot, into, floats, false);
  }

  // Blocks until transfer `index` completes; throws comm_error naming its peer when the deadline
  // passes or the peer's pair fails.
  void wait(std::size_t index) {
    transfer& t = transfers_[index];
    if (timed_out_.load())
      throw_timeout(t);
    bool completed = false;
    try {
      completed =
          t.sending ? t.buffer->waitSend(nullptr, never) : t.buffer->waitRecv(nullptr, never);
    } catch (const gloo::Exception& failure) {
      plane_.mark_lost(t.peer, failure.what());
      throw comm_error(outcome::peer_lost, description_ + ": rank " + std::to_string(t.peer) +
                                               " failed: " + failure.what());
    }
    if (!completed)
      throw_timeout(t);
    t.pending = false;
  }

  // The watchdog's expire hook, once the deadline has passed.
  void expire() {
    std::lock_guard<std::mutex> guard(transfers_mutex_);
    timed_out_.store(true);
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
        lost.emplace(t.peer, failure.what());
        plane_.mark_lost(t.peer, failure.what());
      }
    }
    return lost;
  }

  std::deque<transfer>& transfers() { return transfers_; }

private:
  std::size_t post(int peer, std::uint64_t slot, float* memory, std::size_t floats, bool sending) {
    std::size_t index = 0;
    {
      std::lock_guard<std::mutex> guard(transfers_mutex_);
      transfer& t = transfers_.emplace_back();
      t.buffer = plane_.context_->createUnboundBuffer(memory, floats * sizeof(float));
      t.peer = peer;
      t.sending = sending;
      index = transfers_.size() - 1;
      // A transfer posted after the deadline must not wait: the watchdog has already been by.
      if (timed_out_.load())
        abort(transfers_.back());
    }
    auto* buffer = transfers_[index].buffer.get();
    try {
      if (sending)
        buffer->send(peer, slot, 0, floats * sizeof(float));
      else
        buffer->recv(peer, slot, 0, floats * sizeof(float));
    } catch (const gloo::Exception& failure) {
      plane_.mark_lost(peer, failure.what());
      throw comm_error(outcome::peer_lost, description_ + ": rank " + std::to_string(peer) +
                                               " is unreachable: " + failure.what());
    }
    return index;
  }

  static void abort(transfer& t) {
    if (t.sending)
      t.buffer->abortWaitSend();
    else
      t.buffer->abortWaitRecv();
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
  std::atomic<bool> timed_out_{false};
};

// A failed operation whose transfers may still be queued in live pairs, and the thread that
// waits them out.
struct gloo_mesh::parked_operation {
  std::unique_ptr<operation> op;
  std::thread reaper;
  std::atomic<bool> done{false};
};

gloo_mesh::gloo_mesh(int rank, int size, const std::shared_ptr<rendezvous_store>& store,
                     const gloo_plane_options& options)
    : gloo_plane(rank, size), default_timeout_(options.timeout) {
  if (size < 1 || rank < 0 || rank >= size)
    throw std::invalid_argument("gloo_plane: rank " + std::to_string(rank) +
                                " is outside a plane of size " + std::to_string(size));
  if (!store)
    throw std::invalid_argument("gloo_plane: rank " + std::to_string(rank) + " got no store");
  ignore_sigpipe_once();
  auto where = "gloo_plane rank " + std::to_string(rank) + " of " + std::to_string(size);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    // Gloo's Device constructor looks the interface up in a function-static std::map through
    // operator[] (gloo/common/linux.cc interfaceToBusID), unlocked: planes built by several
    // threads at once (tests) race on it, as helgrind shows. One device at a time.
    static std::mutex device_creation;
    std::lock_guard<std::mutex> one_at_a_time(device_creation);
    device_ = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& failure) {
    throw comm_error(outcome::failed,
                     where + ": cannot listen on '" + options.hostname + "': " + failure.what());
  }
  context_ = std::make_shared<gloo::rendezvous::Context>(rank, size);
  // The context's timeout bounds each pair's connect (Gloo waits a multiple of it); our store
  // adapter bounds the waits for the other ranks' addresses by one deadline.
  context_->setTimeout(options.timeout);
  store_adapter adapter(*store, options.prefix, steady_clock::now() + options.timeout);
  try {
    if (size > 1)
      context_->connectFullMesh(adapter, device_);
  } catch (const std::exception& failure) {
    // Name every rank whose address is still missing, not only the first one Gloo waited for.
    std::vector<int> missing;
    for (int other = 0; other < size; ++other) {
      if (other == rank)
        continue;
      try {
        store->get(adapter.full_key(std::to_string(other)), milliseconds(0));
      } catch (const comm_error&) {
        missing.push_back(other);
      }
    }
    std::string message = where + ": rendezvous did not complete within " +
                          std::to_string(options.timeout.count()) + " ms";
    if (!missing.empty())
      message += ": rank(s) " + describe(missing) + " never appeared in the store (keys '" +
                 adapter.full_key("<rank>") + "')";
    throw comm_error(outcome::timeout, message + " (" + failure.what() + ")");
  }
  // No abort hook: an operation that passes its deadline ends alone, and the plane works on.
  watchdog_ = std::make_unique<watchdog>(where, nullptr, nullptr);
}

gloo_mesh::~gloo_mesh() {
  watchdog_.reset();
  // Parked operations: wake their reapers and wait for them; their buffers may still be queued
  // in live pairs, so they are destroyed first (Gloo then never touches their memory) and their
  // memory after.
  closing_.store(true);
  std::list<std::unique_ptr<parked_operation>> parked;
  {
    std::lock_guard<std::mutex> guard(state_mutex_);
    parked.swap(parked_);
  }
  for (auto& entry : parked)
    entry->op->abort_pending(-1);
  for (auto& entry : parked)
    entry->reaper.join();
  parked.clear();
  // Closes every pair: peers see the connection end and fail their operations with this rank.
  context_.reset();
  device_.reset();
}

int gloo_mesh::check_call(const char* name, const char* null_buffer, std::size_t count,
                          const std::vector<int>& ranks, std::uint64_t tag) const {
  std::string what = std::string(name) + " on rank " + std::to_string(rank_) + ": ";
  if (ranks.empty())
    throw std::invalid_argument(what + "ranks is empty; it must contain this rank " +
                                std::to_string(rank_));
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size_)
      throw std::invalid_argument(what + "rank " + std::to_string(ranks[i]) + " in ranks " +
                                  describe(ranks) + " is outside the plane of size " +
                                  std::to_string(size_));
    if (i > 0 && ranks[i - 1] >= ranks[i])
      throw std::invalid_argument(
          what + "ranks " + describe(ranks) + " must be sorted and unique, but " +
          std::to_string(ranks[i - 1]) + " comes before " + std::to_string(ranks[i]));
  }
  auto found = std::find(ranks.begin(), ranks.end(), rank_);
  if (found == ranks.end())
    throw std::invalid_argument(what + "this rank " + std::to_string(rank_) + " is not in ranks " +
                                describe(ranks));
  if (2 * ranks.size() > static_cast<std::size_t>(max_steps))
    throw std::invalid_argument(what + "a group of " + std::to_string(ranks.size()) +
                                " ranks exceeds the " + std::to_string(max_steps / 2) +
                                " that slots can number");
  if (tag > max_tag)
    throw std::invalid_argument(what + "tag " + std::to_string(tag) + " exceeds the largest tag " +
                                std::to_string(max_tag));
  if (null_buffer != nullptr && count > 0)
    throw std::invalid_argument(what + null_buffer + " is null but count is " +
                                std::to_string(count));
  {
    std::lock_guard<std::mutex> guard(state_mutex_);
    if (failed_tags_.count(tag) > 0)
      throw std::invalid_argument(what + "tag " + std::to_string(tag) +
                                  " belongs to an operation that failed on this rank; its "
                                  "messages may still be in flight, so use a fresh tag");
  }
  return static_cast<int>(found - ranks.begin());
}

void gloo_mesh::reduce(const std::vector<weighted_input>& inputs, const float* send, float* out,
                       std::size_t count, const operation_options& options) {
  std::vector<int> ranks;
  float own_weight = 0.0f;
  for (const auto& input : inputs) {
    ranks.push_back(input.rank);
    if (input.rank == rank_)
      own_weight = input.weight;
  }
  const char* null_buffer = send == nullptr ? "send" : out == nullptr ? "out" : nullptr;
  int position = check_call("group_reduce", null_buffer, count, ranks, options.tag);
  if (ranks.size() == 1 || count == 0) {
    if (out != send || own_weight != 1.0f)
      scale_into(out, send, own_weight, count);
    return;
  }
  run("group_reduce (tag " + std::to_string(options.tag) + ", count " + std::to_string(count) +
          ", ranks " + describe(ranks) + ") on rank " + std::to_string(rank_),
      options, count,
      [&](operation& op) { ring_allreduce(op, send, own_weight, out, count, ranks, position); });
}

void gloo_mesh::broadcast_from(int root, float* data, std::size_t count,
                               const std::vector<int>& ranks, const operation_options& options) {
  int position =
      check_call("broadcast", data == nullptr ? "data" : nullptr, count, ranks, options.tag);
  auto root_at = std::find(ranks.begin(), ranks.end(), root);
  if (root_at == ranks.end())
    throw std::invalid_argument("broadcast on rank " + std::to_string(rank_) + ": root " +
                                std::to_string(root) + " is not in ranks " + describe(ranks));
  if (ranks.size() == 1 || count == 0)
    return;
  auto root_position = static_cast<int>(root_at - ranks.begin());
  run("broadcast (tag " + std::to_string(options.tag) + ", count " + std::to_string(count) +
          ", ranks " + describe(ranks) + ", root " + std::to_string(root) + ") on rank " +
          std::to_string(rank_),
      options, count,
      [&](operation& op) { chain_broadcast(op, data, count, ranks, position, root_position); });
}

// Runs `body` under the watchdog. On success the staging memory goes back to the pool; on failure
// the operation is parked (its buffers may still be queued in live pairs) and its tag refused
// from now on.
void gloo_mesh::run(std::string description, const operation_options& options, std::size_t count,
                    const std::function<void(operation&)>& body) {
  free_reaped();
  const auto timeout = options.timeout.count() > 0 ? options.timeout : default_timeout_;
  auto op =
      std::make_unique<operation>(*this, description, options.tag, timeout, take_staging(count));
  auto* expiring = op.get();
  auto watched = watchdog_->watch(std::move(description), nullptr, timeout,
                                  [expiring] { expiring->expire(); });
  try {
    body(*op);
  } catch (const comm_error& failure) {
    watchdog_->finish(*watched, failure.to_status()); // from here on `op` is not expired
    // A timeout often hides the real failure: a peer whose pair broke while this rank waited for
    // another one. Its queued buffers know; name it rather than the neighbour we waited for.
    auto lost = op->probe_lost_peers();
    fail(std::move(op));
    if (failure.kind() != outcome::timeout || lost.empty())
      throw;
    throw comm_error(outcome::peer_lost, failure.what() + std::string("; meanwhile rank ") +
                                             std::to_string(lost.begin()->first) +
                                             " failed: " + lost.begin()->second);
  } catch (const std::exception& failure) {
    watchdog_->finish(*watched, {outcome::failed, failure.what()});
    op->probe_lost_peers();
    fail(std::move(op));
    throw;
  }
  watchdog_->finish(*watched, {});
  // Every transfer has completed: the buffers go first, then their memory back to the pool.
  auto staging = op->release_staging();
  op.reset();
  give_back_staging(std::move(staging));
}

void gloo_mesh::fail(std::unique_ptr<operation> op) {
  {
    std::lock_guard<std::mutex> guard(state_mutex_);
    failed_tags_.insert(op->tag());
  }
  park(std::move(op));
}

// Ring allreduce (Patarasuk and Yuan 2009, as in Gloo's allreduce_ring_chunked and NCCL): k-1
// reduce-scatter steps leave rank position p with the sum of chunk p+1, k-1 allgather steps pass
// the sums around. Each rank sends 2(k-1)/k of the data, the optimum. Messages are segments, so a
// segment is added and forwarded while the next is still arriving.
//
// The caller's buffers are never handed to Gloo: segments arrive in `staging` (the layout of
// `send`) and this rank's weighted values are added to them there, and sends leave from staging.
void gloo_mesh::ring_allreduce(operation& op, const float* send, float weight, float* out,
                               std::size_t count, const std::vector<int>& ranks, int position) {
  const int k = static_cast<int>(ranks.size());
  const int p = position;
  auto chunk_at = [k](int c) { return ((c % k) + k) % k; };
  const int left = ranks[static_cast<std::size_t>(chunk_at(p - 1))];
  const int right = ranks[static_cast<std::size_t>(chunk_at(p + 1))];
  const partition parts{count, k};
  float* staging = op.staging();
  const std::uint64_t tag = op.tag();
  // Steps 0..k-2 reduce-scatter, k-1..2k-3 allgather.
  auto slot = [tag](int step) { return slot_of(tag, operation_kind::allreduce, step); };

  // Every reduce-scatter receive lands in a chunk of its own, so all of them are posted now and
  // the left neighbour never waits for us to be ready.
  std::vector<std::vector<std::size_t>> scatter_receives(static_cast<std::size_t>(k - 1));
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step - 1);
    for (std::size_t s = 0; s < parts.segments(c); ++s)
      scatter_receives[static_cast<std::size_t>(step)].push_back(op.post_recv(
          left, slot(step), staging + parts.segment_begin(c, s), parts.segment_size(c, s)));
  }
  std::vector<std::size_t> scatter_sends;
  std::vector<std::size_t> gather_sends;
  for (std::size_t s = 0; s < parts.segments(p); ++s) {
    auto at = parts.segment_begin(p, s);
    auto n = parts.segment_size(p, s);
    scale_into(staging + at, send + at, weight, n);
    scatter_sends.push_back(op.post_send(right, slot(0), staging + at, n));
  }
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step - 1);
    bool last = step == k - 2;
    for (std::size_t s = 0; s < parts.segments(c); ++s) {
      op.wait(scatter_receives[static_cast<std::size_t>(step)][s]);
      auto at = parts.segment_begin(c, s);
      auto n = parts.segment_size(c, s);
      if (!last) {
        add_into(staging + at, send + at, weight, n);
        scatter_sends.push_back(op.post_send(right, slot(step + 1), staging + at, n));
      } else {
        // Chunk p+1 is complete: it is this rank's result and the first allgather message.
        add_into_both(staging + at, send + at, weight, out + at, n);
        gather_sends.push_back(op.post_send(right, slot(k - 1), staging + at, n));
      }
    }
  }
  // The allgather receives land where reduce-scatter sends left from.
  for (auto index : scatter_sends)
    op.wait(index);
  std::vector<std::vector<std::size_t>> gather_receives(static_cast<std::size_t>(k - 1));
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step);
    for (std::size_t s = 0; s < parts.segments(c); ++s)
      gather_receives[static_cast<std::size_t>(step)].push_back(op.post_recv(
          left, slot(k - 1 + step), staging + parts.segment_begin(c, s), parts.segment_size(c, s)));
  }
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step);
    for (std::size_t s = 0; s < parts.segments(c); ++s) {
      op.wait(gather_receives[static_cast<std::size_t>(step)][s]);
      auto at = parts.segment_begin(c, s);
      auto n = parts.segment_size(c, s);
      copy_floats(out + at, staging + at, n);
      if (step < k - 2)
        gather_sends.push_back(op.post_send(right, slot(k + step), staging + at, n));
    }
  }
  for (auto index : gather_sends)
    op.wait(index);
}

// Pipelined chain from the root along the ring of `ranks`: each rank forwards a segment as soon
// as it has it, so the time is about one transfer of the data plus one segment per hop.
void gloo_mesh::chain_broadcast(operation& op, float* data, std::size_t count,
                                const std::vector<int>& ranks, int position, int root_position) {
  const int k = static_cast<int>(ranks.size());
  auto at_position = [&](int q) { return ranks[static_cast<std::size_t>(((q % k) + k) % k)]; };
  const int hop = ((position - root_position) % k + k) % k; // 0 for the root
  const int previous = at_position(position - 1);
  const int next = at_position(position + 1);
  const bool forwards = hop < k - 1;
  const partition whole{count, 1};
  float* staging = op.staging();
  const std::uint64_t slot = slot_of(op.tag(), operation_kind::broadcast, 0);
  std::vector<std::size_t> sends;
  if (hop == 0) {
    for (std::size_t s = 0; s < whole.segments(0); ++s) {
      auto at = whole.segment_begin(0, s);
      auto n = whole.segment_size(0, s);
      copy_floats(staging + at, data + at, n);
      sends.push_back(op.post_send(next, slot, staging + at, n));
    }
  } else {
    std::vector<std::size_t> receives;
    for (std::size_t s = 0; s < whole.segments(0); ++s)
      receives.push_back(op.post_recv(previous, slot, staging + whole.segment_begin(0, s),
                                      whole.segment_size(0, s)));
    for (std::size_t s = 0; s < whole.segments(0); ++s) {
      op.wait(receives[s]);
      auto at = whole.segment_begin(0, s);
      auto n = whole.segment_size(0, s);
      copy_floats(data + at, staging + at, n);
      if (forwards)
        sends.push_back(op.post_send(next, slot, staging + at, n));
    }
  }
  for (auto index : sends)
    op.wait(index);
}

staging_block gloo_mesh::take_staging(std::size_t count) {
  {
    std::lock_guard<std::mutex> guard(staging_mutex_);
    auto best = spare_staging_.end();
    for (auto it = spare_staging_.begin(); it != spare_staging_.end(); ++it)
      if (it->capacity >= count && (best == spare_staging_.end() || it->capacity < best->capacity))
        best = it;
    if (best != spare_staging_.end()) {
      staging_block block = std::move(*best);
      spare_staging_.erase(best);
      return block;
    }
  }
  staging_block block;
  block.floats = std::make_unique<float[]>(count);
  block.capacity = count;
  return block;
}

// Keeps a few blocks, the largest ones: enough for the operations a node runs side by side.
void gloo_mesh::give_back_staging(staging_block block) {
  constexpr std::size_t spare_blocks = 4;
  if (!block.floats)
    return;
  std::lock_guard<std::mutex> guard(staging_mutex_);
  spare_staging_.push_back(std::move(block));
  if (spare_staging_.size() > spare_blocks) {
    auto smallest = std::min_element(
        spare_staging_.begin(), spare_staging_.end(),
        [](const staging_block& a, const staging_block& b) { return a.capacity < b.capacity; });
    spare_staging_.erase(smallest);
  }
}

// A Gloo error on a pair closes it for good (Pair::signalException moves it to CLOSED, closes the
// socket and leaves the device loop), so nothing will ever touch the buffers still queued on it.
void gloo_mesh::mark_lost(int peer, const std::string& reason) {
  std::lock_guard<std::mutex> guard(state_mutex_);
  lost_peers_.emplace(peer, reason);
  for (auto& entry : parked_)
    entry->op->abort_pending(peer);
}

bool gloo_mesh::is_lost(int peer) const {
  std::lock_guard<std::mutex> guard(state_mutex_);
  return lost_peers_.count(peer) > 0;
}

void gloo_mesh::park(std::unique_ptr<operation> op) {
  auto entry = std::make_unique<parked_operation>();
  entry->op = std::move(op);
  auto* raw = entry.get();
  std::lock_guard<std::mutex> guard(state_mutex_);
  parked_.push_back(std::move(entry));
  raw->reaper = std::thread([this, raw] { reap(*raw); });
}

// Waits out each transfer of a failed operation that may still be queued in a live pair: until it
// completes late, its pair fails, or the plane closes.
void gloo_mesh::reap(parked_operation& parked) {
  for (auto& t : parked.op->transfers()) {
    while (t.pending) {
      if (closing_.load())
        return;
      if (is_lost(t.peer)) {
        t.pending = false;
        break;
      }
      try {
        bool completed =
            t.sending ? t.buffer->waitSend(nullptr, never) : t.buffer->waitRecv(nullptr, never);
        // false: aborted, by the expired deadline (left over), a lost peer, or closing; look again.
        if (completed)
          t.pending = false;
      } catch (const gloo::Exception&) {
        t.pending = false; // the pair failed: it is closed and will not touch the buffer
      }
    }
  }
  parked.done.store(true);
}

void gloo_mesh::free_reaped() {
  std::list<std::unique_ptr<parked_operation>> finished;
  {
    std::lock_guard<std::mutex> guard(state_mutex_);
    for (auto it = parked_.begin(); it != parked_.end();) {
      if ((*it)->done.load()) {
        finished.push_back(std::move(*it));
        it = parked_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& entry : finished)
    entry->reaper.join();
}

} // namespace

std::unique_ptr<gloo_plane> make_gloo_plane(int rank, int size,
                                            const std::shared_ptr<rendezvous_store>& store,
                                            const gloo_plane_options& options) {
  return std::make_unique<gloo_mesh>(rank, size, store, options);
}

} // namespace herd::comm
