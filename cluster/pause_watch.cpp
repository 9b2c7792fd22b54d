// A thread that notices its process stood still; see pause_watch.hpp.
#include "cluster/pause_watch.hpp"

namespace herd::cluster {

pause_watch::pause_watch(std::chrono::milliseconds threshold,
                         std::function<void(double seconds)> on_pause,
                         std::chrono::milliseconds tick)
    : threshold_(threshold), tick_(tick), on_pause_(std::move(on_pause)),
      started_(std::chrono::steady_clock::now()), thread_([this] { watch(); }) {}

pause_watch::~pause_watch() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  woken_.notify_all();
  thread_.join();
}

void pause_watch::watch() {
  using clock = std::chrono::steady_clock; // runs on while the process is stopped
  std::unique_lock<std::mutex> lock(mutex_);
  auto last = started_;
  while (!stopping_) {
    woken_.wait_for(lock, tick_);
    const auto now = clock::now();
    if (!stopping_ && now - last > threshold_ && on_pause_)
      on_pause_(std::chrono::duration<double>(now - last).count());
    last = now;
  }
}

} // namespace herd::cluster
