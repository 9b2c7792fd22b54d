// Partial reduce; see preduce.hpp.
#include "policy/preduce.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "policy/state_archive.hpp"

namespace herd::policy {

namespace {
constexpr std::uint64_t unknown_step = ~std::uint64_t{0};
} // namespace

// -- staleness_weighting --------------------------------------------------------------------------

staleness_weighting::staleness_weighting(double decay) : decay_(decay) {
  HERD_CHECK(decay >= 0.0 && std::isfinite(decay), "staleness decay " << decay);
}

std::vector<std::uint64_t>
staleness_weighting::staleness(const std::vector<std::uint64_t>& versions) {
  const std::uint64_t freshest =
      versions.empty() ? 0 : *std::max_element(versions.begin(), versions.end());
  std::vector<std::uint64_t> result;
  result.reserve(versions.size());
  for (std::uint64_t version : versions)
    result.push_back(freshest - version);
  return result;
}

std::vector<float> staleness_weighting::weights(const std::vector<std::uint64_t>& versions) const {
  HERD_CHECK(!versions.empty(), "weights of an empty group");
  // The freshest member has weight exp(0) = 1, so the sum never underflows to zero.
  std::vector<double> raw;
  raw.reserve(versions.size());
  for (std::uint64_t behind : staleness(versions))
    raw.push_back(std::exp(-decay_ * static_cast<double>(behind)));
  const double total = std::accumulate(raw.begin(), raw.end(), 0.0);
  std::vector<float> result;
  result.reserve(raw.size());
  for (double weight : raw)
    result.push_back(static_cast<float>(weight / total));
  return result;
}

// -- isolation_guard ------------------------------------------------------------------------------

isolation_guard::isolation_guard(int connect_every, int group_size)
    : connect_every_(connect_every < 0 ? -1 : connect_every), group_size_(group_size) {
  HERD_CHECK_GE(group_size, 1);
}

std::size_t isolation_guard::min_connecting_groups(std::size_t workers, std::size_t group_size) {
  return config::min_connecting_groups(workers, group_size);
}

std::size_t isolation_guard::automatic_connect_every(std::size_t workers, std::size_t group_size) {
  return std::max<std::size_t>(16, 4 * min_connecting_groups(workers, group_size));
}

std::size_t isolation_guard::period() const {
  if (!enabled())
    return 0;
  if (connect_every_ > 0)
    return static_cast<std::size_t>(connect_every_);
  return automatic_connect_every(live_.size(), static_cast<std::size_t>(group_size_));
}

void isolation_guard::set_live_workers(const std::vector<int>& workers) {
  live_ = workers;
  std::sort(live_.begin(), live_.end());
  live_.erase(std::unique(live_.begin(), live_.end()), live_.end());
  const std::size_t slots = live_.empty() ? 0 : static_cast<std::size_t>(live_.back()) + 1;
  parent_.assign(slots, -1);
  for (int worker : live_)
    parent_[static_cast<std::size_t>(worker)] = worker;
  components_ = live_.size();
  groups_since_connected_ = 0;
}

std::string isolation_guard::damage() const {
  const std::size_t slots = parent_.size();
  for (std::size_t i = 0; i < live_.size(); ++i)
    if (live_[i] < 0 || static_cast<std::size_t>(live_[i]) >= slots ||
        (i > 0 && live_[i - 1] >= live_[i]))
      return "the guard's live workers do not fit its " + std::to_string(slots) + " slots";
  // find() follows parents to a root (its own parent): every live worker's chain must get there
  // within `slots` steps, through live slots only.
  for (int worker : live_) {
    int at = worker;
    std::size_t steps = 0;
    while (steps++ <= slots) {
      const int parent = parent_[static_cast<std::size_t>(at)];
      if (parent < 0 || static_cast<std::size_t>(parent) >= slots)
        return "the guard's component of worker " + std::to_string(worker) +
               " leads outside its slots";
      if (parent == at)
        break;
      at = parent;
    }
    if (steps > slots + 1)
      return "the guard's component of worker " + std::to_string(worker) + " has no root";
  }
  return {};
}

int isolation_guard::find(int worker) const {
  if (worker < 0 || static_cast<std::size_t>(worker) >= parent_.size() ||
      parent_[static_cast<std::size_t>(worker)] < 0)
    return -1;
  int root = worker;
  while (parent_[static_cast<std::size_t>(root)] != root)
    root = parent_[static_cast<std::size_t>(root)];
  while (parent_[static_cast<std::size_t>(worker)] != root) { // path compression
    const int next = parent_[static_cast<std::size_t>(worker)];
    parent_[static_cast<std::size_t>(worker)] = root;
    worker = next;
  }
  return root;
}

bool isolation_guard::record_group(const std::vector<int>& members) {
  ++groups_since_connected_;
  int first = -1;
  for (int member : members) {
    const int root = find(member);
    if (root < 0)
      continue; // not live
    if (first < 0) {
      first = root;
    } else if (root != first) {
      parent_[static_cast<std::size_t>(root)] = first;
      --components_;
    }
  }
  if (components_ > 1)
    return false;
  set_live_workers(std::vector<int>(live_)); // a new period
  return true;
}

bool isolation_guard::intervention_due() const {
  if (!enabled() || components_ <= 1)
    return false;
  const std::size_t every = period();
  const std::size_t left = every > groups_since_connected_ ? every - groups_since_connected_ : 0;
  // A group of g members from g components makes g - 1 merges.
  return left <= min_connecting_groups(components_, static_cast<std::size_t>(group_size_));
}

bool isolation_guard::same_component(int a, int b) const {
  const int root = find(a);
  return root >= 0 && root == find(b);
}

std::size_t isolation_guard::components() const {
  return components_;
}

// -- preduce_policy -------------------------------------------------------------------------------

preduce_settings preduce_settings_of(const config::preduce_section& section) {
  preduce_settings settings;
  settings.group_size = section.group_size;
  settings.wait_window_seconds = section.wait_window_ms / 1000.0;
  settings.staleness_decay = section.staleness_decay;
  settings.connect_every = section.connect_every;
  settings.connect_wait_seconds = section.connect_wait_ms / 1000.0;
  settings.sync_every = section.sync_every;
  return settings;
}

preduce_policy::preduce_policy(preduce_settings settings)
    : settings_(settings), weighting_(settings.staleness_decay),
      guard_(settings.connect_every, settings.group_size) {
  HERD_CHECK_GE(settings.group_size, 1);
  HERD_CHECK(settings.wait_window_seconds >= 0.0, "wait window " << settings.wait_window_seconds);
  HERD_CHECK(settings.connect_wait_seconds >= 0.0,
             "connect wait " << settings.connect_wait_seconds);
  HERD_CHECK_GE(settings.sync_every, 0);
}

bool preduce_policy::live(int worker) const {
  return std::binary_search(live_.begin(), live_.end(), worker);
}

std::vector<group_decision> preduce_policy::set_live_workers(std::vector<int> workers) {
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
  // A worker that comes back (a node joined in a lost one's place) is in no group and has no
  // arrival held from before it was lost. If it had arrived before, it now continues from a live
  // peer's state, which one is not known here: its version is the lowest live one, and its next
  // arrival is one step on. A worker not heard of yet counts its steps from 0.
  const std::size_t slots = workers.empty() ? 0 : static_cast<std::size_t>(workers.back()) + 1;
  if (version_.size() < slots) {
    version_.resize(slots, 0);
    last_step_.resize(slots, 0);
  }
  std::optional<std::uint64_t> lowest;
  for (int worker : live_)
    if (std::binary_search(workers.begin(), workers.end(), worker))
      lowest = std::min(lowest.value_or(version_[static_cast<std::size_t>(worker)]),
                        version_[static_cast<std::size_t>(worker)]);
  for (int worker : workers)
    if (!live(worker)) {
      if (last_step_[static_cast<std::size_t>(worker)] != 0) {
        version_[static_cast<std::size_t>(worker)] = lowest.value_or(0);
        last_step_[static_cast<std::size_t>(worker)] = unknown_step;
      }
      in_group_.erase(std::remove(in_group_.begin(), in_group_.end(), worker), in_group_.end());
      early_.erase(
          std::remove_if(early_.begin(), early_.end(),
                         [worker](const queued_worker& held) { return held.worker == worker; }),
          early_.end());
    }
  live_ = std::move(workers);
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [this](const queued_worker& queued) { return !live(queued.worker); }),
               queue_.end());
  guard_.set_live_workers(live_);
  guard_waiting_since_.reset();
  return form_groups();
}

