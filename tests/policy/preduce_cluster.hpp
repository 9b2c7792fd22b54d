// The partial-reduce tests' shared parts: small helpers, an independent union-find, and a
// deterministic discrete-event cluster on a virtual clock that drives a preduce_policy and checks
// every decision against the policy's definition (docs/algorithms.md, "Partial reduce").
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "policy/preduce.hpp"
#include "support/arrivals.hpp"

namespace preduce_testing {

using herd::policy::freshness;
using herd::policy::group_decision;
using herd::policy::group_outcome;
using herd::policy::isolation_guard;
using herd::policy::preduce_policy;
using herd::policy::preduce_settings;
using herd::policy::round_kind;
using herd::policy::staleness_weighting;
using herd::policy::weighting;
using herd::testing::iota;
using herd::testing::ready;

inline constexpr double never = std::numeric_limits<double>::infinity();

// Member sets are compared sorted: the tests do not depend on the order a group was built in.
inline std::vector<int> sorted(std::vector<int> members) {
  std::sort(members.begin(), members.end());
  return members;
}

inline std::string show(const std::vector<int>& members) {
  std::ostringstream out;
  out << "{";
  for (std::size_t i = 0; i < members.size(); ++i)
    out << (i > 0 ? "," : "") << members[i];
  out << "}";
  return out.str();
}

// Every member answered fresh with the step it arrived with.
inline group_outcome done(const group_decision& group, const std::vector<std::uint64_t>& step_of) {
  group_outcome outcome;
  outcome.members = group.members;
  for (int member : group.members)
    outcome.contributions.push_back(
        {member, freshness::fresh, step_of[static_cast<std::size_t>(member)]});
  return outcome;
}

// Every member answered fresh with the same step.
inline group_outcome done(const group_decision& group, std::uint64_t step = 1) {
  return done(group, std::vector<std::uint64_t>(64, step));
}

// The guard and the staleness decay off unless a test says otherwise.
inline preduce_settings plain_settings(int group_size, double wait_window_seconds) {
  preduce_settings settings;
  settings.group_size = group_size;
  settings.wait_window_seconds = wait_window_seconds;
  settings.staleness_decay = 0.0;
  settings.connect_every = 0; // guard off
  settings.connect_wait_seconds = 0.0;
  settings.sync_every = 0;
  return settings;
}

// A group weighs its members by staleness (version gaps); the global average is the plain mean
// (preduce.hpp).
inline std::vector<float> expected_member_weights(const preduce_settings& settings,
                                                  round_kind kind,
                                                  const std::vector<std::uint64_t>& versions) {
  const double decay = kind == round_kind::full_sync ? 0.0 : settings.staleness_decay;
  return staleness_weighting(decay).weights(versions);
}

inline double sum(const std::vector<float>& values) {
  double total = 0.0;
  for (float value : values)
    total += static_cast<double>(value);
  return total;
}

// Union-find over worker indices, independent of the guard's own, to check it from outside.
class components {
public:
  explicit components(std::vector<int> live) : live_(std::move(live)) { reset(); }

  void reset() {
    parent_.assign(live_.empty() ? 0 : static_cast<std::size_t>(live_.back()) + 1, -1);
    for (int worker : live_)
      parent_[static_cast<std::size_t>(worker)] = worker;
  }

  int find(int worker) {
    while (parent_[static_cast<std::size_t>(worker)] != worker)
      worker = parent_[static_cast<std::size_t>(worker)];
    return worker;
  }

  void merge(const std::vector<int>& members) {
    for (std::size_t i = 1; i < members.size(); ++i)
      parent_[static_cast<std::size_t>(find(members[i]))] = find(members[0]);
  }

  std::size_t count() {
    std::size_t roots = 0;
    for (int worker : live_)
      roots += find(worker) == worker ? 1 : 0;
    return roots;
  }

  // How many different components the members come from.
  std::size_t spanned_by(const std::vector<int>& members) {
    std::vector<int> roots;
    roots.reserve(members.size());
    for (int member : members)
      roots.push_back(find(member));
    std::sort(roots.begin(), roots.end());
    return static_cast<std::size_t>(std::unique(roots.begin(), roots.end()) - roots.begin());
  }

private:
  std::vector<int> live_;
  std::vector<int> parent_;
};

// -- a deterministic discrete-event cluster -----------------------------------------------------

// Workers compute for step_seconds(worker), arrive, wait in their group, and compute again when
// the group completes reduce_seconds() after it formed. The cluster keeps its own model versions
// (a step adds one, a group's members take the highest of theirs) and checks the policy's against
// them, and that no version ever decreases. Events at one time run completions
// first, then arrivals by worker index; the policy's deadline runs when nothing comes before it.
// Every decision is checked against the policy's definition as it is made.
class scripted_cluster {
public:
  scripted_cluster(
      preduce_settings settings, int workers, std::function<double(int)> step_seconds,
      std::function<double()> reduce_seconds = [] { return 0.0; })
      : settings_(settings), policy_(settings), step_seconds_(std::move(step_seconds)),
        reduce_seconds_(std::move(reduce_seconds)), state_(static_cast<std::size_t>(workers)),
        next_arrival_(static_cast<std::size_t>(workers)),
        steps_(static_cast<std::size_t>(workers), 0),
        versions_(static_cast<std::size_t>(workers), 0) {
    for (int worker = 0; worker < workers; ++worker)
      next_arrival_[static_cast<std::size_t>(worker)] = step_seconds_(worker);
    live_ = iota(workers);
    apply(policy_.set_live_workers(live_));
  }

