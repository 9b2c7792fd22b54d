// Gradient buckets: a backward pass marks how much of a send buffer is final, and the local plane
// reduces a buffer still being written bucket by bucket, each once it is final, with the bits a
// reduction of the finished buffers has.
#include "comm/data_plane.hpp"
#include "comm/gradient_marks.hpp"

#include <atomic>
#include <condition_variable>
#include <future>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mutex>
#include <thread>

#include "support/delegating_ops.hpp"
#include "support/random_values.hpp"

namespace {

using namespace std::chrono_literals;
using herd::comm::gradient_marks;
using herd::comm::outcome;

gradient_marks::clock_type::time_point in(std::chrono::milliseconds wait) {
  return gradient_marks::clock_type::now() + wait;
}

TEST(gradient_marks, a_buffer_at_rest_is_final) {
  const gradient_marks marks(100);
  EXPECT_FALSE(marks.writing());
  EXPECT_TRUE(marks.wait_final_from(0, in(0ms)).ok());
}

TEST(gradient_marks, a_wait_ends_once_the_pass_has_made_its_part_final) {
  gradient_marks marks(100);
  marks.begin();
  EXPECT_TRUE(marks.writing());
  std::atomic<int> marked{0};
  std::thread pass([&] {
    std::this_thread::sleep_for(20ms);
    marked = 1;
    marks.final_from(60);
    std::this_thread::sleep_for(20ms);
    marked = 2;
    marks.end();
  });
  ASSERT_TRUE(marks.wait_final_from(60, in(10s)).ok());
  EXPECT_GE(marked.load(), 1);
  ASSERT_TRUE(marks.wait_final_from(0, in(10s)).ok());
  EXPECT_EQ(marked.load(), 2);
  pass.join();
  EXPECT_FALSE(marks.writing());
  marks.final_from(50); // a mark after the end changes nothing
  EXPECT_TRUE(marks.wait_final_from(0, in(0ms)).ok());
}

TEST(gradient_marks, a_wait_that_runs_out_names_what_is_missing) {
  gradient_marks marks(100);
  marks.begin();
  marks.final_from(80);
  EXPECT_TRUE(marks.wait_final_from(90, in(0ms)).ok());
  const auto late = marks.wait_final_from(10, in(20ms));
  EXPECT_EQ(late.kind(), outcome::timeout);
  EXPECT_EQ(late.message(), "floats [10, 80) of the gradient were not final in time");
}

TEST(gradient_marks, an_abandoned_pass_fails_the_waits_until_the_next_one_begins) {
  gradient_marks marks(100);
  marks.begin();
  std::thread pass([&] {
    std::this_thread::sleep_for(20ms);
    marks.abandon("worker 3: out of memory");
  });
  const auto failed = marks.wait_final_from(0, in(10s));
  pass.join();
  EXPECT_EQ(failed.kind(), outcome::peer_lost);
  EXPECT_EQ(failed.message(),
            "floats [0, 100) of the gradient were never written: worker 3: out of memory");
  EXPECT_TRUE(marks.writing());
  marks.begin();
  marks.end();
  EXPECT_TRUE(marks.wait_final_from(0, in(0ms)).ok());
}

// The kernel calls a reduction makes, and a way to wait for the first of them.
class recording_ops final : public herd::testing::delegating_ops {
public:
  void weighted_sum(float* out, const float* const* inputs, const float* weights, int k,
                    std::size_t n) const override {
    base().weighted_sum(out, inputs, weights, k, n);
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.push_back({out, n});
    called_.notify_all();
  }
  bool wait_for_calls(std::size_t count, std::chrono::milliseconds wait) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return called_.wait_for(lock, wait, [&] { return calls_.size() >= count; });
  }
  std::vector<std::pair<float*, std::size_t>> calls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

private:
  mutable std::mutex mutex_;
  mutable std::condition_variable called_;
  mutable std::vector<std::pair<float*, std::size_t>> calls_;
};

