// The gloo data plane's mesh: connecting every rank once, an operation's deadline and resources,
// and what a failure leaves behind (comm/gloo_mesh.hpp has what Gloo guarantees and what follows
// from it). The collectives themselves are in gloo_collectives.cpp.
#include "comm/gloo_mesh.hpp"
#include "comm/task_pool.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <csignal>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <regex>

namespace herd::comm::gloo_detail {

std::string describe(const std::vector<int>& ranks) {
  std::string text = "{";
  for (std::size_t i = 0; i < ranks.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return text + "}";
}

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

namespace {

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

  // Gloo passes the context's timeout, which is shorter than the rendezvous (see below): the
  // deadline alone bounds the wait.
  void wait(const std::vector<std::string>& keys, const milliseconds&) override {
    for (const auto& key : keys)
      store_.get(full_key(key), remaining());
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

// Why a rendezvous failed, naming every rank that never appeared, not only the first one Gloo
// waited for: `timeout` when its deadline passed, `failed` when it ended before (another rank's
// part failed, or a connect did). A rank appeared when it set either of its keys: the Gloo of
// Debian 12 sets "rank_<r>" (its host name) first, then waits for the lower ranks' host names
// before it sets "<r>" (its addresses), so a rank stuck behind a missing one has set only the
// first, and is not the one to blame.
status rendezvous_failure(const std::string& where, int rank, int size, rendezvous_store& store,
                          const store_adapter& adapter, milliseconds allowed,
                          steady_clock::duration elapsed, const std::string& why) {
  const bool timed_out = elapsed >= allowed;
  std::string message =
      where +
      (timed_out ? ": rendezvous did not complete within " + std::to_string(allowed.count()) + " ms"
                 : ": rendezvous failed after " +
                       std::to_string(std::chrono::duration_cast<milliseconds>(elapsed).count()) +
                       " of " + std::to_string(allowed.count()) + " ms");
  std::vector<int> missing;
  try {
    for (int other = 0; other < size; ++other)
      if (other != rank && !store.peek(adapter.full_key("rank_" + std::to_string(other))) &&
          !store.peek(adapter.full_key(std::to_string(other))))
        missing.push_back(other);
    if (!missing.empty())
      message += ": rank(s) " + describe(missing) +
                 (timed_out ? " never appeared" : " had not appeared") + " in the store (keys '" +
                 adapter.full_key("<rank>") + "')";
    else
      message += ": every rank's address is in the store";
  } catch (const comm_error& unknown) {
    message += std::string(": the store cannot say which ranks appeared (") + unknown.what() + ")";
  }
  return {timed_out ? outcome::timeout : outcome::failed, message + " (" + why + ")"};
}

} // namespace

gloo_mesh::gloo_mesh(int rank, int size, const std::shared_ptr<rendezvous_store>& store,
                     const gloo_plane_options& options)
    : gloo_plane(rank, size), default_timeout_(options.timeout), compression_(options.compression),
      on_refused_(options.on_refused),
      error_feedback_(options.error_feedback && options.compression != wire_format::fp32) {
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
  // The context's timeout bounds each pair's connect, and the Gloo of Debian 12 waits five times
  // it there: a peer that accepted the connection and then failed its own rendezvous would hold
  // this rank five times the rendezvous timeout, so a fifth of it keeps that wait inside. Store
  // waits end at the adapter's one deadline, transfers at their own deadlines.
  context_->setTimeout(std::max(milliseconds(1), (options.timeout + milliseconds(4)) / 5));
  const auto started = steady_clock::now();
  store_adapter adapter(*store, options.prefix, started + options.timeout);
  try {
    if (size > 1)
      context_->connectFullMesh(adapter, device_);
  } catch (const std::exception& failure) {
    throw comm_error(rendezvous_failure(where, rank, size, *store, adapter, options.timeout,
                                        steady_clock::now() - started,
                                        gloo_error_text(failure.what())));
  }
  if (options.seal_key) {
    sealer_ = std::make_unique<message_sealer>(*options.seal_key, rank, size,
                                               seal_threads_for(options.seal_threads));
    if (options.pipeline_sealing)
      sender_ = std::make_unique<ordered_thread>();
    pipeline_opening_ = options.pipeline_opening;
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

// Runs `body` under the watchdog. On success the staging memory goes back to the pool; on failure
// the operation is parked (its buffers may still be queued in live pairs) and its tag refused
// from now on.
void gloo_mesh::run(std::string description, const operation_options& options,
                    std::size_t staging_floats, const std::function<void(operation&)>& body) {
  free_reaped();
  const auto timeout = options.timeout.count() > 0 ? options.timeout : default_timeout_;
  auto op = std::make_unique<operation>(*this, description, options.tag, timeout,
                                        take_staging(staging_floats));
  auto* expiring = op.get();
  {
    std::lock_guard<std::mutex> guard(state_mutex_);
    auto cancelled = cancelled_tags_.find(options.tag);
    if (cancelled != cancelled_tags_.end()) {
      const std::string why = cancelled->second;
      give_back_staging(op->release_staging());
      throw comm_error(outcome::aborted, description + ": cancelled: " + why);
    }
    running_[options.tag] = expiring;
  }
  // Off the list before `op` is parked or destroyed: cancel() reaches it only under the lock.
  auto unlist = [this, tag = options.tag] {
    std::lock_guard<std::mutex> guard(state_mutex_);
    running_.erase(tag);
  };
  auto watched = watchdog_->watch(std::move(description), nullptr, timeout,
                                  [expiring] { expiring->expire(); });
  try {
    body(*op);
  } catch (const comm_error& failure) {
    op->drain(true);
    unlist();
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
    op->drain(true);
    unlist();
    watchdog_->finish(*watched, {outcome::failed, failure.what()});
    op->probe_lost_peers();
    fail(std::move(op));
    throw;
  }
  op->drain(false); // the body waited for every transfer: nothing is left with the threads
  unlist();
  watchdog_->finish(*watched, {});
  // Every transfer has completed: the buffers go first, then their memory back to the pool.
  auto staging = op->release_staging();
  op.reset();
  give_back_staging(std::move(staging));
}

void gloo_mesh::cancel(std::uint64_t tag, const std::string& why) {
  std::lock_guard<std::mutex> guard(state_mutex_);
  cancelled_tags_.emplace(tag, why);
  auto running = running_.find(tag);
  if (running != running_.end())
    running->second->cancel(why);
}

void gloo_mesh::fail(std::unique_ptr<operation> op) {
  {
    std::lock_guard<std::mutex> guard(state_mutex_);
    failed_tags_.insert(op->tag());
  }
  park(std::move(op));
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
bool gloo_mesh::mark_lost(int peer, const std::string& reason) {
  std::lock_guard<std::mutex> guard(state_mutex_);
  const bool first = lost_peers_.emplace(peer, reason).second;
  for (auto& entry : parked_)
    entry->op->abort_pending(peer);
  return first;
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

} // namespace herd::comm::gloo_detail

namespace herd::comm {

int seal_threads_for(int seal_threads) {
  if (seal_threads < 0)
    throw std::invalid_argument("gloo plane: seal_threads is " + std::to_string(seal_threads) +
                                "; 0 (automatic) or a number of threads");
  return seal_threads > 0 ? seal_threads : task_pool::default_threads();
}

int lane_seal_threads(int seal_threads, int lanes) {
  return std::max(1, seal_threads_for(seal_threads) / std::max(1, lanes));
}

std::string sealing_text(int seal_threads, int lanes) {
  const int threads = lane_seal_threads(seal_threads, lanes) * lanes;
  return "sealed by " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

std::unique_ptr<gloo_plane> make_gloo_plane(int rank, int size,
                                            const std::shared_ptr<rendezvous_store>& store,
                                            const gloo_plane_options& options) {
  if (options.lanes < 1 || options.lanes > max_lanes)
    throw std::invalid_argument("gloo plane: lanes is " + std::to_string(options.lanes) +
                                "; from 1 to " + std::to_string(max_lanes) +
                                " connections between each pair of ranks");
  if (options.lanes > 1)
    return gloo_detail::make_gloo_lanes(rank, size, store, options);
  return std::make_unique<gloo_detail::gloo_mesh>(rank, size, store, options);
}

std::string gloo_error_text(const std::string& gloo_text) {
  if (htons(1) == 1)
    return gloo_text; // big-endian: network order is the host's
  static const std::regex address(R"((\[[0-9A-Fa-f:.]+\]):([0-9]{1,5}))");
  std::string text;
  auto rest = gloo_text.cbegin();
  for (std::sregex_iterator match(gloo_text.begin(), gloo_text.end(), address), end; match != end;
       ++match) {
    const unsigned long stored = std::stoul((*match)[2].str());
    text.append(rest, (*match)[0].first);
    text += (*match)[1].str() + ":" +
            (stored <= 0xffff ? std::to_string(((stored & 0xff) << 8) | (stored >> 8))
                              : (*match)[2].str());
    rest = (*match)[0].second;
  }
  return text.append(rest, gloo_text.cend());
}

} // namespace herd::comm
