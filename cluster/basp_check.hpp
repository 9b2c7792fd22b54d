// Checks the framing of CAF 0.17's remoting protocol (BASP) on a byte stream, before CAF reads
// it. CAF's middleman trusts its peers: a handshake header that announces no payload makes it
// dereference a null pointer (the whole process dies), and a header announcing gigabytes makes it
// allocate them. The gate runs every byte a peer sends through this check and drops a peer whose
// stream breaks a rule, so one broken or hostile peer never takes the process down. Plain C++,
// no CAF: the wire format is written out here (network byte order, 32-byte header).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace herd::cluster {

class basp_check {
public:
  /// Which side's stream is checked: a coordinator reads what nodes send (their first frame is a
  /// client handshake), a node reads what the coordinator sends (a server handshake first).
  enum class sender { client, server };

  /// The largest payload one frame may announce. Herd's largest control message is a worker's
  /// parameter snapshot for evaluation, a few MB for the shipped models.
  static constexpr std::uint32_t default_max_payload_bytes = 256u << 20;

  static constexpr std::size_t header_bytes = 32;

  explicit basp_check(sender from, std::uint32_t max_payload_bytes = default_max_payload_bytes);

  /// Feeds the next `size` bytes of the stream. Returns "" while the stream is well formed, else
  /// why it is not (the same text from then on).
  const std::string& feed(const char* data, std::size_t size);

  /// Frames whose header has been checked so far.
  std::uint64_t frames() const { return frames_; }

private:
  void check_header();

  sender from_;
  std::uint32_t max_payload_;
  std::array<unsigned char, header_bytes> header_{};
  std::size_t header_filled_ = 0;
  std::uint64_t payload_left_ = 0;
  std::uint64_t frames_ = 0;
  std::string problem_;
};

} // namespace herd::cluster
