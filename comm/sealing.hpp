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

/// The secret of one data-plane generation: every rank of the plane holds the same one (handed out
/// over the control plane), and nobody else does.
using plane_key = std::array<std::uint8_t, 32>;

/// 32 bytes from OpenSSL's random generator; throws std::runtime_error if it has none.
plane_key random_plane_key();

/// Seals and opens the messages of one rank of a plane of `size` ranks.
///
/// A message is [sequence number, 8 bytes][ciphertext, as long as the plain bytes][tag, 16 bytes].
/// The key of the direction a -> b is HKDF-SHA256 of the plane key with "from a to b": a message
/// one peer sealed for another opens nowhere else. The nonce is the direction's sequence number,
/// which the sender counts up from 1 and never repeats: no two messages share a key and a nonce.
/// The associated data is the message's slot and its index among that slot's messages (the order
/// in which both ends post them), so a message moved to another place does not open.
///
/// The receiver accepts each sequence number once (a window of the newest 65536 per direction:
/// messages of concurrent operations arrive out of order), so a replayed message is rejected even
/// when its place comes round again. Thread-safe: operations on several threads seal and open.
class message_sealer {
public:
  static constexpr std::size_t header_bytes = 8;
  static constexpr std::size_t tag_bytes = 16;
  static constexpr std::size_t overhead = header_bytes + tag_bytes;
  static constexpr std::uint64_t window = std::uint64_t{1} << 16;

  message_sealer(const plane_key& key, int rank, int size);
  ~message_sealer();
  message_sealer(const message_sealer&) = delete;
  message_sealer& operator=(const message_sealer&) = delete;

  /// `bytes` of `plain` for `peer`, as message `index` of `slot`, into `message` (bytes + overhead
  /// long). `plain` may be message + header_bytes (sealed in place); otherwise they must not
  /// overlap.
  void seal(int peer, std::uint64_t slot, std::uint32_t index, const void* plain, std::size_t bytes,
            void* message);

  /// The message `peer` sealed as message `index` of `slot`, `bytes` of plain text, opened into
  /// `plain` (which may be message + header_bytes). Returns "" when it opens, and otherwise why it
  /// was rejected (`plain` then holds nothing to use).
  std::string open(int peer, std::uint64_t slot, std::uint32_t index, const void* message,
                   std::size_t bytes, void* plain);

private:
  struct direction;
  direction& toward(int peer);
  direction& from(int peer);

  const int rank_;
  const int size_;
  std::vector<std::unique_ptr<direction>> sending_;   // by peer
  std::vector<std::unique_ptr<direction>> receiving_; // by peer
};

} // namespace herd::comm
