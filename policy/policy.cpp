// Grouping policies; see policy.hpp.
#include "policy/policy.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>

#include "policy/async.hpp"
#include "policy/local_sgd.hpp"
#include "policy/preduce.hpp"
#include "policy/state_archive.hpp"
#include "policy/wagma.hpp"

namespace herd::policy {

missing_members missing_members_of(const std::string& name) {
  if (name == "renormalise")
    return missing_members::renormalise;
  HERD_CHECK(name == "zero", "no missing-members mode named '" << name << "'");
  return missing_members::zero;
}

late_gradients late_gradients_of(const std::string& name) {
  if (name == "accumulate")
    return late_gradients::accumulate;
  if (name == "discard")
    return late_gradients::discard;
  HERD_CHECK(name == "scale", "no late-gradients mode named '" << name << "'");
  return late_gradients::scale;
}

late_gradients late_gradients_of(const config::run_config& config) {
  const auto* partial = partial_settings(config);
  return partial == nullptr ? late_gradients::accumulate
                            : late_gradients_of(partial->late_gradients);
}

float late_gradient_weight(std::uint32_t rounds_missed) {
  return 1.0f / (1.0f + static_cast<float>(rounds_missed));
}

quorum_policy::quorum_policy(std::string name, double fraction, int sync_every,
                             missing_members missing)
    : name_(std::move(name)), fraction_(fraction), sync_every_(sync_every), missing_(missing) {
  HERD_CHECK(fraction >= 0.0 && fraction <= 1.0, "quorum fraction " << fraction);
  HERD_CHECK_GE(sync_every, 0);
}

std::string quorum_policy::save_state() const {
  return detail::save_fields(name_, live_, ready_step_, consumed_step_, in_flight_,
                             rounds_activated_);
}

void quorum_policy::load_state(const std::string& state) {
  detail::load_fields(state, name_, live_, ready_step_, consumed_step_, in_flight_,
                      rounds_activated_);
  detail::check_table(name_, "consumed steps", consumed_step_.size(), ready_step_.size());
  detail::check_workers(name_, "live workers", live_, ready_step_.size());
  fresh_ = count_fresh();
}

std::size_t quorum_policy::threshold() const {
  const std::size_t live = live_.size();
  if (next_round_is_full_sync())
    return live;
  // The small slack keeps fraction * P that is an integer in exact arithmetic (0.5 * 8) from
  // rounding up to the next one.
  const auto needed =
      static_cast<std::size_t>(std::ceil(fraction_ * static_cast<double>(live) - 1e-9));
  return std::clamp<std::size_t>(needed, 1, std::max<std::size_t>(live, 1));
}

bool quorum_policy::next_round_is_full_sync() const {
  return sync_every_ > 0 && (rounds_activated_ + 1) % static_cast<std::uint64_t>(sync_every_) == 0;
}

std::vector<group_decision> quorum_policy::set_live_workers(std::vector<int> workers) {
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
  HERD_CHECK(workers.empty() || workers.front() >= 0, "negative worker index");
  const std::size_t slots = workers.empty() ? 0 : static_cast<std::size_t>(workers.back()) + 1;
  if (ready_step_.size() < slots) {
    ready_step_.resize(slots, 0);
    consumed_step_.resize(slots, 0);
  }
  // A worker that comes back (a node joined in a lost one's place) counts its steps from the peer
  // whose state it took, which may be below what its slot had seen: its slot starts afresh.
  for (int worker : workers)
    if (!std::binary_search(live_.begin(), live_.end(), worker)) {
      ready_step_[static_cast<std::size_t>(worker)] = 0;
      consumed_step_[static_cast<std::size_t>(worker)] = 0;
    }
  live_ = std::move(workers);
  fresh_ = count_fresh();
  return activate_if_due();
}

std::vector<group_decision> quorum_policy::on_ready(const arrival& ready) {
  if (!std::binary_search(live_.begin(), live_.end(), ready.worker))
    return {}; // a worker that was declared lost
  const auto index = static_cast<std::size_t>(ready.worker);
  auto& latest = ready_step_[index];
  const bool was_fresh = latest > consumed_step_[index];
  latest = std::max(latest, ready.step);
  if (!was_fresh && latest > consumed_step_[index])
    ++fresh_;
  return activate_if_due();
}

std::vector<group_decision> quorum_policy::on_group_done(const group_outcome& outcome) {
  in_flight_ = false;
  for (const auto& given : outcome.contributions) {
    if (given.kind != freshness::fresh || given.worker < 0 ||
        static_cast<std::size_t>(given.worker) >= consumed_step_.size())
      continue;
    const auto index = static_cast<std::size_t>(given.worker);
    auto& consumed = consumed_step_[index];
    const bool was_fresh = ready_step_[index] > consumed;
    consumed = std::max(consumed, given.step);
    if (was_fresh && ready_step_[index] <= consumed &&
        std::binary_search(live_.begin(), live_.end(), given.worker))
      --fresh_;
  }
  return activate_if_due();
}

std::size_t quorum_policy::count_fresh() const {
  std::size_t pending = 0;
  for (int worker : live_) {
    const auto index = static_cast<std::size_t>(worker);
    if (ready_step_[index] > consumed_step_[index])
      ++pending;
  }
  return pending;
}

std::vector<group_decision> quorum_policy::activate_if_due() {
  if (in_flight_ || live_.empty())
    return {};
  const std::size_t fresh = fresh_;
  if (fresh < threshold())
    return {};
  group_decision round;
  round.members = live_;
  round.kind = fresh == live_.size() && threshold() == live_.size() ? round_kind::full_sync
                                                                    : round_kind::partial;
  round.weights =
      missing_ == missing_members::zero ? weighting::uniform_planned : weighting::uniform;
  round.fresh_arrivals = fresh;
  in_flight_ = true;
  ++rounds_activated_;
  return {round};
}

std::unique_ptr<quorum_policy> make_sync_policy() {
  return std::make_unique<quorum_policy>("sync", 1.0, 1);
}

const config::partial_section* partial_settings(const config::run_config& config) {
  const auto& algorithm = config.train.algorithm;
  if (algorithm == "solo")
    return &config.solo;
  if (algorithm == "majority")
    return &config.majority;
  if (algorithm == "quorum")
    return &config.quorum;
  return nullptr;
}

std::unique_ptr<grouping_policy> make_policy(const config::run_config& config) {
  const auto& algorithm = config.train.algorithm;
  if (algorithm == "sync")
    return make_sync_policy();
  if (algorithm == "solo")
    return std::make_unique<quorum_policy>("solo", 0.0, config.solo.sync_every,
                                           missing_members_of(config.solo.missing_members));
  if (algorithm == "majority")
    return std::make_unique<quorum_policy>("majority", 0.5, config.majority.sync_every,
                                           missing_members_of(config.majority.missing_members));
  if (algorithm == "quorum")
    return std::make_unique<quorum_policy>("quorum", config.quorum.fraction,
                                           config.quorum.sync_every,
                                           missing_members_of(config.quorum.missing_members));
  if (algorithm == "preduce")
    return std::make_unique<preduce_policy>(preduce_settings_of(config.preduce));
  if (algorithm == "wagma")
    return std::make_unique<wagma_policy>(config.train.workers, wagma_settings_of(config.wagma));
  if (algorithm == "local-sgd")
    return std::make_unique<local_sgd_policy>(config.local_sgd.period);
  if (algorithm == "async")
    return std::make_unique<async_policy>();
  HERD_CHECK(false, "no grouping policy named '" << algorithm << "'");
  return nullptr;
}

std::vector<float> member_weights(weighting weights, const std::vector<float>& given,
                                  const std::vector<bool>& answered) {
  HERD_CHECK(weights != weighting::given || given.size() == answered.size(),
             given.size() << " given weights for " << answered.size() << " members");
  const auto count = static_cast<std::size_t>(std::count(answered.begin(), answered.end(), true));
  std::vector<float> result(answered.size(), 0.0f);
  if (count == 0)
    return result;
  if (weights == weighting::uniform_planned) { // the divisor stays every member
    for (std::size_t i = 0; i < answered.size(); ++i)
      if (answered[i])
        result[i] = static_cast<float>(1.0 / static_cast<double>(answered.size()));
    return result;
  }
  double total = 0.0;
  for (std::size_t i = 0; i < answered.size(); ++i)
    if (answered[i])
      total += weights == weighting::given ? static_cast<double>(given[i]) : 1.0;
  HERD_CHECK(total > 0.0, "the answering members' weights sum to " << total);
  for (std::size_t i = 0; i < answered.size(); ++i)
    if (answered[i])
      result[i] = static_cast<float>(
          (weights == weighting::given ? static_cast<double>(given[i]) : 1.0) / total);
  return result;
}

} // namespace herd::policy
