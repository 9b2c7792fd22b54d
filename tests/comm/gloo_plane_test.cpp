// The gloo data plane: group sums and broadcasts among any subset of a plane's ranks, concurrent
// operations, and failures (a rank that never joins, a peer that leaves, a peer too late) that
// end in a typed result naming the peer without touching the caller's buffer. Ranks are threads
// with a memory store; built with HERD_TEST_FORKS, ranks are forked processes with a file store
// (ctest label multiproc).
#include "comm/gloo_plane.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <signal.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>

#include "support/comm_outcome.hpp"
#include "support/random_values.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::comm::comm_error;
using herd::comm::gloo_plane;
using herd::comm::gloo_plane_options;
using herd::comm::make_gloo_plane;
using herd::comm::outcome;
using herd::comm::status;
using namespace std::chrono_literals;
using testing::HasSubstr;

using herd::testing::random_values;

// Seeds that differ for every (case, rank).
std::uint64_t seed_of(std::size_t case_index, int rank) {
  return 1000003u * case_index + static_cast<std::uint64_t>(rank) + 17u;
}

// "" when `got` is the sum over `members` of random_values(count, seed_of(case_index, member)),
// within 1e-6 of the sum of magnitudes (a float sum of a few terms is that close to the exact
// one); otherwise the first element that is not, in words.
std::string check_sum(const std::vector<float>& got, std::size_t case_index,
                      const std::vector<int>& members, double tolerance = 1e-6) {
  std::vector<double> sum(got.size(), 0.0);
  std::vector<double> magnitude(got.size(), 0.0);
  for (int member : members) {
    auto values = random_values(got.size(), seed_of(case_index, member));
    for (std::size_t i = 0; i < got.size(); ++i) {
      sum[i] += values[i];
      magnitude[i] += std::abs(static_cast<double>(values[i]));
    }
  }
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - sum[i]) <= tolerance * magnitude[i]))
      return "element " + std::to_string(i) + " of " + std::to_string(got.size()) + " is " +
             std::to_string(got[i]) + ", the double-precision sum is " + std::to_string(sum[i]);
  return "";
}

// What operations that should succeed may take: a rank outside a group skips ahead and waits in
// its next operation while the others finish theirs, which under a sanitizer takes long.
constexpr std::chrono::milliseconds generous_timeout = std::chrono::seconds(60);

gloo_plane_options options_with(std::chrono::milliseconds timeout, std::string prefix = "test") {
  gloo_plane_options options;
  options.prefix = std::move(prefix);
  options.timeout = timeout;
  return options;
}

// The group sum in place, every member's weight 1 (what a node reducer asks of the plane).
status sum_in_place(gloo_plane& plane, float* data, std::size_t count,
                    const std::vector<int>& ranks, std::uint64_t tag,
                    std::chrono::milliseconds timeout) {
  std::vector<herd::comm::weighted_input> inputs;
  inputs.reserve(ranks.size());
  for (int rank : ranks)
    inputs.push_back({rank, 1.0f});
  return plane.group_reduce(inputs, data, data, count, {tag, timeout})->wait(timeout);
}

status broadcast(gloo_plane& plane, float* data, std::size_t count, const std::vector<int>& ranks,
                 int root, std::uint64_t tag, std::chrono::milliseconds timeout) {
  return plane.broadcast(data, count, ranks, root, {tag, timeout})->wait(timeout);
}

#ifndef HERD_TEST_FORKS

std::uint64_t fingerprint(const std::vector<float>& values) {
  std::uint64_t hash = 1469598103934665603u;
  for (float value : values) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    hash = (hash ^ bits) * 1099511628211u;
  }
  return hash;
}

// Threads meet here (C++17 has no std::barrier).
class meeting_point {
public:
  explicit meeting_point(int parties) : parties_(parties) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    auto generation = generation_;
    if (++arrived_ == parties_) {
      arrived_ = 0;
      ++generation_;
      everyone_here_.notify_all();
      return;
    }
    everyone_here_.wait(lock, [&] { return generation_ != generation; });
  }

private:
  std::mutex mutex_;
  std::condition_variable everyone_here_;
  const int parties_;
  int arrived_ = 0;
  int generation_ = 0;
};

// Runs `size` ranks as threads of this process, each with its own plane over one memory store.
// `body` may destroy its plane (reset the pointer). Every rank meets the others before its plane
// is destroyed, so no rank closes its connections while a peer still reads from them.
// `configure`, when given, sets each rank's options (compression, a key) before its plane is made.
void run_ranks(int size, const std::function<void(int, std::unique_ptr<gloo_plane>&)>& body,
               const std::function<void(int, gloo_plane_options&)>& configure = nullptr) {
  auto store = herd::comm::make_memory_store();
  meeting_point done(size);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(size));
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      std::unique_ptr<gloo_plane> plane;
      try {
        auto options = options_with(generous_timeout);
        if (configure)
          configure(rank, options);
        plane = make_gloo_plane(rank, size, store, options);
        body(rank, plane);
      } catch (const std::exception& failure) {
        ADD_FAILURE() << "rank " << rank << ": " << failure.what();
      }
      done.arrive_and_wait();
    });
  }
  for (auto& thread : threads)
    thread.join();
}

