// The node's side of the data plane's rendezvous: the keys live in the coordinator's registry.
#pragma once

#include "comm/rendezvous_store.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

namespace herd::cluster {

// Gloo calls this from the thread that builds the plane, so each call uses a short-lived scoped
// actor (a long-lived one slows down with every timed request in CAF 0.17: stale timeouts pile up
// in its mailbox).
class registry_store final : public comm::rendezvous_store {
public:
  registry_store(caf::actor_system& system, caf::actor registry)
      : system_(system), registry_(std::move(registry)) {}

  void set(const std::string& key, const std::vector<char>& value) override;
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override;
  // One round trip, at most a few seconds: the registry answers at once.
  std::optional<std::vector<char>> peek(const std::string& key) override;

private:
  caf::actor_system& system_;
  caf::actor registry_;
};

} // namespace herd::cluster
