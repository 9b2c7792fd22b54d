// The local data plane reads attached buffers in place and reduces them with the given weights;
// result buffers are recycled.
#include "comm/buffer_pool.hpp"
#include "comm/data_plane.hpp"

#include "support/delegating_ops.hpp"

#include <atomic>
#include <future>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <thread>

#include "support/random_values.hpp"

namespace {

using namespace std::chrono_literals;

TEST(local_plane, weighted_group_reduce_reads_attached_buffers) {
  auto plane = herd::comm::make_local_plane(herd::kernels::cpu_ops());
  EXPECT_EQ(plane->name(), "local");
  const std::size_t n = 1001;
  std::vector<std::vector<float>> sends;
  for (int rank = 0; rank < 4; ++rank) {
    sends.push_back(herd::testing::random_values(n, 100 + rank));
    plane->attach(rank, sends.back().data(), n);
  }
  std::vector<float> out(n);
  // A subset of ranks, in any order, with unequal weights.
  auto work = plane->group_reduce({{3, 0.5f}, {0, 0.25f}, {2, 0.25f}}, nullptr, out.data(), n, {});
  ASSERT_TRUE(work->wait(std::chrono::milliseconds(0)).ok());
  ASSERT_TRUE(work->is_completed());
  ASSERT_EQ(work->wait(std::chrono::milliseconds(0)).message(), "");
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_NEAR(out[i], 0.5f * sends[3][i] + 0.25f * sends[0][i] + 0.25f * sends[2][i], 1e-6f) << i;
}

// A part of the buffers (a bucket): the floats at its offset, into an output of its size, the
// same bits as those floats of a reduction of the whole; a part that does not fit is refused.
TEST(local_plane, a_part_reads_the_attached_buffers_from_its_offset) {
  auto plane = herd::comm::make_local_plane(herd::kernels::cpu_ops());
  const std::size_t n = 1001;
  std::vector<std::vector<float>> sends;
  for (int rank = 0; rank < 3; ++rank) {
    sends.push_back(herd::testing::random_values(n, 200 + rank));
    plane->attach(rank, sends.back().data(), n);
  }
  const std::vector<herd::comm::weighted_input> inputs{{0, 0.5f}, {1, 0.3f}, {2, 0.2f}};
  std::vector<float> whole(n);
  ASSERT_TRUE(plane->group_reduce(inputs, nullptr, whole.data(), n, {})->wait(0ms).ok());
  herd::comm::operation_options part;
  part.whole_count = n;
  part.part_offset = 700;
  std::vector<float> out(n - 700);
  const auto done = plane->group_reduce(inputs, nullptr, out.data(), out.size(), part)->wait(0ms);
  ASSERT_EQ(done.message(), "");
  EXPECT_EQ(out, std::vector<float>(whole.begin() + 700, whole.end()));

  part.part_offset = 702;
  const auto refused = plane->group_reduce(inputs, nullptr, out.data(), out.size(), part)->wait(0ms);
  EXPECT_EQ(refused.kind(), herd::comm::outcome::invalid_argument);
  EXPECT_THAT(refused.message(),
              testing::HasSubstr("a part of 301 floats at 702 does not fit in a buffer of 1001"));

  // Buckets cut for another buffer would read floats the marks do not follow.
  part.part_offset = 700;
  part.buckets = herd::comm::bucket_layout(1000, {512});
  const auto other = plane->group_reduce(inputs, nullptr, out.data(), out.size(), part)->wait(0ms);
  EXPECT_EQ(other.message(), "gradient buckets of a buffer of 1000 floats for a reduction of a "
                             "buffer of 1001");
}

TEST(local_plane, reads_in_place_so_later_writes_show_in_the_next_reduction) {
  auto plane = herd::comm::make_local_plane(herd::kernels::cpu_ops());
  std::vector<float> send(8, 1.0f);
  plane->attach(0, send.data(), send.size());
  std::vector<float> out(8);
  plane->group_reduce({{0, 2.0f}}, nullptr, out.data(), out.size(), {});
  EXPECT_EQ(out[5], 2.0f);
  send[5] = 3.0f;
  plane->group_reduce({{0, 2.0f}}, nullptr, out.data(), out.size(), {});
  EXPECT_EQ(out[5], 6.0f);
}

TEST(local_plane, unknown_rank_and_size_mismatch_are_errors_not_crashes) {
  auto plane = herd::comm::make_local_plane(herd::kernels::cpu_ops());
  std::vector<float> send(8, 1.0f);
  plane->attach(0, send.data(), send.size());
  std::vector<float> out(8);
  EXPECT_THAT(plane->group_reduce({{1, 1.0f}}, nullptr, out.data(), 8, {})->wait(0ms).message(),
              testing::HasSubstr("rank 1 has no attached buffer"));
  EXPECT_THAT(plane->group_reduce({{0, 1.0f}}, nullptr, out.data(), 4, {})->wait(0ms).message(),
              testing::HasSubstr("attached 8 floats, the reduction wants 4"));
  EXPECT_THAT(plane->group_reduce({}, nullptr, out.data(), 8, {})->wait(0ms).message(),
              testing::HasSubstr("no inputs"));
  plane->detach(0);
  EXPECT_THAT(plane->group_reduce({{0, 1.0f}}, nullptr, out.data(), 8, {})->wait(0ms).message(),
              testing::HasSubstr("rank 0 has no attached buffer"));
}

TEST(buffer_pool, released_buffers_are_reused) {
  auto pool = herd::comm::buffer_pool::create(16);
  const float* first_address = nullptr;
  {
    auto first = pool->acquire();
    ASSERT_EQ(first->size(), 16u);
    first_address = first->data();
    auto second = pool->acquire();
    EXPECT_NE(second->data(), first_address);
    EXPECT_EQ(pool->allocated(), 2u);
    EXPECT_EQ(pool->idle(), 0u);
  }
  EXPECT_EQ(pool->idle(), 2u);
  auto again = pool->acquire();
  auto again2 = pool->acquire();
  EXPECT_TRUE(again->data() == first_address || again2->data() == first_address);
  EXPECT_EQ(pool->allocated(), 2u);
}

TEST(buffer_pool, buffers_outliving_the_pool_are_freed) {
  herd::comm::shared_buffer survivor;
  {
    auto pool = herd::comm::buffer_pool::create(4);
    survivor = pool->acquire();
    survivor->data()[3] = 7.0f;
  }
  EXPECT_EQ(survivor->data()[3], 7.0f); // still valid; freed when dropped (ASan checks the rest)
  survivor.reset();
}

} // namespace

