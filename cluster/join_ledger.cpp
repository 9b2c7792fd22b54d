// The bookkeeping of nodes joining the running job; see join_ledger.hpp.
#include "cluster/join_ledger.hpp"

#include <algorithm>

namespace herd::cluster {

void join_ledger::form(std::size_t nodes) {
  plane_nodes_.clear();
  for (std::size_t node = 0; node < nodes; ++node)
    plane_nodes_.push_back(static_cast<std::int32_t>(node));
}

std::optional<std::size_t> join_ledger::next(const std::function<bool(std::size_t)>& live) {
  while (idle() && departures_.empty() && !waiting_.empty()) {
    const std::size_t node = waiting_.front();
    waiting_.pop_front();
    if (live(node))
      return node;
  }
  return std::nullopt;
}

std::optional<std::size_t>
join_ledger::next_departure(const std::function<bool(std::size_t)>& live) {
  while (idle() && !departures_.empty()) {
    const std::size_t node = departures_.front();
    departures_.pop_front();
    if (live(node)) {
      departing_ = node;
      return node;
    }
  }
  return std::nullopt;
}

bool join_ledger::leaving(std::size_t node) const {
  return departing_ == node ||
         std::find(departures_.begin(), departures_.end(), node) != departures_.end();
}

std::uint32_t join_ledger::begin(std::size_t node, const std::vector<std::size_t>& peers) {
  joining_ = node;
  admitted_ = false;
  rekey_wanted_ = false; // the join's generation has a key of its own
  ++generation_;
  plane_nodes_.assign(peers.begin(), peers.end());
  plane_nodes_.push_back(static_cast<std::int32_t>(node));
  if (!peers.empty())
    owed_[generation_] = std::set<std::size_t>(peers.begin(), peers.end());
  return generation_;
}

bool join_ledger::want_rekey(std::uint32_t generation) {
  if (generation != generation_ || rekey_wanted_ || rekeying_)
    return false;
  rekey_wanted_ = true;
  return true;
}

std::uint32_t join_ledger::begin_rekey(const std::vector<std::size_t>& nodes) {
  rekeying_ = true;
  rekey_wanted_ = false;
  ++generation_;
  plane_nodes_.assign(nodes.begin(), nodes.end());
  if (!nodes.empty())
    owed_[generation_] = std::set<std::size_t>(nodes.begin(), nodes.end());
  return generation_;
}

join_ledger::next_step join_ledger::answered(std::uint32_t generation, std::size_t peer,
                                             bool failed) {
  auto owing = owed_.find(generation);
  if (owing != owed_.end() && owing->second.erase(peer) > 0 && owing->second.empty())
    owed_.erase(owing);
  if (rekeying_ && generation == generation_) {
    if (failed)
      return next_step::fail_rekey;
    return owed_.count(generation) > 0 ? next_step::nothing : next_step::rekeyed;
  }
  if (rekeying_)
    return next_step::nothing;
  if (joining_ && !admitted_ && generation == generation_)
    return failed ? next_step::fail_join : next_step::admit_join;
  return joining_ ? next_step::nothing : next_step::start_next;
}

std::vector<std::uint32_t> join_ledger::owed_by(std::size_t peer) const {
  std::vector<std::uint32_t> generations;
  for (const auto& [generation, peers] : owed_)
    if (peers.count(peer) > 0)
      generations.push_back(generation);
  return generations;
}

bool join_ledger::admit() {
  if (!joining_ || admitted_ || owed_.count(generation_) > 0)
    return false;
  admitted_ = true;
  return true;
}

} // namespace herd::cluster