  preduce_policy& policy() { return policy_; }
  const std::vector<group_decision>& log() const { return log_; }
  const std::vector<int>& live() const { return live_; }
  std::size_t most_in_flight() const { return most_in_flight_; }
  /// Per decision in log(): the members' step counters and model versions, in member order.
  const std::vector<std::vector<std::uint64_t>>& step_log() const { return step_log_; }
  const std::vector<std::vector<std::uint64_t>>& version_log() const { return version_log_; }
  /// Events after which the policy's isolation guard said an intervention was due.
  std::size_t guard_due_events() const { return guard_due_events_; }
  double clock() const { return clock_; }

  // Runs until the log holds `decisions` groups; fails the test if the cluster stalls.
  void run_until(std::size_t decisions) {
    for (std::size_t events = 0; log_.size() < decisions; ++events) {
      ASSERT_LT(events, 1000000u) << "no progress after a million events";
      const auto [complete_at, group] = first_completion();
      const auto [arrive_at, worker] = first_arrival();
      double deadline_at = never;
      const auto deadline = policy_.next_deadline();
      if (deadline && deadline != spent_deadline_)
        deadline_at = std::max(*deadline, clock_);
      const double now = std::min({complete_at, arrive_at, deadline_at});
      ASSERT_LT(now, never) << "stalled at t=" << clock_ << " after " << log_.size()
                            << " groups with " << policy_.queued() << " workers queued";
      ASSERT_GE(now, clock_);
      clock_ = now;
      if (complete_at == now) {
        complete(group);
      } else if (arrive_at == now) {
        arrive(worker);
      } else {
        spent_deadline_ = deadline;
        apply(policy_.on_time(clock_));
      }
      if (testing::Test::HasFatalFailure())
        return;
      guard_due_events_ += policy_.guard().intervention_due() ? 1 : 0;
      for (int member : live_) {
        const auto w = static_cast<std::size_t>(member);
        ASSERT_GE(policy_.version_of(member), seen_version_[w])
            << "t=" << clock_ << ": worker " << member << "'s version went down";
        seen_version_[w] = policy_.version_of(member);
      }
    }
  }

  // The worker is lost wherever it is: it never arrives again.
  void lose(int worker) {
    state_[static_cast<std::size_t>(worker)] = worker_state::lost;
    live_.erase(std::find(live_.begin(), live_.end(), worker));
    apply(policy_.set_live_workers(live_));
  }

private:
  enum class worker_state { computing, queued, in_group, lost };

  struct in_flight {
    group_decision group;
    double done_at = 0.0;
  };

  std::pair<double, std::size_t> first_completion() const {
    std::pair<double, std::size_t> first{never, 0};
    for (std::size_t i = 0; i < flying_.size(); ++i)
      if (flying_[i].done_at < first.first)
        first = {flying_[i].done_at, i};
    return first;
  }

  std::pair<double, int> first_arrival() const {
    std::pair<double, int> first{never, -1};
    for (std::size_t w = 0; w < state_.size(); ++w)
      if (state_[w] == worker_state::computing && next_arrival_[w] < first.first)
        first = {next_arrival_[w], static_cast<int>(w)};
    return first;
  }

  void arrive(int worker) {
    const auto w = static_cast<std::size_t>(worker);
    steps_[w] += 1;
    versions_[w] += 1;
    state_[w] = worker_state::queued;
    apply(policy_.on_ready(ready(worker, steps_[w], clock_)));
  }

  void complete(std::size_t index) {
    const group_decision group = flying_[index].group;
    flying_.erase(flying_.begin() + static_cast<std::ptrdiff_t>(index));
    group_outcome outcome;
    outcome.members = group.members;
    outcome.at_seconds = clock_;
    std::uint64_t freshest = 0;
    for (int member : group.members)
      if (state_[static_cast<std::size_t>(member)] != worker_state::lost)
        freshest = std::max(freshest, versions_[static_cast<std::size_t>(member)]);
    for (int member : group.members) {
      const auto m = static_cast<std::size_t>(member);
      if (state_[m] == worker_state::lost)
        continue; // it never answered
      versions_[m] = freshest;
      outcome.contributions.push_back({member, freshness::fresh, steps_[m]});
      state_[m] = worker_state::computing;
      next_arrival_[m] = clock_ + step_seconds_(member);
    }
    apply(policy_.on_group_done(outcome));
  }

