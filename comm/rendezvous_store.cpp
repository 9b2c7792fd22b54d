// The memory store (a map under a mutex, for ranks that are threads) and the file store (one file
// per key, for ranks that are processes of one host).
#include "comm/rendezvous_store.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace herd::comm {

namespace {

std::string not_set_message(const std::string& key, std::chrono::milliseconds timeout) {
  return "rendezvous store: key '" + key + "' was not set within " +
         std::to_string(timeout.count()) + " ms (has the rank that sets it started?)";
}

class memory_store final : public rendezvous_store {
public:
  void set(const std::string& key, const std::vector<char>& value) override {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      values_[key] = value;
    }
    value_set_.notify_all();
  }

  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    auto found = values_.end();
    bool present = value_set_.wait_for(lock, std::max(timeout, std::chrono::milliseconds(0)), [&] {
      found = values_.find(key);
      return found != values_.end();
    });
    if (!present)
      throw comm_error(outcome::timeout, not_set_message(key, timeout));
    return found->second;
  }

private:
  std::mutex mutex_;
  std::condition_variable value_set_;
  std::map<std::string, std::vector<char>> values_;
};

// Every key becomes "k_" plus the key with anything but [A-Za-z0-9_-] escaped as %XX, so that no
// key can name a directory, a path outside `directory`, or a temporary file (those start "t_").
std::string file_name_of(const std::string& key) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string name = "k_";
  for (unsigned char c : key) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-';
    if (plain) {
      name += static_cast<char>(c);
    } else {
      name += '%';
      name += hex[c >> 4];
      name += hex[c & 0xF];
    }
  }
  return name;
}

class file_store final : public rendezvous_store {
public:
  explicit file_store(std::filesystem::path directory) : directory_(std::move(directory)) {
    std::error_code error;
    std::filesystem::create_directories(directory_, error);
    if (error)
      throw comm_error(outcome::failed, "file store: cannot create directory '" +
                                            directory_.string() + "': " + error.message());
  }

  void set(const std::string& key, const std::vector<char>& value) override {
    // Written under a unique temporary name, then renamed: rename(2) is atomic, so get() sees
    // either no file or the whole value.
    auto target = directory_ / file_name_of(key);
    auto temporary = directory_ / ("t_" + std::to_string(::getpid()) + "_" +
                                   std::to_string(next_temporary.fetch_add(1)));
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out.write(value.data(), static_cast<std::streamsize>(value.size()));
      out.close();
      if (!out)
        throw comm_error(outcome::failed, "file store: cannot write key '" + key + "' to '" +
                                              temporary.string() + "'");
    }
    std::error_code error;
    std::filesystem::rename(temporary, target, error);
    if (error)
      throw comm_error(outcome::failed, "file store: cannot rename '" + temporary.string() +
                                            "' to '" + target.string() + "' for key '" + key +
                                            "': " + error.message());
  }

  // Polls the file, backing off from 1 ms to 20 ms: rendezvous happens once per job, so a few
  // milliseconds of latency do not matter and inotify would not be worth its complexity.
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override {
    auto path = directory_ / file_name_of(key);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
      std::ifstream in(path, std::ios::binary);
      if (in)
        return std::vector<char>(std::istreambuf_iterator<char>(in),
                                 std::istreambuf_iterator<char>());
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline)
        throw comm_error(outcome::timeout,
                         not_set_message(key, timeout) + " (file '" + path.string() + "')");
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
      pause = std::min(pause * 2, std::chrono::milliseconds(20));
    }
  }

private:
  // Per process, not per store: two stores over one directory must not share a temporary name.
  static inline std::atomic<unsigned long> next_temporary{0};

  std::filesystem::path directory_;
};

} // namespace

std::optional<std::vector<char>> rendezvous_store::peek(const std::string& key) {
  try {
    return get(key, std::chrono::milliseconds(0));
  } catch (const comm_error& failure) {
    if (failure.kind() == outcome::timeout)
      return std::nullopt;
    throw;
  }
}

std::shared_ptr<rendezvous_store> make_memory_store() {
  return std::make_shared<memory_store>();
}

std::shared_ptr<rendezvous_store> make_file_store(const std::string& directory) {
  return std::make_shared<file_store>(directory);
}

} // namespace herd::comm
