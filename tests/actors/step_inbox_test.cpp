// step_inbox: reports come out in the order they were posted, only a post into an empty inbox
// wakes the coordinator, and that wake happens before anyone else can post. No actor system.
#include "actors/step_inbox.hpp"

#include <atomic>
#include <chrono>
#include <gtest/gtest.h>
#include <thread>
#include <vector>

namespace {

using herd::actors::step_inbox;
using herd::actors::step_ready;

step_ready report(int worker, std::uint64_t step) {
  step_ready ready;
  ready.worker = worker;
  ready.step = step;
  return ready;
}

TEST(step_inbox, a_take_returns_every_report_in_order_and_only_an_empty_inbox_wakes) {
  step_inbox inbox;
  int wakes = 0;
  auto wake = [&wakes] { ++wakes; };
  inbox.post(report(3, 1), wake);
  inbox.post(report(1, 1), wake);
  inbox.post(report(3, 2), wake);
  EXPECT_EQ(wakes, 1) << "only the first post found the inbox empty";
  std::vector<step_ready> taken;
  inbox.take(taken);
  ASSERT_EQ(taken.size(), 3u);
  EXPECT_EQ(taken[0].worker, 3);
  EXPECT_EQ(taken[0].step, 1u);
  EXPECT_EQ(taken[1].worker, 1);
  EXPECT_EQ(taken[2].step, 2u);

  inbox.take(taken);
  EXPECT_TRUE(taken.empty()) << "a second take finds nothing new";
  inbox.post(report(0, 7), wake);
  EXPECT_EQ(wakes, 2) << "the inbox was empty again";
  inbox.take(taken);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].step, 7u);
}

// The order the coordinator relies on: a worker that posts into a non-empty inbox and then sends
// the coordinator anything else must find the wake already sent. So no post may complete while
// another post's wake is still being sent.
TEST(step_inbox, no_post_completes_while_a_wake_is_being_sent) {
  step_inbox inbox;
  std::atomic<bool> second_posted{false};
  bool posted_during_wake = true;
  std::thread second;
  inbox.post(report(0, 1), [&] {
    second = std::thread([&] {
      inbox.post(report(1, 1), [] {});
      second_posted = true;
    });
    // Long enough for the second post to finish many times over if the wake did not hold it.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    posted_during_wake = second_posted.load();
  });
  second.join();
  EXPECT_FALSE(posted_during_wake);
  std::vector<step_ready> taken;
  inbox.take(taken);
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].worker, 0);
  EXPECT_EQ(taken[1].worker, 1);
}

} // namespace
