// The framing check of CAF's remoting protocol on its own: well-formed streams pass however they
// are split, and each rule that protects CAF's middleman refuses the frame that breaks it.
#include <chrono>
#include <gtest/gtest.h>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cluster/basp_check.hpp"
#include "cluster/refusal_log.hpp"

namespace {

using herd::cluster::basp_check;

void put_big_endian(std::string& out, std::uint64_t value, int bytes) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((value >> shift) & 0xff));
}

struct header {
  unsigned char operation = 2;
  std::uint32_t payload_len = 0;
  std::uint64_t operation_data = 0;
  std::uint64_t source_actor = 0;
  std::uint64_t dest_actor = 0;
};

std::string encode(const header& h, const std::string& payload) {
  std::string bytes{static_cast<char>(h.operation), 0, 0, 0};
  put_big_endian(bytes, h.payload_len, 4);
  put_big_endian(bytes, h.operation_data, 8);
  put_big_endian(bytes, h.source_actor, 8);
  put_big_endian(bytes, h.dest_actor, 8);
  return bytes + payload;
}

std::string frame(unsigned char operation, const std::string& payload,
                  std::uint64_t operation_data = 0, std::uint64_t source_actor = 0,
                  std::uint64_t dest_actor = 0) {
  header h;
  h.operation = operation;
  h.payload_len = static_cast<std::uint32_t>(payload.size());
  h.operation_data = operation_data;
  h.source_actor = source_actor;
  h.dest_actor = dest_actor;
  return encode(h, payload);
}

// A node's usual stream: handshake, repeated handshake, messages, heartbeats.
std::string a_clients_stream() {
  return frame(1, std::string(24, 'n')) + frame(1, std::string(24, 'n')) +
         frame(2, std::string(300, 'm'), 0, 4, 1) + frame(6, "") +
         frame(3, std::string(90, 'r'), 0, 4, 2) + frame(4, std::string(48, 'x'), 0, 0, 7) +
         frame(5, std::string(50, 'd'), 0, 7, 0) + frame(6, "");
}

TEST(basp_check, a_well_formed_stream_passes_however_it_is_split) {
  const std::string stream = a_clients_stream();
  std::mt19937 generator(3);
  for (int split = 0; split < 50; ++split) {
    basp_check check(basp_check::sender::client);
    std::size_t at = 0;
    while (at < stream.size()) {
      const std::size_t piece = std::min<std::size_t>(stream.size() - at, 1 + generator() % 64);
      ASSERT_EQ(check.feed(stream.data() + at, piece), "") << "split " << split << " at " << at;
      at += piece;
    }
    EXPECT_EQ(check.frames(), 8u);
  }
  basp_check byte_by_byte(basp_check::sender::client);
  for (char byte : stream)
    ASSERT_EQ(byte_by_byte.feed(&byte, 1), "");
  EXPECT_EQ(byte_by_byte.frames(), 8u);
}

TEST(basp_check, a_servers_stream_starts_with_a_server_handshake) {
  basp_check server(basp_check::sender::server);
  const std::string good = frame(0, std::string(40, 's'), 1) + frame(2, "m", 0, 1, 2);
  EXPECT_EQ(server.feed(good.data(), good.size()), "");
  basp_check client(basp_check::sender::client);
  const std::string wrong = frame(0, std::string(40, 's'), 1);
  EXPECT_EQ(client.feed(wrong.data(), wrong.size()),
            "frame 1: the first message is a server handshake, not a client handshake");
}

struct broken_case {
  std::string name;
  std::string bytes;
  std::string why;
};

TEST(basp_check, each_rule_refuses_the_frame_that_breaks_it) {
  const std::string hello = frame(1, "node");
  std::vector<broken_case> cases{
      {"the 32 bytes of the red-team trial", std::string(1, '\x01') + std::string(31, '\0'),
       "frame 1: a client handshake without a payload"},
      {"a handshake naming actors", frame(1, "node", 0, 1, 0),
       "frame 1: a client handshake that names actors"},
      {"a server handshake without a version", hello + frame(0, "x", 0),
       "frame 2: a server handshake without a protocol version"},
      {"a server handshake without a payload", hello + frame(0, "", 1),
       "frame 2: a server handshake without a payload"},
      {"a message without a receiver", hello + frame(2, "x", 0, 1, 0),
       "frame 2: a direct message without a receiver or a payload"},
      {"a routed message without a payload", hello + frame(3, "", 0, 1, 2),
       "frame 2: a routed message without a receiver or a payload"},
      {"a monitor message with operation data", hello + frame(4, "x", 5),
       "frame 2: a malformed monitor message"},
      {"a down message to an actor", hello + frame(5, "x", 0, 1, 1),
       "frame 2: a malformed down message"},
      {"a heartbeat with a payload", hello + frame(6, "x"), "frame 2: a malformed heartbeat"},
      {"an unknown operation", hello + frame(7, "x"),
       "frame 2: operation 7 (not a CAF remoting message)"},
  };
  for (const auto& c : cases) {
    basp_check check(basp_check::sender::client);
    EXPECT_EQ(check.feed(c.bytes.data(), c.bytes.size()), c.why) << c.name;
  }
}

