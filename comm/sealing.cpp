#include "comm/sealing.hpp"

#include "comm/task_pool.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <stdexcept>

namespace herd::comm {

namespace {

std::string openssl_error(const char* what) {
  const unsigned long code = ERR_get_error();
  char text[256] = "no reason given";
  if (code != 0)
    ERR_error_string_n(code, text, sizeof text);
  return std::string(what) + ": " + text;
}

void put_le(std::uint8_t* to, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    to[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint64_t get_le64(const std::uint8_t* from) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = value << 8 | from[i];
  return value;
}

// HKDF-SHA256 of the plane key with `info`.
plane_key derive(const plane_key& key, const std::string& info) {
  static const char salt[] = "herd data plane, AES-256-GCM";
  plane_key derived{};
  std::size_t length = derived.size();
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> context(
      EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr), EVP_PKEY_CTX_free);
  if (!context || EVP_PKEY_derive_init(context.get()) <= 0 ||
      EVP_PKEY_CTX_set_hkdf_md(context.get(), EVP_sha256()) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_salt(context.get(), reinterpret_cast<const unsigned char*>(salt),
                                  sizeof salt - 1) <= 0 ||
      EVP_PKEY_CTX_set1_hkdf_key(context.get(), key.data(), static_cast<int>(key.size())) <= 0 ||
      EVP_PKEY_CTX_add1_hkdf_info(context.get(),
                                  reinterpret_cast<const unsigned char*>(info.data()),
                                  static_cast<int>(info.size())) <= 0 ||
      EVP_PKEY_derive(context.get(), derived.data(), &length) <= 0 || length != derived.size())
    throw std::runtime_error(openssl_error("cannot derive the data plane's keys (HKDF-SHA256)"));
  return derived;
}

// The key of the direction `sender` -> `receiver`.
plane_key direction_key(const plane_key& key, int sender, int receiver) {
  return derive(key, "from " + std::to_string(sender) + " to " + std::to_string(receiver));
}

// One AES-256-GCM context per call: contexts are not shared between threads, and setting the key
// costs far less than a message of any size worth sealing.
using cipher_context = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

cipher_context make_context() {
  cipher_context context(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  if (!context)
    throw std::runtime_error(openssl_error("cannot make a cipher context"));
  return context;
}

// The 12-byte nonce: four zero bytes, then the sequence number (little-endian).
std::array<std::uint8_t, 12> nonce_of(std::uint64_t sequence) {
  std::array<std::uint8_t, 12> nonce{};
  put_le(nonce.data() + 4, sequence, 8);
  return nonce;
}

// Where a piece belongs, as associated data: the message's slot, its index in that slot, the
// piece's number in the message and the message's length in bytes (so that a message cut short
// at a piece's end, or a piece of a message of another length, does not open).
struct place {
  std::uint64_t slot = 0;
  std::uint32_t index = 0;
  std::uint32_t piece = 0;
  std::uint64_t bytes = 0;

  std::array<std::uint8_t, 24> associated() const {
    std::array<std::uint8_t, 24> data{};
    put_le(data.data(), slot, 8);
    put_le(data.data() + 8, index, 4);
    put_le(data.data() + 12, piece, 4);
    put_le(data.data() + 16, bytes, 8);
    return data;
  }
};

// AES-256-GCM under `key` with the nonce of `sequence` and `where` as associated data, over
// `bytes` (one piece) from `in` to `out`: the part sealing and opening share (EVP's Cipher calls,
// `encrypting` choosing the way). False when OpenSSL fails; the tag is the caller's.
bool gcm_pass(EVP_CIPHER_CTX* context, bool encrypting, const plane_key& key,
              std::uint64_t sequence, const place& where, const std::uint8_t* in, std::uint8_t* out,
              std::size_t bytes) {
  const auto nonce = nonce_of(sequence);
  const auto associated = where.associated();
  int length = 0;
  return EVP_CipherInit_ex(context, EVP_aes_256_gcm(), nullptr, key.data(), nonce.data(),
                           encrypting ? 1 : 0) == 1 &&
         EVP_CipherUpdate(context, nullptr, &length, associated.data(),
                          static_cast<int>(associated.size())) == 1 &&
         (bytes == 0 || EVP_CipherUpdate(context, out, &length, in, static_cast<int>(bytes)) == 1);
}

// Piece `piece` of a message of `bytes` plain bytes: where its plain bytes start and how many.
std::size_t piece_begin(std::size_t piece) {
  return piece * message_sealer::piece_bytes;
}
std::size_t piece_size(std::size_t bytes, std::size_t piece) {
  return std::min(message_sealer::piece_bytes, bytes - piece_begin(piece));
}
std::size_t piece_message_begin(std::size_t piece) {
  return piece * (message_sealer::piece_bytes + message_sealer::overhead);
}

// A message of several pieces cannot be sealed or opened in place: its pieces shift by their
// overheads, and they are sealed at once.
void check_apart(const void* plain, const void* message, std::size_t bytes) {
  const auto pieces = message_sealer::pieces(bytes);
  const auto p = reinterpret_cast<std::uintptr_t>(plain);
  const auto m = reinterpret_cast<std::uintptr_t>(message);
  const bool one_in_place = pieces == 1 && p == m + message_sealer::header_bytes;
  const bool apart = p + bytes <= m || m + message_sealer::sealed_bytes(bytes) <= p;
  if (!one_in_place && !apart)
    throw std::invalid_argument("message_sealer: the plain bytes overlap the message of " +
                                std::to_string(pieces) + " pieces");
}

} // namespace

plane_key lane_key(const plane_key& key, int lane) {
  if (lane < 0)
    throw std::invalid_argument("lane_key: lane " + std::to_string(lane) + " is negative");
  return lane == 0 ? key : derive(key, "lane " + std::to_string(lane));
}

plane_key random_plane_key() {
  plane_key key{};
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1)
    throw std::runtime_error(openssl_error("cannot draw a data plane key"));
  return key;
}

struct message_sealer::direction {
  plane_key key{};
  std::atomic<std::uint64_t> next{1}; // sending: the next sequence number
  // Receiving: the highest sequence number accepted, and which of the `window` below it were.
  std::mutex mutex;
  std::uint64_t highest = 0;
  std::vector<std::uint64_t> seen;

