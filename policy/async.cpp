// The asynchronous parameter server's grouping policy; see async.hpp.
#include "policy/async.hpp"

#include <algorithm>
#include <limits>

#include "policy/state_archive.hpp"

namespace herd::policy {

std::vector<group_decision> async_policy::set_live_workers(std::vector<int> workers) {
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
  live_ = std::move(workers);
  return {}; // nothing waits for a set of workers
}

std::vector<group_decision> async_policy::on_ready(const arrival& ready) {
  if (!std::binary_search(live_.begin(), live_.end(), ready.worker))
    return {}; // a worker that was declared lost
  group_decision alone;
  alone.members = {ready.worker};
  alone.kind = round_kind::partial;
  alone.fresh_arrivals = 1;
  return {alone};
}

std::string async_policy::save_state() const {
  return detail::save_fields("async", live_);
}

void async_policy::load_state(const std::string& state) {
  detail::load_fields(state, "async", live_);
  detail::check_workers("async", "live workers", live_,
                        static_cast<std::size_t>(std::numeric_limits<int>::max()));
}

} // namespace herd::policy
