// Grouping policies; see policy.hpp.
#include "actors/policy.hpp"

#include "kernels/check.hpp"

#include <algorithm>

namespace herd::actors {

namespace {

void insert_sorted(std::vector<int>& set, int value) {
  auto at = std::lower_bound(set.begin(), set.end(), value);
  if (at == set.end() || *at != value)
    set.insert(at, value);
}

} // namespace

std::vector<group_decision> sync_policy::set_live_workers(std::vector<int> workers) {
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
  live_ = std::move(workers);
  // A lost worker's readiness no longer counts.
  std::vector<int> still_ready;
  std::set_intersection(ready_.begin(), ready_.end(), live_.begin(), live_.end(),
                        std::back_inserter(still_ready));
  ready_ = std::move(still_ready);
  return activate_if_complete();
}

std::vector<group_decision> sync_policy::on_ready(const arrival& ready) {
  if (!std::binary_search(live_.begin(), live_.end(), ready.worker))
    return {}; // a worker that was declared lost
  insert_sorted(ready_, ready.worker);
  return activate_if_complete();
}

std::vector<group_decision> sync_policy::on_group_done(const std::vector<int>&) {
  return {}; // the next round forms from the next arrivals
}

std::vector<group_decision> sync_policy::activate_if_complete() {
  if (live_.empty() || ready_ != live_)
    return {};
  group_decision all;
  all.members = live_;
  all.kind = round_kind::full_sync;
  all.weights = weighting::uniform;
  ready_.clear();
  return {all};
}

std::unique_ptr<grouping_policy> make_policy(const std::string& algorithm) {
  if (algorithm == "sync")
    return std::make_unique<sync_policy>();
  HERD_CHECK(false, "no grouping policy named '" << algorithm << "'");
  return nullptr;
}

std::vector<float> member_weights(weighting weights, std::size_t members) {
  HERD_CHECK_GT(members, 0u);
  switch (weights) {
  case weighting::uniform:
    break;
  }
  return std::vector<float>(members, 1.0f / static_cast<float>(members));
}

} // namespace herd::actors
