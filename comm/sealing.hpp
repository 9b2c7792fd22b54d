// Sealed data-plane messages: AES-256-GCM (OpenSSL's EVP, which uses AES-NI where the CPU has it)
// with a key per direction, a sequence number per direction in every nonce, and the message's place
// in its collective (slot and index) bound as associated data. What one rank sends another can be
// read and accepted by that rank alone, once, and only where it was sent to. No OpenSSL header
// here.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace herd::comm {

class task_pool;

/// The secret of one data-plane generation: every rank of the plane holds the same one (handed out
/// over the control plane), and nobody else does.
using plane_key = std::array<std::uint8_t, 32>;

/// 32 bytes from OpenSSL's random generator; throws std::runtime_error if it has none.
plane_key random_plane_key();

/// The key that lane `lane` of a plane of several connections per pair seals with (the plane's
/// own for lane 0; for the others HKDF-SHA256 of it with "lane N"): each lane counts its own
/// sequence numbers, so no two lanes may share a key.
plane_key lane_key(const plane_key& key, int lane);

/// Seals and opens the messages of one rank of a plane of `size` ranks.
///
/// A message is cut into pieces of `piece_bytes` (the last one shorter), each sealed on its own as
/// [sequence number, 8 bytes][ciphertext, as long as its plain bytes][tag, 16 bytes], one after
/// the other: so the pieces of one message are sealed and opened on several threads at once, and
/// how many threads a rank uses never changes the bytes it sends.
/// The key of the direction a -> b is HKDF-SHA256 of the plane key with "from a to b": a message
/// one peer sealed for another opens nowhere else. A piece's nonce is its sequence number in the
/// direction, which the sender counts up from 1 and never repeats: no two pieces share a key and a
/// nonce; a message's pieces take consecutive numbers, and a message whose pieces' numbers are not
/// consecutive is refused (pieces of two messages do not open as one). The associated data is the
/// message's slot, its index among that slot's messages (the order in which both ends post them),
/// the piece's number and the message's length, so a message or a piece moved to another place,
/// or a message cut short, does not open.
///
/// The receiver accepts each sequence number once (a window of the newest 2^19 per direction, 64
/// GiB of pieces: messages of concurrent operations arrive out of order), a message's numbers all
/// or none, so a replayed message or piece is rejected even when its place comes round again.
/// Thread-safe: operations on several threads seal and open.
class message_sealer {
public:
  static constexpr std::size_t header_bytes = 8;
  static constexpr std::size_t tag_bytes = 16;
  static constexpr std::size_t overhead = header_bytes + tag_bytes; // per piece
  static constexpr std::size_t piece_bytes = std::size_t{128} * 1024;
  static constexpr std::uint64_t window = std::uint64_t{1} << 19;

  /// The pieces of a message of `bytes` plain bytes (at least one: an empty message is one tag).
  static constexpr std::size_t pieces(std::size_t bytes) {
    return bytes == 0 ? 1 : (bytes + piece_bytes - 1) / piece_bytes;
  }
  /// How long the sealed message of `bytes` plain bytes is.
  static constexpr std::size_t sealed_bytes(std::size_t bytes) {
    return bytes + pieces(bytes) * overhead;
  }

  /// `threads` (at least 1) seal and open the pieces of one message: the calling thread and
  /// threads - 1 of the sealer's own.
  message_sealer(const plane_key& key, int rank, int size, int threads = 1);
  ~message_sealer();
  message_sealer(const message_sealer&) = delete;
  message_sealer& operator=(const message_sealer&) = delete;

  /// `bytes` of `plain` for `peer`, as message `index` of `slot`, into `message` (sealed_bytes
  /// long). A message of one piece may be sealed in place (`plain` at message + header_bytes);
  /// otherwise the two must not overlap (std::invalid_argument).
  void seal(int peer, std::uint64_t slot, std::uint32_t index, const void* plain, std::size_t bytes,
            void* message);

  /// The message `peer` sealed as message `index` of `slot`, `bytes` of plain text, opened into
  /// `plain` (at message + header_bytes for a message of one piece, or not overlapping it).
  /// Returns "" when it opens, and otherwise why it was rejected (`plain` then holds nothing to
  /// use).
  std::string open(int peer, std::uint64_t slot, std::uint32_t index, const void* message,
                   std::size_t bytes, void* plain);

  /// The threads that seal and open (the constructor's `threads`).
  int threads() const;

private:
  struct direction;
  direction& toward(int peer);
  direction& from(int peer);

  const int rank_;
  const int size_;
  std::unique_ptr<task_pool> pool_;
  std::vector<std::unique_ptr<direction>> sending_;   // by peer
  std::vector<std::unique_ptr<direction>> receiving_; // by peer
};

} // namespace herd::comm
