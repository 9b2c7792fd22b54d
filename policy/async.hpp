// The asynchronous parameter server (docs/algorithms.md, "Asynchronous parameter server"): the
// baseline eager-SGD measures itself against. A server holds the parameters and the optimizer and
// applies each worker's gradient as it arrives; the worker takes the server's parameters after
// that before its next step. A plain class, no actors: the grouping policy the coordinator drives.
// The server is actors/parameter_server.hpp.
#pragma once

#include <vector>

#include "policy/policy.hpp"

namespace herd::policy {

/// Every fresh arrival is a round of that worker alone, started at once, with no round waiting
/// for any other: the aggregator takes the worker's gradient (weight 1, so bit for bit), the
/// parameter server applies it, and the member receives the server's parameters after it as the
/// round's result, which replace its own (applies_at_server()). A worker is in one round at a time
/// (it takes no step until its round's result is applied), so rounds of different workers overlap
/// freely and the server sees the gradients in the order they reach it.
class async_policy final : public grouping_policy {
public:
  std::string_view name() const override { return "async"; }
  bool applies_at_server() const override { return true; }
  std::vector<group_decision> set_live_workers(std::vector<int> workers) override;
  std::vector<group_decision> on_ready(const arrival& ready) override;
  std::vector<group_decision> on_group_done(const group_outcome&) override { return {}; }
  std::string save_state() const override;
  void load_state(const std::string& state) override;
  std::vector<int> live_workers() const override { return live_; }

private:
  std::vector<int> live_; // ascending
};

} // namespace herd::policy
