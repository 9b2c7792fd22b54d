// Herd's scheduler (actors/scheduling.hpp): actors run on it, and a send batch wakes no sleeping
// scheduler thread until it ends, then wakes them for what it made ready.
#include "actors/scheduling.hpp"

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <gtest/gtest.h>
#include <memory>
#include <thread>
#include <vector>

namespace {

using namespace herd::actors;
using counter = std::shared_ptr<std::atomic<int>>;

caf::behavior counting(caf::event_based_actor*, counter handled) {
  return {[handled](int) { handled->fetch_add(1); }};
}

// Whether `done()` comes true within 10 s.
template <class Condition>
bool comes_true(Condition done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done();
}

// Whether `handled` reaches `expected` within 10 s (the messages were handled at all).
bool reaches(const counter& handled, int expected) {
  return comes_true([&] { return handled->load() == expected; });
}

struct herd_system {
  explicit herd_system(std::size_t scheduler_threads) : threads(scheduler_threads) {
    use_herd_scheduler(config, threads);
    system = std::make_unique<caf::actor_system>(config);
  }
  // Waits until every scheduler thread sleeps (the actors spawned so far started and went idle).
  void settle() {
    ASSERT_TRUE(comes_true([&] { return scheduler_sleeping(*system) == threads; }))
        << scheduler_sleeping(*system) << " of " << threads << " scheduler threads sleep";
  }
  // `count` idle actors that count the messages they handle in `handled`.
  std::vector<caf::actor> spawn_counting(int count, const counter& handled) {
    std::vector<caf::actor> spawned;
    for (int i = 0; i < count; ++i)
      spawned.push_back(system->spawn(counting, handled));
    return spawned;
  }
  std::size_t threads;
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
};

// Messages from a thread outside the scheduler, to an actor whose scheduler threads all sleep,
// are handled: each send wakes one thread, not both.
TEST(herd_scheduler, wakes_one_sleeping_thread_for_a_message_from_outside) {
  herd_system made(2);
  auto handled = std::make_shared<std::atomic<int>>(0);
  const auto actor = made.system->spawn(counting, handled);
  for (int i = 0; i < 5; ++i) {
    made.settle();
    const auto before = scheduler_wakes(*made.system);
    caf::anon_send(actor, i);
    ASSERT_TRUE(reaches(handled, i + 1)) << "message " << i << " was not handled";
    EXPECT_EQ(scheduler_wakes(*made.system), before + 1);
  }
}

// An actor's handler sends to 64 idle actors inside a batch: no scheduler thread is woken while
// it sends, the one other thread once when the batch ends, and every message is handled.
TEST(herd_scheduler, a_batch_in_a_handler_wakes_the_other_thread_once_at_its_end) {
  herd_system made(2);
  auto handled = std::make_shared<std::atomic<int>>(0);
  const auto members = made.spawn_counting(64, handled);
  made.settle();
  caf::actor_system& system = *made.system;
  std::promise<std::pair<std::uint64_t, std::uint64_t>> wakes; // during the batch, at its end
  auto sender = system.spawn([&](caf::event_based_actor*) -> caf::behavior {
    return {[&](int) {
      const auto before = scheduler_wakes(system);
      std::uint64_t during = 0;
      {
        const send_batch batch;
        for (const auto& member : members)
          caf::anon_send(member, 1);
        during = scheduler_wakes(system) - before;
      }
      wakes.set_value({during, scheduler_wakes(system) - before});
    }};
  });
  caf::anon_send(sender, 0);
  auto counted = wakes.get_future();
  ASSERT_EQ(counted.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  const auto [during, at_end] = counted.get();
  EXPECT_EQ(during, 0u);
  EXPECT_EQ(at_end, 1u); // 2 threads, one of them the sender's
  EXPECT_TRUE(reaches(handled, 64)) << handled->load() << " of 64 handled";
}

// A batch on a thread outside the scheduler (here the test's) holds every wake until its
// outermost level ends; then the sleeping threads are woken and handle what it sent.
TEST(herd_scheduler, nested_batches_outside_the_scheduler_wake_when_the_outermost_ends) {
  herd_system made(3);
  auto handled = std::make_shared<std::atomic<int>>(0);
  const auto members = made.spawn_counting(16, handled);
  made.settle();
  const auto before = scheduler_wakes(*made.system);
  {
    const send_batch outer;
    {
      const send_batch inner;
      for (const auto& member : members)
        caf::anon_send(member, 1);
    }
    EXPECT_EQ(scheduler_wakes(*made.system), before) << "the inner batch woke a thread";
  }
  // 16 actors made ready, 3 threads asleep: each woken once.
  EXPECT_EQ(scheduler_wakes(*made.system), before + 3) << "the outer batch's end";
  EXPECT_TRUE(reaches(handled, 16)) << handled->load() << " of 16 handled";
}

// A system on CAF's own scheduler knows nothing of batches: its sends inside one are handled
// as ever, and it reports no wakes.
TEST(herd_scheduler, a_batch_leaves_another_scheduler_as_it_is) {
  caf::actor_system_config config;
  config.set("scheduler.policy", caf::atom("sharing"));
  caf::actor_system system{config};
  auto handled = std::make_shared<std::atomic<int>>(0);
  const auto actor = system.spawn(counting, handled);
  {
    const send_batch batch;
    caf::anon_send(actor, 1);
    EXPECT_TRUE(reaches(handled, 1)) << "a send in a batch waited for the batch";
  }
  EXPECT_EQ(scheduler_wakes(system), 0u);
}

} // namespace
