// How a data-plane operation ended: a kind for code and a message for people (the result of a
// c10d work handle, LevelDB's Status), and comm_error, which carries one out of what cannot return
// it (a plane's constructor, a rendezvous store).
#pragma once

#include <stdexcept>
#include <string>

namespace herd::comm {

/// Code branches on the kind, never on the message.
enum class outcome {
  done,             // completed: the result is in place
  timeout,          // did not end within its deadline
  peer_lost,        // a peer's connection failed (or the peer stopped answering)
  aborted,          // the plane was aborted; this and every later operation on it fail
  invalid_argument, // a bad call: it failed alone, and the plane works on
  unsupported,      // this plane does not do that (operation or memory)
  failed,           // a local failure: a kernel, the device, the operating system
};

/// The kind in words, for people (`words` follows outcome's order).
inline const char* to_string(outcome kind) {
  static const char* const words[] = {
      "done", "timeout", "peer lost", "aborted", "invalid argument", "unsupported", "failed"};
  return words[static_cast<int>(kind)];
}

class status {
public:
  status() = default; // done
  status(outcome kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  bool ok() const { return kind_ == outcome::done; }
  outcome kind() const { return kind_; }
  /// Empty when done; otherwise what went wrong, naming the plane, the peer or the operation.
  const std::string& message() const { return message_; }

  /// A status travels in actor messages as its kind and its message (CAF's inspect; no CAF here).
  template <class Inspector>
  friend typename Inspector::result_type inspect(Inspector& f, status& x) {
    return f(x.kind_, x.message_);
  }

private:
  outcome kind_ = outcome::done;
  std::string message_;
};

class comm_error : public std::runtime_error {
public:
  comm_error(outcome kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  explicit comm_error(const status& failure) : comm_error(failure.kind(), failure.message()) {}

  outcome kind() const { return kind_; }
  status to_status() const { return {kind_, what()}; }

private:
  outcome kind_;
};

} // namespace herd::comm
