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