  void apply(const std::vector<group_decision>& decisions) {
    for (const auto& group : decisions) {
      check(group);
      if (testing::Test::HasFatalFailure())
        return;
      for (int member : group.members)
        state_[static_cast<std::size_t>(member)] = worker_state::in_group;
      log_.push_back(group);
      flying_.push_back({group, clock_ + reduce_seconds_()});
      most_in_flight_ = std::max(most_in_flight_, flying_.size());
    }
    std::size_t queued = 0;
    for (auto state : state_)
      queued += state == worker_state::queued ? 1 : 0;
    ASSERT_EQ(policy_.queued(), queued) << "t=" << clock_ << ": the policy's queue vs the ready";
  }

  void check(const group_decision& group) {
    const std::string where = "t=" + std::to_string(clock_) + " group " +
                              std::to_string(log_.size()) + " " + show(group.members);
    ASSERT_FALSE(group.members.empty()) << where;
    ASSERT_TRUE(std::is_sorted(group.members.begin(), group.members.end()))
        << where << ": policy.hpp documents members as ascending worker indices";
    ASSERT_EQ(std::adjacent_find(group.members.begin(), group.members.end()), group.members.end())
        << where << ": a worker twice";
    std::vector<std::uint64_t> steps;
    std::vector<std::uint64_t> versions;
    for (int member : group.members) {
      ASSERT_TRUE(std::binary_search(live_.begin(), live_.end(), member))
          << where << ": worker " << member << " is not live";
      ASSERT_TRUE(state_[static_cast<std::size_t>(member)] == worker_state::queued)
          << where << ": worker " << member << " is not ready (computing or in a group in flight)";
      steps.push_back(steps_[static_cast<std::size_t>(member)]);
      versions.push_back(versions_[static_cast<std::size_t>(member)]);
    }
    step_log_.push_back(steps);
    version_log_.push_back(versions);
    const std::size_t group_size =
        std::min(static_cast<std::size_t>(settings_.group_size), live_.size());
    if (group.kind == round_kind::full_sync) {
      ASSERT_EQ(group.members, live_) << where << ": a global average is every live worker";
      ASSERT_GT(settings_.sync_every, 0) << where << ": a global average without sync_every";
      ASSERT_EQ(partial_since_sync_, static_cast<std::size_t>(settings_.sync_every))
          << where << ": a global average after " << partial_since_sync_ << " partial groups";
      partial_since_sync_ = 0;
    } else {
      ASSERT_EQ(group.kind, round_kind::partial) << where;
      if (live_.size() > 1) {
        ASSERT_GE(group.members.size(), 2u) << where << ": a lone worker in a group";
      }
      if (!group.intervention) {
        ASSERT_LE(group.members.size(), group_size) << where;
      }
      partial_since_sync_ += 1;
      if (settings_.sync_every > 0) {
        ASSERT_LE(partial_since_sync_, static_cast<std::size_t>(settings_.sync_every))
            << where << ": a partial group while a global average is due";
      }
    }
    ASSERT_EQ(group.weights, weighting::given) << where;
    ASSERT_EQ(group.staleness, staleness_weighting::staleness(versions))
        << where << ": staleness is the version gap";
    const auto expected = expected_member_weights(settings_, group.kind, versions);
    ASSERT_EQ(group.member_weights.size(), expected.size()) << where;
    for (std::size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(group.member_weights[i], expected[i], 1e-6) << where << " member " << i;
  }

  preduce_settings settings_;
  preduce_policy policy_;
  std::function<double(int)> step_seconds_;
  std::function<double()> reduce_seconds_;
  std::vector<worker_state> state_;
  std::vector<double> next_arrival_;
  std::vector<std::uint64_t> steps_;
  std::vector<std::uint64_t> versions_;
  std::vector<std::uint64_t> seen_version_ = std::vector<std::uint64_t>(4096, 0);
  std::vector<std::vector<std::uint64_t>> step_log_;
  std::vector<std::vector<std::uint64_t>> version_log_;
  std::size_t guard_due_events_ = 0;
  std::vector<int> live_;
  std::vector<in_flight> flying_;
  std::vector<group_decision> log_;
  std::optional<double> spent_deadline_;
  std::size_t partial_since_sync_ = 0;
  std::size_t most_in_flight_ = 0;
  double clock_ = 0.0;
};

} // namespace preduce_testing
