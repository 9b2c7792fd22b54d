// The data-plane interface itself: typed results and their words; the default bodies, with which a
// plane that implements only what it must answers "does not support" as a result; the local
// plane's capabilities; and fault injection by a double that overrides one virtual.
#include "comm/data_plane.hpp"

#include <chrono>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <vector>

#include "support/comm_outcome.hpp"
#include "support/delegating_plane.hpp"

namespace {

using herd::comm::comm_error;
using herd::comm::data_plane;
using herd::comm::operation;
using herd::comm::outcome;
using herd::comm::status;
using namespace std::chrono_literals;

// The least a plane must implement: its name, its capabilities and its memory.
class bare_plane final : public data_plane {
public:
  std::string_view name() const override { return "bare"; }
  bool supports(operation) const override { return false; }
  const herd::kernels::memory& memory() const override { return herd::kernels::host_memory(); }
};

TEST(data_plane, every_operation_a_plane_lacks_answers_unsupported_as_a_result) {
  bare_plane plane;
  std::vector<float> buffer(4, 1.0f);
  const status attached = plane.attach(0, buffer.data(), buffer.size());
  EXPECT_EQ(attached.kind(), outcome::unsupported);
  EXPECT_EQ(attached.message(), "bare plane does not support attach");
  EXPECT_EQ(plane.detach(0).message(), "bare plane does not support detach");
  auto reduced = plane.group_reduce({{0, 1.0f}}, buffer.data(), buffer.data(), 4, {});
  EXPECT_TRUE(reduced->is_completed());
  EXPECT_EQ(reduced->wait(0ms).kind(), outcome::unsupported);
  EXPECT_EQ(reduced->wait(0ms).message(), "bare plane does not support group_reduce");
  auto copied = plane.broadcast(buffer.data(), 4, {0, 1}, 0, {});
  EXPECT_TRUE(copied->is_completed());
  EXPECT_EQ(copied->wait(1s).kind(), outcome::unsupported);
  EXPECT_EQ(copied->wait(0ms).message(), "bare plane does not support broadcast");
  EXPECT_EQ(buffer, std::vector<float>(4, 1.0f));
}

TEST(data_plane, results_are_kinds_for_code_and_words_for_people) {
  const status done;
  EXPECT_TRUE(done.ok());
  EXPECT_EQ(done.kind(), outcome::done);
  EXPECT_EQ(done.message(), "");
  const status lost{outcome::peer_lost, "rank 2 failed: Connection reset by peer"};
  EXPECT_FALSE(lost.ok());
  EXPECT_STREQ(to_string(outcome::done), "done");
  EXPECT_STREQ(to_string(outcome::timeout), "timeout");
  EXPECT_STREQ(to_string(outcome::peer_lost), "peer lost");
  EXPECT_STREQ(to_string(outcome::aborted), "aborted");
  EXPECT_STREQ(to_string(outcome::invalid_argument), "invalid argument");
  EXPECT_STREQ(to_string(outcome::unsupported), "unsupported");
  EXPECT_STREQ(to_string(outcome::failed), "failed");
  const comm_error error(lost);
  EXPECT_EQ(error.kind(), outcome::peer_lost);
  EXPECT_STREQ(error.what(), "rank 2 failed: Connection reset by peer");
  EXPECT_EQ(error.to_status().kind(), outcome::peer_lost);
  EXPECT_EQ(error.to_status().message(), lost.message());
}

TEST(local_plane, says_what_it_supports_and_where_its_buffers_live) {
  const auto& ops = herd::kernels::cpu_ops();
  auto plane = herd::comm::make_local_plane(ops);
  EXPECT_TRUE(plane->supports(operation::attach));
  EXPECT_TRUE(plane->supports(operation::group_reduce));
  EXPECT_FALSE(plane->supports(operation::broadcast));
  EXPECT_EQ(&plane->memory(), &ops.memory());
  std::vector<float> send(8, 1.0f);
  std::vector<float> out(8);
  EXPECT_TRUE(plane->attach(0, send.data(), send.size()).ok());
  const auto copied = plane->broadcast(send.data(), send.size(), {0, 1}, 0, {})->wait(0ms);
  EXPECT_EQ(copied.kind(), outcome::unsupported);
  EXPECT_EQ(copied.message(), "local plane does not support broadcast");
  const auto own_send = plane->group_reduce({{0, 1.0f}}, send.data(), out.data(), 8, {})->wait(0ms);
  EXPECT_EQ(own_send.kind(), outcome::invalid_argument);
  EXPECT_THAT(own_send.message(), testing::HasSubstr("reads the attached send buffers"));
  EXPECT_EQ(plane->group_reduce({{3, 1.0f}}, nullptr, out.data(), 8, {})->wait(0ms).kind(),
            outcome::invalid_argument);
  EXPECT_TRUE(plane->detach(0).ok());
}

TEST(data_plane, a_double_that_overrides_one_virtual_injects_a_typed_failure) {
  // As c10d's tests make a backend fail: a double that overrides group_reduce alone. Everything
  // else still reaches the local plane underneath.
  herd::testing::failing_reduce_plane plane(herd::comm::make_local_plane(herd::kernels::cpu_ops()),
                                            {outcome::peer_lost, "rank 1 failed: injected"});
  std::vector<float> send(8, 1.0f);
  std::vector<float> out(8, 0.0f);
  EXPECT_EQ(plane.name(), "local");
  EXPECT_TRUE(plane.attach(0, send.data(), send.size()).ok());
  const auto reduced = plane.group_reduce({{0, 1.0f}}, nullptr, out.data(), 8, {})->wait(1s);
  EXPECT_EQ(reduced.kind(), outcome::peer_lost);
  EXPECT_EQ(reduced.message(), "rank 1 failed: injected");
  EXPECT_EQ(out, std::vector<float>(8, 0.0f));
  EXPECT_TRUE(plane.detach(0).ok());
}

} // namespace
