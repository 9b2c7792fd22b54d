// The node's side of the data plane's rendezvous: the keys live in the coordinator's registry.
#pragma once

#include "comm/rendezvous_store.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

namespace herd::cluster {

// Gloo calls this from the thread that builds the plane, so each call uses a short-lived scoped
// actor (a long-lived one slows down with every timed request in CAF 0.17: stale timeouts pile up
// in its mailbox).
class registry_store final : public comm::rendezvous_store {
public:
  /// `stopping`, asked every 100 ms while a read waits, ends the wait when true (a stop signal);
  /// may be empty.
  registry_store(caf::actor_system& system, caf::actor registry,
                 std::function<bool()> stopping = {})
      : system_(system), registry_(std::move(registry)), stopping_(std::move(stopping)) {}

  void set(const std::string& key, const std::vector<char>& value) override;
  /// The value once another node set it. Throws comm::comm_error: outcome::timeout after
  /// `timeout`; outcome::failed at once when the registry says the key will not be set
  /// (refusal() says why) and when `stopping` said so; outcome::peer_lost at once when the
  /// coordinator's process is gone (its connection closed).
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override;
  // One round trip, at most a few seconds: the registry answers at once.
  std::optional<std::vector<char>> peek(const std::string& key) override;
  /// Why the coordinator said a key will not be set (the run ended before it started, say), once
  /// it said so: the cause of a failed rendezvous, which Gloo's account of it puts last.
  std::optional<std::string> refusal() const;

  /// Ends this store's use of the actor system: ends the reads under way (within 100 ms), waits
  /// (up to `wait`) for every call under way to return, then lets go of the registry;
  /// later calls throw comm::comm_error (outcome::failed). For a rendezvous left to a thread of
  /// its own that may outlive the system. False where a call was still under way after `wait`.
  bool close(std::chrono::milliseconds wait = std::chrono::seconds(5));

private:
  // Counts a call for close(); throws where the store is closed.
  class call_guard;
  bool closing() const;

  caf::actor_system& system_;
  caf::actor registry_;
  std::function<bool()> stopping_;
  mutable std::mutex mutex_; // Gloo may read keys from more than one thread
  std::optional<std::string> refusal_;
  std::condition_variable calls_ended_;
  int calls_ = 0;
  bool closed_ = false;
};

} // namespace herd::cluster
