// Checks the framing of CAF 0.17's remoting protocol (BASP) on a byte stream, before CAF reads
// it. CAF's middleman trusts its peers: a handshake header that announces no payload makes it
// dereference a null pointer (the whole process dies), and a header announcing gigabytes makes it
// allocate them. The gate runs every byte a peer sends through this check and drops a peer whose
// stream breaks a rule, so one broken or hostile peer never takes the process down. Plain C++,
// no CAF: the wire format is written out here (network byte order, 32-byte header).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace herd::cluster {

/// Payload bytes that frames of a process's peers have announced and not yet delivered: what
/// CAF's middleman holds read buffers for. One frame's cap does not bound them: many connections
/// that each announce a large frame and never send it would (24 of 256 MiB took a coordinator to
/// 2.9 GB and std::bad_alloc). Shared by the checks of one process's peers; thread-safe.
class payload_budget {
public:
  explicit payload_budget(std::uint64_t limit) : limit_(limit) {}
  /// Counts `bytes` as announced, unless that would pass the limit (false then).
  bool take(std::uint64_t bytes);
  /// `bytes` announced before were delivered, or their connection went.
  void give(std::uint64_t bytes) { used_.fetch_sub(bytes); }
  std::uint64_t limit() const { return limit_; }
  std::uint64_t used() const { return used_.load(); }

private:
  std::atomic<std::uint64_t> used_{0};
  const std::uint64_t limit_;
};

class basp_check {
public:
  /// Which side's stream is checked: a coordinator reads what nodes send (their first frame is a
  /// client handshake), a node reads what the coordinator sends (a server handshake first).
  enum class sender { client, server };

  /// The largest payload one frame may announce. Herd's largest control message is a worker's
  /// parameter snapshot for evaluation, a few MB for the shipped models.
  static constexpr std::uint32_t default_max_payload_bytes = 256u << 20;

  /// The largest payload a handshake may announce: a handshake names a node, its application and
  /// the published actor, some hundred bytes.
  static constexpr std::uint32_t max_handshake_payload_bytes = 64u << 10;

  static constexpr std::size_t header_bytes = 32;

  /// The most values one payload may hold that hold a CAF message in turn (a message, an error
  /// and its context, a down or exit message and its reason): CAF reads them recursively, and
  /// some ten thousand nested in a few hundred KB overflow its stack. Herd's own nest two at most.
  static constexpr std::uint32_t max_messages_in_a_payload = 64;

  /// With a `budget`, a frame whose payload would take the announced bytes of all the streams
  /// sharing it past its limit breaks the stream.
  explicit basp_check(sender from, std::uint32_t max_payload_bytes = default_max_payload_bytes,
                      std::shared_ptr<payload_budget> budget = nullptr);
  ~basp_check();
  basp_check(basp_check&& other) noexcept = default; // the budget moves with what it counts
  basp_check& operator=(basp_check&&) = delete;
  basp_check(const basp_check&) = delete;
  basp_check& operator=(const basp_check&) = delete;

  /// Feeds the next `size` bytes of the stream. Returns "" while the stream is well formed, else
  /// why it is not (the same text from then on).
  const std::string& feed(const char* data, std::size_t size);

  /// Frames whose header has been checked so far.
  std::uint64_t frames() const { return frames_; }

private:
  void check_header();
  // The payload's next bytes: counts the messages in it, and finds the CAF types Herd never
  // sends (a group, whose every name CAF keeps for the process's life; a configuration value,
  // read recursively too). Patterns split between two feeds are found through carry_.
  void check_payload(const char* data, std::size_t size);

  sender from_;
  std::uint32_t max_payload_;
  std::array<unsigned char, header_bytes> header_{};
  std::size_t header_filled_ = 0;
  std::uint64_t payload_left_ = 0;
  std::uint64_t frames_ = 0;
  std::uint32_t messages_ = 0; // values nesting a message in the payload being read
  std::string carry_;          // its last bytes read, fewer than the longest pattern
  std::string problem_;
  std::shared_ptr<payload_budget> budget_; // counts payload_left_; null once moved from
};

} // namespace herd::cluster
