// Sealed data-plane messages: what opens, and every way a message is refused (changed, forged,
// replayed, moved to another place, meant for another rank, too old).
#include "comm/sealing.hpp"

#include "comm/gloo_plane.hpp"
#include "comm/task_pool.hpp"

#include <algorithm>
#include <cstring>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <numeric>
#include <random>
#include <vector>

namespace herd::comm {
namespace {

using ::testing::HasSubstr;

constexpr std::size_t payload = 1000;

plane_key fixed_key(std::uint8_t seed) {
  plane_key key{};
  for (std::size_t i = 0; i < key.size(); ++i)
    key[i] = static_cast<std::uint8_t>(seed + 7 * i);
  return key;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 generator(seed);
  std::vector<std::uint8_t> bytes(n);
  for (auto& b : bytes)
    b = static_cast<std::uint8_t>(generator());
  return bytes;
}

// Rank 0 and rank 1 of a plane of 3, with the same key.
struct two_ends : ::testing::Test {
  message_sealer sender{fixed_key(1), 0, 3};
  message_sealer receiver{fixed_key(1), 1, 3};
  std::vector<std::uint8_t> plain = random_bytes(payload, 5);

  std::vector<std::uint8_t> sealed(std::uint64_t slot, std::uint32_t index) {
    std::vector<std::uint8_t> message(payload + message_sealer::overhead);
    sender.seal(1, slot, index, plain.data(), payload, message.data());
    return message;
  }
  std::string open(const std::vector<std::uint8_t>& message, std::uint64_t slot,
                   std::uint32_t index, std::vector<std::uint8_t>& into) {
    into.assign(payload, 0);
    return receiver.open(0, slot, index, message.data(), payload, into.data());
  }
};

TEST_F(two_ends, a_sealed_message_opens_where_it_was_sent_and_hides_its_bytes) {
  auto message = sealed(42, 3);
  // The ciphertext is not the plain text.
  EXPECT_NE(0, std::memcmp(message.data() + message_sealer::header_bytes, plain.data(), payload));
  std::vector<std::uint8_t> opened;
  EXPECT_EQ("", open(message, 42, 3, opened));
  EXPECT_EQ(plain, opened);
}

TEST_F(two_ends, sealing_and_opening_in_place_round_trip) {
  std::vector<std::uint8_t> message(payload + message_sealer::overhead);
  std::memcpy(message.data() + message_sealer::header_bytes, plain.data(), payload);
  std::uint8_t* inside = message.data() + message_sealer::header_bytes;
  sender.seal(1, 7, 0, inside, payload, message.data());
  EXPECT_NE(0, std::memcmp(inside, plain.data(), payload));
  EXPECT_EQ("", receiver.open(0, 7, 0, message.data(), payload, inside));
  EXPECT_EQ(0, std::memcmp(inside, plain.data(), payload));
}

TEST_F(two_ends, a_changed_bit_anywhere_is_rejected) {
  const auto original = sealed(1, 0);
  std::vector<std::uint8_t> opened;
  // The sequence number, the ciphertext's first and last bytes, and the tag.
  for (std::size_t at : {std::size_t{0}, message_sealer::header_bytes,
                         message_sealer::header_bytes + payload - 1, original.size() - 1}) {
    auto changed = original;
    changed[at] ^= 0x10;
    EXPECT_THAT(open(changed, 1, 0, opened), HasSubstr("does not authenticate")) << "byte " << at;
  }
  // Untouched, it still opens: the refusals did not spend its sequence number.
  EXPECT_EQ("", open(original, 1, 0, opened));
}

TEST_F(two_ends, a_message_moved_to_another_slot_or_index_is_rejected) {
  const auto message = sealed(9, 2);
  std::vector<std::uint8_t> opened;
  EXPECT_THAT(open(message, 10, 2, opened), HasSubstr("slot 10, message 2"));
  EXPECT_THAT(open(message, 9, 3, opened), HasSubstr("does not authenticate"));
  EXPECT_EQ("", open(message, 9, 2, opened));
}

TEST_F(two_ends, a_replayed_message_is_rejected_even_in_its_own_place) {
  const auto message = sealed(5, 0);
  std::vector<std::uint8_t> opened;
  EXPECT_EQ("", open(message, 5, 0, opened));
  EXPECT_THAT(open(message, 5, 0, opened), HasSubstr("a replay"));
}

TEST_F(two_ends, messages_out_of_order_within_the_window_open_and_older_ones_do_not) {
  std::vector<std::vector<std::uint8_t>> messages;
  for (std::uint32_t i = 0; i < 4; ++i)
    messages.push_back(sealed(1, i));
  std::vector<std::uint8_t> opened;
  for (std::uint32_t i : {3u, 1u, 0u, 2u})
    EXPECT_EQ("", open(messages[i], 1, i, opened)) << "message " << i;
  // A message sealed first and held back while a window's worth of newer ones arrive is refused.
  const auto held_back = sealed(2, 0);
  std::vector<std::uint8_t> newest;
  for (std::uint64_t n = 0; n < message_sealer::window; ++n)
    newest = sealed(3, static_cast<std::uint32_t>(n));
  EXPECT_EQ("", open(newest, 3, static_cast<std::uint32_t>(message_sealer::window - 1), opened));
  EXPECT_THAT(open(held_back, 2, 0, opened), HasSubstr("older than the newest 524288"));
}

TEST(message_sealer, a_message_opens_only_at_the_rank_it_was_sealed_for) {
  message_sealer zero(fixed_key(1), 0, 3);
  message_sealer one(fixed_key(1), 1, 3);
  message_sealer two(fixed_key(1), 2, 3);
  const auto plain = random_bytes(64, 1);
  std::vector<std::uint8_t> message(64 + message_sealer::overhead);
  std::vector<std::uint8_t> opened(64);
  zero.seal(1, 1, 0, plain.data(), 64, message.data());
  // Rank 2 opens it as if from rank 0: another direction's key.
  EXPECT_THAT(two.open(0, 1, 0, message.data(), 64, opened.data()),
              HasSubstr("not sealed by rank 0"));
  // Rank 1 opens it as if rank 2 had sent it.
  EXPECT_THAT(one.open(2, 1, 0, message.data(), 64, opened.data()),
              HasSubstr("does not authenticate"));
  EXPECT_EQ("", one.open(0, 1, 0, message.data(), 64, opened.data()));
  EXPECT_EQ(plain, opened);
}

TEST(message_sealer, a_forger_without_the_plane_key_is_rejected) {
  message_sealer forger(fixed_key(2), 0, 2); // another generation's key, or a guess
  message_sealer receiver(fixed_key(1), 1, 2);
  const auto plain = random_bytes(256, 3);
  std::vector<std::uint8_t> message(256 + message_sealer::overhead);
  forger.seal(1, 4, 0, plain.data(), 256, message.data());
  std::vector<std::uint8_t> opened(256);
  EXPECT_THAT(receiver.open(0, 4, 0, message.data(), 256, opened.data()),
              HasSubstr("does not authenticate"));
}

TEST(message_sealer, an_empty_message_is_still_authenticated) {
  message_sealer zero(fixed_key(1), 0, 2);
  message_sealer one(fixed_key(1), 1, 2);
  std::vector<std::uint8_t> message(message_sealer::overhead);
  zero.seal(1, 8, 0, nullptr, 0, message.data());
  EXPECT_EQ("", one.open(0, 8, 0, message.data(), 0, nullptr));
  message.back() ^= 1;
  EXPECT_THAT(one.open(0, 8, 0, message.data(), 0, nullptr), HasSubstr("does not authenticate"));
}

TEST(message_sealer, keys_are_random_and_directions_are_checked) {
  EXPECT_NE(random_plane_key(), random_plane_key());
  message_sealer zero(fixed_key(1), 0, 2);
  std::vector<std::uint8_t> message(message_sealer::overhead);
  EXPECT_THROW(zero.seal(0, 1, 0, nullptr, 0, message.data()), std::invalid_argument);
  EXPECT_THROW(zero.seal(2, 1, 0, nullptr, 0, message.data()), std::invalid_argument);
  EXPECT_THROW(message_sealer(fixed_key(1), 2, 2), std::invalid_argument);
}

// A message longer than a piece: three whole pieces and a short one.
constexpr std::size_t long_payload = 3 * message_sealer::piece_bytes + 1000;

std::vector<std::uint8_t> sealed_long(message_sealer& sender,
                                      const std::vector<std::uint8_t>& plain) {
  std::vector<std::uint8_t> message(message_sealer::sealed_bytes(long_payload));
  sender.seal(1, 6, 2, plain.data(), long_payload, message.data());
  return message;
}

TEST(message_sealer, a_long_message_is_the_same_on_the_wire_whatever_the_threads_and_opens) {
  EXPECT_EQ(4u, message_sealer::pieces(long_payload));
  EXPECT_EQ(long_payload + 4 * message_sealer::overhead,
            message_sealer::sealed_bytes(long_payload));
  const auto plain = random_bytes(long_payload, 11);
  message_sealer alone(fixed_key(1), 0, 2, 1);
  message_sealer four(fixed_key(1), 0, 2, 4);
  const auto message = sealed_long(alone, plain);
  EXPECT_EQ(message, sealed_long(four, plain));
  for (const int threads : {1, 3}) {
    message_sealer receiver(fixed_key(1), 1, 2, threads);
    std::vector<std::uint8_t> opened(long_payload);
    EXPECT_EQ("", receiver.open(0, 6, 2, message.data(), long_payload, opened.data()))
        << threads << " threads";
    EXPECT_EQ(plain, opened) << threads << " threads";
  }
}

TEST(message_sealer, a_piece_changed_or_moved_within_a_long_message_is_rejected_by_its_number) {
  const auto plain = random_bytes(long_payload, 12);
  message_sealer sender(fixed_key(1), 0, 2, 2);
  message_sealer receiver(fixed_key(1), 1, 2, 2);
  const auto original = sealed_long(sender, plain);
  std::vector<std::uint8_t> opened(long_payload);
  auto changed = original;
  changed[changed.size() - 1] ^= 1; // the last piece's tag
  EXPECT_THAT(receiver.open(0, 6, 2, changed.data(), long_payload, opened.data()),
              HasSubstr("piece 3 of 4"));
  // Pieces 0 and 1 swapped: each authenticates, but not as the other's number.
  const std::size_t whole = message_sealer::piece_bytes + message_sealer::overhead;
  auto swapped = original;
  std::swap_ranges(swapped.begin(), swapped.begin() + static_cast<std::ptrdiff_t>(whole),
                   swapped.begin() + static_cast<std::ptrdiff_t>(whole));
  EXPECT_THAT(receiver.open(0, 6, 2, swapped.data(), long_payload, opened.data()),
              HasSubstr("piece 0 of 4"));
  EXPECT_EQ("", receiver.open(0, 6, 2, original.data(), long_payload, opened.data()));
  EXPECT_EQ(plain, opened);
  EXPECT_THAT(receiver.open(0, 6, 2, original.data(), long_payload, opened.data()),
              HasSubstr("a replay"));
}

// Two messages sealed for one place (an operation that failed after sealing, and its tag come
// round again): a piece of one spliced into the other is refused, and so is a message opened as
// shorter than it was sealed; neither refusal spends the genuine message's numbers.
TEST(message_sealer, pieces_of_two_messages_or_a_message_cut_short_do_not_open) {
  const auto plain = random_bytes(long_payload, 13);
  message_sealer sender(fixed_key(1), 0, 2, 2);
  message_sealer receiver(fixed_key(1), 1, 2, 2);
  const auto first = sealed_long(sender, plain);
  const auto second = sealed_long(sender, plain);
  const std::size_t whole = message_sealer::piece_bytes + message_sealer::overhead;
  auto spliced = second;
  std::copy(first.begin() + static_cast<std::ptrdiff_t>(whole),
            first.begin() + static_cast<std::ptrdiff_t>(2 * whole),
            spliced.begin() + static_cast<std::ptrdiff_t>(whole));
  std::vector<std::uint8_t> opened(long_payload);
  EXPECT_THAT(receiver.open(0, 6, 2, spliced.data(), long_payload, opened.data()),
              HasSubstr("its pieces were not sealed as one message (piece 1"));
  const std::size_t shorter = 2 * message_sealer::piece_bytes; // ends where a piece ends
  EXPECT_THAT(receiver.open(0, 6, 2, second.data(), shorter, opened.data()),
              HasSubstr("does not authenticate"));
  EXPECT_EQ("", receiver.open(0, 6, 2, second.data(), long_payload, opened.data()));
  EXPECT_EQ(plain, opened);
}

// One piece exactly, and one byte more: the boundary of the piece count.
TEST(message_sealer, a_message_one_byte_past_a_piece_takes_two) {
  for (const std::size_t bytes : {message_sealer::piece_bytes, message_sealer::piece_bytes + 1}) {
    const std::size_t pieces = bytes == message_sealer::piece_bytes ? 1 : 2;
    EXPECT_EQ(pieces, message_sealer::pieces(bytes));
    const auto plain = random_bytes(bytes, 14);
    message_sealer sender(fixed_key(1), 0, 2, 2);
    message_sealer receiver(fixed_key(1), 1, 2, 2);
    std::vector<std::uint8_t> message(message_sealer::sealed_bytes(bytes));
    EXPECT_EQ(bytes + pieces * message_sealer::overhead, message.size());
    sender.seal(1, 3, 0, plain.data(), bytes, message.data());
    std::vector<std::uint8_t> opened(bytes);
    EXPECT_EQ("", receiver.open(0, 3, 0, message.data(), bytes, opened.data())) << bytes;
    EXPECT_EQ(plain, opened) << bytes;
  }
}

TEST(message_sealer, seal_threads_are_the_setting_or_the_automatic_number) {
  EXPECT_EQ(3, seal_threads_for(3));
  EXPECT_EQ(task_pool::default_threads(), seal_threads_for(0));
  EXPECT_THROW(seal_threads_for(-1), std::invalid_argument);
}

TEST(message_sealer, a_long_message_is_never_sealed_or_opened_in_place) {
  message_sealer sender(fixed_key(1), 0, 2, 2);
  std::vector<std::uint8_t> message(message_sealer::sealed_bytes(long_payload));
  std::uint8_t* inside = message.data() + message_sealer::header_bytes;
  EXPECT_THROW(sender.seal(1, 1, 0, inside, long_payload, message.data()), std::invalid_argument);
  message_sealer receiver(fixed_key(1), 1, 2, 2);
  EXPECT_THROW((void)receiver.open(0, 1, 0, message.data(), long_payload, inside),
               std::invalid_argument);
}

// Lanes count their own sequence numbers, so each seals with a key of its own: lane 0 with the
// plane's (a plane of one lane is unchanged), every other one with a key derived from it, the
// same on every rank; a message sealed on one lane does not open on another.
TEST(lane_key, each_lane_has_a_key_of_its_own_that_every_rank_derives_alike) {
  const plane_key key = fixed_key(3);
  EXPECT_EQ(lane_key(key, 0), key);
  EXPECT_NE(lane_key(key, 1), key);
  EXPECT_NE(lane_key(key, 1), lane_key(key, 2));
  EXPECT_EQ(lane_key(key, 2), lane_key(fixed_key(3), 2));
  EXPECT_THROW(lane_key(key, -1), std::invalid_argument);
  message_sealer lane_1_sender(lane_key(key, 1), 0, 2);
  message_sealer lane_0_receiver(key, 1, 2);
  message_sealer lane_1_receiver(lane_key(key, 1), 1, 2);
  const auto plain = random_bytes(payload, 9);
  std::vector<std::uint8_t> message(payload + message_sealer::overhead);
  std::vector<std::uint8_t> opened(payload);
  lane_1_sender.seal(1, 4, 0, plain.data(), payload, message.data());
  EXPECT_THAT(lane_0_receiver.open(0, 4, 0, message.data(), payload, opened.data()),
              HasSubstr("does not authenticate"));
  EXPECT_EQ(lane_1_receiver.open(0, 4, 0, message.data(), payload, opened.data()), "");
  EXPECT_EQ(opened, plain);
}

} // namespace
} // namespace herd::comm