bool contains(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

// Calls `body(i, ranks, count)` for each case i, one per (group, count), whose group has `rank`;
// every rank goes through the cases in the same order.
void for_each_case(
    const std::vector<std::vector<int>>& groups, const std::vector<std::size_t>& counts, int rank,
    const std::function<void(std::size_t, const std::vector<int>&, std::size_t)>& body) {
  std::size_t index = 0;
  for (const auto& ranks : groups)
    for (std::size_t count : counts) {
      const std::size_t i = index++;
      if (contains(ranks, rank))
        body(i, ranks, count);
    }
}

// Every rank with wire format `format` (and `key`, when given: sealed messages, by rank + 1
// threads with `threads_by_rank`, so that ranks of one plane differ, and otherwise by one).
std::function<void(int, gloo_plane_options&)>
wire_of(herd::comm::wire_format format, std::optional<herd::comm::plane_key> key = std::nullopt,
        bool threads_by_rank = false) {
  return [format, key, threads_by_rank](int rank, gloo_plane_options& options) {
    options.compression = format;
    options.seal_key = key;
    options.seal_threads = threads_by_rank ? rank + 1 : 1;
  };
}

TEST(gloo_plane, allreduce_sums_over_every_group_size_and_subset_of_a_four_rank_plane) {
  struct reduction {
    std::vector<int> ranks;
    std::size_t count;
  };
  std::vector<reduction> reductions;
  // Counts: none, fewer than the group, not divisible by it, and several 1 MiB segments per chunk.
  for (const auto& ranks : std::vector<std::vector<int>>{{0}, {0, 1}, {0, 1, 2}, {0, 1, 2, 3}})
    for (std::size_t count : {0u, 1u, 3u, 1000003u})
      reductions.push_back({ranks, count});
  for (const auto& ranks : std::vector<std::vector<int>>{{0, 2}, {1, 2, 3}, {1, 3}, {0, 1, 3}})
    for (std::size_t count : {1u, 7u, 1000003u})
      reductions.push_back({ranks, count});

  std::mutex results_mutex;
  std::map<std::size_t, std::map<int, std::uint64_t>> fingerprints;
  run_ranks(4, [&](int rank, std::unique_ptr<gloo_plane>& plane) {
    EXPECT_EQ(plane->rank(), rank);
    EXPECT_EQ(plane->size(), 4);
    for (std::size_t i = 0; i < reductions.size(); ++i) {
      const auto& reduction = reductions[i];
      if (!contains(reduction.ranks, rank))
        continue;
      auto data = random_values(reduction.count, seed_of(i, rank));
      ASSERT_EQ(sum_in_place(*plane, data.data(), data.size(), reduction.ranks, i, generous_timeout)
                    .message(),
                "");
      EXPECT_EQ(check_sum(data, i, reduction.ranks), "")
          << "rank " << rank << ", group of " << reduction.ranks.size() << ", count "
          << reduction.count;
      std::lock_guard<std::mutex> guard(results_mutex);
      fingerprints[i][rank] = fingerprint(data);
    }
  });
  // Every member ends with the very same floats (replicas must not drift apart).
  for (const auto& [index, by_rank] : fingerprints)
    for (const auto& [rank, print] : by_rank)
      EXPECT_EQ(print, by_rank.begin()->second) << "reduction " << index << ", rank " << rank;
}

// With a 16-bit wire every member still ends with the very same floats, and the sum is within the
// format's rounding: each of the k-1 partial sums a chunk passes through is rounded once on its
// way, and the final sum once more (relative 2^-11 for fp16, 2^-8 for bf16, of the magnitudes).
class gloo_plane_wire : public testing::TestWithParam<herd::comm::wire_format> {};

TEST_P(gloo_plane_wire, allreduce_gives_every_member_the_same_sum_within_the_rounding) {
  const auto format = GetParam();
  const double unit =
      format == herd::comm::wire_format::fp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  std::vector<std::vector<int>> groups{{0, 1}, {0, 1, 2}, {0, 1, 2, 3}, {1, 3}, {0, 2, 3}};
  std::vector<std::size_t> counts{1, 5, 1000003};
  std::mutex results_mutex;
  std::map<std::size_t, std::map<int, std::uint64_t>> fingerprints;
  run_ranks(
      4,
      [&](int rank, std::unique_ptr<gloo_plane>& plane) {
        for_each_case(
            groups, counts, rank,
            [&](std::size_t i, const std::vector<int>& ranks, std::size_t count) {
              auto data = random_values(count, seed_of(i, rank));
              ASSERT_EQ(
                  sum_in_place(*plane, data.data(), count, ranks, i, generous_timeout).message(),
                  "");
              EXPECT_EQ(check_sum(data, i, ranks, static_cast<double>(ranks.size()) * unit), "")
                  << "rank " << rank << ", group of " << ranks.size() << ", count " << count;
              std::lock_guard<std::mutex> guard(results_mutex);
              fingerprints[i][rank] = fingerprint(data);
            });
      },
      wire_of(format));
  for (const auto& [index, by_rank] : fingerprints)
    for (const auto& [rank, print] : by_rank)
      EXPECT_EQ(print, by_rank.begin()->second) << "reduction " << index << ", rank " << rank;
}

INSTANTIATE_TEST_SUITE_P(formats, gloo_plane_wire,
                         testing::Values(herd::comm::wire_format::fp16,
                                         herd::comm::wire_format::bf16),
                         [](const auto& param_info) {
                           return std::string(herd::comm::name_of(param_info.param));
                         });

// The floats a 16-bit wire rounds: a sum of two ranks is what rounding each message gives, not
// the exact sum (the rounding is there, and is the same on both ranks).
// Gloo prints a socket address's port in network byte order: on this host "[10.213.0.2]:6022"
// is port 34327 (0x8617, stored as 0x1786), outside the range the data plane listens in, and an
// operator would open the wrong one. Herd's messages give the port that is meant.
TEST(gloo_plane, gloo_addresses_in_messages_give_the_port_a_reader_means) {
  EXPECT_EQ(herd::comm::gloo_error_text("[./gloo/transport/tcp/pair.cc:799] connect "
                                        "[10.213.0.2]:6022: Connection refused"),
            "[./gloo/transport/tcp/pair.cc:799] connect [10.213.0.2]:34327: Connection refused");
  EXPECT_EQ(herd::comm::gloo_error_text("peer [::1]:47753 and [127.0.0.1]:256 closed"),
            "peer [::1]:35258 and [127.0.0.1]:1 closed");
  // Text that is no address stays as it is (the source's own "[file:line]" among it).
  EXPECT_EQ(herd::comm::gloo_error_text("[pair.cc:799] Read error: reset"),
            "[pair.cc:799] Read error: reset");
}

TEST(gloo_plane, a_16_bit_wire_rounds_what_it_sends) {
  // 1 + 2^-12 is not an fp16 value (11 significant bits): 1 + (1 + 2^-12) over an fp16 wire.
  const float odd = 1.0f + std::ldexp(1.0f, -12);
  std::vector<float> results(2);
  run_ranks(
      2,
      [&](int rank, std::unique_ptr<gloo_plane>& plane) {
        float value = rank == 0 ? 1.0f : odd;
        ASSERT_EQ(sum_in_place(*plane, &value, 1, {0, 1}, 0, generous_timeout).message(), "");
        results[static_cast<std::size_t>(rank)] = value;
      },
      wire_of(herd::comm::wire_format::fp16));
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], 2.0f); // the exact float sum, 2 + 2^-12, is not what comes back
}

// Sealing changes what crosses the wire, never what arrives: sums and broadcasts over sealed
// messages are the very floats of the clear ones, in every wire format, whatever number of
// threads each rank seals with, and whether receives are opened by a thread of the operation's
// own as they arrive or by the operation's thread when it needs them (two segments a chunk
// between two members, so that the two overlap).
TEST(gloo_plane, sealed_messages_give_the_same_floats_bit_for_bit_as_clear_ones) {
  const std::vector<std::vector<int>> groups{{0, 1}, {0, 1, 2}, {1, 2}, {0, 1, 2}};
  const std::vector<std::size_t> counts{1, 7, 600001};
  using prints = std::map<std::pair<std::size_t, int>, std::uint64_t>; // (case, rank)
  auto run_with = [&](const std::function<void(int, gloo_plane_options&)>& configure) {
    std::mutex results_mutex;
    prints results;
    run_ranks(
        3,
        [&](int rank, std::unique_ptr<gloo_plane>& plane) {
          for_each_case(
              groups, counts, rank,
              [&](std::size_t i, const std::vector<int>& ranks, std::size_t count) {
                auto data = random_values(count, seed_of(i, rank));
                ASSERT_EQ(
                    sum_in_place(*plane, data.data(), count, ranks, i, generous_timeout).message(),
                    "");
                // Then the highest member's copy of the sum goes to the group again.
                ASSERT_EQ(broadcast(*plane, data.data(), count, ranks, ranks.back(), 1000 + i,
                                    generous_timeout)
                              .message(),
                          "");
                std::lock_guard<std::mutex> guard(results_mutex);
                results[{i, rank}] = fingerprint(data);
              });
        },
        configure);
    return results;
  };
  const herd::comm::plane_key key = herd::comm::random_plane_key();
  for (auto format : {herd::comm::wire_format::fp32, herd::comm::wire_format::fp16}) {
    const prints clear = run_with(wire_of(format));
    const prints sealed = run_with(wire_of(format, key));
    const prints sealed_by_threads = run_with(wire_of(format, key, true));
    const prints opened_when_needed = run_with([&](int rank, gloo_plane_options& options) {
      wire_of(format, key)(rank, options);
      options.pipeline_opening = false;
    });
    EXPECT_EQ(clear.size(), 10u * counts.size()); // 2 + 3 + 2 + 3 members, every count
    EXPECT_EQ(clear, sealed) << herd::comm::name_of(format);
    EXPECT_EQ(clear, sealed_by_threads) << herd::comm::name_of(format);
    EXPECT_EQ(clear, opened_when_needed) << herd::comm::name_of(format);
  }
}