TEST(basp_check, a_payload_beyond_the_limit_is_refused_before_it_arrives) {
  basp_check check(basp_check::sender::client, 1000);
  header h;
  h.operation = 1;
  h.payload_len = 1001;
  const std::string head = encode(h, "");
  EXPECT_EQ(check.feed(head.data(), head.size()),
            "frame 1: a payload of 1001 bytes (at most 1000 for a handshake)");
  basp_check at_limit(basp_check::sender::client, 1000);
  const std::string fits = frame(1, std::string(1000, 'p'));
  EXPECT_EQ(at_limit.feed(fits.data(), fits.size()), "");
}

// A handshake is some hundred bytes: one announcing more than 64 KiB is refused whatever the
// limit of other frames.
TEST(basp_check, a_handshake_announcing_more_than_64_kib_is_refused) {
  basp_check check(basp_check::sender::client);
  header h;
  h.operation = 1;
  h.payload_len = 256u << 20;
  const std::string head = encode(h, "");
  EXPECT_EQ(check.feed(head.data(), head.size()),
            "frame 1: a payload of 268435456 bytes (at most 65536 for a handshake)");
  // Past the handshake, a message may be as large as the limit.
  basp_check later(basp_check::sender::client);
  const std::string hello = frame(1, std::string(24, 'n'));
  h.operation = 2;
  h.source_actor = 4;
  h.dest_actor = 1;
  const std::string large = hello + encode(h, "");
  EXPECT_EQ(later.feed(large.data(), large.size()), "");
}

// The streams sharing a budget may announce so many bytes not yet sent, in all: a frame past it
// is refused, and bytes come back to it as they arrive or as a check goes.
TEST(basp_check, streams_sharing_a_budget_announce_at_most_its_limit) {
  auto budget = std::make_shared<herd::cluster::payload_budget>(2500);
  const std::string hello = frame(1, std::string(24, 'n'));
  header h;
  h.operation = 2;
  h.payload_len = 1000;
  h.source_actor = 4;
  h.dest_actor = 1;
  const std::string announced = hello + encode(h, ""); // the payload never comes
  basp_check first(basp_check::sender::client, basp_check::default_max_payload_bytes, budget);
  basp_check second(basp_check::sender::client, basp_check::default_max_payload_bytes, budget);
  EXPECT_EQ(first.feed(announced.data(), announced.size()), "");
  EXPECT_EQ(second.feed(announced.data(), announced.size()), "");
  EXPECT_EQ(budget->used(), 2000u); // the handshakes came whole; the two payloads of 1000 not
  {
    basp_check third(basp_check::sender::client, basp_check::default_max_payload_bytes, budget);
    EXPECT_EQ(third.feed(announced.data(), announced.size()),
              "frame 2: a payload of 1000 bytes, while the peers' frames already announce 2000 "
              "bytes not yet sent (at most 2500 in all)");
  }
  // The first one's payload arrives: its bytes come back, and another stream may announce.
  const std::string payload(1000, 'p');
  EXPECT_EQ(first.feed(payload.data(), payload.size()), "");
  EXPECT_EQ(budget->used(), 1000u);
  {
    basp_check fourth(basp_check::sender::client, basp_check::default_max_payload_bytes, budget);
    EXPECT_EQ(fourth.feed(announced.data(), announced.size()), "");
    EXPECT_EQ(budget->used(), 2000u);
  } // its connection goes: what it announced comes back
  EXPECT_EQ(budget->used(), 1000u);
}

// A direct message holding `depth` messages, each inside the one before (an empty forwarding
// stack, then for each level the type names "@<>+@message", then an empty message).
std::string nested_messages(int depth) {
  std::string payload(1, '\0');
  for (int level = 0; level < depth; ++level)
    payload += std::string("\0\0\x0c", 3) + "@<>+@message";
  return payload + std::string("\0\0\x03", 3) + "@<>";
}

// What a stream of a handshake and then `payload` in a direct message gives, fed whole or one
// byte at a time.
std::string problem_of(const std::string& payload, bool byte_by_byte) {
  const std::string stream = frame(1, std::string(24, 'n')) + frame(2, payload, 0, 4, 1);
  basp_check check(basp_check::sender::client);
  if (!byte_by_byte)
    return check.feed(stream.data(), stream.size());
  for (char byte : stream)
    if (!check.feed(&byte, 1).empty())
      break;
  return check.feed(nullptr, 0);
}

