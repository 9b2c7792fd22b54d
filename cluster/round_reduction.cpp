// One round's reduction on a node; see round_reduction.hpp.
#include "cluster/round_reduction.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace herd::cluster {

namespace {

// Gives a place back when the reduction's thread leaves, whichever way it leaves.
class place_holder {
public:
  place_holder(comm::issue_gate& gate, issue_place place) : gate_(gate), place_(place) {}
  ~place_holder() { gate_.done(place_.generation, place_.sequence); }
  place_holder(const place_holder&) = delete;
  place_holder& operator=(const place_holder&) = delete;

private:
  comm::issue_gate& gate_;
  issue_place place_;
};

// Issues `call` (one operation on `plane`) in its place. A plane that matches by tag takes it at
// once: waiting would only serialise a blocking plane. A plane that matches in issue order gets
// it once every earlier place of this node has been issued; "issued" is when the call returns
// (such a plane returns once the operation is queued). A turn that never comes fails the
// operation without issuing it.
template <class Call>
std::shared_ptr<comm::work> issue_in_order(comm::data_plane& plane, comm::issue_gate& gate,
                                           issue_place place, std::chrono::milliseconds timeout,
                                           Call call) {
  if (place.sequence == 0 || !plane.matches_in_issue_order()) {
    gate.done(place.generation, place.sequence);
    return call();
  }
  if (auto turn = gate.wait_turn(place.generation, place.sequence, timeout); !turn.ok())
    return comm::ended_work(std::move(turn));
  auto issued = call();
  gate.done(place.generation, place.sequence);
  return issued;
}

// The weights are in the pre-reduction: across the nodes the sum is plain.
std::vector<comm::weighted_input> plain(const std::vector<int>& ranks) {
  std::vector<comm::weighted_input> nodes;
  for (int rank : ranks)
    nodes.push_back({rank, 1.0f});
  return nodes;
}

// This node's members' sum of floats [begin, end) of their buffers into result[begin, end).
comm::status prereduce(const round_reduction& job, std::size_t begin, std::size_t end,
                       comm::operation_options options) {
  if (job.inputs.empty()) {
    std::fill(job.result + begin, job.result + end, 0.0f);
    return {};
  }
  options.whole_count = job.count;
  options.part_offset = begin;
  return job.local->group_reduce(job.inputs, nullptr, job.result + begin, end - begin, options)
      ->wait(job.timeout);
}

comm::status reduce_at_once(const round_reduction& job, comm::issue_gate& gate, issue_place place,
                            const std::function<void()>& prereduced) {
  comm::operation_options options{job.round, job.timeout};
  options.buckets = job.buckets; // alone: the local plane overlaps backward itself
  auto reduced = prereduce(job, 0, job.count, options);
  prereduced();
  if (!reduced.ok() || !job.plane)
    return reduced;
  options.buckets = {};
  return issue_in_order(*job.plane, gate, place, job.timeout,
                        [&] {
                          return job.plane->group_reduce(plain(job.ranks), job.result, job.result,
                                                         job.count, options);
                        })
      ->wait(job.timeout);
}

// Bucket by bucket from the end: this node's part of a bucket as soon as its members have it
// final, then the bucket across the nodes, each under a tag of its own.
comm::status reduce_bucket_by_bucket(const round_reduction& job, comm::issue_gate& gate,
                                     issue_place place, const std::function<void()>& prereduced) {
  gate.done(place.generation, place.sequence); // a plane that matches by tag needs no order
  const auto tags = round_tags(job.round, job.buckets, true);
  const auto nodes = plain(job.ranks);
  comm::status reduced;
  std::size_t end = job.count;
  for (std::size_t bucket = 0; end > 0; ++bucket) {
    const std::size_t begin = job.buckets.begin_before(end);
    comm::operation_options options{tags[bucket], job.timeout};
    reduced = prereduce(job, begin, end, options);
    if (begin == 0 || !reduced.ok())
      prereduced(); // the last part this node's members' buffers gave
    if (!reduced.ok())
      return reduced;
    options.whole_count = job.count;
    options.part_offset = begin;
    reduced =
        job.plane->group_reduce(nodes, job.result + begin, job.result + begin, end - begin, options)
            ->wait(job.timeout);
    if (!reduced.ok())
      return reduced;
    end = begin;
  }
  return reduced;
}

} // namespace

bool reduces_in_buckets(const comm::data_plane* plane, const comm::bucket_layout& buckets) {
  return !buckets.empty() && plane != nullptr && !plane->matches_in_issue_order();
}

std::vector<std::uint64_t> round_tags(std::uint64_t round, const comm::bucket_layout& buckets,
                                      bool bucket_by_bucket) {
  if (!bucket_by_bucket || buckets.empty())
    return {round};
  const std::uint64_t per_round = buckets.size();
  constexpr std::uint64_t first_transfer_tag = std::uint64_t{1} << 47;
  if (round >= first_transfer_tag / per_round)
    throw std::invalid_argument("round " + std::to_string(round) + " of " +
                                std::to_string(per_round) +
                                " gradient buckets has no data-plane tags left; use fewer, larger "
                                "buckets (comm.bucket-mb)");
  std::vector<std::uint64_t> tags(per_round);
  for (std::uint64_t bucket = 0; bucket < per_round; ++bucket)
    tags[bucket] = round * per_round + bucket;
  return tags;
}

comm::status reduce_round(const round_reduction& job, comm::issue_gate& gate, issue_place place,
                          const std::function<void()>& prereduced) {
  // Every path gives the place back (issued, or never to be) and says when the buffers are free.
  const place_holder holding{gate, place};
  bool told = false;
  auto tell = [&] {
    if (!std::exchange(told, true))
      prereduced();
  };
  comm::status reduced;
  try {
    comm::operation_options whole;
    whole.buckets = job.buckets;
    if (auto unfit = comm::part_error(job.count, whole); !unfit.empty())
      reduced = {comm::outcome::invalid_argument, std::move(unfit)};
    else
      reduced = reduces_in_buckets(job.plane.get(), job.buckets)
                    ? reduce_bucket_by_bucket(job, gate, place, tell)
                    : reduce_at_once(job, gate, place, tell);
  } catch (const std::exception& failure) {
    reduced = {comm::outcome::failed, failure.what()};
  }
  tell();
  return reduced;
}

} // namespace herd::cluster