std::vector<group_decision> preduce_policy::on_ready(const arrival& ready) {
  now_ = std::max(now_, ready.at_seconds);
  const bool queued = std::any_of(queue_.begin(), queue_.end(),
                                  [&](const queued_worker& q) { return q.worker == ready.worker; });
  if (!live(ready.worker) || queued)
    return {}; // lost, or already waiting: not a new arrival
  if (std::binary_search(in_group_.begin(), in_group_.end(), ready.worker)) {
    // Its next step finished before its group's completion reached the coordinator (its version
    // follows once the group's result has set it).
    early_.push_back({ready.worker, ready.step, ready.at_seconds, 0});
    return {};
  }
  enqueue({ready.worker, ready.step, ready.at_seconds, 0});
  return form_groups();
}

std::uint64_t preduce_policy::version_of(int worker) const {
  return worker >= 0 && static_cast<std::size_t>(worker) < version_.size()
             ? version_[static_cast<std::size_t>(worker)]
             : 0;
}

std::uint64_t preduce_policy::version_after(int worker, std::uint64_t step) {
  const auto index = static_cast<std::size_t>(worker);
  const std::uint64_t last = last_step_[index];
  const std::uint64_t steps = last == unknown_step || step <= last ? 1 : step - last;
  last_step_[index] = step;
  version_[index] += steps;
  return version_[index];
}