  // Accepts every number of `sequences` once, or none of them; "" or why not.
  std::string accept_all(const std::vector<std::uint64_t>& sequences) {
    std::lock_guard<std::mutex> guard(mutex);
    for (const std::uint64_t sequence : sequences)
      if (std::string refused = check(sequence); !refused.empty())
        return refused;
    for (const std::uint64_t sequence : sequences)
      mark(sequence);
    return {};
  }

private:
  std::uint64_t& bit(std::uint64_t n) {
    if (seen.empty())
      seen.assign(window / 64, 0);
    return seen[(n % window) / 64];
  }
  static std::uint64_t mask(std::uint64_t n) { return std::uint64_t{1} << (n % 64); }

  // Why `sequence` cannot be accepted now, or "".
  std::string check(std::uint64_t sequence) {
    if (sequence == 0)
      return "sequence number 0, which no sender uses";
    if (sequence > highest)
      return {};
    if (highest - sequence >= window)
      return "sequence number " + std::to_string(sequence) + " is older than the newest " +
             std::to_string(window) + " (" + std::to_string(highest) + " came before)";
    if ((bit(sequence) & mask(sequence)) != 0)
      return "sequence number " + std::to_string(sequence) + " came before: a replay";
    return {};
  }

  // Records `sequence` (checked) as seen, moving the window up to it when it is the newest.
  void mark(std::uint64_t sequence) {
    if (sequence > highest) {
      if (sequence - highest >= window)
        std::fill(seen.begin(), seen.end(), 0);
      else
        for (std::uint64_t n = highest + 1; n < sequence; ++n)
          bit(n) &= ~mask(n);
      highest = sequence;
    }
    bit(sequence) |= mask(sequence);
  }
};

message_sealer::message_sealer(const plane_key& key, int rank, int size, int threads)
    : rank_(rank), size_(size), pool_(std::make_unique<task_pool>(threads)) {
  if (size < 1 || rank < 0 || rank >= size)
    throw std::invalid_argument("message_sealer: rank " + std::to_string(rank) +
                                " is outside a plane of size " + std::to_string(size));
  for (int peer = 0; peer < size; ++peer) {
    sending_.push_back(std::make_unique<direction>());
    receiving_.push_back(std::make_unique<direction>());
    if (peer == rank)
      continue;
    sending_.back()->key = direction_key(key, rank, peer);
    receiving_.back()->key = direction_key(key, peer, rank);
  }
}

message_sealer::~message_sealer() = default;

message_sealer::direction& message_sealer::toward(int peer) {
  if (peer < 0 || peer >= size_ || peer == rank_)
    throw std::invalid_argument("message_sealer: no direction from rank " + std::to_string(rank_) +
                                " to " + std::to_string(peer));
  return *sending_[static_cast<std::size_t>(peer)];
}

message_sealer::direction& message_sealer::from(int peer) {
  if (peer < 0 || peer >= size_ || peer == rank_)
    throw std::invalid_argument("message_sealer: no direction from rank " + std::to_string(peer) +
                                " to " + std::to_string(rank_));
  return *receiving_[static_cast<std::size_t>(peer)];
}

void message_sealer::seal(int peer, std::uint64_t slot, std::uint32_t index, const void* plain,
                          std::size_t bytes, void* message) {
  direction& way = toward(peer);
  check_apart(plain, message, bytes);
  const std::size_t count = pieces(bytes);
  const std::uint64_t first = way.next.fetch_add(count);
  pool_->run(count, [&](std::size_t piece) {
    const std::uint64_t sequence = first + piece;
    const std::size_t n = piece_size(bytes, piece);
    auto* out = static_cast<std::uint8_t*>(message) + piece_message_begin(piece);
    const auto* in = static_cast<const std::uint8_t*>(plain) + piece_begin(piece);
    put_le(out, sequence, 8);
    auto context = make_context();
    int length = 0;
    const place where{slot, index, static_cast<std::uint32_t>(piece), bytes};
    const bool ok =
        gcm_pass(context.get(), true, way.key, sequence, where, in, out + header_bytes, n) &&
        EVP_CipherFinal_ex(context.get(), out + header_bytes + n, &length) == 1 &&
        EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag_bytes),
                            out + header_bytes + n) == 1;
    if (!ok)
      throw std::runtime_error(openssl_error("cannot seal a data-plane message (AES-256-GCM)"));
  });
}

