// The watchdog on the CPU, with real threads and fake queries: operations that complete in time end
// completed, a deadline or an asynchronous error aborts once with a message naming the operation
// and the cause, later operations fail at once, the callbacks never overlap and never run after
// the abort, and destruction ends everything cleanly. Bounds on waits are generous (10 s) and only
// guard against hangs; no assertion depends on how fast the machine is.
#include "comm/watchdog.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/comm_outcome.hpp"

namespace {

using herd::comm::outcome;
using herd::comm::watchdog;
using herd::comm::watchdog_options;
using namespace std::chrono_literals;
using testing::HasSubstr;

constexpr std::chrono::milliseconds generous = 10s;

// Whether `operation` ended within `timeout`.
bool ended_within(herd::comm::watched_operation& operation, std::chrono::milliseconds timeout) {
  operation.wait(timeout);
  return operation.is_completed();
}

// Fake resource behind the callbacks: counts calls, records whether any query overlapped another
// callback or came after the abort, and can be told to report an asynchronous error.
struct fake_communicator {
  std::atomic<int> aborts{0};
  std::atomic<int> queries_after_abort{0};
  std::atomic<int> overlapping_calls{0};
  std::atomic<int> in_callback{0};
  std::atomic<bool> fail_asynchronously{false};
  std::string last_cause;
  std::mutex cause_mutex;

  // Marks a callback's run; notes an overlap with another one.
  class call_scope {
  public:
    explicit call_scope(fake_communicator& owner) : owner_(owner) {
      if (owner_.in_callback.fetch_add(1) != 0)
        owner_.overlapping_calls.fetch_add(1);
    }
    ~call_scope() { owner_.in_callback.fetch_sub(1); }
    call_scope(const call_scope&) = delete;
    call_scope& operator=(const call_scope&) = delete;

  private:
    fake_communicator& owner_;
  };

  void note_query() {
    if (aborts.load() > 0)
      queries_after_abort.fetch_add(1);
  }

  std::unique_ptr<watchdog> make_watchdog(watchdog_options options = {}) {
    return std::make_unique<watchdog>(
        "fake rank 3 of 4",
        [this] {
          call_scope scope(*this);
          note_query();
          return fail_asynchronously.load() ? std::string("the link to rank 2 went down")
                                            : std::string();
        },
        [this](const std::string& cause) {
          call_scope scope(*this);
          aborts.fetch_add(1);
          std::lock_guard<std::mutex> lock(cause_mutex);
          last_cause = cause;
          return std::string("the fake communicator was aborted");
        },
        options);
  }