// In arrival order: a held early arrival may be older than the last one queued.
void preduce_policy::enqueue(queued_worker ready) {
  ready.version = version_after(ready.worker, ready.step);
  auto position = std::upper_bound(
      queue_.begin(), queue_.end(), ready.since,
      [](double since, const queued_worker& queued) { return since < queued.since; });
  queue_.insert(position, ready);
}

std::vector<group_decision> preduce_policy::on_group_done(const group_outcome& outcome) {
  now_ = std::max(now_, outcome.at_seconds);
  // The members that answered took the result: its version is the freshest of theirs.
  std::uint64_t freshest = 0;
  for (const auto& given : outcome.contributions)
    if (given.kind != freshness::none)
      freshest = std::max(freshest, version_of(given.worker));
  for (const auto& given : outcome.contributions)
    if (given.worker >= 0 && static_cast<std::size_t>(given.worker) < version_.size()) {
      auto& version = version_[static_cast<std::size_t>(given.worker)];
      version = std::max(version, freshest);
    }
  // The members are free again; each comes back with its next arrival.
  for (int member : outcome.members) {
    auto found = std::lower_bound(in_group_.begin(), in_group_.end(), member);
    if (found != in_group_.end() && *found == member)
      in_group_.erase(found);
    auto held = std::find_if(early_.begin(), early_.end(), [member](const queued_worker& early) {
      return early.worker == member;
    });
    if (held != early_.end()) {
      if (live(member))
        enqueue(*held);
      early_.erase(held);
    }
  }
  return form_groups();
}

std::vector<group_decision> preduce_policy::on_time(double now_seconds) {
  now_ = std::max(now_, now_seconds);
  return form_groups();
}

std::optional<double> preduce_policy::next_deadline() const {
  if (queue_.empty() || global_average_due())
    return std::nullopt;
  if (guard_waiting_since_)
    return *guard_waiting_since_ + settings_.connect_wait_seconds;
  if (queue_.size() >= 2)
    return queue_.front().since + settings_.wait_window_seconds;
  return std::nullopt; // a lone worker waits for a partner, however long
}

bool preduce_policy::global_average_due() const {
  return settings_.sync_every > 0 &&
         partial_groups_ >= static_cast<std::uint64_t>(settings_.sync_every);
}

std::vector<group_decision> preduce_policy::form_groups() {
  std::vector<group_decision> decisions;
  if (live_.empty())
    return decisions;
  const std::size_t size =
      std::min<std::size_t>(static_cast<std::size_t>(settings_.group_size), live_.size());
  while (!queue_.empty()) {
    if (global_average_due()) {
      // Everyone, once everyone waits: partial groups drain first.
      if (queue_.size() < live_.size() || !in_group_.empty())
        break;
      std::vector<std::size_t> everyone(queue_.size());
      std::iota(everyone.begin(), everyone.end(), 0);
      partial_groups_ = 0;
      decisions.push_back(make_group(std::move(everyone), round_kind::full_sync));
      continue;
    }
    const bool window_passed = now_ - queue_.front().since >= settings_.wait_window_seconds;
    if (guard_.intervention_due()) {
      if (auto positions = guarded_group()) {
        // As an ordinary group: `size` members, or as many as came within the wait window.
        if (queue_.size() < size && !window_passed)
          break;
        guard_waiting_since_.reset();
        ++interventions_;
        decisions.push_back(make_group(std::move(*positions), round_kind::partial));
        decisions.back().intervention = true;
        continue;
      }
      // No other component is queued: wait for one, but not past connect_wait. The wait starts
      // once an ordinary group could form (a lone worker waits for a partner anyway).
      if (queue_.size() < 2 && live_.size() > 1)
        break;
      if (!guard_waiting_since_)
        guard_waiting_since_ = now_;
      if (now_ - *guard_waiting_since_ < settings_.connect_wait_seconds)
        break;
      guard_waiting_since_.reset(); // waited long enough: an ordinary group this time
    }
    const bool alone = live_.size() == 1;
    if (queue_.size() < size && !(window_passed && queue_.size() >= 2) && !alone)
      break;
    std::vector<std::size_t> first(std::min(size, queue_.size()));
    std::iota(first.begin(), first.end(), 0);
    decisions.push_back(make_group(std::move(first), round_kind::partial));
  }
  return decisions;
}

