// The task pool that seals a message's pieces at once: how many threads run a call's pieces, that
// every piece runs once, errors, and calls from several threads sharing the helpers; and the
// ordered thread's order.
#include "comm/task_pool.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <gtest/gtest.h>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace herd::comm {
namespace {

// Runs `pieces` pieces that each wait (up to 10 s) until `together` of them are running at once;
// returns how many saw that, and the threads that ran them.
std::pair<int, std::set<std::thread::id>> meet(task_pool& pool, int pieces, int together) {
  std::mutex mutex;
  std::condition_variable all_here;
  int arrived = 0;
  int met = 0;
  std::set<std::thread::id> threads;
  pool.run(static_cast<std::size_t>(pieces), [&](std::size_t) {
    std::unique_lock<std::mutex> lock(mutex);
    threads.insert(std::this_thread::get_id());
    ++arrived;
    all_here.notify_all();
    if (all_here.wait_for(lock, std::chrono::seconds(10), [&] { return arrived >= together; }))
      ++met;
  });
  return {met, threads};
}

TEST(task_pool, a_call_runs_its_pieces_on_every_thread_of_the_pool_at_once) {
  task_pool pool(4);
  EXPECT_EQ(4, pool.threads());
  const auto [met, threads] = meet(pool, 4, 4);
  EXPECT_EQ(4, met) << "four pieces never ran at the same time";
  EXPECT_EQ(4u, threads.size());
}

TEST(task_pool, one_thread_runs_a_calls_pieces_in_order_on_the_caller) {
  task_pool pool(1);
  std::vector<std::size_t> order;
  std::set<std::thread::id> threads;
  pool.run(5, [&](std::size_t piece) {
    order.push_back(piece);
    threads.insert(std::this_thread::get_id());
  });
  EXPECT_EQ((std::vector<std::size_t>{0, 1, 2, 3, 4}), order);
  EXPECT_EQ((std::set<std::thread::id>{std::this_thread::get_id()}), threads);
}

TEST(task_pool, every_piece_runs_once_and_the_first_error_comes_back_after_all_ran) {
  task_pool pool(3);
  std::vector<std::atomic<int>> runs(100);
  try {
    pool.run(runs.size(), [&](std::size_t piece) {
      ++runs[piece];
      if (piece == 10) // ends after piece 20: the first error is the first piece's, not time's
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (piece == 20 || piece == 10)
        throw std::runtime_error("piece " + std::to_string(piece));
    });
    ADD_FAILURE() << "no error came back";
  } catch (const std::runtime_error& error) {
    EXPECT_STREQ("piece 10", error.what());
  }
  for (std::size_t piece = 0; piece < runs.size(); ++piece)
    EXPECT_EQ(1, runs[piece].load()) << "piece " << piece;
  pool.run(0, [](std::size_t) { ADD_FAILURE() << "a call of no pieces ran one"; });
}

TEST(task_pool, calls_from_several_threads_at_once_all_finish_with_every_piece) {
  task_pool pool(3);
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int caller = 0; caller < 6; ++caller)
    callers.emplace_back([&, caller] {
      for (int call = 0; call < 200; ++call) {
        const std::size_t n = 1 + static_cast<std::size_t>((caller + call) % 9);
        std::vector<std::atomic<int>> runs(n);
        pool.run(n, [&](std::size_t piece) { ++runs[piece]; });
        for (auto& count : runs)
          if (count.load() != 1)
            ++wrong;
      }
    });
  for (auto& caller : callers)
    caller.join();
  EXPECT_EQ(0, wrong.load());
}

TEST(task_pool, needs_a_thread) {
  EXPECT_THROW(task_pool(0), std::invalid_argument);
  const int automatic = task_pool::default_threads();
  EXPECT_GE(automatic, 1);
  EXPECT_LE(automatic, 4);
}

// give() returns before its job runs (the first job waits for the giver to be past give), and the
// jobs run in the order given, on one thread that is not the giver's.
TEST(ordered_thread, runs_jobs_in_the_order_given_on_its_own_thread_while_the_giver_goes_on) {
  std::mutex mutex;
  std::condition_variable changed;
  bool given = false;
  bool waited_out = false;
  std::vector<int> order;
  std::set<std::thread::id> threads;
  {
    ordered_thread line;
    line.give([&] {
      std::unique_lock<std::mutex> lock(mutex);
      waited_out = !changed.wait_for(lock, std::chrono::seconds(10), [&] { return given; });
    });
    {
      std::lock_guard<std::mutex> guard(mutex);
      given = true;
    }
    changed.notify_all();
    for (int job = 0; job < 100; ++job)
      line.give([&, job] {
        std::lock_guard<std::mutex> guard(mutex);
        order.push_back(job);
        threads.insert(std::this_thread::get_id());
      });
  } // the destructor runs every job given before it joins
  EXPECT_FALSE(waited_out) << "the first job ran inside give()";
  ASSERT_EQ(100u, order.size());
  for (int job = 0; job < 100; ++job)
    EXPECT_EQ(job, order[static_cast<std::size_t>(job)]);
  EXPECT_EQ(1u, threads.size());
  EXPECT_EQ(0u, threads.count(std::this_thread::get_id()));
}

// Givers on several threads: each one's jobs run in its own order, and every job runs once.
TEST(ordered_thread, jobs_given_from_several_threads_keep_each_givers_order) {
  std::vector<std::vector<int>> seen(4);
  {
    ordered_thread line;
    std::vector<std::thread> givers;
    for (std::size_t giver = 0; giver < seen.size(); ++giver)
      givers.emplace_back([&, giver] {
        for (int job = 0; job < 500; ++job) {
          line.give([&, giver, job] { seen[giver].push_back(job); }); // one thread: no lock
          if (job % 50 == 0)
            std::this_thread::sleep_for(std::chrono::microseconds(200)); // lets the line sleep
        }
      });
    for (auto& giver : givers)
      giver.join();
  }
  for (std::size_t giver = 0; giver < seen.size(); ++giver) {
    ASSERT_EQ(500u, seen[giver].size()) << "giver " << giver;
    for (int job = 0; job < 500; ++job)
      EXPECT_EQ(job, seen[giver][static_cast<std::size_t>(job)]) << "giver " << giver;
  }
}

} // namespace
} // namespace herd::comm
