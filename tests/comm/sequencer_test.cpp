// The sequencer and the issue gate (comm/sequencer.hpp) with real threads, and the emulated plane
// with NCCL's matching rule (tests/support/issue_order_plane.hpp) that the cluster's sequencer
// tests run on: it must catch a pair's mismatch and a cycle of waits, not hang on them.
#include "comm/sequencer.hpp"

#include <algorithm>
#include <atomic>
#include <gtest/gtest.h>
#include <mutex>
#include <random>
#include <thread>

#include "support/issue_order_plane.hpp"

namespace {

using namespace std::chrono_literals;
using herd::comm::issue_gate;
using herd::comm::outcome;
using herd::comm::sequencer;
using herd::testing::issue_order_fabric;

TEST(sequencer, numbers_each_nodes_reductions_without_gaps_per_generation) {
  sequencer tickets;
  auto first = tickets.take(0, {0, 2});
  auto second = tickets.take(0, {1, 2});
  auto third = tickets.take(0, {0, 1, 2});
  auto next_generation = tickets.take(1, {2, 3});
  EXPECT_EQ(first.ticket, 1u);
  EXPECT_EQ(third.ticket, 3u);
  EXPECT_EQ(first.sequences, (std::vector<std::uint64_t>{1, 1}));
  EXPECT_EQ(second.sequences, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(third.sequences, (std::vector<std::uint64_t>{2, 2, 3}));
  EXPECT_EQ(next_generation.sequences, (std::vector<std::uint64_t>{1, 1}));
  EXPECT_EQ(tickets.tickets(), 4u);
}

TEST(sequencer, the_gate_issues_in_sequence_order_whatever_order_the_threads_come_in) {
  issue_gate gate;
  constexpr int count = 64;
  std::vector<int> arrival(count);
  for (int i = 0; i < count; ++i)
    arrival[static_cast<std::size_t>(i)] = i + 1;
  std::shuffle(arrival.begin(), arrival.end(), std::mt19937(3));
  std::mutex issued_mutex;
  std::vector<int> issued;
  std::vector<std::thread> threads;
  for (int sequence : arrival) {
    threads.emplace_back([&, sequence] {
      const auto turn = gate.wait_turn(0, static_cast<std::uint64_t>(sequence), 10s);
      EXPECT_TRUE(turn.ok()) << turn.message();
      {
        const std::lock_guard<std::mutex> lock(issued_mutex);
        issued.push_back(sequence);
      }
      gate.done(0, static_cast<std::uint64_t>(sequence));
    });
    std::this_thread::sleep_for(100us);
  }
  for (auto& thread : threads)
    thread.join();
  ASSERT_EQ(issued.size(), static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i)
    EXPECT_EQ(issued[static_cast<std::size_t>(i)], i + 1);
}

TEST(sequencer, a_number_given_back_without_issuing_lets_the_later_ones_go) {
  issue_gate gate;
  gate.done(0, 2); // refused order: never issued
  std::thread first([&] {
    std::this_thread::sleep_for(20ms);
    gate.done(0, 1);
  });
  EXPECT_TRUE(gate.wait_turn(0, 3, 5s).ok());
  first.join();
  // Generations are independent lines.
  EXPECT_TRUE(gate.wait_turn(7, 1, 0ms).ok());
}

TEST(sequencer, a_turn_that_never_comes_times_out_and_a_late_number_is_refused_not_issued) {
  issue_gate gate;
  const auto waited = gate.wait_turn(0, 3, 50ms);
  EXPECT_EQ(waited.kind(), outcome::timeout);
  EXPECT_NE(waited.message().find("for reduction 1"), std::string::npos) << waited.message();
  gate.done(0, 3);
  EXPECT_TRUE(gate.wait_turn(0, 4, 0ms).ok()) << "the later numbers go on";
  const auto late = gate.wait_turn(0, 2, 1s);
  EXPECT_EQ(late.kind(), outcome::aborted) << late.message();
}

TEST(sequencer, closing_or_forgetting_a_generation_ends_its_waits) {
  issue_gate gate;
  std::thread old_generation(
      [&] { EXPECT_EQ(gate.wait_turn(0, 5, 30s).kind(), outcome::aborted); });
  std::this_thread::sleep_for(20ms);
  gate.forget_before(1);
  old_generation.join();
  std::thread waiting([&] { EXPECT_EQ(gate.wait_turn(1, 5, 30s).kind(), outcome::aborted); });
  std::this_thread::sleep_for(20ms);
  gate.close();
  waiting.join();
}

// -- the emulated plane --------------------------------------------------------------------------

std::vector<herd::comm::weighted_input> ranks(const std::vector<int>& members) {
  std::vector<herd::comm::weighted_input> inputs;
  inputs.reserve(members.size());
  for (int rank : members)
    inputs.push_back({rank, 1.0f});
  return inputs;
}

TEST(sequencer_emulated_plane, reductions_issued_in_one_order_sum_on_every_member) {
  auto fabric = std::make_shared<issue_order_fabric>(3);
  std::vector<std::shared_ptr<herd::comm::data_plane>> planes;
  planes.reserve(3);
  for (int rank = 0; rank < 3; ++rank)
    planes.push_back(fabric->plane(rank));
  std::vector<std::vector<float>> data = {{1, 2}, {10, 20}, {100, 200}};
  // Round 1 among {0, 1}, then round 2 among {0, 1, 2}; ranks issue at different times.
  auto a = planes[0]->group_reduce(ranks({0, 1}), data[0].data(), data[0].data(), 2, {1, {}});
  auto c = planes[2]->group_reduce(ranks({0, 1, 2}), data[2].data(), data[2].data(), 2, {2, {}});
  EXPECT_FALSE(a->is_completed());
  auto b = planes[1]->group_reduce(ranks({0, 1}), data[1].data(), data[1].data(), 2, {1, {}});
  EXPECT_TRUE(a->wait(1s).ok());
  EXPECT_TRUE(b->wait(1s).ok());
  EXPECT_EQ(data[0], (std::vector<float>{11, 22}));
  auto a2 = planes[0]->group_reduce(ranks({0, 1, 2}), data[0].data(), data[0].data(), 2, {2, {}});
  auto b2 = planes[1]->group_reduce(ranks({0, 1, 2}), data[1].data(), data[1].data(), 2, {2, {}});
  for (auto* work : {&a2, &b2, &c})
    EXPECT_TRUE((*work)->wait(1s).ok());
  for (const auto& values : data)
    EXPECT_EQ(values, (std::vector<float>{122, 244}));
  EXPECT_EQ(fabric->completed(), 2u);
  EXPECT_FALSE(fabric->broken()) << fabric->violation();
}

TEST(sequencer_emulated_plane, two_ranks_issuing_their_shared_rounds_in_opposite_orders_mismatch) {
  auto fabric = std::make_shared<issue_order_fabric>(2);
  auto zero = fabric->plane(0);
  auto one = fabric->plane(1);
  std::vector<float> x(4, 1.0f), y(4, 1.0f);
  auto first = zero->group_reduce(ranks({0, 1}), x.data(), x.data(), 4, {5, {}});
  auto second = one->group_reduce(ranks({0, 1}), y.data(), y.data(), 4, {6, {}});
  EXPECT_EQ(fabric->mismatches(), 1u);
  EXPECT_NE(fabric->violation().find("round 5"), std::string::npos) << fabric->violation();
  EXPECT_EQ(first->wait(1s).kind(), outcome::aborted) << "ended at once, not hung";
  EXPECT_EQ(second->wait(1s).kind(), outcome::aborted);
  // Broken like an aborted communicator: later operations fail at once.
  EXPECT_EQ(zero->group_reduce(ranks({0, 1}), x.data(), x.data(), 4, {7, {}})->wait(0ms).kind(),
            outcome::aborted);
}

TEST(sequencer_emulated_plane, a_group_of_another_size_or_members_is_a_mismatch_too) {
  auto fabric = std::make_shared<issue_order_fabric>(3);
  std::vector<float> x(4, 1.0f);
  fabric->plane(0)->group_reduce(ranks({0, 1}), x.data(), x.data(), 4, {5, {}});
  fabric->plane(1)->group_reduce(ranks({0, 1}), x.data(), x.data(), 3, {5, {}});
  EXPECT_EQ(fabric->mismatches(), 1u) << "another size";
  auto other = std::make_shared<issue_order_fabric>(3);
  other->plane(0)->group_reduce(ranks({0, 1}), x.data(), x.data(), 4, {5, {}});
  other->plane(1)->group_reduce(ranks({0, 1, 2}), x.data(), x.data(), 4, {5, {}});
  EXPECT_EQ(other->mismatches(), 1u) << "another group";
}

// docs/gpu.md's example: A issues r' (with C) before r (with B), B issues r before r'' (with C),
// C issues r'' before r'. Every pair matches, yet the three streams wait on each other.
TEST(sequencer_emulated_plane, a_cycle_of_waits_is_found_when_it_closes) {
  auto fabric = std::make_shared<issue_order_fabric>(3);
  std::vector<float> x(4, 1.0f);
  std::vector<std::shared_ptr<herd::comm::work>> works;
  works.push_back(fabric->plane(0)->group_reduce(ranks({0, 2}), x.data(), x.data(), 4, {11, {}}));
  works.push_back(fabric->plane(0)->group_reduce(ranks({0, 1}), x.data(), x.data(), 4, {10, {}}));
  works.push_back(fabric->plane(1)->group_reduce(ranks({0, 1}), x.data(), x.data(), 4, {10, {}}));
  works.push_back(fabric->plane(1)->group_reduce(ranks({1, 2}), x.data(), x.data(), 4, {12, {}}));
  EXPECT_FALSE(fabric->broken()) << "rank 2 may still issue round 11 first: "
                                 << fabric->violation();
  // Rank 2 issues round 12 first: whatever it issues later comes after, so the cycle is closed.
  works.push_back(fabric->plane(2)->group_reduce(ranks({1, 2}), x.data(), x.data(), 4, {12, {}}));
  EXPECT_TRUE(fabric->broken());
  works.push_back(fabric->plane(2)->group_reduce(ranks({0, 2}), x.data(), x.data(), 4, {11, {}}));
  EXPECT_EQ(fabric->mismatches(), 0u);
  EXPECT_EQ(fabric->deadlocks(), 1u) << fabric->violation();
  for (const auto& work : works)
    EXPECT_EQ(work->wait(1s).kind(), outcome::aborted);
}

// Many threads per rank issue random groups through the gates in ticket order: no violation, and
// every reduction finishes. Without the gates the same schedule is caught.
std::size_t random_rounds_violations(bool ordered, int rounds) {
  constexpr int nodes = 4;
  auto fabric = std::make_shared<issue_order_fabric>(nodes);
  sequencer tickets;
  std::vector<issue_gate> gates(nodes);
  std::mt19937 random(11);
  struct order {
    std::vector<int> members;
    std::vector<std::uint64_t> sequences;
  };
  std::vector<order> orders;
  for (int round = 0; round < rounds; ++round) {
    std::vector<int> members;
    for (int node = 0; node < nodes; ++node)
      if (random() % 2)
        members.push_back(node);
    if (members.size() < 2)
      members = {0, 1 + static_cast<int>(random() % 3)};
    orders.push_back({members, tickets.take(0, members).sequences});
  }
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  threads.reserve(nodes);
  for (int node = 0; node < nodes; ++node)
    threads.emplace_back([&, node] {
      auto plane = fabric->plane(node);
      std::vector<std::thread> per_round;
      for (int round = 0; round < rounds; ++round) {
        const auto& o = orders[static_cast<std::size_t>(round)];
        auto at = std::find(o.members.begin(), o.members.end(), node);
        if (at == o.members.end())
          continue;
        const auto sequence = o.sequences[static_cast<std::size_t>(at - o.members.begin())];
        per_round.emplace_back([&, round, sequence, members = o.members] {
          std::vector<float> mine(8, 1.0f);
          // Threads come to the gate out of order, as the node reducer's do.
          std::this_thread::sleep_for(
              std::chrono::microseconds((round * 7919 + node * 104729) % 300));
          if (ordered && !gates[static_cast<std::size_t>(node)].wait_turn(0, sequence, 10s).ok())
            ++failed;
          auto work = plane->group_reduce(ranks(members), mine.data(), mine.data(), 8,
                                          {static_cast<std::uint64_t>(round), {}});
          gates[static_cast<std::size_t>(node)].done(0, sequence);
          if (!work->wait(10s).ok())
            ++failed;
        });
      }
      for (auto& thread : per_round)
        thread.join();
    });
  for (auto& thread : threads)
    thread.join();
  if (ordered) {
    EXPECT_EQ(failed.load(), 0) << fabric->violation();
    EXPECT_EQ(fabric->completed(), static_cast<std::size_t>(rounds));
  }
  return fabric->mismatches() + fabric->deadlocks();
}

TEST(sequencer_emulated_plane, threads_issuing_through_the_gates_never_violate_the_rule) {
  EXPECT_EQ(random_rounds_violations(true, 400), 0u);
}

TEST(sequencer_emulated_plane, threads_issuing_without_the_gates_are_caught) {
  EXPECT_GT(random_rounds_violations(false, 400), 0u);
}

} // namespace
