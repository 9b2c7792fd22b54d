// The NCCL unique id through the rendezvous store (comm/nccl_rendezvous.hpp), on the CPU: ranks
// are threads over a memory store, and the id maker is a fake, so no GPU or NCCL runtime is needed.
#include "comm/nccl_rendezvous.hpp"

#include <atomic>
#include <gtest/gtest.h>
#include <thread>

namespace {

using namespace std::chrono_literals;
using herd::comm::comm_error;
using herd::comm::nccl_unique_id;
using herd::comm::outcome;

nccl_unique_id id_filled_with(char value) {
  nccl_unique_id id;
  id.bytes.fill(value);
  return id;
}

TEST(nccl_rendezvous, every_rank_gets_the_id_rank_zero_made_once_per_generation) {
  auto store = herd::comm::make_memory_store();
  std::atomic<int> made{0};
  const auto make = [&] {
    ++made;
    return id_filled_with(static_cast<char>('a' + made.load()));
  };
  for (const char* prefix : {"job", "job/g1"}) {
    std::vector<nccl_unique_id> ids(4);
    std::vector<std::thread> ranks;
    for (int rank = 3; rank >= 0; --rank) // the readers come first and wait
      ranks.emplace_back([&, rank] {
        ids[static_cast<std::size_t>(rank)] =
            herd::comm::exchange_nccl_unique_id(rank, *store, prefix, 5s, make);
      });
    for (auto& rank : ranks)
      rank.join();
    for (const auto& id : ids)
      EXPECT_EQ(id, ids[0]) << prefix;
  }
  EXPECT_EQ(made.load(), 2) << "one id per generation, made by rank 0 only";
  EXPECT_EQ(herd::comm::nccl_id_key("job/g1"), "job/g1/nccl-id");
}

TEST(nccl_rendezvous, a_rank_whose_id_never_comes_times_out_naming_the_key) {
  auto store = herd::comm::make_memory_store();
  try {
    herd::comm::exchange_nccl_unique_id(1, *store, "job/g2", 20ms, [] { return nccl_unique_id{}; });
    FAIL() << "no id was set";
  } catch (const comm_error& error) {
    EXPECT_EQ(error.kind(), outcome::timeout);
    EXPECT_NE(std::string(error.what()).find("job/g2/nccl-id"), std::string::npos) << error.what();
  }
}

TEST(nccl_rendezvous, a_value_that_is_not_an_id_is_refused_naming_the_key) {
  auto store = herd::comm::make_memory_store();
  store->set("job/nccl-id", {'x', 'y'});
  try {
    herd::comm::exchange_nccl_unique_id(2, *store, "job", 1s, [] { return nccl_unique_id{}; });
    FAIL() << "two bytes are not an id";
  } catch (const comm_error& error) {
    EXPECT_EQ(error.kind(), outcome::invalid_argument);
    EXPECT_NE(std::string(error.what()).find("job/nccl-id"), std::string::npos) << error.what();
  }
}

} // namespace
