// Checks the framing of CAF 0.17's remoting protocol; see basp_check.hpp.
#include "cluster/basp_check.hpp"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

namespace herd::cluster {

namespace {

// The operations of BASP (caf/io/basp/message_type.hpp).
enum operation : unsigned char {
  server_handshake = 0,
  client_handshake = 1,
  direct_message = 2,
  routed_message = 3,
  monitor_message = 4,
  down_message = 5,
  heartbeat = 6,
};

const char* operation_name(unsigned char op) {
  switch (op) {
  case server_handshake:
    return "server handshake";
  case client_handshake:
    return "client handshake";
  case direct_message:
    return "direct message";
  case routed_message:
    return "routed message";
  case monitor_message:
    return "monitor message";
  case down_message:
    return "down message";
  case heartbeat:
    return "heartbeat";
  default:
    return "unknown operation";
  }
}

template <class Unsigned>
Unsigned big_endian(const unsigned char* bytes) {
  Unsigned value = 0;
  for (std::size_t i = 0; i < sizeof(Unsigned); ++i)
    value = static_cast<Unsigned>((value << 8) | bytes[i]);
  return value;
}

// The header's fields, laid out as CAF's binary serializer writes them.
struct header_fields {
  unsigned char operation;
  std::uint32_t payload_len;
  std::uint64_t operation_data;
  std::uint64_t source_actor;
  std::uint64_t dest_actor;
};

header_fields parse(const unsigned char* bytes) {
  return {bytes[0], big_endian<std::uint32_t>(bytes + 4), big_endian<std::uint64_t>(bytes + 8),
          big_endian<std::uint64_t>(bytes + 16), big_endian<std::uint64_t>(bytes + 24)};
}

// CAF's own validity rules (caf::io::basp::valid), plus the one CAF misses: a handshake always
// carries a payload (CAF reads it through a null pointer otherwise).
std::string invalid_because(const header_fields& h) {
  switch (h.operation) {
  case server_handshake:
    if (h.operation_data == 0)
      return "a server handshake without a protocol version";
    if (h.payload_len == 0)
      return "a server handshake without a payload";
    return {};
  case client_handshake:
    if (h.source_actor != 0 || h.dest_actor != 0)
      return "a client handshake that names actors";
    if (h.payload_len == 0)
      return "a client handshake without a payload";
    return {};
  case direct_message:
  case routed_message:
    if (h.dest_actor == 0 || h.payload_len == 0)
      return std::string("a ") + operation_name(h.operation) + " without a receiver or a payload";
    return {};
  case monitor_message:
    if (h.payload_len == 0 || h.operation_data != 0)
      return "a malformed monitor message";
    return {};
  case down_message:
    if (h.source_actor == 0 || h.dest_actor != 0 || h.payload_len == 0 || h.operation_data != 0)
      return "a malformed down message";
    return {};
  case heartbeat:
    if (h.source_actor != 0 || h.dest_actor != 0 || h.payload_len != 0 || h.operation_data != 0)
      return "a malformed heartbeat";
    return {};
  default:
    return "operation " + std::to_string(h.operation) + " (not a CAF remoting message)";
  }
}

} // namespace

bool payload_budget::take(std::uint64_t bytes) {
  std::uint64_t used = used_.load();
  do {
    if (bytes > limit_ || used > limit_ - bytes)
      return false;
  } while (!used_.compare_exchange_weak(used, used + bytes));
  return true;
}

basp_check::basp_check(sender from, std::uint32_t max_payload_bytes,
                       std::shared_ptr<payload_budget> budget)
    : from_(from), max_payload_(max_payload_bytes), budget_(std::move(budget)) {}

basp_check::~basp_check() {
  if (budget_)
    budget_->give(payload_left_);
}

const std::string& basp_check::feed(const char* data, std::size_t size) {
  while (size > 0 && problem_.empty()) {
    if (payload_left_ > 0) {
      const auto skipped = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, size));
      check_payload(data, skipped);
      payload_left_ -= skipped;
      if (budget_)
        budget_->give(skipped);
      data += skipped;
      size -= skipped;
      continue;
    }
    const std::size_t taken = std::min(header_bytes - header_filled_, size);
    std::copy(data, data + taken, header_.begin() + static_cast<std::ptrdiff_t>(header_filled_));
    header_filled_ += taken;
    data += taken;
    size -= taken;
    if (header_filled_ == header_bytes) {
      header_filled_ = 0;
      check_header();
    }
  }
  return problem_;
}

