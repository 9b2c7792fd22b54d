// The worker's compute thread: jobs run off the posting thread, one at a time, and shutdown lets
// a running job finish.
#include "actors/compute_thread.hpp"

#include <chrono>
#include <future>
#include <gtest/gtest.h>

namespace {

using herd::actors::compute_thread;

// A job that signals when it starts and then blocks until released, to hold the thread busy.
class blocking_job {
public:
  void post_to(compute_thread& thread) {
    auto released = release_.get_future().share();
    thread.post([this, released] {
      started_.set_value();
      released.wait();
    });
    started_.get_future().wait();
  }
  void release() { release_.set_value(); }

private:
  std::promise<void> started_;
  std::promise<void> release_;
};

TEST(compute_thread, runs_the_job_on_another_thread) {
  compute_thread thread("test");
  std::promise<std::thread::id> ran_on;
  thread.post([&] { ran_on.set_value(std::this_thread::get_id()); });
  auto result = ran_on.get_future();
  ASSERT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_NE(result.get(), std::this_thread::get_id());
}

TEST(compute_thread, busy_until_the_job_returns) {
  compute_thread thread("test");
  blocking_job job;
  job.post_to(thread);
  EXPECT_TRUE(thread.busy());
  job.release();
  for (int i = 0; i < 1000 && thread.busy(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(thread.busy());
}

TEST(compute_thread, a_job_may_be_posted_while_the_previous_one_finishes) {
  compute_thread thread("test");
  std::promise<void> second_ran;
  // The first job posts the second as its last act, as a worker's step-done handler does.
  thread.post([&] { thread.post([&] { second_ran.set_value(); }); });
  EXPECT_EQ(second_ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

TEST(compute_thread, posting_over_a_job_that_has_not_started_is_an_error) {
  compute_thread thread("test");
  blocking_job job;
  job.post_to(thread);
  thread.post([] {});                                      // waits behind the running job
  EXPECT_THROW(thread.post([] {}), std::invalid_argument); // a second waiting job is refused
  job.release();
}

TEST(compute_thread, destruction_waits_for_the_running_job) {
  bool finished = false;
  {
    compute_thread thread("test");
    std::promise<void> started;
    thread.post([&] {
      started.set_value();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      finished = true;
    });
    started.get_future().wait();
  }
  EXPECT_TRUE(finished);
}

} // namespace