// A buffer reduced in parts (buckets, the last part first as backward makes them) ends with the
// bits one reduction of it gives: every element is summed in the order the whole buffer's ring
// sums it, in every wire format, sealed or not, and with error feedback over several rounds. The
// same parts reduced as buffers of their own do not: the ring then starts each element's sum at
// another member, which is why a part says where it lies in the whole.
class gloo_plane_parts : public testing::TestWithParam<herd::comm::wire_format> {};

// Three rounds (error feedback carries between them) of `count` random floats of this rank's,
// reduced among ranks 0, 1 and 2 weighted 0.5, 0.3 and 0.2, each round in parts starting at
// `starts` (the last part first); with `as_parts` each part says where it lies in the whole. The
// tag advances with every operation. Returns the last round's result.
std::vector<float> reduce_three_rounds(gloo_plane& plane, int rank, std::size_t count,
                                       const std::vector<std::size_t>& starts, bool as_parts,
                                       std::uint64_t& tag) {
  const std::vector<herd::comm::weighted_input> inputs{{0, 0.5f}, {1, 0.3f}, {2, 0.2f}};
  std::vector<float> data;
  for (std::size_t round = 0; round < 3; ++round) {
    data = random_values(count, seed_of(round, rank));
    std::size_t end = count;
    for (std::size_t start : starts) {
      herd::comm::operation_options options{tag++, generous_timeout};
      if (as_parts) {
        options.whole_count = count;
        options.part_offset = start;
      }
      const auto result =
          plane
              .group_reduce(inputs, data.data() + start, data.data() + start, end - start, options)
              ->wait(generous_timeout);
      EXPECT_EQ(result.message(), "") << "rank " << rank << ", part at " << start;
      end = start;
    }
  }
  return data;
}

TEST_P(gloo_plane_parts, a_buffer_reduced_in_parts_ends_with_the_bits_of_one_reduction) {
  const auto format = GetParam();
  const bool feedback = format != herd::comm::wire_format::fp32;
  const std::size_t count = 700001; // over 2 segments a chunk among 3
  // Where each part starts, the last part first; cuts inside chunks and segments, and a part
  // of one float.
  const std::vector<std::size_t> starts{500000, 499999, 123457, 0};
  enum class how { at_once, in_parts, in_parts_alone };
  auto run_with = [&](how way, std::optional<herd::comm::plane_key> key) {
    std::vector<std::vector<float>> results(3);
    run_ranks(
        3,
        [&](int rank, std::unique_ptr<gloo_plane>& plane) {
          std::uint64_t tag = 0;
          results[static_cast<std::size_t>(rank)] = reduce_three_rounds(
              *plane, rank, count, way == how::at_once ? std::vector<std::size_t>{0} : starts,
              way == how::in_parts, tag);
        },
        [&](int rank, gloo_plane_options& options) {
          wire_of(format, key)(rank, options);
          options.error_feedback = feedback;
        });
    return results;
  };
  const auto at_once = run_with(how::at_once, std::nullopt);
  EXPECT_EQ(run_with(how::in_parts, std::nullopt), at_once);
  EXPECT_EQ(run_with(how::in_parts, herd::comm::random_plane_key()), at_once);
  const auto alone = run_with(how::in_parts_alone, std::nullopt);
  EXPECT_EQ(alone[0], alone[1]) << "members of one reduction ended apart";
  EXPECT_NE(alone[0], at_once[0]) << "parts reduced alone should sum in another order";
}

// Lanes (several connections per pair, gloo_plane_options::lanes) cut an operation into one
// part per lane, moved at once: a reduction ends with the bits of one over a single connection,
// over three rounds with error feedback, whether the buffer is reduced at once or itself in parts
// that the lanes cut again, in the clear and sealed (each lane with a key of its own); and a
// broadcast gives every member the root's floats.
TEST_P(gloo_plane_parts, lanes_end_with_the_bits_of_one_connection) {
  const auto format = GetParam();
  const std::size_t count = 1600001; // three lanes' worth
  auto run_with = [&](int lanes, std::vector<std::size_t> starts,
                      std::optional<herd::comm::plane_key> key) {
    std::vector<std::vector<float>> results(3);
    run_ranks(
        3,
        [&](int rank, std::unique_ptr<gloo_plane>& plane) {
          std::uint64_t tag = 0;
          auto data = reduce_three_rounds(*plane, rank, count, starts, starts.size() > 1, tag);
          EXPECT_EQ(broadcast(*plane, data.data(), count, {0, 1, 2}, 2, tag++, generous_timeout)
                        .message(),
                    "");
          results[static_cast<std::size_t>(rank)] = data;
        },
        [&](int rank, gloo_plane_options& options) {
          wire_of(format, key)(rank, options);
          options.error_feedback = format != herd::comm::wire_format::fp32;
          options.lanes = lanes;
        });
    return results;
  };
  const auto one = run_with(1, {0}, std::nullopt);
  EXPECT_EQ(one[0], one[2]);
  EXPECT_EQ(run_with(3, {0}, std::nullopt), one);
  // 1100001 floats at 500000 cut across two lanes, then 500000 on one.
  EXPECT_EQ(run_with(3, {500000, 0}, std::nullopt), one);
  EXPECT_EQ(run_with(2, {0}, herd::comm::random_plane_key()), one);
}