void basp_check::check_payload(const char* data, std::size_t size) {
  // A CAF message is written as its type names joined by '+' after "@<>" ("@<>+@atom+@str"); a
  // value that holds another message names its type so: a message, an error (its context), a
  // down or exit message (their reason, an error). Whole names, not "@<>": three bytes turn up
  // by chance in a snapshot's megabytes of floats, nine do not.
  constexpr std::array<std::string_view, 4> nesting = {"+@message", "+@error", "+@down", "+@exit"};
  // A byte vector (@charbuf) is sized to the count its sender wrote before its bytes are read:
  // Herd's bytes travel as herd.bytes, which reads only the bytes that are there.
  constexpr std::array<std::pair<std::string_view, std::string_view>, 3> never_sent = {
      {{"+@group", "group"},
       {"+@config_value", "configuration value"},
       {"+@charbuf", "byte vector"}}};
  constexpr std::size_t longest = 14; // "+@config_value"
  // In `text`, what begins before `starts_before` and ends after `ends_after`: the bytes carried
  // over from the last feed were searched then, so only what crosses into this feed is new.
  const auto search = [&](std::string_view text, std::size_t starts_before,
                          std::size_t ends_after) {
    const auto counts = [&](std::size_t at, std::size_t length) {
      return at < starts_before && at + length > ends_after;
    };
    for (const auto& type : nesting)
      for (auto at = text.find(type); at != std::string_view::npos; at = text.find(type, at + 1))
        messages_ += counts(at, type.size()) ? 1 : 0;
    for (const auto& [type, what] : never_sent)
      for (auto at = text.find(type); at != std::string_view::npos; at = text.find(type, at + 1))
        if (counts(at, type.size()) && problem_.empty())
          problem_ = "frame " + std::to_string(frames_) + ": a message holding a CAF " +
                     std::string(what) + " (Herd sends none)";
  };
  std::string seam = carry_;
  seam.append(data, std::min(size, longest - 1));
  search(seam, carry_.size(), carry_.size());
  search(std::string_view(data, size), size, 0);
  if (problem_.empty() && messages_ > max_messages_in_a_payload)
    problem_ = "frame " + std::to_string(frames_) + ": a payload nesting more than " +
               std::to_string(max_messages_in_a_payload) + " messages, errors or exit reasons";
  if (size >= longest - 1)
    carry_.assign(data + size - (longest - 1), longest - 1);
  else
    carry_ = seam.substr(seam.size() - std::min(seam.size(), longest - 1));
}

void basp_check::check_header() {
  const auto h = parse(header_.data());
  const auto prefix = "frame " + std::to_string(frames_ + 1) + ": ";
  std::string why = invalid_because(h);
  const unsigned char first = from_ == sender::client ? client_handshake : server_handshake;
  if (why.empty() && frames_ == 0 && h.operation != first)
    why = std::string("the first message is a ") + operation_name(h.operation) + ", not a " +
          operation_name(first);
  const bool handshake = h.operation == client_handshake || h.operation == server_handshake;
  const std::uint32_t most =
      handshake ? std::min(max_payload_, max_handshake_payload_bytes) : max_payload_;
  if (why.empty() && h.payload_len > most)
    why = "a payload of " + std::to_string(h.payload_len) + " bytes (at most " +
          std::to_string(most) + (handshake ? " for a handshake)" : ")");
  if (why.empty() && budget_ && !budget_->take(h.payload_len))
    why = "a payload of " + std::to_string(h.payload_len) +
          " bytes, while the peers' frames already announce " + std::to_string(budget_->used()) +
          " bytes not yet sent (at most " + std::to_string(budget_->limit()) + " in all)";
  if (!why.empty()) {
    problem_ = prefix + why;
    return;
  }
  ++frames_;
  payload_left_ = h.payload_len;
  messages_ = 0;
  carry_.clear();
}

} // namespace herd::cluster
