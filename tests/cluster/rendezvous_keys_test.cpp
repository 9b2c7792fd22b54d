// The data plane's rendezvous keys as the registry keeps them, without an actor system: a value
// set before a read, a read that waits for a later set, a failed generation's waiting reads
// dropped, and only welcomed nodes' processes admitted.
#include "actors/messages.hpp"

#include <caf/node_id.hpp>

#include <array>
#include <gtest/gtest.h>

#include "cluster/rendezvous_keys.hpp"

namespace {

using herd::cluster::rendezvous_keys;
using bytes = std::vector<char>;

caf::node_id process(std::uint32_t id) {
  std::array<std::uint8_t, 20> host{};
  host[0] = 7;
  return caf::make_node_id(id, host);
}

// Records what a waiting read received.
struct read_log {
  std::vector<bytes> values;
  int never = 0; // answers that the key will never be set
  rendezvous_keys::reader reader() {
    return [this](const bytes* value) {
      if (value != nullptr)
        values.push_back(*value);
      else
        ++never;
    };
  }
};

TEST(rendezvous_keys, a_key_set_before_it_is_read_is_found) {
  rendezvous_keys keys;
  EXPECT_EQ(keys.find("job/rank0"), nullptr);
  keys.set("job/rank0", {'a', 'b'});
  const auto value = [&] {
    const auto* found = keys.find("job/rank0");
    return found != nullptr ? *found : bytes{'-'};
  };
  EXPECT_EQ(value(), (bytes{'a', 'b'}));
  keys.set("job/rank0", {'c'});
  EXPECT_EQ(value(), (bytes{'c'})) << "a key set again holds the new value";
}

TEST(rendezvous_keys, a_read_waits_for_a_later_set_and_gets_it_once) {
  rendezvous_keys keys;
  read_log first, second, other;
  keys.wait("job/rank1", first.reader());
  keys.wait("job/rank1", second.reader());
  keys.wait("job/rank2", other.reader());
  keys.set("job/rank1", {'x'});
  EXPECT_EQ(first.values, (std::vector<bytes>{{'x'}}));
  EXPECT_EQ(second.values, (std::vector<bytes>{{'x'}}));
  EXPECT_TRUE(other.values.empty());
  keys.set("job/rank1", {'y'});
  EXPECT_EQ(first.values.size(), 1u) << "a read is answered once";
  keys.set("job/rank2", {'z'});
  EXPECT_EQ(other.values, (std::vector<bytes>{{'z'}}));
}

TEST(rendezvous_keys, a_failed_generations_waiting_reads_are_dropped_and_the_others_kept) {
  rendezvous_keys keys;
  read_log failed, current, formed;
  const auto generation_1 = herd::actors::plane_prefix("job", 1) + "/";
  keys.wait(generation_1 + "rank0", failed.reader());
  keys.wait(herd::actors::plane_prefix("job", 2) + "/rank0", current.reader());
  keys.wait(herd::actors::plane_prefix("job", 0) + "/rank0", formed.reader());
  keys.drop_reads(generation_1);
  keys.set(generation_1 + "rank0", {'1'});
  keys.set("job/g2/rank0", {'2'});
  keys.set("job/rank0", {'0'});
  EXPECT_TRUE(failed.values.empty());
  EXPECT_EQ(current.values, (std::vector<bytes>{{'2'}}));
  EXPECT_EQ(formed.values, (std::vector<bytes>{{'0'}}));
  keys.wait("job/g3/rank0", current.reader());
  keys.wait("job/rank9", formed.reader());
  keys.drop_reads(""); // the registry exits: every read goes
  keys.set("job/g3/rank0", {'3'});
  keys.set("job/rank9", {'9'});
  EXPECT_EQ(current.values.size(), 1u);
  EXPECT_EQ(formed.values.size(), 1u);
  EXPECT_EQ(failed.never + current.never + formed.never, 0) << "dropped reads are not answered";
}

// A failed generation's waiting reads, and its later ones, are told at once that their keys will
// never be set (the nodes then stop waiting instead of running into their deadline), once; the
// other generations' reads wait on.
TEST(rendezvous_keys, a_failed_generations_waiting_reads_are_told_and_the_others_kept) {
  rendezvous_keys keys;
  read_log failed, current;
  const auto generation_1 = herd::actors::plane_prefix("job", 1) + "/";
  keys.wait(generation_1 + "rank0", failed.reader());
  keys.wait(generation_1 + "rank2", failed.reader());
  keys.wait(herd::actors::plane_prefix("job", 2) + "/rank0", current.reader());
  keys.fail_reads(generation_1);
  EXPECT_EQ(failed.never, 2);
  EXPECT_EQ(current.never, 0);
  keys.wait(generation_1 + "rank1", failed.reader());
  EXPECT_EQ(failed.never, 3) << "a read that comes after the failure";
  keys.fail_reads(generation_1);
  EXPECT_EQ(failed.never, 3) << "a read is answered once";
  EXPECT_TRUE(failed.values.empty());
  keys.set("job/g2/rank0", {'2'});
  EXPECT_EQ(current.values, (std::vector<bytes>{{'2'}}));
}

TEST(rendezvous_keys, only_processes_of_welcomed_nodes_are_admitted) {
  rendezvous_keys keys;
  EXPECT_FALSE(keys.admits(process(1)));
  keys.admit(process(1));
  EXPECT_TRUE(keys.admits(process(1)));
  EXPECT_FALSE(keys.admits(process(2)));
  EXPECT_FALSE(keys.admits(caf::node_id{})) << "an anonymous sender";
  keys.admit(caf::node_id{});
  EXPECT_FALSE(keys.admits(caf::node_id{})) << "an anonymous sender, even after a hello";
  keys.expel(process(1));
  EXPECT_FALSE(keys.admits(process(1))) << "a lost node's process";
  keys.expel(process(1));
  EXPECT_FALSE(keys.admits(process(1)));
}

TEST(rendezvous_keys, a_process_welcomed_twice_stays_admitted_until_both_nodes_are_gone) {
  rendezvous_keys keys;
  keys.admit(process(3)); // a node
  keys.admit(process(3)); // the same process joining again after it was declared lost
  keys.expel(process(3)); // the first entry's loss
  EXPECT_TRUE(keys.admits(process(3)));
  keys.expel(process(3));
  EXPECT_FALSE(keys.admits(process(3)));
}

} // namespace
