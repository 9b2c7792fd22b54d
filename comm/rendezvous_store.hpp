// The key-value store through which data-plane ranks exchange their addresses before they connect
// (Gloo's rendezvous Store contract: set, and a get that waits with a timeout). In production
// the coordinator is the rendezvous point (over CAF, outside comm/); the memory and file stores
// here serve threads of one process and processes of one host.
#pragma once

#include "comm/errors.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace herd::comm {

/// Key-value store through which ranks exchange addresses (Gloo's Store contract). Implementations
/// must be thread-safe.
class rendezvous_store {
public:
  virtual ~rendezvous_store() = default;
  virtual void set(const std::string& key, const std::vector<char>& value) = 0;
  /// The value of `key`, waiting for another rank to set it; throws comm_error naming the key when
  /// `timeout` passes first.
  virtual std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  /// The value of `key` if it is set now, without waiting for it: nullopt when it is not. A
  /// failed rendezvous asks it to name the ranks that never appeared. Throws comm_error when the
  /// store cannot tell (one across a network that does not answer). By default get() with no
  /// wait, which suits a store whose reads do not cross a network.
  virtual std::optional<std::vector<char>> peek(const std::string& key);
};

/// Ranks that are threads of one process.
std::shared_ptr<rendezvous_store> make_memory_store();

/// Ranks that are processes of one host (tests, bench): one file per key under `directory`
/// (created if missing), written to a temporary name and renamed, so a reader never sees half a
/// value. Keys may hold any characters; they are escaped into file names.
std::shared_ptr<rendezvous_store> make_file_store(const std::string& directory);

} // namespace herd::comm