// CAF reads nested messages recursively: thirty thousand in 450 KB overflowed its stack and took
// the coordinator down. A payload nests at most 64, however its bytes arrive.
TEST(basp_check, a_payload_of_deeply_nested_messages_is_refused) {
  for (const bool byte_by_byte : {false, true}) {
    EXPECT_EQ(problem_of(nested_messages(64), byte_by_byte), "") << byte_by_byte;
    EXPECT_EQ(problem_of(nested_messages(65), byte_by_byte),
              "frame 2: a payload nesting more than 64 messages, errors or exit reasons")
        << byte_by_byte;
  }
  // The count is the payload's own: many frames of a few messages each pass.
  basp_check check(basp_check::sender::client);
  std::string stream = frame(1, std::string(24, 'n'));
  for (int i = 0; i < 10; ++i)
    stream += frame(2, nested_messages(40), 0, 4, 1);
  EXPECT_EQ(check.feed(stream.data(), stream.size()), "");
}

// A parameter snapshot of 16 million floats (64 MB) holds "@<>" by chance some dozens of times;
// it is no nesting, and passes.
TEST(basp_check, a_large_snapshot_of_floats_passes) {
  std::mt19937 generator(11);
  std::normal_distribution<float> weights(0.0f, 0.01f);
  std::vector<float> parameters(16u << 20);
  for (auto& value : parameters)
    value = weights(generator);
  std::string payload(1, '\0');
  payload += std::string("\0\0\x1b", 3) + "@<>+herd.parameter_snapshot";
  payload.append(reinterpret_cast<const char*>(parameters.data()),
                 parameters.size() * sizeof(float));
  std::size_t by_chance = 0;
  for (auto at = payload.find("@<>"); at != std::string::npos; at = payload.find("@<>", at + 1))
    ++by_chance;
  EXPECT_GT(by_chance, 64u) << "the payload no longer holds what a count of \"@<>\" refused";
  EXPECT_EQ(problem_of(payload, false), "");
}

// CAF keeps every group a message names for the process's life, and reads configuration values
// recursively: Herd sends neither, and a payload naming one is refused.
TEST(basp_check, a_message_holding_a_group_or_a_configuration_value_is_refused) {
  const std::string start("\0\0\x0d", 3);
  for (const bool byte_by_byte : {false, true}) {
    EXPECT_EQ(problem_of(std::string(1, '\0') + start + "@<>+@atom+@str", byte_by_byte), "");
    EXPECT_EQ(problem_of(std::string(1, '\0') + start + "@<>+@group", byte_by_byte),
              "frame 2: a message holding a CAF group (Herd sends none)");
    EXPECT_EQ(problem_of(std::string(1, '\0') + start + "@<>+@str+@config_value", byte_by_byte),
              "frame 2: a message holding a CAF configuration value (Herd sends none)");
    // A byte vector's count is trusted before its bytes are read (4 GiB from five bytes).
    EXPECT_EQ(problem_of(std::string(1, '\0') + start + "@<>+@atom+@str+@charbuf", byte_by_byte),
              "frame 2: a message holding a CAF byte vector (Herd sends none)");
  }
}

TEST(basp_check, a_problem_stays_once_found) {
  basp_check check(basp_check::sender::client);
  const std::string bad = frame(9, "x");
  const std::string why = check.feed(bad.data(), bad.size());
  ASSERT_FALSE(why.empty());
  const std::string good = frame(1, "node");
  EXPECT_EQ(check.feed(good.data(), good.size()), why);
  EXPECT_EQ(check.frames(), 0u);
}

} // namespace

namespace {

using herd::cluster::refusal_log;

// A flood of refusals from one address logs a few lines per window, says when it stops logging
// and, after the window, how many it left out; other addresses are logged all the while.
TEST(refusal_log, an_address_refused_often_is_logged_a_few_times_per_window) {
  refusal_log log(3, std::chrono::seconds(60));
  const auto start = refusal_log::clock::now();
  EXPECT_EQ(log.line("10.0.0.9", "refused a", start), "refused a");
  EXPECT_EQ(log.line("10.0.0.9", "refused b", start), "refused b");
  EXPECT_EQ(log.line("10.0.0.9", "refused c", start),
            "refused c; further refusals from 10.0.0.9 are not logged for 60 s");
  for (int i = 0; i < 40; ++i)
    EXPECT_EQ(log.line("10.0.0.9", "refused d", start + std::chrono::seconds(i)), "");
  EXPECT_EQ(log.line("10.0.0.7", "another node", start + std::chrono::seconds(30)), "another node");
  EXPECT_EQ(log.line("10.0.0.9", "refused e", start + std::chrono::seconds(61)),
            "(40 more refusal(s) from 10.0.0.9 were not logged) refused e");
  EXPECT_EQ(log.line("10.0.0.9", "refused f", start + std::chrono::seconds(62)), "refused f");
}

} // namespace
