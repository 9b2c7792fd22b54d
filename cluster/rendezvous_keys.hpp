// The data plane's rendezvous keys, which the registry keeps for the nodes: the server side of the
// store each node's Gloo plane builds through (comm::rendezvous_store, set and get over CAF). A key
// once set stays; a read of a key not yet set waits for it. Only the processes of welcomed nodes
// may use it: the store learns them from the registry.
#pragma once

#include <caf/node_id.hpp>

#include <cstddef>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace herd::cluster {

class rendezvous_keys {
public:
  using value_type = std::vector<char>;
  using reader = std::function<void(const value_type&)>;

  /// A welcomed node's process may use the keys. Counted: a process that hosts two welcomed
  /// nodes (one lost, then joining again) keeps its access until both are expelled.
  void admit(const caf::node_id& process) { members_.insert(process); }
  void expel(const caf::node_id& process) {
    if (auto member = members_.find(process); member != members_.end())
      members_.erase(member);
  }
  /// Whether `process` may read and write; never one without an id (an anonymous sender).
  bool admits(const caf::node_id& process) const {
    return process != caf::none && members_.count(process) > 0;
  }

  /// Sets `key` and hands its value to the reads waiting for it.
  void set(const std::string& key, const value_type& value) {
    values_[key] = value;
    auto waiting = waiting_.find(key);
    if (waiting == waiting_.end())
      return;
    for (auto& read : waiting->second)
      read(value);
    waiting_.erase(waiting);
  }
  /// The value of `key`; null while it is not set.
  const value_type* find(const std::string& key) const {
    auto found = values_.find(key);
    return found == values_.end() ? nullptr : &found->second;
  }
  /// `later` gets the value of `key` once it is set.
  void wait(const std::string& key, reader later) { waiting_[key].push_back(std::move(later)); }
  /// Drops the reads waiting for keys that start with `prefix` (a failed join's generation: they
  /// will never be set); every read when `prefix` is empty.
  void drop_reads(const std::string& prefix) {
    for (auto waiting = waiting_.begin(); waiting != waiting_.end();)
      waiting = waiting->first.compare(0, prefix.size(), prefix) == 0 ? waiting_.erase(waiting)
                                                                      : std::next(waiting);
  }

private:
  std::multiset<caf::node_id> members_;
  std::map<std::string, value_type> values_;
  std::map<std::string, std::vector<reader>> waiting_;
};

} // namespace herd::cluster
