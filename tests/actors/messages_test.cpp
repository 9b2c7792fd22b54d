// The error vocabulary on the wire: a round's result crosses processes as its kind and its message,
// and a failed request between actors becomes a kind that code can branch on.
#include "actors/errors.hpp"
#include "actors/messages.hpp"

#include <gtest/gtest.h>
#include <vector>

namespace {

using herd::actors::add_message_types;
using herd::comm::outcome;

template <class T>
T round_trip(caf::actor_system& system, T value) {
  std::vector<char> bytes;
  caf::binary_serializer sink{system, bytes};
  EXPECT_FALSE(sink(value));
  T back;
  caf::binary_deserializer source{system, bytes};
  EXPECT_FALSE(source(back));
  return back;
}

TEST(messages, a_failed_result_keeps_its_kind_and_words_across_processes) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  for (const auto kind : {outcome::timeout, outcome::peer_lost, outcome::aborted,
                          outcome::invalid_argument, outcome::unsupported, outcome::failed}) {
    herd::actors::reduce_done answer{7, 2, {kind, "node 2: went away"}, 0.5};
    const auto back = round_trip(system, answer);
    EXPECT_EQ(back.result.kind(), kind);
    EXPECT_EQ(back.result.message(), "node 2: went away");
    EXPECT_EQ(back.round, 7u);
    EXPECT_EQ(back.node, 2);

    herd::actors::group_done report;
    report.round = 9;
    report.result = {kind, "round 9 failed"};
    report.aborted = true;
    const auto done = round_trip(system, report);
    EXPECT_EQ(done.result.kind(), kind);
    EXPECT_EQ(done.result.message(), "round 9 failed");
    EXPECT_TRUE(done.aborted);
  }
  const auto ok = round_trip(system, herd::actors::reduce_done{1, 0, {}, 0.0});
  EXPECT_TRUE(ok.result.ok());
  EXPECT_TRUE(ok.result.message().empty());
}

// Bytes from another process are read only as far as the message holds them: a count a peer made
// up (5 bytes claiming 4 GiB) is refused before anything is allocated for it. Written as CAF
// writes a std::vector<char>, so a snapshot's bytes are what they were.
TEST(messages, bytes_are_read_only_as_far_as_the_message_holds_them) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  const std::vector<char> sent{'a', 'b', 'c', '\0', 'd'};
  std::vector<char> as_wire_bytes;
  std::vector<char> as_char_vector;
  {
    caf::binary_serializer sink{system, as_wire_bytes};
    herd::actors::wire_bytes value{sent};
    EXPECT_FALSE(sink(value));
    caf::binary_serializer plain{system, as_char_vector};
    auto copy = sent;
    EXPECT_FALSE(plain(copy));
  }
  EXPECT_EQ(as_wire_bytes, as_char_vector);
  EXPECT_EQ(round_trip(system, herd::actors::wire_bytes{sent}).data, sent);

  // The count as a varbyte: 0xF0000000 in five bytes, then 3 bytes of the promised 4 GiB.
  const std::vector<char> claim{'\x80', '\x80', '\x80', '\x80', '\x0f', 'x', 'y', 'z'};
  herd::actors::wire_bytes read;
  caf::binary_deserializer source{system, claim};
  EXPECT_EQ(source(read), caf::sec::end_of_stream);
  EXPECT_LT(read.data.capacity(), 1024u) << "sized to the count before its bytes were read";

  // A snapshot's floats come back bit for bit.
  herd::actors::parameter_snapshot snapshot;
  snapshot.worker = 3;
  snapshot.parameters = std::make_shared<std::vector<float>>(std::vector<float>{1.5f, -0.0f, 3e9f});
  const auto back = round_trip(system, snapshot);
  ASSERT_TRUE(back.parameters);
  EXPECT_EQ(*back.parameters, *snapshot.parameters);
  EXPECT_EQ(back.worker, 3);
}

TEST(messages, a_failed_request_is_a_timeout_or_a_lost_peer) {
  EXPECT_EQ(herd::actors::status_of(caf::sec::request_timeout, "late").kind(), outcome::timeout);
  EXPECT_EQ(herd::actors::status_of(caf::sec::request_receiver_down, "gone").kind(),
            outcome::peer_lost);
  EXPECT_EQ(herd::actors::status_of(caf::exit_reason::remote_link_unreachable, "gone").kind(),
            outcome::peer_lost);
  EXPECT_EQ(herd::actors::status_of(caf::sec::request_timeout, "late").message(), "late");
}

// Why an actor ended reads as what happened, not as an enum: the notices that say a worker, a
// node or the coordinator was lost render it. Herd's own errors read as their sentence.
TEST(messages, exit_reasons_request_failures_and_herd_errors_render_as_words) {
  caf::actor_system_config config;
  add_message_types(config);
  caf::actor_system system{config};
  const auto unreachable =
      system.render(caf::make_error(caf::exit_reason::remote_link_unreachable));
  EXPECT_NE(unreachable.find("its process cannot be reached any more"), std::string::npos)
      << unreachable;
  EXPECT_EQ(unreachable.find("exit_reason"), std::string::npos) << unreachable;
  EXPECT_EQ(system.render(caf::make_error(caf::exit_reason::user_shutdown)), "it was shut down");
  // A request whose receiver had gone: a worker that failed, seen by an evaluation under way.
  EXPECT_EQ(system.render(caf::make_error(caf::sec::request_receiver_down)),
            "the actor asked had already ended (finished, failed or stopped)");
  EXPECT_EQ(system.render(caf::make_error(caf::sec::request_timeout)), "no answer in time");
  // The others as CAF says them.
  EXPECT_NE(system.render(caf::make_error(caf::sec::invalid_argument)).find("invalid_argument"),
            std::string::npos);
  EXPECT_EQ(system.render(herd::actors::make_error(herd::actors::herd_errc::join_refused,
                                                   "stopped while waiting for nodes")),
            "stopped while waiting for nodes");
}

} // namespace