// Two buffers written by passes that finish them from the end, 1,000 floats at a time: the
// reduction sums the last bucket before the passes have finished the rest (each pass waits for
// that sum before it goes on), cuts its buckets where the layout says, and ends with the bits of
// a reduction of the finished buffers.
TEST(local_plane, reduces_buffers_still_being_written_bucket_by_bucket_as_they_become_final) {
  const recording_ops ops;
  auto plane = herd::comm::make_local_plane(ops);
  const std::size_t n = 5000;
  std::vector<std::vector<float>> finished, sends;
  std::vector<std::shared_ptr<gradient_marks>> marks;
  for (int rank = 0; rank < 2; ++rank) {
    finished.push_back(herd::testing::random_values(n, 300 + rank));
    sends.emplace_back(n, std::numeric_limits<float>::quiet_NaN());
    marks.push_back(std::make_shared<gradient_marks>(n));
    ASSERT_TRUE(plane->attach(rank, sends.back().data(), n).ok());
    ASSERT_TRUE(plane->attach_marks(rank, marks.back()).ok());
    marks.back()->begin();
  }
  std::atomic<bool> summed_early{false};
  std::vector<std::thread> passes;
  for (std::size_t rank = 0; rank < 2; ++rank)
    passes.emplace_back([&, rank] {
      for (std::size_t end = n; end > 0;) {
        const std::size_t begin = end >= 1000 ? end - 1000 : 0;
        std::copy(finished[rank].begin() + begin, finished[rank].begin() + end,
                  sends[rank].begin() + begin);
        marks[rank]->final_from(begin);
        if (end == n && ops.wait_for_calls(1, 10s))
          summed_early = true; // the bucket [4096, 5000) was reduced while this pass went on
        end = begin;
      }
    });
  herd::comm::operation_options options;
  options.timeout = 20s;
  options.buckets = herd::comm::bucket_layout(n, {1024, 2048, 3072, 4096});
  std::vector<float> out(n);
  const auto reduced =
      plane->group_reduce({{0, 0.25f}, {1, 0.75f}}, nullptr, out.data(), n, options)->wait(0ms);
  for (auto& pass : passes)
    pass.join();
  ASSERT_EQ(reduced.message(), "");
  EXPECT_TRUE(summed_early);
  std::vector<std::size_t> cut;
  for (const auto& [where, count] : ops.calls())
    cut.push_back(static_cast<std::size_t>(where - out.data()));
  EXPECT_THAT(cut, testing::ElementsAre(4096, 3072, 2048, 1024, 0));

  std::vector<float> whole(n);
  ASSERT_TRUE(
      plane->group_reduce({{0, 0.25f}, {1, 0.75f}}, nullptr, whole.data(), n, {})->wait(0ms).ok());
  EXPECT_EQ(ops.calls().size(), 6u); // at rest: one pass over the whole
  EXPECT_EQ(out, whole);
}

TEST(local_plane, a_pass_that_fails_fails_the_reduction_waiting_for_it) {
  auto plane = herd::comm::make_local_plane(herd::kernels::cpu_ops());
  std::vector<float> send(100, 1.0f);
  auto marks = std::make_shared<gradient_marks>(send.size());
  ASSERT_TRUE(plane->attach(7, send.data(), send.size()).ok());
  ASSERT_TRUE(plane->attach_marks(7, marks).ok());
  marks->begin();
  marks->final_from(40);
  marks->abandon("the step threw");
  herd::comm::operation_options options;
  options.buckets = herd::comm::bucket_layout(send.size(), {32, 64, 96});
  std::vector<float> out(send.size());
  const auto failed =
      plane->group_reduce({{7, 1.0f}}, nullptr, out.data(), out.size(), options)->wait(0ms);
  EXPECT_EQ(failed.kind(), outcome::peer_lost);
  EXPECT_EQ(failed.message(),
            "rank 7: floats [32, 40) of the gradient were never written: the step threw");
}

TEST(local_plane, refuses_marks_that_do_not_fit_the_buffer) {
  auto plane = herd::comm::make_local_plane(herd::kernels::cpu_ops());
  std::vector<float> send(100);
  EXPECT_EQ(plane->attach_marks(0, std::make_shared<gradient_marks>(100)).message(),
            "rank 0 has no attached buffer");
  ASSERT_TRUE(plane->attach(0, send.data(), send.size()).ok());
  EXPECT_EQ(plane->attach_marks(0, std::make_shared<gradient_marks>(99)).message(),
            "marks for 99 floats on rank 0's buffer of 100");
}

} // namespace