// Error feedback keeps a residual for every element a rank rounds, and each lane rounds only its
// own part: three lanes hold about one buffer's worth among them (whole blocks of it), not one
// each; a plane that does not round holds none.
TEST(gloo_plane, error_feedback_holds_about_one_buffer_whatever_the_lanes) {
  const std::size_t count = 1600001; // three lanes' worth
  for (const auto& [format, lanes] :
       std::vector<std::pair<herd::comm::wire_format, int>>{{herd::comm::wire_format::fp16, 1},
                                                            {herd::comm::wire_format::fp16, 3},
                                                            {herd::comm::wire_format::fp32, 3}}) {
    std::vector<std::size_t> held(3);
    run_ranks(
        3,
        [&](int rank, std::unique_ptr<gloo_plane>& plane) {
          auto data = random_values(count, seed_of(0, rank));
          ASSERT_EQ(
              sum_in_place(*plane, data.data(), count, {0, 1, 2}, 1, generous_timeout).message(),
              "");
          held[static_cast<std::size_t>(rank)] = plane->feedback_floats();
        },
        [&](int rank, gloo_plane_options& options) {
          wire_of(format)(rank, options);
          options.error_feedback = true;
          options.lanes = lanes;
        });
    for (std::size_t rank = 0; rank < 3; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank) + ", " + std::to_string(lanes) + " lanes, " +
                   std::string(herd::comm::name_of(format)));
      if (format == herd::comm::wire_format::fp32) {
        EXPECT_EQ(held[rank], 0u);
        continue;
      }
      EXPECT_GE(held[rank], count); // every element was rounded by every rank
      EXPECT_LT(held[rank], count + count / 4);
    }
  }
}

// Sealing threads (comm.seal-threads) are divided among the lanes, at least one each; in the
// clear there are none.
TEST(gloo_plane, sealing_threads_are_divided_among_the_lanes) {
  for (const auto& [threads, lanes, expected] :
       std::vector<std::tuple<int, int, int>>{{3, 1, 3}, {4, 2, 4}, {4, 3, 3}, {4, 8, 8}}) {
    auto options = options_with(generous_timeout);
    options.seal_key = herd::comm::random_plane_key();
    options.seal_threads = threads;
    options.lanes = lanes;
    const auto plane = make_gloo_plane(0, 1, herd::comm::make_memory_store(), options);
    EXPECT_EQ(plane->seal_threads(), expected) << threads << " threads, " << lanes << " lanes";
    EXPECT_EQ(herd::comm::sealing_text(threads, lanes),
              "sealed by " + std::to_string(expected) + " threads"); // a node's log
  }
  auto clear = options_with(generous_timeout);
  clear.lanes = 2;
  EXPECT_EQ(make_gloo_plane(0, 1, herd::comm::make_memory_store(), clear)->seal_threads(), 0);
}

