#include "comm/sealing.hpp"

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

// HKDF-SHA256 of the plane key, for the direction `sender` -> `receiver`.
plane_key direction_key(const plane_key& key, int sender, int receiver) {
  static const char salt[] = "herd data plane, AES-256-GCM";
  const std::string info = "from " + std::to_string(sender) + " to " + std::to_string(receiver);
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

// The associated data: the message's slot and its index in that slot.
std::array<std::uint8_t, 12> place_of(std::uint64_t slot, std::uint32_t index) {
  std::array<std::uint8_t, 12> place{};
  put_le(place.data(), slot, 8);
  put_le(place.data() + 8, index, 4);
  return place;
}

// EVP takes lengths as int; messages are cut into pieces that fit.
constexpr std::size_t max_piece = std::size_t{1} << 30;

// AES-256-GCM under `key` with the nonce of `sequence` and the place (`slot`, `index`) as
// associated data, over `bytes` from `in` to `out`: the part sealing and opening share (EVP's
// Cipher calls, `encrypting` choosing the way). False when OpenSSL fails; the tag is the caller's.
bool gcm_pass(EVP_CIPHER_CTX* context, bool encrypting, const plane_key& key,
              std::uint64_t sequence, std::uint64_t slot, std::uint32_t index,
              const std::uint8_t* in, std::uint8_t* out, std::size_t bytes) {
  const auto nonce = nonce_of(sequence);
  const auto place = place_of(slot, index);
  int length = 0;
  bool ok = EVP_CipherInit_ex(context, EVP_aes_256_gcm(), nullptr, key.data(), nonce.data(),
                              encrypting ? 1 : 0) == 1 &&
            EVP_CipherUpdate(context, nullptr, &length, place.data(),
                             static_cast<int>(place.size())) == 1;
  for (std::size_t done = 0; ok && done < bytes; done += max_piece) {
    const auto piece = static_cast<int>(std::min(max_piece, bytes - done));
    ok = EVP_CipherUpdate(context, out + done, &length, in + done, piece) == 1;
  }
  return ok;
}

} // namespace

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

  // Accepts `sequence` once; "" or why not.
  std::string accept(std::uint64_t sequence) {
    std::lock_guard<std::mutex> guard(mutex);
    if (seen.empty())
      seen.assign(window / 64, 0);
    auto bit = [this](std::uint64_t n) -> std::uint64_t& { return seen[(n % window) / 64]; };
    auto mask = [](std::uint64_t n) { return std::uint64_t{1} << (n % 64); };
    if (sequence == 0)
      return "sequence number 0, which no sender uses";
    if (sequence > highest) {
      if (sequence - highest >= window)
        std::fill(seen.begin(), seen.end(), 0);
      else
        for (std::uint64_t n = highest + 1; n < sequence; ++n)
          bit(n) &= ~mask(n);
      highest = sequence;
      bit(sequence) |= mask(sequence);
      return {};
    }
    if (highest - sequence >= window)
      return "sequence number " + std::to_string(sequence) + " is older than the newest " +
             std::to_string(window) + " (" + std::to_string(highest) + " came before)";
    if ((bit(sequence) & mask(sequence)) != 0)
      return "sequence number " + std::to_string(sequence) + " came before: a replay";
    bit(sequence) |= mask(sequence);
    return {};
  }
};

message_sealer::message_sealer(const plane_key& key, int rank, int size)
    : rank_(rank), size_(size) {
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
  const std::uint64_t sequence = way.next.fetch_add(1);
  auto* out = static_cast<std::uint8_t*>(message);
  put_le(out, sequence, 8);
  auto context = make_context();
  int length = 0;
  const bool ok = gcm_pass(context.get(), true, way.key, sequence, slot, index,
                           static_cast<const std::uint8_t*>(plain), out + header_bytes, bytes) &&
                  EVP_CipherFinal_ex(context.get(), out + header_bytes + bytes, &length) == 1 &&
                  EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_GET_TAG,
                                      static_cast<int>(tag_bytes), out + header_bytes + bytes) == 1;
  if (!ok)
    throw std::runtime_error(openssl_error("cannot seal a data-plane message (AES-256-GCM)"));
}

std::string message_sealer::open(int peer, std::uint64_t slot, std::uint32_t index,
                                 const void* message, std::size_t bytes, void* plain) {
  direction& way = from(peer);
  const auto* in = static_cast<const std::uint8_t*>(message);
  const std::uint64_t sequence = get_le64(in);
  // The tag is copied out first: the plain text may overwrite the message in place.
  std::array<std::uint8_t, tag_bytes> tag{};
  std::memcpy(tag.data(), in + header_bytes + bytes, tag_bytes);
  auto context = make_context();
  auto* out = static_cast<std::uint8_t*>(plain);
  if (!gcm_pass(context.get(), false, way.key, sequence, slot, index, in + header_bytes, out,
                bytes))
    throw std::runtime_error(openssl_error("cannot open a data-plane message (AES-256-GCM)"));
  int length = 0;
  if (EVP_CIPHER_CTX_ctrl(context.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(tag_bytes),
                          tag.data()) != 1 ||
      EVP_CipherFinal_ex(context.get(), out + bytes, &length) != 1) {
    ERR_clear_error();
    return "it does not authenticate: it was not sealed by rank " + std::to_string(peer) +
           " with this plane's key for this place (slot " + std::to_string(slot) + ", message " +
           std::to_string(index) + "), or it was changed on the way";
  }
  return way.accept(sequence);
}

} // namespace herd::comm
