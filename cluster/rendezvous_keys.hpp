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
  /// Gets the value once it is set, or null once it never will be (fail_reads).
  using reader = std::function<void(const value_type* value)>;

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
      read(&value);
    waiting_.erase(waiting);
  }
  /// The value of `key`; null while it is not set.
  const value_type* find(const std::string& key) const {
    auto found = values_.find(key);
    return found == values_.end() ? nullptr : &found->second;
  }
  /// `later` gets the value of `key` once it is set (at once null when its generation failed).
  void wait(const std::string& key, reader later) {
    for (const auto& prefix : failed_)
      if (key.compare(0, prefix.size(), prefix) == 0) {
        later(nullptr);
        return;
      }
    waiting_[key].push_back(std::move(later));
  }
  /// Drops the reads waiting for keys that start with `prefix`, unanswered; every read when
  /// `prefix` is empty (the registry exits).
  void drop_reads(const std::string& prefix) { end_reads(prefix, false); }
  /// Answers the reads waiting for keys that start with `prefix` with null, and every later read
  /// of such a key: a failed generation's keys will never be set, and its nodes stop waiting for
  /// them now rather than at their deadline.
  void fail_reads(const std::string& prefix) {
    failed_.insert(prefix);
    end_reads(prefix, true);
  }

private:
  void end_reads(const std::string& prefix, bool answer) {
    for (auto waiting = waiting_.begin(); waiting != waiting_.end();) {
      if (waiting->first.compare(0, prefix.size(), prefix) != 0) {
        ++waiting;
        continue;
      }
      const auto reads = std::move(waiting->second);
      waiting = waiting_.erase(waiting);
      if (answer)
        for (const auto& read : reads)
          read(nullptr);
    }
  }

  std::multiset<caf::node_id> members_;
  std::map<std::string, value_type> values_;
  std::map<std::string, std::vector<reader>> waiting_;
  std::set<std::string> failed_; // prefixes of failed generations
};

} // namespace herd::cluster
