// The gloo data plane over several connections per pair of ranks (gloo_plane_options::lanes):
// one mesh per lane, each with its own network thread, and an operation of several lanes' worth
// of floats cut into one contiguous part per lane, the parts moved at once on threads of their
// own. One connection per pair leaves a reduction to one thread reading every socket (Gloo's
// device loop); on a machine with cores to spare, lanes move the same bytes in parallel.
#include "comm/gloo_mesh.hpp"

#include <algorithm>
#include <set>
#include <system_error>

namespace herd::comm::gloo_detail {

namespace {

// Tells the plane's owner of each refused peer once, whichever lanes refused it.
class refusals {
public:
  explicit refusals(std::function<void(int, const std::string&)> tell) : tell_(std::move(tell)) {}

  void refused(int peer, const std::string& why) {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      if (!told_.insert(peer).second)
        return;
    }
    tell_(peer, why);
  }

private:
  const std::function<void(int, const std::string&)> tell_;
  std::mutex mutex_;
  std::set<int> told_;
};

class gloo_lanes final : public gloo_plane {
public:
  gloo_lanes(int rank, int size, const std::shared_ptr<rendezvous_store>& store,
             const gloo_plane_options& options)
      : gloo_plane(rank, size) {
    auto told = std::make_shared<refusals>(options.on_refused);
    for (int lane = 0; lane < options.lanes; ++lane) {
      gloo_plane_options one = options;
      one.lanes = 1;
      if (lane > 0) // lane 0 keeps the plane's keys in the store
        one.prefix = options.prefix + (options.prefix.empty() ? "" : "/") + "lane-" +
                     std::to_string(lane);
      if (options.seal_key) {
        one.seal_key = lane_key(*options.seal_key, lane);
        one.seal_threads = lane_seal_threads(options.seal_threads, options.lanes);
      }
      if (options.on_refused)
        one.on_refused = [told](int peer, const std::string& why) { told->refused(peer, why); };
      lanes_.push_back(std::make_unique<gloo_mesh>(rank, size, store, one));
    }
  }

  std::shared_ptr<work> group_reduce(const std::vector<weighted_input>& inputs, const float* send,
                                     float* out, std::size_t count,
                                     const operation_options& options) override {
    const std::size_t parts = parts_for(count);
    // One lane, or a call to refuse: lane 0 takes it whole (and names what is wrong).
    if (parts == 1 || send == nullptr || out == nullptr || !part_error(count, options).empty())
      return lanes_[0]->group_reduce(inputs, send, out, count, options);
    const std::size_t whole = options.whole_count == 0 ? count : options.whole_count;
    return ended_work(
        in_parts(count, parts, [&](std::size_t lane, std::size_t begin, std::size_t n) {
          operation_options part = options;
          part.whole_count = whole;
          part.part_offset = options.part_offset + begin;
          return lanes_[lane]
              ->group_reduce(inputs, send + begin, out + begin, n, part)
              ->wait(never);
        }));
  }

  std::shared_ptr<work> broadcast(float* data, std::size_t count, const std::vector<int>& ranks,
                                  int root, const operation_options& options) override {
    const std::size_t parts = parts_for(count);
    if (parts == 1 || data == nullptr)
      return lanes_[0]->broadcast(data, count, ranks, root, options);
    return ended_work(
        in_parts(count, parts, [&](std::size_t lane, std::size_t begin, std::size_t n) {
          return lanes_[lane]->broadcast(data + begin, n, ranks, root, options)->wait(never);
        }));
  }

  void cancel(std::uint64_t tag, const std::string& why) override {
    for (auto& lane : lanes_)
      lane->cancel(tag, why);
  }

  std::size_t feedback_floats() const override {
    std::size_t held = 0;
    for (const auto& lane : lanes_)
      held += lane->feedback_floats();
    return held;
  }

  int seal_threads() const override {
    int threads = 0;
    for (const auto& lane : lanes_)
      threads += lane->seal_threads();
    return threads;
  }

private:
  // The lanes an operation of `count` floats is cut across: each moves at least lane_floats.
  std::size_t parts_for(std::size_t count) const {
    return std::clamp<std::size_t>(count / lane_floats, 1, lanes_.size());
  }

  // Runs `part(lane, begin, n)` for each of `parts` contiguous parts of `count` floats at once,
  // part 0 on this thread. Each lane runs its part to the end, succeeded or failed on its own: a
  // lane that cancelled its part when another failed would never send what its peers' parts
  // wait for (their rings stop where this one stopped), and in a cluster the aggregator cancels
  // a failed round on every node anyway (cancel() reaches every lane). The result is the most
  // telling failure: what a lane saw (a refused or lost peer, a bad call) before a timeout,
  // which is often its consequence (a ring whose peer stopped in another lane), before a cancel.
  status in_parts(std::size_t count, std::size_t parts,
                  const std::function<status(std::size_t, std::size_t, std::size_t)>& part) {
    std::vector<status> results(parts);
    auto run = [&](std::size_t lane) {
      const std::size_t begin = count * lane / parts;
      const std::size_t end = count * (lane + 1) / parts;
      results[lane] = part(lane, begin, end - begin);
    };
    std::vector<std::thread> threads;
    std::size_t threaded = 1; // parts 1 .. threaded - 1 have threads
    try {
      for (; threaded < parts; ++threaded)
        threads.emplace_back(run, threaded);
    } catch (const std::system_error&) {
      // No thread to be had: this thread runs the rest in turn after part 0, which peers that
      // run them at once still meet (each lane is a mesh of its own).
    }
    run(0);
    for (std::size_t lane = threaded; lane < parts; ++lane)
      run(lane);
    for (auto& thread : threads)
      thread.join();
    auto rank = [](const status& failure) {
      return failure.kind() == outcome::aborted ? 2 : failure.kind() == outcome::timeout ? 1 : 0;
    };
    const status* told = nullptr;
    for (const auto& result : results)
      if (!result.ok() && (told == nullptr || rank(result) < rank(*told)))
        told = &result;
    return told != nullptr ? *told : status{};
  }

  std::vector<std::unique_ptr<gloo_mesh>> lanes_;
};

} // namespace

std::unique_ptr<gloo_plane> make_gloo_lanes(int rank, int size,
                                            const std::shared_ptr<rendezvous_store>& store,
                                            const gloo_plane_options& options) {
  return std::make_unique<gloo_lanes>(rank, size, store, options);
}

} // namespace herd::comm::gloo_detail
