// The registry's admission rules without an actor system: when the cluster forms, which slots a
// node gets when it forms and when it joins the running job, and why a node is refused.
#include "actors/messages.hpp"

#include <gtest/gtest.h>
#include <set>

#include "cluster/admission.hpp"

namespace {

using herd::actors::node_hello;
using herd::cluster::registry_phase;
using herd::cluster::slot_table;
using slots = std::vector<std::int32_t>;

const herd::config::cluster_section defaults; // the coordinator's, as the nodes'

node_hello hello_of(int workers, const std::string& name = "n") {
  node_hello hello;
  hello.protocol = herd::actors::cluster_protocol_version;
  hello.name = name;
  hello.workers = workers;
  hello.heartbeat_ms = defaults.heartbeat_ms;
  hello.node_timeout_ms = defaults.node_timeout_ms;
  return hello;
}

TEST(cluster_formation, forms_once_min_nodes_nodes_have_joined) {
  EXPECT_FALSE(herd::cluster::cluster_complete(2, 3));
  EXPECT_TRUE(herd::cluster::cluster_complete(3, 3));
  EXPECT_TRUE(herd::cluster::cluster_complete(1, 1));
}

TEST(slot_table, the_formed_cluster_numbers_workers_in_node_order) {
  slot_table table;
  const auto given = table.form({2, 1, 3});
  ASSERT_EQ(given.size(), 3u);
  EXPECT_EQ(given[0], (slots{0, 1}));
  EXPECT_EQ(given[1], (slots{2}));
  EXPECT_EQ(given[2], (slots{3, 4, 5}));
  EXPECT_EQ(table.worker_nodes(), (slots{0, 0, 1, 2, 2, 2}));
}

TEST(slot_table, a_joining_node_takes_the_lowest_slots_of_lost_nodes) {
  slot_table table;
  table.form({2, 1, 3});
  std::set<std::size_t> lost{0, 2};
  const auto live = [&](std::size_t node) { return lost.count(node) == 0; };
  const auto free = table.free(live);
  ASSERT_EQ(free, (slots{0, 1, 3, 4, 5}));
  EXPECT_EQ(table.take(3, free, 3), (slots{0, 1, 3}));
  EXPECT_EQ(table.worker_nodes(), (slots{3, 3, 1, 3, 2, 2}));
  // Node 3 is live: only node 2's remaining slots are free.
  EXPECT_EQ(table.free(live), (slots{4, 5}));
  EXPECT_TRUE(table.free([](std::size_t) { return true; }).empty());
}

TEST(slot_table, a_resumed_cluster_gives_each_node_the_slots_of_its_part) {
  slot_table table;
  table.assign({{2, 3}, {0}, {1}});
  EXPECT_EQ(table.worker_nodes(), (slots{1, 2, 0, 0}));
  EXPECT_EQ(table.free([](std::size_t node) { return node != 0; }), (slots{2, 3}));
}

TEST(admission, a_resuming_coordinator_takes_each_node_for_the_part_it_holds) {
  std::vector<herd::actors::part_record> parts(2);
  parts[0].file = "herd-1-2.node-0.part";
  parts[0].workers = {0, 1};
  parts[1].file = "herd-1-2.node-1.part";
  parts[1].workers = {2};
  auto holder = hello_of(1, "vm-b");
  holder.parts = {"herd-0-1.node-1.part", "herd-1-2.node-1.part"};
  auto claim = herd::cluster::claim_part(holder, parts, {false, false}, "c.ckpt");
  ASSERT_TRUE(claim.part) << claim.refusal;
  EXPECT_EQ(*claim.part, 1u);
  // A node of a shared directory holds every part: it takes the first one still open.
  auto shared = hello_of(1, "vm-c");
  shared.parts = {parts[0].file, parts[1].file};
  EXPECT_EQ(herd::cluster::claim_part(shared, parts, {false, false}, "c.ckpt").refusal,
            "node vm-c holds part herd-1-2.node-0.part of 2 workers but offers 1 worker; start it "
            "with --workers 2");
  EXPECT_EQ(*herd::cluster::claim_part(shared, parts, {true, false}, "c.ckpt").part, 1u);
  // Claimed already, or never held: refused, naming the parts still missing.
  claim = herd::cluster::claim_part(holder, parts, {false, true}, "c.ckpt");
  EXPECT_FALSE(claim.part);
  EXPECT_NE(claim.refusal.find("the job resumes from c.ckpt, and node vm-b holds none of its "
                               "parts still missing (herd-1-2.node-0.part)"),
            std::string::npos)
      << claim.refusal;
  claim = herd::cluster::claim_part(hello_of(2, "vm-d"), parts, {false, false}, "c.ckpt");
  EXPECT_NE(claim.refusal.find("vm-d holds no checkpoint part"), std::string::npos)
      << claim.refusal;
}

TEST(admission, a_node_of_another_protocol_or_an_odd_worker_count_is_refused_by_name) {
  auto other = hello_of(1, "vm-b");
  other.protocol = herd::actors::cluster_protocol_version + 1;
  const auto protocol =
      herd::cluster::hello_refusal(other, defaults, registry_phase::gathering, false, 0);
  ASSERT_TRUE(protocol);
  EXPECT_NE(protocol->find("node vm-b speaks cluster protocol"), std::string::npos) << *protocol;
  for (int workers : {0, -1, 1025}) {
    const auto count = herd::cluster::hello_refusal(hello_of(workers), defaults,
                                                    registry_phase::gathering, false, 0);
    ASSERT_TRUE(count) << workers;
    EXPECT_NE(count->find("must be between 1 and 1024"), std::string::npos) << *count;
  }
  EXPECT_FALSE(
      herd::cluster::hello_refusal(hello_of(1024), defaults, registry_phase::gathering, false, 0));
}

// A node whose heartbeats the coordinator's timeout would miss (or the other way round) was
// admitted, and counted lost, healthy, as the cluster formed: the whole job failed.
TEST(admission, a_node_whose_heartbeats_a_timeout_would_miss_is_refused_naming_both) {
  auto slow = hello_of(1, "vm-c");
  slow.heartbeat_ms = 2000;
  slow.node_timeout_ms = 8000;
  herd::config::cluster_section mine;
  mine.heartbeat_ms = 200;
  mine.node_timeout_ms = 1500;
  const auto refused =
      herd::cluster::hello_refusal(slow, mine, registry_phase::gathering, false, 0);
  ASSERT_TRUE(refused);
  EXPECT_EQ(*refused, "node vm-c sends heartbeats every 2000 ms and counts a peer lost after 8000 "
                      "ms of silence, this coordinator every 200 ms and after 1500 ms: each side's "
                      "timeout must be at least twice the other's heartbeat, or a healthy process "
                      "is counted lost; give every process the same cluster.heartbeat-ms and "
                      "cluster.node-timeout-ms");
  // The other way: the node's timeout misses the coordinator's heartbeats.
  auto impatient = hello_of(1);
  impatient.heartbeat_ms = 100;
  impatient.node_timeout_ms = 300;
  EXPECT_TRUE(
      herd::cluster::hello_refusal(impatient, defaults, registry_phase::gathering, false, 0));
  // Different values that each side's timeout covers are fine: exactly twice, too.
  auto close = hello_of(1);
  close.heartbeat_ms = 2000;
  close.node_timeout_ms = 1000;
  EXPECT_FALSE(herd::cluster::hello_refusal(close, defaults, registry_phase::gathering, false, 0));
}

// A name is a log line's part on the coordinator: a newline in it split the line, and could forge
// another. Refused, and shown escaped.
TEST(admission, a_name_with_a_control_character_is_refused_and_shown_escaped) {
  EXPECT_EQ(herd::cluster::printable("vm-3"), "vm-3");
  EXPECT_EQ(herd::cluster::printable("line\nbreak\t\x1b"), "line\\nbreak\\t\\x1b");
  const auto refused = herd::cluster::hello_refusal(hello_of(1, "a\nherd: node 9 joined"), defaults,
                                                    registry_phase::gathering, false, 0);
  ASSERT_TRUE(refused);
  EXPECT_EQ(*refused, "the node's name \"a\\nherd: node 9 joined\" holds a control character "
                      "or a byte that is not UTF-8 (it would split the log's lines, or lose the "
                      "run's report); give it a name of printable characters (herd node --name)");
  EXPECT_EQ(refused->find('\n'), std::string::npos);
  EXPECT_FALSE(herd::cluster::hello_refusal(hello_of(1, "n\xc3\xa4me"), defaults,
                                            registry_phase::gathering, false, 0))
      << "UTF-8 is printable";
  // Bytes that are not UTF-8 are escaped, and such a name refused: a report or a metrics label
  // holding it could not be written.
  EXPECT_EQ(herd::cluster::printable("vm\xff"
                                     "b"),
            "vm\\xffb");
  EXPECT_EQ(herd::cluster::printable("\xc3"), "\\xc3");                   // cut short
  EXPECT_EQ(herd::cluster::printable("\xc0\xaf"), "\\xc0\\xaf");          // overlong '/'
  EXPECT_EQ(herd::cluster::printable("\xed\xa0\x80"), "\\xed\\xa0\\x80"); // a surrogate
  EXPECT_EQ(herd::cluster::printable("\xc2\x9b"
                                     "2J"),
            "\\xc2\\x9b"
            "2J"); // U+009B, a C1 control
  EXPECT_EQ(herd::cluster::printable("\xe2\x82\xac \xf0\x9f\x90\x91"),
            "\xe2\x82\xac \xf0\x9f\x90\x91"); // the euro sign and a sheep stay
  EXPECT_TRUE(herd::cluster::hello_refusal(hello_of(1, "vm\xff"
                                                       "b"),
                                           defaults, registry_phase::gathering, false, 0));
}

TEST(admission, a_node_is_refused_while_the_cluster_starts_and_once_the_job_is_over) {
  const auto starting =
      herd::cluster::hello_refusal(hello_of(1), defaults, registry_phase::connecting, false, 3);
  ASSERT_TRUE(starting);
  EXPECT_EQ(*starting,
            "the cluster has formed with 3 nodes and is starting; once it runs, a node joins "
            "only in place of lost workers");
  EXPECT_EQ(herd::cluster::hello_refusal(hello_of(1), defaults, registry_phase::running, true, 3),
            "the job is over");
  EXPECT_FALSE(
      herd::cluster::hello_refusal(hello_of(1), defaults, registry_phase::running, false, 3));
}

TEST(admission, a_running_job_takes_a_node_only_in_place_of_lost_workers) {
  const auto none_lost = herd::cluster::running_join_refusal(hello_of(4), {}, false, 6);
  ASSERT_TRUE(none_lost);
  EXPECT_NE(none_lost->find("none of its 6 workers is lost"), std::string::npos) << *none_lost;
  const auto taken = herd::cluster::running_join_refusal(hello_of(1), {}, true, 6);
  ASSERT_TRUE(taken);
  EXPECT_NE(taken->find("taken by nodes joining now"), std::string::npos) << *taken;
  const auto too_many = herd::cluster::running_join_refusal(hello_of(2, "vm-c"), {3}, false, 6);
  ASSERT_TRUE(too_many);
  EXPECT_EQ(*too_many, "node vm-c offers 2 workers but only 1 slot(s) are free (worker 3); start "
                       "it with --workers 1");
  EXPECT_FALSE(herd::cluster::running_join_refusal(hello_of(2), {3, 5}, true, 6));
}

TEST(admission, settings_that_do_not_fit_the_nodes_workers_name_the_count) {
  herd::config::run_config config;
  config.train.workers = 3;
  config.train.batch_size = 8;
  EXPECT_FALSE(herd::cluster::settings_refusal(config, 10000));
  const auto too_small = herd::cluster::settings_refusal(config, 10);
  ASSERT_TRUE(too_small);
  EXPECT_EQ(too_small->rfind("the settings do not fit the 3 workers of the nodes: ", 0), 0u)
      << *too_small;
}

TEST(admission, worker_lists_read_as_ranges_where_they_can) {
  EXPECT_EQ(herd::cluster::worker_list({}), "no workers");
  EXPECT_EQ(herd::cluster::worker_list({3}), "worker 3");
  EXPECT_EQ(herd::cluster::worker_list({4, 5, 6, 7}), "workers 4-7");
  EXPECT_EQ(herd::cluster::worker_list({1, 4}), "workers 1, 4");
  EXPECT_EQ(herd::cluster::count_of(1, "worker"), "1 worker");
  EXPECT_EQ(herd::cluster::count_of(3, "worker"), "3 workers");
}

} // namespace