std::string message_sealer::open(int peer, std::uint64_t slot, std::uint32_t index,
                                 const void* message, std::size_t bytes, void* plain) {
  direction& way = from(peer);
  check_apart(plain, message, bytes);
  const std::size_t count = pieces(bytes);
  std::vector<std::uint64_t> sequences(count);
  std::vector<char> authentic(count, 0);
  pool_->run(count, [&](std::size_t piece) {
    const std::size_t n = piece_size(bytes, piece);
    const auto* in = static_cast<const std::uint8_t*>(message) + piece_message_begin(piece);
    auto* out = static_cast<std::uint8_t*>(plain) + piece_begin(piece);
    sequences[piece] = get_le64(in);
    // The tag is copied out first: the plain text may overwrite the message in place.
    std::array<std::uint8_t, tag_bytes> tag{};
    std::memcpy(tag.data(), in + header_bytes + n, tag_bytes);
    auto context = make_context();
    const place where{slot, index, static_cast<std::uint32_t>(piece), bytes};
    if (!gcm_pass(context.get(), false, way.key, sequences[piece], where, in + header_bytes, out,
                  n))
      throw std::runtime_error(openssl_error("cannot open a data-plane message (AES-256-GCM)"));
    int length = 0;
    authentic[piece] = EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_SET_TAG,
                                           static_cast<int>(tag_bytes), tag.data()) == 1 &&
                       EVP_CipherFinal_ex(context.get(), out + n, &length) == 1;
    if (!authentic[piece])
      ERR_clear_error();
  });
  for (std::size_t piece = 0; piece < count; ++piece)
    if (!authentic[piece])
      return "it does not authenticate: it was not sealed by rank " + std::to_string(peer) +
             " with this plane's key for this place (slot " + std::to_string(slot) + ", message " +
             std::to_string(index) +
             (count > 1 ? ", piece " + std::to_string(piece) + " of " + std::to_string(count)
                        : std::string()) +
             "), or it was changed on the way";
  // A sender numbers a message's pieces as one block: pieces of several messages do not open
  // as one, even where each piece would.
  for (std::size_t piece = 1; piece < count; ++piece)
    if (sequences[piece] != sequences[0] + piece)
      return "its pieces were not sealed as one message (piece " + std::to_string(piece) +
             " has sequence number " + std::to_string(sequences[piece]) + ", not " +
             std::to_string(sequences[0] + piece) + ")";
  return way.accept_all(sequences);
}

int message_sealer::threads() const {
  return pool_->threads();
}

} // namespace herd::comm