// The oldest queued worker, the oldest queued worker of each other component, then the rest in
// queue order; nothing when no queued worker lies in another component than the oldest.
std::optional<std::vector<std::size_t>> preduce_policy::guarded_group() {
  const std::size_t size =
      std::min<std::size_t>(static_cast<std::size_t>(settings_.group_size), live_.size());
  std::vector<std::size_t> chosen{0};
  for (std::size_t position = 1; position < queue_.size() && chosen.size() < size; ++position) {
    const int candidate = queue_[position].worker;
    const bool new_component = std::none_of(chosen.begin(), chosen.end(), [&](std::size_t c) {
      return guard_.same_component(queue_[c].worker, candidate);
    });
    if (new_component)
      chosen.push_back(position);
  }
  if (chosen.size() < 2)
    return std::nullopt;
  for (std::size_t position = 1; position < queue_.size() && chosen.size() < size; ++position)
    if (std::find(chosen.begin(), chosen.end(), position) == chosen.end())
      chosen.push_back(position);
  return chosen;
}

// Takes the queued workers at `positions` into a group.
group_decision preduce_policy::make_group(std::vector<std::size_t> positions, round_kind kind) {
  std::sort(positions.begin(), positions.end());
  std::vector<queued_worker> members;
  members.reserve(positions.size());
  for (std::size_t position : positions)
    members.push_back(queue_[position]);
  for (auto position = positions.rbegin(); position != positions.rend(); ++position)
    queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(*position));
  std::sort(members.begin(), members.end(),
            [](const queued_worker& a, const queued_worker& b) { return a.worker < b.worker; });

  group_decision group;
  group.kind = kind;
  group.weights = weighting::given;
  group.fresh_arrivals = members.size();
  std::vector<std::uint64_t> versions;
  for (const auto& member : members) {
    group.members.push_back(member.worker);
    versions.push_back(member.version);
    in_group_.insert(std::lower_bound(in_group_.begin(), in_group_.end(), member.worker),
                     member.worker);
  }
  group.staleness = staleness_weighting::staleness(versions);
  // The global average is a plain mean: it resets the replicas to one model.
  group.member_weights = kind == round_kind::full_sync ? staleness_weighting(0.0).weights(versions)
                                                       : weighting_.weights(versions);
  if (kind == round_kind::partial)
    ++partial_groups_;
  guard_.record_group(group.members);
  return group;
}

std::string preduce_policy::save_state() const {
  return detail::save_fields("preduce", guard_, live_, queue_, version_, last_step_, in_group_,
                             early_, partial_groups_, interventions_, guard_waiting_since_, now_);
}

void preduce_policy::load_state(const std::string& state) {
  detail::load_fields(state, "preduce", guard_, live_, queue_, version_, last_step_, in_group_,
                      early_, partial_groups_, interventions_, guard_waiting_since_, now_);
  const std::size_t slots = last_step_.size();
  detail::check_table("preduce", "model versions", version_.size(), slots);
  detail::check_workers("preduce", "live workers", live_, slots);
  detail::check_workers("preduce", "workers in a group", in_group_, slots);
  std::vector<int> waiting;
  for (const auto& queued : queue_)
    waiting.push_back(queued.worker);
  for (const auto& queued : early_)
    waiting.push_back(queued.worker);
  detail::check_workers("preduce", "queued workers", waiting, slots, false);
  if (const auto problem = guard_.damage(); !problem.empty())
    throw detail::damaged("preduce", problem);
}

} // namespace herd::policy
