// An emulated data plane between the ranks of one process with NCCL's matching rule, so that the
// order in which nodes issue their reductions can be tested without a GPU:
//
// * Per pair of ranks, operations match in issue order: a's n-th operation that includes b meets
//   b's n-th operation that includes a. When the two differ (another tag, i.e. round, another
//   group or another size), NCCL would pair them anyway (wrong data, or a hang); here it is a
//   `mismatch`.
// * Each rank runs its operations one after another (one stream): an operation starts once the
//   rank's earlier ones have finished, and finishes once every member has reached it. When the
//   ranks' first unfinished operations wait on each other in a cycle, NCCL would hang until its
//   watchdog aborts; here it is a `deadlock`, found as soon as the cycle closes.
//
// A violation is recorded and breaks the fabric, like an aborted communicator: every operation in
// flight and every later one fails at once (`aborted`), so nothing hangs and a test can count.
// group_reduce returns once the operation is queued (as NCCL's), and the sum is computed in the
// order of the inputs, so every member gets the same bits.
#pragma once

#include "comm/data_plane.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace herd::testing {

class issue_order_fabric : public std::enable_shared_from_this<issue_order_fabric> {
public:
  explicit issue_order_fabric(int size) : size_(size), streams_(static_cast<std::size_t>(size)) {}

  /// Rank `rank`'s plane; the fabric lives as long as any of them.
  std::shared_ptr<comm::data_plane> plane(int rank);

  std::size_t mismatches() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return mismatches_;
  }
  std::size_t deadlocks() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return deadlocks_;
  }
  /// Operations every member of which finished (one per group reduction).
  std::size_t completed() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return completed_;
  }
  bool broken() const { return !violation().empty(); }
  /// The first violation, in words; empty if none.
  std::string violation() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return violation_;
  }

