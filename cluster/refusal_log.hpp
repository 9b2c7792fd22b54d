// How many of the gate's refusals from one address reach the log. A port scanner, or a script
// that opens connections and sends nothing, was one log line per connection (143 lines in 40 s
// from one script): the lines from other addresses, the ones an operator needs, drowned. Per
// address, at most `lines` refusals are logged in each `window`; the last one logged says that
// more are not, and the first one after the window says how many were not.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace herd::cluster {

class refusal_log {
public:
  using clock = std::chrono::steady_clock;

  explicit refusal_log(std::size_t lines = 5,
                       std::chrono::seconds window = std::chrono::seconds(60))
      : lines_(lines), window_(window) {}

  /// The line to log for a refusal of a connection from `address` at `now` (`text` names it), or
  /// "" when this one is not logged. Thread-safe.
  std::string line(const std::string& address, const std::string& text, clock::time_point now) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (addresses_.size() > max_addresses)
      forget_quiet(now);
    auto& seen = addresses_[address];
    std::string before;
    if (seen.logged == 0 || now - seen.start >= window_) {
      if (seen.unlogged > 0)
        before = "(" + std::to_string(seen.unlogged) + " more refusal(s) from " + address +
                 " were not logged) ";
      seen = {now, 0, 0};
    }
    if (seen.logged == lines_) {
      ++seen.unlogged;
      return {};
    }
    ++seen.logged;
    return before + text +
           (seen.logged == lines_ ? "; further refusals from " + address + " are not logged for " +
                                        std::to_string(window_.count()) + " s"
                                  : std::string());
  }

private:
  struct seen_address {
    clock::time_point start; // of its window
    std::size_t logged = 0;
    std::size_t unlogged = 0;
  };

  static constexpr std::size_t max_addresses = 4096;

  // Addresses whose window has passed (many scanners, each once): what they were not logged
  // for is forgotten with them, which bounds the table by the addresses of one window.
  void forget_quiet(clock::time_point now) {
    for (auto it = addresses_.begin(); it != addresses_.end();)
      it = now - it->second.start >= window_ ? addresses_.erase(it) : std::next(it);
  }

  std::size_t lines_;
  std::chrono::seconds window_;
  std::mutex mutex_;
  std::map<std::string, seen_address> addresses_;
};

} // namespace herd::cluster
