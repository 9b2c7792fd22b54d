// The bookkeeping of nodes joining a running job, without an actor system: one join at a time,
// each a new data-plane generation of the live nodes and the joining one, admitted once every peer
// connected it, and no next join while a failed one's peers still owe their answer; a refused peer
// re-keys the newest generation once, in a join's turn; a node leaving the job departs when
// nothing else is under way, before the joins and re-keys that wait.
#include <gtest/gtest.h>
#include <set>

#include "cluster/join_ledger.hpp"

namespace {

using herd::cluster::join_ledger;
using step = join_ledger::next_step;
using ranks = std::vector<std::int32_t>;

const auto everyone_live = [](std::size_t) { return true; };

TEST(join_ledger, the_formed_cluster_is_generation_0_in_node_order) {
  join_ledger ledger;
  ledger.form(3);
  EXPECT_EQ(ledger.generation(), 0u);
  EXPECT_EQ(ledger.plane_nodes(), (ranks{0, 1, 2}));
  EXPECT_FALSE(ledger.joining());
  EXPECT_FALSE(ledger.busy());
  EXPECT_FALSE(ledger.next(everyone_live));
}

TEST(join_ledger, a_join_is_a_new_generation_of_the_peers_then_the_joining_node) {
  join_ledger ledger;
  ledger.form(3);
  ledger.enqueue(3);
  EXPECT_TRUE(ledger.busy());
  ASSERT_EQ(ledger.next(everyone_live), std::optional<std::size_t>(3));
  EXPECT_EQ(ledger.begin(3, {0, 2}), 1u);
  EXPECT_EQ(ledger.joining(), std::optional<std::size_t>(3));
  EXPECT_EQ(ledger.plane_nodes(), (ranks{0, 2, 3}));
  ledger.answered(1, 0, false);
  ledger.answered(1, 2, false);
  ASSERT_TRUE(ledger.admit());
  ledger.end();
  ledger.enqueue(4);
  ASSERT_EQ(ledger.next(everyone_live), std::optional<std::size_t>(4));
  EXPECT_EQ(ledger.begin(4, {0}), 2u);
  EXPECT_EQ(ledger.plane_nodes(), (ranks{0, 4}));
}

TEST(join_ledger, one_node_joins_at_a_time_in_the_order_they_came) {
  join_ledger ledger;
  ledger.form(2);
  ledger.enqueue(2);
  ledger.enqueue(3);
  ASSERT_EQ(ledger.next(everyone_live), std::optional<std::size_t>(2));
  ledger.begin(2, {});
  EXPECT_FALSE(ledger.next(everyone_live)) << "a second join while the first runs";
  ledger.end();
  EXPECT_EQ(ledger.next(everyone_live), std::optional<std::size_t>(3));
}

TEST(join_ledger, nodes_lost_while_waiting_for_their_turn_are_skipped) {
  join_ledger ledger;
  ledger.form(2);
  for (std::size_t node : {2, 3, 4})
    ledger.enqueue(node);
  const std::set<std::size_t> lost{2, 3};
  EXPECT_EQ(ledger.next([&](std::size_t node) { return lost.count(node) == 0; }),
            std::optional<std::size_t>(4));
  EXPECT_FALSE(ledger.busy());
}

TEST(join_ledger, a_join_is_admitted_once_every_peer_connected_its_generation_and_only_once) {
  join_ledger ledger;
  ledger.form(3);
  ledger.enqueue(3);
  ledger.next(everyone_live);
  const auto generation = ledger.begin(3, {0, 1, 2});
  EXPECT_EQ(ledger.answered(generation, 1, false), step::admit_join);
  EXPECT_FALSE(ledger.admit()) << "two peers still connecting";
  EXPECT_EQ(ledger.owed_by(0), (std::vector<std::uint32_t>{generation}));
  EXPECT_TRUE(ledger.owed_by(1).empty());
  EXPECT_EQ(ledger.answered(generation, 0, false), step::admit_join);
  EXPECT_EQ(ledger.answered(generation, 2, false), step::admit_join);
  EXPECT_TRUE(ledger.admit());
  EXPECT_TRUE(ledger.admitted());
  EXPECT_FALSE(ledger.admit()) << "admitted twice";
  EXPECT_EQ(ledger.answered(generation, 2, false), step::nothing) << "an answer after admission";
}

TEST(join_ledger, a_join_without_peers_is_connected_at_once) {
  join_ledger ledger;
  ledger.form(1);
  ledger.enqueue(1);
  ledger.next(everyone_live);
  ledger.begin(1, {});
  EXPECT_TRUE(ledger.admit());
}

TEST(join_ledger, a_peer_that_cannot_connect_fails_the_join) {
  join_ledger ledger;
  ledger.form(2);
  ledger.enqueue(2);
  ledger.next(everyone_live);
  const auto generation = ledger.begin(2, {0, 1});
  EXPECT_EQ(ledger.answered(generation, 0, true), step::fail_join);
}

TEST(join_ledger, the_next_join_waits_until_every_peer_of_a_failed_one_has_answered) {
  join_ledger ledger;
  ledger.form(3);
  ledger.enqueue(3);
  ledger.next(everyone_live);
  const auto failed = ledger.begin(3, {0, 1, 2});
  EXPECT_EQ(ledger.answered(failed, 0, true), step::fail_join);
  ledger.end();
  ledger.enqueue(4);
  EXPECT_FALSE(ledger.next(everyone_live)) << "nodes 1 and 2 still connect generation 1";
  EXPECT_EQ(ledger.answered(failed, 1, false), step::start_next);
  EXPECT_FALSE(ledger.next(everyone_live)) << "node 2 still connects generation 1";
  EXPECT_EQ(ledger.owed_by(2), (std::vector<std::uint32_t>{failed}));
  EXPECT_EQ(ledger.answered(failed, 2, true), step::start_next) << "a lost peer answers too";
  ASSERT_EQ(ledger.next(everyone_live), std::optional<std::size_t>(4));
  const auto next = ledger.begin(4, {0, 1, 2});
  EXPECT_EQ(next, failed + 1);
  EXPECT_EQ(ledger.answered(failed, 0, false), step::nothing) << "an old generation's answer";
  EXPECT_EQ(ledger.answered(next, 0, false), step::admit_join);
}

TEST(join_ledger, a_refusal_in_the_newest_generation_re_keys_it_once_among_the_same_nodes) {
  join_ledger ledger;
  ledger.form(3);
  EXPECT_TRUE(ledger.want_rekey(0));
  EXPECT_FALSE(ledger.want_rekey(0)) << "the other node of the pair reports it too";
  ASSERT_TRUE(ledger.rekey_due());
  const auto generation = ledger.begin_rekey({0, 1, 2});
  EXPECT_EQ(generation, 1u);
  EXPECT_TRUE(ledger.rekeying());
  EXPECT_FALSE(ledger.rekey_due());
  EXPECT_EQ(ledger.plane_nodes(), (ranks{0, 1, 2}));
  EXPECT_FALSE(ledger.want_rekey(0)) << "a late report of the generation being replaced";
  EXPECT_FALSE(ledger.want_rekey(1)) << "a report while the re-key runs";
  EXPECT_EQ(ledger.answered(generation, 2, false), step::nothing);
  EXPECT_EQ(ledger.answered(generation, 0, false), step::nothing);
  EXPECT_EQ(ledger.answered(generation, 1, false), step::rekeyed);
  ledger.end();
  EXPECT_FALSE(ledger.rekeying());
  EXPECT_TRUE(ledger.want_rekey(1)) << "the re-keyed generation refused again";
}

TEST(join_ledger, a_re_key_waits_for_the_join_under_way_and_a_join_that_starts_first_replaces_it) {
  join_ledger ledger;
  ledger.form(2);
  ledger.enqueue(2);
  ASSERT_EQ(ledger.next(everyone_live), std::optional<std::size_t>(2));
  const auto joined = ledger.begin(2, {0, 1});
  EXPECT_TRUE(ledger.want_rekey(joined));
  EXPECT_FALSE(ledger.rekey_due()) << "a join is under way";
  ledger.answered(joined, 0, false);
  ledger.answered(joined, 1, false);
  ASSERT_TRUE(ledger.admit());
  ledger.end();
  ledger.enqueue(3);
  EXPECT_TRUE(ledger.rekey_due()) << "the re-key takes its turn before the next join";
  const auto rekeyed = ledger.begin_rekey({0, 1, 2});
  EXPECT_FALSE(ledger.next(everyone_live)) << "no join while the re-key runs";
  EXPECT_EQ(ledger.answered(rekeyed, 0, true), step::fail_rekey);
  ledger.end();
  EXPECT_FALSE(ledger.next(everyone_live)) << "nodes 1 and 2 still connect the failed re-key";
  EXPECT_EQ(ledger.answered(rekeyed, 1, false), step::start_next);
  EXPECT_FALSE(ledger.next(everyone_live)) << "node 2 still connects the failed re-key";
  EXPECT_EQ(ledger.answered(rekeyed, 2, false), step::start_next);
  EXPECT_TRUE(ledger.want_rekey(rekeyed)) << "a failed re-key's generation is the newest";
  // The registry re-keys before the next join; a join that begins anyway brings a fresh key.
  ASSERT_EQ(ledger.next(everyone_live), std::optional<std::size_t>(3));
  const auto next = ledger.begin(3, {0, 1});
  EXPECT_FALSE(ledger.rekey_due()) << "the join's generation has a fresh key";
  EXPECT_FALSE(ledger.want_rekey(rekeyed)) << "an older generation than the join's";
  ledger.answered(next, 0, false);
  ledger.answered(next, 1, false);
  ledger.end();
  EXPECT_FALSE(ledger.rekey_due());
}

TEST(join_ledger, a_departure_waits_for_the_join_under_way_and_goes_before_the_next) {
  join_ledger ledger;
  ledger.form(3);
  ledger.enqueue(3);
  ASSERT_EQ(ledger.next(everyone_live), std::optional<std::size_t>(3));
  const auto joined = ledger.begin(3, {0, 1, 2});
  ledger.enqueue_departure(1);
  EXPECT_TRUE(ledger.leaving(1));
  EXPECT_FALSE(ledger.leaving(0));
  EXPECT_FALSE(ledger.next_departure(everyone_live)) << "node 1 still connects the join's plane";
  ledger.enqueue(4);
  for (std::size_t peer : {0, 1, 2})
    ledger.answered(joined, peer, false);
  ASSERT_TRUE(ledger.admit());
  EXPECT_FALSE(ledger.next_departure(everyone_live)) << "the admitted join is under way";
  ledger.end();
  EXPECT_FALSE(ledger.next(everyone_live)) << "node 4 joins before node 1 departs";
  ASSERT_EQ(ledger.next_departure(everyone_live), std::optional<std::size_t>(1));
  EXPECT_EQ(ledger.departing(), std::optional<std::size_t>(1));
  EXPECT_TRUE(ledger.leaving(1));
  EXPECT_FALSE(ledger.next(everyone_live)) << "a join while node 1 departs";
  EXPECT_TRUE(ledger.want_rekey(joined));
  EXPECT_FALSE(ledger.rekey_due()) << "a re-key while node 1 departs";
  ledger.end_departure();
  EXPECT_FALSE(ledger.leaving(1));
  EXPECT_TRUE(ledger.rekey_due());
  ledger.begin_rekey({0, 2, 3});
  ledger.enqueue_departure(2);
  EXPECT_FALSE(ledger.next_departure(everyone_live)) << "a departure while the re-key runs";
}

TEST(join_ledger, a_node_lost_while_waiting_to_depart_is_skipped) {
  join_ledger ledger;
  ledger.form(3);
  ledger.enqueue_departure(1);
  ledger.enqueue_departure(2);
  ASSERT_EQ(ledger.next_departure([](std::size_t node) { return node != 1; }),
            std::optional<std::size_t>(2));
  ledger.end_departure();
  EXPECT_FALSE(ledger.next_departure(everyone_live));
}

} // namespace
