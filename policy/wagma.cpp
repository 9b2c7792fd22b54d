// WAGMA-SGD's grouping policy; see wagma.hpp.
#include "policy/wagma.hpp"

#include "kernels/check.hpp"

#include <algorithm>

#include "policy/state_archive.hpp"

namespace herd::policy {

wagma_settings wagma_settings_of(const config::wagma_section& section) {
  wagma_settings settings;
  settings.group_size = section.group_size;
  settings.sync_every = section.sync_every;
  settings.reference_blend = section.blend == "reference";
  return settings;
}

wagma_policy::wagma_policy(int workers, wagma_settings settings)
    : schedule_(workers, settings.group_size), sync_every_(settings.sync_every),
      reference_blend_(settings.reference_blend),
      fresh_step_(static_cast<std::size_t>(workers), 0) {
  HERD_CHECK_GE(settings.sync_every, 0);
}

bool wagma_policy::live(int worker) const {
  return std::binary_search(live_.begin(), live_.end(), worker);
}

bool wagma_policy::is_global(std::uint64_t step) const {
  return sync_every_ > 0 && step % static_cast<std::uint64_t>(sync_every_) == 0;
}

std::vector<group_decision> wagma_policy::set_live_workers(std::vector<int> workers) {
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
  HERD_CHECK(workers.empty() || (workers.front() >= 0 && workers.back() < schedule_.workers()),
             "live workers outside 0.." << schedule_.workers() - 1);
  // A worker that comes back (a node joined in a lost one's place) counts from the step of the
  // state it took, which may be below what its slot had reached.
  for (int worker : workers)
    if (!live(worker))
      fresh_step_[static_cast<std::size_t>(worker)] = 0;
  live_ = std::move(workers);
  forget_counts();
  return activate_due(); // a loss can complete a global average
}

std::vector<group_decision> wagma_policy::on_ready(const arrival& ready) {
  if (!live(ready.worker))
    return {};
  auto& latest = fresh_step_[static_cast<std::size_t>(ready.worker)];
  const std::uint64_t before = latest;
  latest = std::max(latest, ready.step);
  furthest_ = std::max(furthest_, latest);
  if (waiting_global_ > 0 && before < waiting_global_ && latest >= waiting_global_)
    ++reached_;
  return activate_due();
}

void wagma_policy::forget_counts() {
  furthest_ = 0;
  for (int worker : live_)
    furthest_ = std::max(furthest_, fresh_step_[static_cast<std::size_t>(worker)]);
  waiting_global_ = 0;
  reached_ = 0;
}

std::size_t wagma_policy::reached(std::uint64_t step) {
  if (waiting_global_ != step) {
    waiting_global_ = step;
    reached_ = static_cast<std::size_t>(std::count_if(live_.begin(), live_.end(), [&](int worker) {
      return fresh_step_[static_cast<std::size_t>(worker)] >= step;
    }));
  }
  return reached_;
}

std::vector<group_decision> wagma_policy::on_group_done(const group_outcome&) {
  return {}; // rounds do not wait for each other
}

std::vector<group_decision> wagma_policy::activate_due() {
  std::vector<group_decision> decisions;
  if (live_.empty())
    return decisions;
  while (activated_ < furthest_) {
    const std::uint64_t step = activated_ + 1;
    if (is_global(step)) {
      if (reached(step) < live_.size())
        break; // blocking: everyone finishes this step first
      group_decision everyone;
      everyone.members = live_;
      everyone.kind = round_kind::full_sync;
      everyone.step = step;
      everyone.fresh_arrivals = live_.size();
      decisions.push_back(std::move(everyone));
    } else {
      for (const auto& group : schedule_.groups(step - 1)) {
        group_decision decision;
        decision.kind = round_kind::partial;
        decision.step = step;
        for (int member : group) {
          if (!live(member))
            continue;
          decision.members.push_back(member);
          decision.fresh_arrivals += fresh_step_[static_cast<std::size_t>(member)] >= step ? 1 : 0;
        }
        if (!decision.members.empty())
          decisions.push_back(std::move(decision));
      }
    }
    activated_ = step;
  }
  return decisions;
}

std::string wagma_policy::save_state() const {
  return detail::save_fields("wagma", live_, fresh_step_, activated_);
}

void wagma_policy::load_state(const std::string& state) {
  const std::size_t workers = fresh_step_.size(); // the run's, from the constructor
  detail::load_fields(state, "wagma", live_, fresh_step_, activated_);
  detail::check_table("wagma", "fresh steps", fresh_step_.size(), workers);
  detail::check_workers("wagma", "live workers", live_, workers);
  forget_counts();
}

} // namespace herd::policy