private:
  class emulated_plane;

  struct operation {
    int rank = 0;
    std::uint64_t tag = 0;
    std::vector<comm::weighted_input> inputs;
    std::vector<int> members; // sorted
    std::size_t count = 0;
    std::vector<float> send;
    float* out = nullptr;
    std::map<int, std::uint64_t> position; // per peer: its place among this rank's ops with it
    bool finished = false;
    comm::status result;
  };

  class work final : public comm::work {
  public:
    work(std::shared_ptr<issue_order_fabric> fabric, std::shared_ptr<operation> op)
        : fabric_(std::move(fabric)), op_(std::move(op)) {}
    comm::status wait(std::chrono::milliseconds timeout) override {
      std::unique_lock<std::mutex> lock(fabric_->mutex_);
      if (!fabric_->changed_.wait_for(lock, timeout, [&] { return op_->finished; }))
        return {comm::outcome::timeout, "emulated nccl: operation not finished"};
      return op_->result;
    }
    bool is_completed() const override {
      const std::lock_guard<std::mutex> lock(fabric_->mutex_);
      return op_->finished;
    }

  private:
    std::shared_ptr<issue_order_fabric> fabric_;
    std::shared_ptr<operation> op_;
  };

  static std::string describe(const operation& op) {
    std::string text = "round " + std::to_string(op.tag) + " among ranks [";
    for (std::size_t i = 0; i < op.members.size(); ++i)
      text += (i ? ", " : "") + std::to_string(op.members[i]);
    return text + "] (" + std::to_string(op.count) + " floats)";
  }

  static bool same(const operation& a, const operation& b) {
    return a.tag == b.tag && a.members == b.members && a.count == b.count;
  }

  std::shared_ptr<comm::work> issue(int rank, const std::vector<comm::weighted_input>& inputs,
                                    const float* send, float* out, std::size_t count,
                                    std::uint64_t tag) {
    auto op = std::make_shared<operation>();
    op->rank = rank;
    op->tag = tag;
    op->inputs = inputs;
    for (const auto& input : inputs)
      op->members.push_back(input.rank);
    std::sort(op->members.begin(), op->members.end());
    op->count = count;
    op->send.assign(send, send + count);
    op->out = out;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!violation_.empty())
      return comm::ended_work({comm::outcome::aborted, "emulated nccl: " + violation_});
    for (int peer : op->members) {
      if (peer == rank)
        continue;
      const auto place = issued_[{rank, peer}]++;
      op->position[peer] = place;
      // The pair's place-th operation: the first side to issue it waits here for the other's.
      auto& waiting = unmatched_[{std::min(rank, peer), std::max(rank, peer), place}];
      if (!waiting) {
        waiting = op;
        continue;
      }
      if (!same(*waiting, *op))
        fail("mismatch: rank " + std::to_string(waiting->rank) + "'s operation " +
                 std::to_string(place) + " with rank " + std::to_string(rank) + " is " +
                 describe(*waiting) + ", rank " + std::to_string(rank) + "'s is " + describe(*op),
             mismatches_);
      unmatched_.erase({std::min(rank, peer), std::max(rank, peer), place});
    }
    if (violation_.empty()) {
      streams_[static_cast<std::size_t>(rank)].push_back(op);
      progress();
    }
    if (!violation_.empty())
      return comm::ended_work({comm::outcome::aborted, "emulated nccl: " + violation_});
    return std::make_shared<work>(shared_from_this(), op);
  }

  // Whether `member`'s first unfinished operation is the one `head` (of another rank) waits for.
  bool reached(const operation& head, int member) const {
    const auto& stream = streams_[static_cast<std::size_t>(member)];
    if (stream.empty())
      return false;
    const auto& theirs = *stream.front();
    auto place = theirs.position.find(head.rank);
    return place != theirs.position.end() && place->second == head.position.at(member);
  }

  // Finishes every operation all of whose members have reached it; then looks for a cycle.
  void progress() {
    for (bool moved = true; moved;) {
      moved = false;
      for (int rank = 0; rank < size_; ++rank) {
        auto& stream = streams_[static_cast<std::size_t>(rank)];
        if (stream.empty())
          continue;
        const auto head = stream.front();
        bool all = true;
        for (int member : head->members)
          if (member != rank && !reached(*head, member))
            all = false;
        if (!all)
          continue;
        std::vector<float> sum(head->count, 0.0f);
        for (const auto& input : head->inputs) {
          const auto& theirs = *streams_[static_cast<std::size_t>(input.rank)].front();
          for (std::size_t i = 0; i < sum.size(); ++i)
            sum[i] += input.weight * theirs.send[i];
        }
        for (int member : head->members) {
          auto& theirs = streams_[static_cast<std::size_t>(member)];
          std::copy(sum.begin(), sum.end(), theirs.front()->out);
          theirs.front()->finished = true;
          theirs.pop_front();
        }
        ++completed_;
        moved = true;
      }
    }
    changed_.notify_all();
    find_cycle();
  }

  // Rank r waits for rank m when m has not reached r's first operation and is itself held by
  // another one: a cycle of such waits never ends.
  void find_cycle() {
    std::vector<int> state(static_cast<std::size_t>(size_), 0); // 0 new, 1 on the path, 2 done
    std::vector<int> path;
    std::function<bool(int)> visit = [&](int rank) {
      state[static_cast<std::size_t>(rank)] = 1;
      path.push_back(rank);
      const auto& stream = streams_[static_cast<std::size_t>(rank)];
      if (!stream.empty())
        for (int member : stream.front()->members) {
          if (member == rank || reached(*stream.front(), member) ||
              streams_[static_cast<std::size_t>(member)].empty())
            continue;
          if (state[static_cast<std::size_t>(member)] == 1) {
            std::string text = "deadlock: ranks";
            for (auto at = std::find(path.begin(), path.end(), member); at != path.end(); ++at)
              text += " " + std::to_string(*at) + " (in " +
                      describe(*streams_[static_cast<std::size_t>(*at)].front()) + ")";
            fail(text + " wait on each other in a cycle", deadlocks_);
            return true;
          }
          if (state[static_cast<std::size_t>(member)] == 0 && visit(member))
            return true;
        }
      path.pop_back();
      state[static_cast<std::size_t>(rank)] = 2;
      return false;
    };
    for (int rank = 0; rank < size_; ++rank)
      if (state[static_cast<std::size_t>(rank)] == 0 && visit(rank))
        return;
  }

  // Records the violation and ends every operation in flight, as an aborted communicator would.
  void fail(const std::string& what, std::size_t& counter) {
    ++counter;
    if (!violation_.empty())
      return;
    violation_ = what;
    for (auto& stream : streams_) {
      for (auto& op : stream) {
        op->finished = true;
        op->result = {comm::outcome::aborted, "emulated nccl: " + violation_};
      }
      stream.clear();
    }
    unmatched_.clear();
    changed_.notify_all();
  }

  const int size_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::deque<std::shared_ptr<operation>>> streams_; // by rank: unfinished, in order
  std::map<std::pair<int, int>, std::uint64_t> issued_;         // (rank, peer) -> operations
  std::map<std::tuple<int, int, std::uint64_t>, std::shared_ptr<operation>> unmatched_;
  std::size_t mismatches_ = 0;
  std::size_t deadlocks_ = 0;
  std::size_t completed_ = 0;
  std::string violation_;
};

class issue_order_fabric::emulated_plane final : public comm::data_plane {
public:
  emulated_plane(std::shared_ptr<issue_order_fabric> fabric, int rank)
      : fabric_(std::move(fabric)), rank_(rank) {}
  std::string_view name() const override { return "emulated-nccl"; }
  bool supports(comm::operation op) const override { return op == comm::operation::group_reduce; }
  const kernels::memory& memory() const override { return kernels::host_memory(); }
  bool matches_in_issue_order() const override { return true; }
  std::shared_ptr<comm::work> group_reduce(const std::vector<comm::weighted_input>& inputs,
                                           const float* send, float* out, std::size_t count,
                                           const comm::operation_options& options) override {
    return fabric_->issue(rank_, inputs, send, out, count, options.tag);
  }

private:
  std::shared_ptr<issue_order_fabric> fabric_;
  int rank_;
};

inline std::shared_ptr<comm::data_plane> issue_order_fabric::plane(int rank) {
  return std::make_shared<emulated_plane>(shared_from_this(), rank);
}

} // namespace herd::testing
