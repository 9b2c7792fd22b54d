// One round's reduction on a node, without an actor system: the tags of its operations bucket by
// bucket, and buckets cut for another buffer refused before anything is read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdexcept>

#include "cluster/round_reduction.hpp"

namespace {

using herd::cluster::round_tags;
using herd::comm::bucket_layout;
using testing::ElementsAre;

TEST(round_reduction, a_round_of_buckets_has_one_tag_per_bucket_after_the_rounds_before_it) {
  const bucket_layout three(5000, {1024, 3072});
  EXPECT_THAT(round_tags(7, three, true), ElementsAre(21, 22, 23));
  EXPECT_THAT(round_tags(0, three, true), ElementsAre(0, 1, 2));
  // At once (a plane that matches in issue order), or without buckets: the round number alone.
  EXPECT_THAT(round_tags(7, three, false), ElementsAre(7));
  EXPECT_THAT(round_tags(7, bucket_layout(), true), ElementsAre(7));
  // Tags from 2^47 on are the state transfers'.
  try {
    round_tags((std::uint64_t{1} << 47) / 3, three, true);
    ADD_FAILURE() << "a tag among the state transfers' was given";
  } catch (const std::invalid_argument& refused) {
    EXPECT_THAT(refused.what(), testing::HasSubstr("of 3 gradient buckets has no data-plane tags "
                                                   "left; use fewer, larger buckets"));
  }
  EXPECT_EQ(round_tags((std::uint64_t{1} << 47) / 3 - 1, three, true).back(),
            (std::uint64_t{1} << 47) - 1 - (std::uint64_t{1} << 47) % 3);
}

TEST(round_reduction, buckets_cut_for_another_buffer_fail_the_round_before_it_reads_anything) {
  std::shared_ptr<herd::comm::data_plane> local =
      herd::comm::make_local_plane(herd::kernels::cpu_ops());
  std::vector<float> send(2048, 1.0f), result(2048, -1.0f);
  ASSERT_TRUE(local->attach(0, send.data(), send.size()).ok());
  herd::cluster::round_reduction job;
  job.round = 3;
  job.local = local;
  job.inputs = {{0, 1.0f}};
  job.result = result.data();
  job.count = result.size();
  // A plane between the nodes that matches by tag: the round would go bucket by bucket.
  job.plane = herd::comm::make_local_plane(herd::kernels::cpu_ops());
  job.ranks = {0};
  job.buckets = bucket_layout(4096, {1024});
  herd::comm::issue_gate gate;
  int prereduced = 0;
  const auto reduced = herd::cluster::reduce_round(job, gate, {}, [&] { ++prereduced; });
  EXPECT_EQ(reduced.kind(), herd::comm::outcome::invalid_argument);
  EXPECT_EQ(reduced.message(),
            "gradient buckets of a buffer of 4096 floats for a reduction of a buffer of 2048");
  EXPECT_EQ(prereduced, 1); // told once, on this path too
  EXPECT_EQ(result, std::vector<float>(2048, -1.0f));

  job.plane = nullptr; // this node alone, with buckets that fit: reduced
  job.buckets = bucket_layout(2048, {1024});
  EXPECT_TRUE(herd::cluster::reduce_round(job, gate, {}, [] {}).ok());
  EXPECT_EQ(result, send);
}

} // namespace
