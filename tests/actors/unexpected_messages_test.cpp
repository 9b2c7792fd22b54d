// What an actor a peer can address does with a message none of its handlers takes: it drops it
// in one short line, at most once per interval, and a request hears why.
#include "actors/unexpected_messages.hpp"

#include <caf/all.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using testing::HasSubstr;

struct notices {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::vector<std::string> all() {
    std::lock_guard<std::mutex> guard(mutex);
    return lines;
  }
};

caf::behavior listener(caf::event_based_actor* self, notices* heard,
                       std::chrono::steady_clock::duration interval) {
  self->set_default_handler(herd::actors::drop_unexpected(
      "the listener",
      [heard](const std::string& line) {
        std::lock_guard<std::mutex> guard(heard->mutex);
        heard->lines.push_back(line);
      },
      interval));
  return {[](int number) { return number + 1; }};
}

TEST(unexpected_messages, are_dropped_in_a_line_that_holds_no_contents) {
  caf::actor_system_config config;
  caf::actor_system system{config};
  notices heard;
  auto actor = system.spawn(listener, &heard, std::chrono::hours(1));
  caf::scoped_actor self{system};
  const std::string large(1 << 20, 'x'); // CAF's own handler printed all of it
  for (int i = 0; i < 3; ++i)
    self->send(actor, large, 7.5);
  // A request hears that its message was unexpected; the handlers still answer theirs.
  self->request(actor, std::chrono::seconds(10), std::string("ask"))
      .receive([](const std::string&) { ADD_FAILURE() << "answered"; },
               [](const caf::error& error) {
                 EXPECT_EQ(error, caf::make_error(caf::sec::unexpected_message));
               });
  self->request(actor, std::chrono::seconds(10), 41)
      .receive([](int answer) { EXPECT_EQ(answer, 42); },
               [](const caf::error& error) { ADD_FAILURE() << caf::to_string(error); });
  const auto lines = heard.all();
  ASSERT_EQ(lines.size(), 1u) << "one line an interval";
  EXPECT_EQ(lines[0], "the listener dropped a message that none of its handlers takes (the "
                      "latest holds 2 values; a peer of another Herd version, or not Herd)");
  self->send_exit(actor, caf::exit_reason::user_shutdown);
}

TEST(unexpected_messages, once_the_interval_passed_the_next_message_has_a_line_again) {
  caf::actor_system_config config;
  caf::actor_system system{config};
  notices heard;
  auto actor = system.spawn(listener, &heard, std::chrono::steady_clock::duration::zero());
  caf::scoped_actor self{system};
  self->send(actor, std::string("one"));
  self->send(actor, std::string("two"), std::string("values"));
  self->request(actor, std::chrono::seconds(10), 1).receive([](int) {}, [](caf::error&) {});
  const auto lines = heard.all();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("dropped a message that none of its handlers takes (the latest "
                                  "holds 1 value;"));
  EXPECT_THAT(lines[1], HasSubstr("(the latest holds 2 values;"));
  self->send_exit(actor, caf::exit_reason::user_shutdown);
}

// The messages dropped between two lines are counted, not lost: the next line says how many.
TEST(unexpected_messages, the_next_line_counts_every_message_dropped_since_the_last) {
  caf::actor_system_config config;
  caf::actor_system system{config};
  notices heard;
  const auto interval = std::chrono::seconds(1);
  auto actor = system.spawn(listener, &heard, interval);
  caf::scoped_actor self{system};
  const auto handled = [&] {
    self->request(actor, std::chrono::seconds(10), 1).receive([](int) {}, [](caf::error&) {});
  };
  self->send(actor, std::string("said"));
  for (int i = 0; i < 3; ++i) // within the interval: counted, no line
    self->send(actor, std::string("counted"));
  handled();
  ASSERT_EQ(heard.all().size(), 1u);
  std::this_thread::sleep_for(interval + std::chrono::milliseconds(100));
  self->send(actor, std::string("the next"));
  handled();
  const auto lines = heard.all();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("the listener dropped a message that"));
  EXPECT_THAT(lines[1], HasSubstr("the listener dropped 4 messages that none of its handlers "
                                  "takes (the latest holds 1 value;"));
  self->send_exit(actor, caf::exit_reason::user_shutdown);
}

} // namespace
