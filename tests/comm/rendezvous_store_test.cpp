// The rendezvous stores: get waits for a later set, times out naming the key, and (file store)
// works between processes. Built twice: HERD_TEST_FORKS selects the tests that fork (ctest label
// multiproc).
#include "comm/rendezvous_store.hpp"

#include <chrono>
#include <filesystem>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "support/temp_directory.hpp"

namespace {

using herd::comm::comm_error;
using namespace std::chrono_literals;
using testing::HasSubstr;

std::vector<char> bytes_of(const std::string& text) {
  return {text.begin(), text.end()};
}
std::string text_of(const std::vector<char>& bytes) {
  return {bytes.begin(), bytes.end()};
}

#ifndef HERD_TEST_FORKS

// Both stores must honour the same contract; each test runs on each.
class store_contract : public testing::TestWithParam<std::string> {
protected:
  std::shared_ptr<herd::comm::rendezvous_store> make_store() {
    if (GetParam() == "memory")
      return herd::comm::make_memory_store();
    return herd::comm::make_file_store(directory_.path().string());
  }

private:
  herd::testing::temp_directory directory_;
};

TEST_P(store_contract, get_waits_for_a_set_from_another_thread) {
  auto store = make_store();
  auto start = std::chrono::steady_clock::now();
  std::thread setter([&] {
    std::this_thread::sleep_for(60ms);
    store->set("job/3", bytes_of("127.0.0.1:4242"));
  });
  auto value = store->get("job/3", 5000ms);
  setter.join();
  EXPECT_EQ(text_of(value), "127.0.0.1:4242");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
}

TEST_P(store_contract, get_times_out_naming_the_key) {
  auto store = make_store();
  store->set("job/0", bytes_of("present"));
  std::string message = "get of a key nobody sets returned";
  auto start = std::chrono::steady_clock::now();
  try {
    store->get("job/7", 150ms);
  } catch (const comm_error& failure) {
    message = failure.what();
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_THAT(message, HasSubstr("'job/7'"));
  EXPECT_THAT(message, HasSubstr("150 ms"));
  EXPECT_GE(elapsed, 150ms);
  EXPECT_LT(elapsed, 2000ms);
}

TEST_P(store_contract, set_overwrites_and_values_keep_every_byte) {
  auto store = make_store();
  std::vector<char> binary = {'\0', '\x01', '\xff', '/', '.', '\n'};
  store->set("a key/with ../odd.chars", bytes_of("first"));
  store->set("a key/with ../odd.chars", binary);
  EXPECT_EQ(store->get("a key/with ../odd.chars", 0ms), binary);
  store->set("", bytes_of("empty key"));
  EXPECT_EQ(text_of(store->get("", 0ms)), "empty key");
}

std::string store_name(const testing::TestParamInfo<std::string>& store) {
  return store.param;
}

INSTANTIATE_TEST_SUITE_P(stores, store_contract, testing::Values("memory", "file"), store_name);

TEST(file_store, keys_never_leave_the_directory) {
  herd::testing::temp_directory directory;
  auto store = herd::comm::make_file_store(directory.file("nested"));
  store->set("../../escape", bytes_of("inside"));
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory.file("nested"))) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  EXPECT_FALSE(std::filesystem::exists(directory.path() / ".." / "escape"));
  EXPECT_EQ(text_of(store->get("../../escape", 0ms)), "inside");
}

#else

// A child process sets a key the parent waits for, and answers a key the parent sets.
TEST(file_store_processes, get_sees_a_set_from_a_forked_process) {
  herd::testing::temp_directory directory;
  pid_t child = ::fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    int status = 1;
    try {
      auto store = herd::comm::make_file_store(directory.path().string());
      std::this_thread::sleep_for(50ms);
      store->set("child/address", bytes_of("10.0.0.2:5000"));
      auto question = store->get("parent/question", 5000ms);
      store->set("child/answer", bytes_of("echo " + text_of(question)));
      status = 0;
    } catch (...) {
    }
    ::_exit(status);
  }
  auto store = herd::comm::make_file_store(directory.path().string());
  EXPECT_EQ(text_of(store->get("child/address", 5000ms)), "10.0.0.2:5000");
  store->set("parent/question", bytes_of("ping"));
  EXPECT_EQ(text_of(store->get("child/answer", 5000ms)), "echo ping");
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

#endif

} // namespace
