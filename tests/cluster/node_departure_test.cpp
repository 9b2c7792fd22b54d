// A node's departure on a stop signal: how long it waits for the coordinator's answer.
#include "cluster/node_departure.hpp"

#include <gtest/gtest.h>

namespace {

using herd::cluster::node_departure;
using namespace std::chrono_literals;

TEST(node_departure, waits_its_bound_for_the_answer_from_when_it_asked) {
  node_departure departure(10s);
  const node_departure::clock::time_point start{};
  EXPECT_FALSE(departure.asked());
  EXPECT_FALSE(departure.gave_up(start + 1h)) << "a node that never asked gives up nothing";
  departure.ask(start);
  EXPECT_TRUE(departure.asked());
  EXPECT_FALSE(departure.gave_up(start + 9s));
  EXPECT_TRUE(departure.gave_up(start + 10s));
  EXPECT_FALSE(departure.released());
}

TEST(node_departure, queued_behind_a_join_it_waits_without_a_bound_until_its_turn) {
  node_departure departure(10s);
  const node_departure::clock::time_point start{};
  departure.ask(start);
  departure.queued();
  EXPECT_FALSE(departure.gave_up(start + 24h)) << "the coordinator bounds a join's steps";
  departure.turn(start + 1h); // the join ended: the bound runs again from here
  EXPECT_FALSE(departure.gave_up(start + 1h + 9s));
  EXPECT_TRUE(departure.gave_up(start + 1h + 10s));
}

TEST(node_departure, the_answer_says_whether_the_coordinator_let_it_go) {
  node_departure released(10s), refused(10s);
  released.ask({});
  released.answered(true);
  EXPECT_TRUE(released.released());
  refused.ask({});
  refused.answered(false);
  EXPECT_FALSE(refused.released());
}

} // namespace
