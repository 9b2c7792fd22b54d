// Local SGD's grouping policy; see local_sgd.hpp.
#include "policy/local_sgd.hpp"

#include "kernels/check.hpp"

#include <algorithm>

#include "policy/state_archive.hpp"

namespace herd::policy {

local_sgd_policy::local_sgd_policy(int period) : period_(period) {
  HERD_CHECK_GE(period, 1);
}

bool local_sgd_policy::live(int worker) const {
  return std::binary_search(live_.begin(), live_.end(), worker);
}

std::vector<group_decision> local_sgd_policy::set_live_workers(std::vector<int> workers) {
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
  HERD_CHECK(workers.empty() || workers.front() >= 0, "negative worker index");
  const std::size_t slots = workers.empty() ? 0 : static_cast<std::size_t>(workers.back()) + 1;
  if (fresh_step_.size() < slots)
    fresh_step_.resize(slots, 0);
  // A worker that comes back (a node joined in a lost one's place) counts its steps from the
  // peer whose state it took: its slot starts afresh.
  for (int worker : workers)
    if (!live(worker))
      fresh_step_[static_cast<std::size_t>(worker)] = 0;
  live_ = std::move(workers);
  return average_if_everyone_arrived(); // a loss can leave everyone else waiting at the average
}

std::vector<group_decision> local_sgd_policy::on_ready(const arrival& ready) {
  if (!live(ready.worker))
    return {};
  auto& latest = fresh_step_[static_cast<std::size_t>(ready.worker)];
  latest = std::max(latest, ready.step);
  if (ready.step % static_cast<std::uint64_t>(period_) != 0) {
    group_decision alone;
    alone.members = {ready.worker};
    alone.kind = round_kind::partial;
    alone.step = ready.step;
    alone.fresh_arrivals = 1;
    return {alone};
  }
  return average_if_everyone_arrived();
}

std::vector<group_decision> local_sgd_policy::on_group_done(const group_outcome&) {
  return {}; // the global average waits for arrivals, not for other rounds
}

// The next average is that of step averaged_ + period; every live worker stops there (its model
// waits for a round), so none can be further on unless it adopted a peer's later step count.
std::vector<group_decision> local_sgd_policy::average_if_everyone_arrived() {
  if (live_.empty())
    return {};
  const std::uint64_t next = averaged_ + static_cast<std::uint64_t>(period_);
  for (int worker : live_)
    if (fresh_step_[static_cast<std::size_t>(worker)] < next)
      return {};
  group_decision everyone;
  everyone.members = live_;
  everyone.kind = round_kind::full_sync;
  everyone.step = next;
  everyone.fresh_arrivals = live_.size();
  averaged_ = next;
  return {everyone};
}

std::string local_sgd_policy::save_state() const {
  return detail::save_fields("local-sgd", live_, fresh_step_, averaged_);
}

void local_sgd_policy::load_state(const std::string& state) {
  detail::load_fields(state, "local-sgd", live_, fresh_step_, averaged_);
  detail::check_workers("local-sgd", "live workers", live_, fresh_step_.size());
}

} // namespace herd::policy