namespace {

TEST(local_plane, detach_waits_for_a_reduction_that_reads_the_buffer) {
  // A kernel double that holds the reduction open until told to finish.
  struct held_ops : herd::testing::delegating_ops {
    std::promise<void> entered;
    std::shared_future<void> release;
    void weighted_sum(float* out, const float* const* inputs, const float*, int,
                      std::size_t n) const override {
      const_cast<held_ops*>(this)->entered.set_value();
      release.wait();
      std::copy_n(inputs[0], n, out);
    }
  };
  held_ops ops;
  std::promise<void> release;
  ops.release = release.get_future().share();
  auto entered = ops.entered.get_future();
  auto plane = herd::comm::make_local_plane(ops);
  std::vector<float> send(16, 2.0f);
  plane->attach(0, send.data(), send.size());
  std::vector<float> out(16);
  std::thread reducer([&] {
    plane->group_reduce({{0, 1.0f}}, nullptr, out.data(), out.size(), {});
  });
  entered.wait();
  std::atomic<bool> detached{false};
  std::thread owner([&] {
    plane->detach(0);
    detached = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(detached) << "detach returned while a reduction was reading the buffer";
  release.set_value();
  reducer.join();
  owner.join();
  EXPECT_TRUE(detached);
  EXPECT_EQ(out[7], 2.0f);
}

TEST(local_plane, a_kernel_failure_comes_back_through_the_work_handle) {
  auto plane = herd::comm::make_local_plane(herd::kernels::cpu_ops());
  std::vector<float> send(8, 1.0f);
  plane->attach(0, send.data(), send.size());
  // out aliasing a later input is a precondition error of weighted_sum.
  plane->attach(1, send.data(), send.size());
  auto work = plane->group_reduce({{1, 1.0f}, {0, 1.0f}}, nullptr, send.data(), send.size(), {});
  EXPECT_THAT(work->wait(0ms).message(), testing::HasSubstr("weighted sum failed"));
}

} // namespace