  // A completion query that reads `done` and takes part in the overlap bookkeeping.
  std::function<bool()> completes_when(const std::shared_ptr<std::atomic<bool>>& done) {
    return [this, done] {
      call_scope scope(*this);
      note_query();
      return done->load();
    };
  }
};

TEST(watchdog, an_operation_that_completes_in_time_ends_completed_and_nothing_is_aborted) {
  fake_communicator fake;
  auto dog = fake.make_watchdog();
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto operation = dog->watch("group reduction among ranks [0, 3]", fake.completes_when(done), 60s);
  EXPECT_FALSE(operation->is_completed());
  std::thread completer([done] {
    std::this_thread::sleep_for(50ms);
    done->store(true);
  });
  EXPECT_TRUE(ended_within(*operation, generous));
  completer.join();
  EXPECT_TRUE(operation->wait(0ms).ok());
  EXPECT_EQ(operation->wait(0ms).message(), "");
  EXPECT_FALSE(dog->aborted());
  EXPECT_EQ(dog->abort_message(), "");
  EXPECT_EQ(fake.aborts.load(), 0);
  // Later operations are watched as usual.
  auto next_done = std::make_shared<std::atomic<bool>>(true);
  auto next = dog->watch("the next one", fake.completes_when(next_done), 60s);
  EXPECT_TRUE(ended_within(*next, generous));
  EXPECT_TRUE(next->wait(0ms).ok());
  EXPECT_EQ(fake.overlapping_calls.load(), 0);
}

TEST(watchdog, an_operation_that_never_completes_is_aborted_after_its_deadline_with_the_message) {
  fake_communicator fake;
  auto dog = fake.make_watchdog();
  auto never = std::make_shared<std::atomic<bool>>(false);
  const auto started = std::chrono::steady_clock::now();
  auto operation = dog->watch("group reduction among ranks [0, 2] (1000 floats)",
                              fake.completes_when(never), 300ms);
  ASSERT_TRUE(ended_within(*operation, generous))
      << "not aborted within " << generous.count() << " ms";
  // Never before its deadline (the deadline counts from watch(), which came after `started`).
  EXPECT_GE(std::chrono::steady_clock::now() - started, 300ms);
  EXPECT_TRUE(operation->is_completed());
  EXPECT_FALSE(operation->wait(0ms).ok());
  EXPECT_EQ(operation->wait(0ms).message(),
            "fake rank 3 of 4: group reduction among ranks [0, 2] (1000 floats) did not finish "
            "within 300 ms; the fake communicator was aborted");
  EXPECT_TRUE(dog->aborted());
  EXPECT_EQ(dog->abort_message(), operation->wait(0ms).message());
  EXPECT_EQ(fake.aborts.load(), 1);
  {
    std::lock_guard<std::mutex> lock(fake.cause_mutex);
    EXPECT_EQ(fake.last_cause,
              "group reduction among ranks [0, 2] (1000 floats) did not finish within 300 ms");
  }
}

TEST(watchdog, after_an_abort_every_later_operation_fails_at_once_with_the_same_message) {
  fake_communicator fake;
  auto dog = fake.make_watchdog(watchdog_options{1ms, 1ms}); // polls often, idle or not
  auto never = std::make_shared<std::atomic<bool>>(false);
  auto hung = dog->watch("the hung one", fake.completes_when(never), 100ms);
  ASSERT_TRUE(ended_within(*hung, generous));
  auto done = std::make_shared<std::atomic<bool>>(true);
  auto later = dog->watch("a later one", fake.completes_when(done), 60s);
  // Already ended, without waiting for the watchdog's thread.
  EXPECT_TRUE(later->is_completed());
  EXPECT_FALSE(later->wait(0ms).ok());
  EXPECT_EQ(later->wait(0ms).message(), hung->wait(0ms).message());
  EXPECT_THAT(later->wait(0ms).message(), HasSubstr("the hung one did not finish within 100 ms"));
  // Queries stop with the abort: give the thread a few polling rounds to prove it.
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(fake.queries_after_abort.load(), 0);
  EXPECT_EQ(fake.aborts.load(), 1);
}

TEST(watchdog, an_asynchronous_error_aborts_at_once_and_names_the_operations_in_flight) {
  fake_communicator fake;
  auto dog = fake.make_watchdog();
  auto never = std::make_shared<std::atomic<bool>>(false);
  // Deadlines far away: only the error can end these.
  auto first =
      dog->watch("group reduction among ranks [2, 3] (7 floats)", fake.completes_when(never), 600s);
  auto second = dog->watch("group reduction among ranks [0, 1, 2, 3] (7 floats)",
                           fake.completes_when(never), 600s);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(first->is_completed());
  fake.fail_asynchronously.store(true);
  ASSERT_TRUE(ended_within(*first, generous));
  ASSERT_TRUE(ended_within(*second, generous));
  EXPECT_EQ(first->wait(0ms).message(), second->wait(0ms).message());
  EXPECT_EQ(first->wait(0ms).message(),
            "fake rank 3 of 4: the link to rank 2 went down during group reduction "
            "among ranks [2, 3] (7 floats), group reduction among ranks "
            "[0, 1, 2, 3] (7 floats); the fake communicator was aborted");
  EXPECT_EQ(fake.aborts.load(), 1);
  EXPECT_EQ(fake.queries_after_abort.load(), 0);
}

TEST(watchdog, an_asynchronous_error_with_nothing_in_flight_still_aborts) {
  fake_communicator fake;
  auto dog = fake.make_watchdog(watchdog_options{1ms, 5ms});
  fake.fail_asynchronously.store(true);
  const auto give_up = std::chrono::steady_clock::now() + generous;
  while (!dog->aborted() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(dog->aborted());
  EXPECT_EQ(dog->abort_message(),
            "fake rank 3 of 4: the link to rank 2 went down; the fake communicator was aborted");
  auto done = std::make_shared<std::atomic<bool>>(true);
  auto later = dog->watch("a later one", fake.completes_when(done), 60s);
  EXPECT_TRUE(later->is_completed());
  EXPECT_EQ(later->wait(0ms).message(), dog->abort_message());
}

TEST(watchdog, a_completion_query_that_throws_aborts_with_its_words) {
  fake_communicator fake;
  auto dog = fake.make_watchdog();
  auto operation = dog->watch(
      "group reduction among ranks [1, 3] (5 floats)",
      []() -> bool { throw std::runtime_error("cudaEventQuery(event) failed: illegal address"); },
      600s);
  ASSERT_TRUE(ended_within(*operation, generous));
  EXPECT_EQ(operation->wait(0ms).message(),
            "fake rank 3 of 4: group reduction among ranks [1, 3] (5 floats) "
            "failed: cudaEventQuery(event) failed: illegal address; the fake "
            "communicator was aborted");
  EXPECT_EQ(fake.aborts.load(), 1);
}

TEST(watchdog, an_abort_callback_that_throws_still_fails_everything_and_says_so) {
  std::atomic<int> aborts{0};
  watchdog dog(
      "fake rank 0 of 2", [] { return std::string(); },
      [&aborts](const std::string&) -> std::string {
        aborts.fetch_add(1);
        throw std::runtime_error("ncclCommAbort returned 'internal error'");
      });
  auto never = std::make_shared<std::atomic<bool>>(false);
  auto operation = dog.watch(
      "finalisation", [never] { return never->load(); }, 50ms);
  ASSERT_TRUE(ended_within(*operation, generous));
  EXPECT_EQ(operation->wait(0ms).message(),
            "fake rank 0 of 2: finalisation did not finish within 50 ms; the "
            "abort itself failed: ncclCommAbort returned 'internal error'");
  EXPECT_TRUE(dog.aborted());
  EXPECT_EQ(aborts.load(), 1);
}

TEST(watchdog, the_owner_aborts_explicitly_and_every_abort_after_the_first_changes_nothing) {
  fake_communicator fake;
  auto dog = fake.make_watchdog();
  auto never = std::make_shared<std::atomic<bool>>(false);
  auto in_flight =
      dog->watch("group reduction among ranks [0, 3]", fake.completes_when(never), 600s);
  const std::string message = dog->abort("ncclSend(...) failed with NCCL error 5 invalid usage");
  EXPECT_EQ(message, "fake rank 3 of 4: ncclSend(...) failed with NCCL error 5 invalid usage; the "
                     "fake communicator was aborted");
  EXPECT_TRUE(in_flight->is_completed()); // failed by the abort before abort() returned
  EXPECT_EQ(in_flight->wait(0ms).message(), message);
  EXPECT_EQ(dog->abort("a second cause"), message);
  EXPECT_EQ(fake.aborts.load(), 1);
}

TEST(watchdog, concurrent_aborts_deadlines_and_errors_run_the_abort_exactly_once) {
  for (int round = 0; round < 20; ++round) {
    fake_communicator fake;
    auto dog = fake.make_watchdog();
    auto never = std::make_shared<std::atomic<bool>>(false);
    std::vector<std::shared_ptr<herd::comm::watched_operation>> operations;
    operations.reserve(8);
    for (int i = 0; i < 8; ++i)
      operations.push_back(
          dog->watch("operation " + std::to_string(i), fake.completes_when(never), 1ms));
    fake.fail_asynchronously.store(round % 2 == 0);
    std::vector<std::thread> aborters;
    std::vector<std::string> messages(4);
    for (std::size_t i = 0; i < messages.size(); ++i)
      aborters.emplace_back([&, i] { messages[i] = dog->abort("owner " + std::to_string(i)); });
    for (auto& thread : aborters)
      thread.join();
    for (const auto& operation : operations) {
      ASSERT_TRUE(ended_within(*operation, generous));
      EXPECT_EQ(operation->wait(0ms).message(), dog->abort_message());
    }
    for (const auto& message : messages)
      EXPECT_EQ(message, dog->abort_message());
    EXPECT_EQ(fake.aborts.load(), 1) << "round " << round;
    EXPECT_EQ(fake.overlapping_calls.load(), 0) << "round " << round;
    EXPECT_EQ(fake.queries_after_abort.load(), 0) << "round " << round;
  }
}

TEST(watchdog, many_threads_watching_at_once_all_complete_without_overlapping_queries) {
  fake_communicator fake;
  auto dog = fake.make_watchdog();
  std::vector<std::thread> threads;
  threads.reserve(8);
  std::atomic<int> completed{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto done = std::make_shared<std::atomic<bool>>(false);
        auto operation = dog->watch("operation " + std::to_string(t) + "." + std::to_string(i),
                                    fake.completes_when(done), 60s);
        done->store(true);
        if (ended_within(*operation, generous) && operation->wait(0ms).ok())
          completed.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(completed.load(), 8 * 25);
  EXPECT_EQ(fake.aborts.load(), 0);
  EXPECT_EQ(fake.overlapping_calls.load(), 0);
}

TEST(watchdog, destruction_while_polling_ends_running_operations_without_an_abort) {
  fake_communicator fake;
  std::shared_ptr<herd::comm::watched_operation> operation;
  auto slow_query_running = std::make_shared<std::atomic<bool>>(false);
  {
    auto dog = fake.make_watchdog();
    // A query that takes a while, so the destructor meets the thread inside a polling round.
    operation = dog->watch(
        "group reduction among ranks [0, 1] (3 floats)",
        [slow_query_running] {
          slow_query_running->store(true);
          std::this_thread::sleep_for(20ms);
          return false;
        },
        600s);
    const auto give_up = std::chrono::steady_clock::now() + generous;
    while (!slow_query_running->load() && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(1ms);
    ASSERT_TRUE(slow_query_running->load());
  }
  EXPECT_TRUE(operation->is_completed());
  EXPECT_EQ(operation->wait(0ms).message(),
            "fake rank 3 of 4: the watchdog stopped before group reduction "
            "among ranks [0, 1] (3 floats) finished");
  EXPECT_EQ(fake.aborts.load(), 0);
}

TEST(watchdog, destruction_with_nothing_watched_returns) {
  fake_communicator fake;
  for (int i = 0; i < 50; ++i) {
    auto dog = fake.make_watchdog();
    if (i % 2 == 0)
      std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(fake.aborts.load(), 0);
}

// The result's kind: the operation whose deadline aborted the plane timed out, the others in
// flight, and every later one, were aborted; all say the same words.
TEST(watchdog, a_deadline_abort_fails_the_overdue_operation_as_timeout_and_the_rest_as_aborted) {
  fake_communicator fake;
  auto dog = fake.make_watchdog();
  auto never = std::make_shared<std::atomic<bool>>(false);
  auto overdue = dog->watch("the hung one", fake.completes_when(never), 100ms);
  auto bystander = dog->watch("a bystander", fake.completes_when(never), 600s);
  ASSERT_TRUE(ended_within(*overdue, generous));
  ASSERT_TRUE(ended_within(*bystander, generous));
  EXPECT_EQ(overdue->wait(0ms).kind(), outcome::timeout);
  EXPECT_EQ(bystander->wait(0ms).kind(), outcome::aborted);
  EXPECT_EQ(bystander->wait(0ms).message(), overdue->wait(0ms).message());
  auto later = dog->watch("a later one", fake.completes_when(never), 600s);
  EXPECT_EQ(later->wait(0ms).kind(), outcome::aborted);
}

TEST(watchdog, a_wait_that_runs_out_first_is_a_timeout_and_the_operation_goes_on) {
  fake_communicator fake;
  auto dog = fake.make_watchdog();
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto operation = dog->watch("a slow one", fake.completes_when(done), 600s);
  const auto waited = operation->wait(20ms);
  EXPECT_EQ(waited.kind(), outcome::timeout);
  EXPECT_EQ(waited.message(), "a slow one was still running after a wait of 20 ms");
  EXPECT_FALSE(operation->is_completed());
  done->store(true);
  EXPECT_EQ(operation->wait(generous).kind(), outcome::done);
  EXPECT_FALSE(dog->aborted());
}

// How the Gloo plane uses it: no completion query (the owner ends the operation), and a deadline
// that ends the operation alone through its expire hook, without the plane's abort.
TEST(watchdog, an_operation_the_plane_ends_alone_expires_at_its_deadline_without_an_abort) {
  fake_communicator fake;
  auto dog = fake.make_watchdog();
  std::atomic<int> expired{0};
  const auto started = std::chrono::steady_clock::now();
  auto operation = dog->watch("group_reduce (tag 9)", nullptr, 100ms, [&expired] { ++expired; });
  ASSERT_TRUE(ended_within(*operation, generous));
  EXPECT_GE(std::chrono::steady_clock::now() - started, 100ms);
  EXPECT_EQ(operation->wait(0ms).kind(), outcome::timeout);
  EXPECT_EQ(operation->wait(0ms).message(),
            "fake rank 3 of 4: group_reduce (tag 9) did not finish within 100 ms");
  EXPECT_EQ(expired.load(), 1);
  EXPECT_FALSE(dog->aborted());
  EXPECT_EQ(fake.aborts.load(), 0);
  // The owner's own verdict comes too late to change the result, and the plane works on.
  dog->finish(*operation, {});
  EXPECT_EQ(operation->wait(0ms).kind(), outcome::timeout);
  auto next = dog->watch("group_reduce (tag 10)", nullptr, 100ms, [&expired] { ++expired; });
  dog->finish(*next, {});
  EXPECT_EQ(next->wait(0ms).kind(), outcome::done);
  std::this_thread::sleep_for(200ms); // past its deadline: finished operations never expire
  EXPECT_EQ(expired.load(), 1);
}

} // namespace