TEST(gloo_plane, lanes_are_from_1_to_16) {
  for (int lanes : {0, 17}) {
    auto options = options_with(generous_timeout);
    options.lanes = lanes;
    try {
      make_gloo_plane(0, 1, herd::comm::make_memory_store(), options);
      ADD_FAILURE() << lanes << " lanes were taken";
    } catch (const std::invalid_argument& refused) {
      EXPECT_THAT(refused.what(), HasSubstr("lanes is " + std::to_string(lanes)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(formats, gloo_plane_parts,
                         testing::Values(herd::comm::wire_format::fp32,
                                         herd::comm::wire_format::fp16,
                                         herd::comm::wire_format::bf16),
                         [](const auto& param_info) {
                           return std::string(herd::comm::name_of(param_info.param));
                         });

// A part that does not fit in its whole buffer is refused before anything is sent.
TEST(gloo_plane, a_part_outside_its_whole_buffer_is_refused) {
  run_ranks(1, [&](int, std::unique_ptr<gloo_plane>& plane) {
    std::vector<float> data(8, 1.0f);
    herd::comm::operation_options options{1, generous_timeout};
    options.whole_count = 8;
    options.part_offset = 6;
    const auto refused = plane->group_reduce({{0, 1.0f}}, data.data(), data.data(), 4, options)
                             ->wait(generous_timeout);
    EXPECT_EQ(refused.kind(), outcome::invalid_argument);
    EXPECT_THAT(refused.message(),
                HasSubstr("a part of 4 floats at 6 does not fit in a buffer of 8"));
    EXPECT_EQ(data, std::vector<float>(8, 1.0f));
  });
}

// A rank whose messages are not sealed with the plane's key (it never got the key: an impostor
// that took a peer's place, or bytes crafted by anyone else) is refused by name; what it sent
// reaches no caller's buffer, and the ranks that hold the key go on reducing among themselves.
void refused_and_the_others_go_on(std::size_t count, int lanes) {
  const herd::comm::plane_key key = herd::comm::random_plane_key();
  const std::vector<int> everyone{0, 1, 2};
  std::vector<status> results(3);
  std::vector<std::string> unchanged(3);
  std::vector<std::string> then(3);
  std::mutex refusals_mutex;
  std::vector<std::string> refusals; // "rank: peer"
  // Over one lane rank 0 refuses rank 2 and ends at once: with a deadline longer than rank 1's,
  // its operation ends before rank 1's, which waits its deadline out. (With chunks of several
  // segments, its receives still expected from rank 2, which stopped, hold the thread that opens
  // them until the operation wakes it.)
  const bool at_once = lanes == 1;
  std::atomic<bool> rank_1_ended{false};
  std::atomic<bool> rank_0_ended_first{false};
  run_ranks(
      3,
      [&](int rank, std::unique_ptr<gloo_plane>& plane) {
        const auto r = static_cast<std::size_t>(rank);
        // The impostor (rank 2) sends values far outside the others' range.
        auto data =
            rank == 2 ? std::vector<float>(count, 1e30f) : random_values(count, seed_of(0, rank));
        const auto before = data;
        results[r] =
            sum_in_place(*plane, data.data(), count, everyone, 1, rank == 0 && at_once ? 20s : 3s);
        if (rank == 0)
          rank_0_ended_first = !rank_1_ended.load();
        if (rank == 1)
          rank_1_ended = true;
        unchanged[r] = data == before ? "" : "the failed sum wrote into the caller's buffer";
        if (rank == 2)
          return;
        auto next = random_values(count, seed_of(2, rank));
        ASSERT_EQ(sum_in_place(*plane, next.data(), count, {0, 1}, 2, generous_timeout).message(),
                  "");
        then[r] = check_sum(next, 2, {0, 1});
      },
      [&](int rank, gloo_plane_options& options) {
        options.seal_key = rank == 2 ? herd::comm::random_plane_key() : key;
        options.lanes = lanes;
        options.on_refused = [&, rank](int peer, const std::string& why) {
          std::lock_guard<std::mutex> guard(refusals_mutex);
          refusals.push_back(std::to_string(rank) + ": " + std::to_string(peer));
          EXPECT_THAT(why, HasSubstr("does not authenticate"));
        };
      });
  // Each refusal is told once, to the rank that refused: 0 refused 2, and 2 refused 1.
  std::sort(refusals.begin(), refusals.end());
  EXPECT_EQ(refusals, (std::vector<std::string>{"0: 2", "2: 1"}));
  // Rank 0 hears from rank 2 (its left neighbour in the ring) and names it.
  EXPECT_EQ(results[0].kind(), outcome::peer_lost);
  EXPECT_THAT(results[0].message(), HasSubstr("rank 2 is refused"));
  EXPECT_THAT(results[0].message(), HasSubstr("does not authenticate"));
  if (at_once) {
    EXPECT_TRUE(rank_0_ended_first.load()) << "the refusal waited for rank 0's deadline";
  }
  // Rank 1 then waits for rank 0, which stopped; the impostor refuses rank 1's real messages.
  EXPECT_FALSE(results[1].ok());
  EXPECT_THAT(results[2].message(), HasSubstr("rank 1 is refused"));
  for (std::size_t r = 0; r < 3; ++r)
    EXPECT_EQ(unchanged[r], "") << "rank " << r;
  EXPECT_EQ(then[0], "");
  EXPECT_EQ(then[1], "");
}

// With chunks of one segment, and of several, whose sends the sender thread seals and posts
// while the refusal ends the operation; and over two lanes. There rank 2's own chunk is empty in
// lane 0, so it sends nothing there before it refuses rank 1 and stops: rank 0's lane 0 waits
// out its deadline, its lane 1 refuses rank 2, and the refusal is what the operation reports
// (told once, whichever lanes refused).
TEST(gloo_plane, a_peer_without_the_plane_key_is_refused_and_the_others_go_on) {
  for (const auto& [count, lanes] :
       std::vector<std::pair<std::size_t, int>>{{1000, 1}, {1600000, 1}, {1600000, 2}}) {
    SCOPED_TRACE("count " + std::to_string(count) + ", lanes " + std::to_string(lanes));
    refused_and_the_others_go_on(count, lanes);
  }
}

// Error feedback: a value that fp16 always rounds the same way (1 + 2^-12 is a quarter of fp16's
// spacing above 1) loses the same amount every round without it, and the losses pile up; with it,
// the sum over the rounds stays within a spacing or so of the exact one. Replicas still agree.
TEST(gloo_plane, error_feedback_keeps_rounding_errors_from_piling_up_over_rounds) {
  const float value = 1.0f + std::ldexp(1.0f, -12);
  const std::size_t count = 4;
  const int rounds = 64;
  const double exact = 2.0 * static_cast<double>(value) * rounds; // per element, two ranks
  auto totals_with = [&](bool feedback) {
    std::vector<std::vector<double>> totals(2, std::vector<double>(count, 0.0));
    run_ranks(
        2,
        [&](int rank, std::unique_ptr<gloo_plane>& plane) {
          for (int round = 0; round < rounds; ++round) {
            std::vector<float> data(count, value);
            ASSERT_EQ(sum_in_place(*plane, data.data(), count, {0, 1},
                                   static_cast<std::uint64_t>(round), generous_timeout)
                          .message(),
                      "");
            for (std::size_t i = 0; i < count; ++i)
              totals[static_cast<std::size_t>(rank)][i] += data[i];
          }
        },
        [&](int, gloo_plane_options& options) {
          options.compression = herd::comm::wire_format::fp16;
          options.error_feedback = feedback;
        });
    EXPECT_EQ(totals[0], totals[1]) << "feedback " << feedback;
    return totals[0];
  };
  for (double total : totals_with(false))
    EXPECT_GE(std::abs(total - exact), rounds * std::ldexp(1.0, -11)) << total; // 2^-5 in all
  for (double total : totals_with(true))
    EXPECT_LE(std::abs(total - exact), std::ldexp(1.0, -8)) << total;
}

TEST(gloo_plane, concurrent_operations_with_different_tags_on_overlapping_groups) {
  const std::vector<int> first_group = {0, 1, 2};
  const std::vector<int> second_group = {1, 2, 3};
  const std::size_t count = 1600003; // three segments per chunk in a group of three
  const int rounds = 3;
  run_ranks(4, [&](int rank, std::unique_ptr<gloo_plane>& plane) {
    auto reduce_in = [&](const std::vector<int>& group, std::uint64_t first_tag) {
      for (int round = 0; round < rounds; ++round) {
        std::size_t case_index = first_tag + static_cast<std::size_t>(round);
        auto data = random_values(count, seed_of(case_index, rank));
        ASSERT_EQ(
            sum_in_place(*plane, data.data(), count, group, case_index, generous_timeout).message(),
            "");
        EXPECT_EQ(check_sum(data, case_index, group), "")
            << "rank " << rank << ", tag " << case_index;
      }
    };
    // Ranks 1 and 2 run both groups at once, from two threads, on one plane.
    std::thread second;
    if (contains(second_group, rank))
      second = std::thread([&] {
        try {
          reduce_in(second_group, 200);
        } catch (const std::exception& failure) {
          ADD_FAILURE() << "rank " << rank << ", second thread: " << failure.what();
        }
      });
    if (contains(first_group, rank)) {
      try {
        reduce_in(first_group, 100);
      } catch (const std::exception& failure) {
        ADD_FAILURE() << "rank " << rank << ", first thread: " << failure.what();
      }
    }
    if (second.joinable())
      second.join();
  });
}

TEST(gloo_plane, broadcast_copies_the_root_values_into_every_member) {
  struct copy {
    std::vector<int> ranks;
    int root;
    std::size_t count;
  };
  std::vector<copy> copies;
  for (int root = 0; root < 4; ++root) {
    copies.push_back({{0, 1, 2, 3}, root, 1000003});
    copies.push_back({{0, 1, 2, 3}, root, 5});
  }
  copies.push_back({{1, 3}, 3, 4099});
  copies.push_back({{0, 2, 3}, 2, 3});
  run_ranks(4, [&](int rank, std::unique_ptr<gloo_plane>& plane) {
    for (std::size_t i = 0; i < copies.size(); ++i) {
      const auto& copy = copies[i];
      if (!contains(copy.ranks, rank))
        continue;
      auto root_values = random_values(copy.count, seed_of(i, copy.root));
      auto data = rank == copy.root
                      ? root_values
                      : std::vector<float>(copy.count, std::numeric_limits<float>::quiet_NaN());
      ASSERT_EQ(broadcast(*plane, data.data(), copy.count, copy.ranks, copy.root, 500 + i,
                          generous_timeout)
                    .message(),
                "");
      EXPECT_EQ(std::memcmp(data.data(), root_values.data(), copy.count * sizeof(float)), 0)
          << "rank " << rank << " after broadcast " << i << " from root " << copy.root;
    }
  });
}

TEST(gloo_plane, rendezvous_that_a_rank_never_joins_fails_naming_the_missing_rank) {
  auto store = herd::comm::make_memory_store();
  // Ranks 0 and 1 of 3 start; rank 2 never does.
  std::vector<std::string> errors(2);
  std::vector<std::chrono::steady_clock::duration> elapsed(2);
  std::vector<std::thread> threads;
  threads.reserve(2);
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      auto start = std::chrono::steady_clock::now();
      try {
        auto plane = make_gloo_plane(rank, 3, store, options_with(500ms, "lonely"));
      } catch (const comm_error& failure) {
        errors[static_cast<std::size_t>(rank)] = failure.what();
      }
      elapsed[static_cast<std::size_t>(rank)] = std::chrono::steady_clock::now() - start;
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (int rank = 0; rank < 2; ++rank) {
    auto index = static_cast<std::size_t>(rank);
    EXPECT_THAT(errors[index], HasSubstr("rank(s) {2} never appeared")) << "rank " << rank;
    EXPECT_THAT(errors[index], HasSubstr("rank " + std::to_string(rank) + " of 3"));
    EXPECT_GE(elapsed[index], 450ms);
    EXPECT_LT(elapsed[index], 3000ms) << "rank " << rank;
  }
}

TEST(gloo_plane, peer_that_destroyed_its_plane_fails_the_operation_and_the_rest_still_reduce) {
  const std::vector<int> everyone = {0, 1, 2, 3};
  const std::vector<int> survivors = {0, 1, 2};
  const std::size_t count = 300001;
  meeting_point rank_3_gone(4);
  run_ranks(4, [&](int rank, std::unique_ptr<gloo_plane>& plane) {
    auto warm = random_values(count, seed_of(0, rank));
    ASSERT_EQ(sum_in_place(*plane, warm.data(), count, everyone, 1, generous_timeout).message(),
              "");
    EXPECT_EQ(check_sum(warm, 0, everyone), "") << "rank " << rank;
    if (rank == 3)
      plane.reset();
    rank_3_gone.arrive_and_wait();
    if (rank == 3)
      return;

    auto data = random_values(count, seed_of(1, rank));
    auto original = data;
    auto start = std::chrono::steady_clock::now();
    if (auto failure = sum_in_place(*plane, data.data(), count, everyone, 2, 1000ms);
        failure.ok()) {
      ADD_FAILURE() << "rank " << rank << ": an allreduce with a departed rank succeeded";
    } else {
      const std::string& message = failure.message();
      EXPECT_THAT(message, HasSubstr("tag 2"));
      // Ranks 0 and 2 are rank 3's neighbours in the ring; rank 1 only learns that its
      // neighbours stopped sending.
      if (rank != 1) {
        EXPECT_THAT(message, HasSubstr("rank 3")) << "rank " << rank;
      }
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1000ms + 2000ms) << "rank " << rank;
    EXPECT_EQ(data, original) << "rank " << rank << ": a failed operation changed data";
    // A failed tag is refused: its messages may still be in flight.
    EXPECT_EQ(sum_in_place(*plane, data.data(), count, survivors, 2, 1000ms).kind(),
              outcome::invalid_argument);

    auto again = random_values(count, seed_of(2, rank));
    ASSERT_EQ(sum_in_place(*plane, again.data(), count, survivors, 3, generous_timeout).message(),
              "");
    EXPECT_EQ(check_sum(again, 2, survivors), "") << "rank " << rank;
    if (rank != 1) {
      auto pair = random_values(7, seed_of(3, rank));
      ASSERT_EQ(sum_in_place(*plane, pair.data(), 7, {0, 2}, 4, generous_timeout).message(), "");
      EXPECT_EQ(check_sum(pair, 3, {0, 2}), "") << "rank " << rank;
    }
  });
}

TEST(gloo_plane, late_data_from_a_peer_never_reaches_a_buffer_whose_operation_timed_out) {
  const std::size_t count = 600001;
  const std::vector<int> both = {0, 1};
  meeting_point rank_1_gave_up(2);
  meeting_point rank_0_done(2);
  run_ranks(2, [&](int rank, std::unique_ptr<gloo_plane>& plane) {
    auto data = random_values(count, seed_of(0, rank));
    auto original = data;
    if (rank == 1) {
      // Gives up after 200 ms; only then does rank 0 start, and its data arrives.
      EXPECT_EQ(sum_in_place(*plane, data.data(), count, both, 9, 200ms).kind(), outcome::timeout);
      rank_1_gave_up.arrive_and_wait();
      rank_0_done.arrive_and_wait();
      EXPECT_EQ(data, original) << "late data was written into the caller's buffer";
    } else {
      rank_1_gave_up.arrive_and_wait();
      // Rank 1's parked operation takes this rank's chunk and sends its own, so the
      // reduce-scatter completes here; the allgather then waits for a rank that left.
      auto failure = sum_in_place(*plane, data.data(), count, both, 9, 400ms);
      EXPECT_FALSE(failure.ok()) << "rank 0 completed an allreduce whose peer had given up";
      EXPECT_THAT(failure.message(), HasSubstr("rank 1"));
      rank_0_done.arrive_and_wait();
    }
    // The pair is still usable afterwards (a destroyed Gloo buffer with a queued receive would
    // have jammed it).
    auto again = random_values(count, seed_of(1, rank));
    ASSERT_EQ(sum_in_place(*plane, again.data(), count, both, 10, generous_timeout).message(), "");
    EXPECT_EQ(check_sum(again, 1, both), "") << "rank " << rank;
  });
}

// A node whose part of a round failed has the others' parts cancelled (the aggregator's
// cancel_atom): rank 2 never joins tag 5, and instead of waiting out their 60 s deadline ranks 0
// and 1 end at once, `aborted`, naming why, with their buffers untouched. A tag cancelled before
// it starts never runs; the plane goes on with the next tag among all three. In the clear, and
// sealed with chunks of several segments, whose receives a thread of the operation's own waits
// for and opens: the cancel wakes it too.
void cancelled_and_the_plane_goes_on(std::size_t count, std::optional<herd::comm::plane_key> key) {
  const std::vector<int> everyone = {0, 1, 2};
  std::vector<gloo_plane*> planes(3, nullptr);
  meeting_point listed(3);
  run_ranks(
      3,
      [&](int rank, std::unique_ptr<gloo_plane>& plane) {
        planes[static_cast<std::size_t>(rank)] = plane.get();
        listed.arrive_and_wait();
        if (rank == 2) {
          std::this_thread::sleep_for(100ms); // usually after the others started waiting for it
          for (int member : {0, 1})
            planes[static_cast<std::size_t>(member)]->cancel(5, "node 2 failed the round");
        } else {
          auto data = random_values(count, seed_of(0, rank));
          const auto original = data;
          const auto failure =
              sum_in_place(*plane, data.data(), count, everyone, 5, generous_timeout);
          EXPECT_EQ(failure.kind(), outcome::aborted)
              << "rank " << rank << ": " << failure.message();
          EXPECT_THAT(failure.message(), HasSubstr("tag 5"));
          EXPECT_THAT(failure.message(), HasSubstr("cancelled: node 2 failed the round"));
          EXPECT_EQ(data, original) << "rank " << rank << ": a cancelled operation changed data";
          plane->cancel(6, "cancelled early");
          const auto early = sum_in_place(*plane, data.data(), count, {0, 1}, 6, generous_timeout);
          EXPECT_EQ(early.kind(), outcome::aborted) << "rank " << rank << ": " << early.message();
          EXPECT_THAT(early.message(), HasSubstr("cancelled: cancelled early"));
        }
        auto again = random_values(count, seed_of(1, rank));
        ASSERT_EQ(
            sum_in_place(*plane, again.data(), count, everyone, 7, generous_timeout).message(), "");
        EXPECT_EQ(check_sum(again, 1, everyone), "") << "rank " << rank;
      },
      wire_of(herd::comm::wire_format::fp32, key));
}

TEST(gloo_plane, a_cancelled_operation_ends_at_once_and_the_plane_goes_on) {
  cancelled_and_the_plane_goes_on(300001, std::nullopt);
  cancelled_and_the_plane_goes_on(1600001, herd::comm::random_plane_key());
}

TEST(gloo_plane, preconditions_name_both_operands) {
  run_ranks(2, [&](int rank, std::unique_ptr<gloo_plane>& plane) {
    if (rank != 0)
      return;
    std::vector<float> data(4, 1.0f);
    auto message_of = [&](const status& result) -> std::string {
      return result.kind() == outcome::invalid_argument ? result.message() : "no invalid_argument";
    };
    EXPECT_THAT(message_of(sum_in_place(*plane, data.data(), 4, {1}, 0, 100ms)),
                HasSubstr("this rank 0 is not in ranks {1}"));
    EXPECT_THAT(message_of(sum_in_place(*plane, data.data(), 4, {1, 0}, 0, 100ms)),
                HasSubstr("ranks {1, 0} must be sorted and unique, but 1 comes before 0"));
    EXPECT_THAT(message_of(sum_in_place(*plane, data.data(), 4, {0, 0, 1}, 0, 100ms)),
                HasSubstr("but 0 comes before 0"));
    EXPECT_THAT(message_of(sum_in_place(*plane, data.data(), 4, {0, 5}, 0, 100ms)),
                HasSubstr("rank 5 in ranks {0, 5} is outside the plane of size 2"));
    EXPECT_THAT(message_of(sum_in_place(*plane, data.data(), 4, {}, 0, 100ms)),
                HasSubstr("ranks is empty"));
    EXPECT_THAT(message_of(broadcast(*plane, data.data(), 4, {0}, 1, 0, 100ms)),
                HasSubstr("root 1 is not in ranks {0}"));
    EXPECT_THAT(message_of(broadcast(*plane, data.data(), 4, {1}, 1, 0, 100ms)),
                HasSubstr("this rank 0 is not in ranks {1}"));
    EXPECT_THAT(message_of(sum_in_place(*plane, data.data(), 4, {0}, std::uint64_t{1} << 50, 1ms)),
                HasSubstr("tag 1125899906842624 exceeds the largest tag 281474976710655"));
    EXPECT_THAT(message_of(sum_in_place(*plane, nullptr, 4, {0}, 0, 100ms)),
                HasSubstr("send is null but count is 4"));
    // A group of one is valid and leaves the data as it is.
    ASSERT_EQ(sum_in_place(*plane, data.data(), 4, {0}, 0, 100ms).message(), "");
    EXPECT_EQ(data, std::vector<float>(4, 1.0f));
  });
}

// The plane through the data-plane interface: what it supports, a weighted sum into a separate
// buffer, and each failure as its own kind: a silent peer is a timeout, a failed tag used again
// an invalid argument, a departed peer a lost peer, attach unsupported.
TEST(gloo_plane, results_are_typed_and_what_it_lacks_is_unsupported) {
  const std::size_t count = 50001;
  meeting_point rank_0_timed_out(3);
  meeting_point rank_2_gone(3);
  run_ranks(3, [&](int rank, std::unique_ptr<gloo_plane>& plane) {
    EXPECT_EQ(plane->name(), "gloo");
    EXPECT_TRUE(plane->supports(herd::comm::operation::group_reduce));
    EXPECT_TRUE(plane->supports(herd::comm::operation::broadcast));
    EXPECT_FALSE(plane->supports(herd::comm::operation::attach));
    EXPECT_TRUE(plane->memory().host_accessible());
    auto own = random_values(count, seed_of(0, rank));
    const auto attached = plane->attach(rank, own.data(), count);
    EXPECT_EQ(attached.kind(), outcome::unsupported);
    EXPECT_EQ(attached.message(), "gloo plane does not support attach");

    // Weights 0.5, 0.25, 0.25 into a separate buffer; `own` is only read.
    const std::vector<herd::comm::weighted_input> weighted{{0, 0.5f}, {1, 0.25f}, {2, 0.25f}};
    std::vector<float> out(count, std::numeric_limits<float>::quiet_NaN());
    auto work = plane->group_reduce(weighted, own.data(), out.data(), count, {1, generous_timeout});
    EXPECT_TRUE(work->is_completed());
    ASSERT_EQ(work->wait(0ms).kind(), outcome::done) << work->wait(0ms).message();
    for (std::size_t i = 0; i < count; i += 997) {
      double expected = 0.0;
      for (const auto& input : weighted)
        expected += input.weight * random_values(count, seed_of(0, input.rank))[i];
      ASSERT_NEAR(out[i], expected, 1e-5) << "rank " << rank << ", element " << i;
    }
    EXPECT_EQ(own, random_values(count, seed_of(0, rank)));

    if (rank == 0) {
      const auto silent = sum_in_place(*plane, own.data(), count, {0, 1}, 2, 200ms);
      EXPECT_EQ(silent.kind(), outcome::timeout) << silent.message();
      EXPECT_THAT(silent.message(), HasSubstr("timed out after 200 ms waiting for rank 1"));
      const auto again = sum_in_place(*plane, own.data(), count, {0, 1}, 2, 200ms);
      EXPECT_EQ(again.kind(), outcome::invalid_argument) << again.message();
    }
    rank_0_timed_out.arrive_and_wait();
    if (rank == 2)
      plane.reset();
    rank_2_gone.arrive_and_wait();
    if (rank == 2)
      return;
    // The first operation with the departed rank may end at its deadline; by then both survivors'
    // pairs with it have closed, and the next one fails at once, naming it.
    sum_in_place(*plane, own.data(), count, {0, 1, 2}, 3, 1000ms);
    const auto lost = sum_in_place(*plane, own.data(), count, {0, 1, 2}, 4, 1000ms);
    EXPECT_EQ(lost.kind(), outcome::peer_lost) << "rank " << rank << ": " << lost.message();
    EXPECT_THAT(lost.message(), HasSubstr("rank 2"));
  });
}

#else

// Forks one process per rank, each running `body(rank)` and exiting with its result (0: passed);
// returns each child's wait status.
std::vector<int> run_processes(int size, const std::function<int(int)>& body) {
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    pid_t child = ::fork();
    if (child == 0) {
      int result = 1;
      try {
        result = body(rank);
      } catch (const std::exception& failure) {
        std::cerr << "rank " << rank << ": " << failure.what() << std::endl;
      }
      ::_exit(result);
    }
    children.push_back(child);
  }
  std::vector<int> statuses;
  for (pid_t child : children) {
    int status = -1;
    ::waitpid(child, &status, 0);
    statuses.push_back(status);
  }
  return statuses;
}

bool passed(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// In a child: prints the problem and returns 1, or returns 0.
int verdict(const std::string& problem, int rank) {
  if (problem.empty())
    return 0;
  std::cerr << "rank " << rank << ": " << problem << std::endl;
  return 1;
}

// In a child of ranks 0 and 1, after rank 2 left the plane: the two reduce correctly (tag `tag`)
// and meet at a barrier (tag + 1); the problem, named as `what`, or empty.
std::string two_survivors_reduce(gloo_plane& plane, int rank, std::size_t count, std::uint64_t tag,
                                 const std::string& what) {
  auto again = random_values(count, seed_of(2, rank));
  if (auto failed = sum_in_place(plane, again.data(), count, {0, 1}, tag, generous_timeout);
      !failed.ok())
    return what + ": " + failed.message();
  if (auto problem = check_sum(again, 2, {0, 1}); !problem.empty())
    return what + ": " + problem;
  std::vector<float> barrier(1, 0.0f);
  return sum_in_place(plane, barrier.data(), 1, {0, 1}, tag + 1, generous_timeout).message();
}

TEST(gloo_plane_processes, forked_ranks_reduce_and_broadcast_through_a_file_store) {
  herd::testing::temp_directory directory;
  auto statuses = run_processes(3, [&](int rank) {
    auto plane = make_gloo_plane(rank, 3, herd::comm::make_file_store(directory.path().string()),
                                 options_with(generous_timeout));
    auto data = random_values(1000003, seed_of(0, rank));
    if (auto failure =
            sum_in_place(*plane, data.data(), data.size(), {0, 1, 2}, 1, generous_timeout);
        !failure.ok())
      return verdict("allreduce of three: " + failure.message(), rank);
    if (auto problem = check_sum(data, 0, {0, 1, 2}); !problem.empty())
      return verdict("allreduce of three: " + problem, rank);
    if (rank != 1) {
      auto pair = random_values(7, seed_of(1, rank));
      if (auto failure =
              sum_in_place(*plane, pair.data(), pair.size(), {0, 2}, 2, generous_timeout);
          !failure.ok())
        return verdict("allreduce of {0, 2}: " + failure.message(), rank);
      if (auto problem = check_sum(pair, 1, {0, 2}); !problem.empty())
        return verdict("allreduce of {0, 2}: " + problem, rank);
    }
    auto root_values = random_values(4099, seed_of(2, 1));
    auto copy = rank == 1 ? root_values : std::vector<float>(4099, 0.0f);
    if (auto failure =
            broadcast(*plane, copy.data(), copy.size(), {0, 1, 2}, 1, 3, generous_timeout);
        !failure.ok())
      return verdict("broadcast: " + failure.message(), rank);
    if (copy != root_values)
      return verdict("broadcast from rank 1 differs", rank);
    // Nobody closes a connection before everyone is done reading from it.
    std::vector<float> barrier(1, 0.0f);
    return verdict(
        sum_in_place(*plane, barrier.data(), 1, {0, 1, 2}, 4, generous_timeout).message(), rank);
  });
  for (std::size_t rank = 0; rank < statuses.size(); ++rank)
    EXPECT_TRUE(passed(statuses[rank])) << "rank " << rank << " status " << statuses[rank];
}

// Another process on the data plane's connections that does not hold the plane's key (it took a
// peer's place, or writes crafted bytes in Gloo's framing): its messages are refused by name,
// nothing of them reaches the model, and the processes that hold the key go on reducing.
TEST(gloo_plane_processes, a_process_without_the_plane_key_is_refused_and_the_others_go_on) {
  herd::testing::temp_directory directory;
  const herd::comm::plane_key key = herd::comm::random_plane_key(); // before the fork: shared
  const std::size_t count = 300001;
  auto statuses = run_processes(3, [&](int rank) {
    auto options = options_with(generous_timeout);
    options.seal_key = rank == 2 ? herd::comm::random_plane_key() : key;
    std::string refused;
    options.on_refused = [&](int peer, const std::string&) { refused += std::to_string(peer); };
    auto plane =
        make_gloo_plane(rank, 3, herd::comm::make_file_store(directory.path().string()), options);
    // The impostor's values are far outside the others', so any of them in a result would show.
    auto data =
        rank == 2 ? std::vector<float>(count, 1e30f) : random_values(count, seed_of(0, rank));
    const auto original = data;
    const auto failure = sum_in_place(*plane, data.data(), count, {0, 1, 2}, 1, 3000ms);
    // The impostor's process stays until the others have read what it sent: closing its
    // connections first could reset them before rank 0 refuses its message.
    auto settled = herd::comm::make_file_store(directory.path().string());
    if (rank != 2)
      settled->set("settled-" + std::to_string(rank), {'1'});
    else
      for (int other : {0, 1})
        settled->get("settled-" + std::to_string(other), generous_timeout);
    if (failure.ok())
      return verdict("a sum with a process that lacks the key succeeded", rank);
    if (data != original)
      return verdict("the refused sum changed the caller's data", rank);
    if (rank == 2)
      return verdict(refused == "1" ? "" : "the impostor refused '" + refused + "', not 1", rank);
    if (rank == 0 &&
        (refused != "2" || failure.message().find("rank 2 is refused") == std::string::npos))
      return verdict("rank 0 did not refuse rank 2: '" + refused + "', " + failure.message(), rank);
    return verdict(two_survivors_reduce(*plane, rank, count, 2, "sum of the two holding the key"),
                   rank);
  });
  for (std::size_t rank = 0; rank < statuses.size(); ++rank)
    EXPECT_TRUE(passed(statuses[rank])) << "rank " << rank << " status " << statuses[rank];
}

TEST(gloo_plane_processes, killed_process_fails_its_peers_naming_it_and_the_rest_still_reduce) {
  herd::testing::temp_directory directory;
  const std::size_t count = 300001;
  auto statuses = run_processes(3, [&](int rank) {
    auto plane = make_gloo_plane(rank, 3, herd::comm::make_file_store(directory.path().string()),
                                 options_with(generous_timeout));
    auto warm = random_values(count, seed_of(0, rank));
    if (auto failure = sum_in_place(*plane, warm.data(), count, {0, 1, 2}, 1, generous_timeout);
        !failure.ok())
      return verdict("warm-up: " + failure.message(), rank);
    if (rank == 2)
      ::raise(SIGKILL); // no destructor, no goodbye: the kernel closes the sockets
    auto data = random_values(count, seed_of(1, rank));
    auto original = data;
    auto start = std::chrono::steady_clock::now();
    auto failure = sum_in_place(*plane, data.data(), count, {0, 1, 2}, 2, 2000ms);
    if (failure.ok())
      return verdict("an allreduce with a killed rank succeeded", rank);
    // Both survivors are neighbours of rank 2 in the ring of three.
    if (failure.message().find("rank 2") == std::string::npos)
      return verdict("the error does not name rank 2: " + failure.message(), rank);
    if (std::chrono::steady_clock::now() - start > 3500ms)
      return verdict("the failure took longer than the timeout allows", rank);
    if (data != original)
      return verdict("the failed allreduce changed data", rank);
    return verdict(two_survivors_reduce(*plane, rank, count, 3, "allreduce of the survivors"),
                   rank);
  });
  EXPECT_TRUE(passed(statuses[0])) << "status " << statuses[0];
  EXPECT_TRUE(passed(statuses[1])) << "status " << statuses[1];
  EXPECT_TRUE(WIFSIGNALED(statuses[2]) && WTERMSIG(statuses[2]) == SIGKILL)
      << "status " << statuses[2];
}

#endif

} // namespace
