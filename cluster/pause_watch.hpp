// Notices that its own process stood still: stopped (SIGSTOP, a debugger), a VM paused for live
// migration, or starved of CPU. A thread wakes every `tick` and reports a gap between two wakes
// longer than `threshold`. A coordinator that stood still past cluster.node-timeout-ms counts its
// healthy nodes lost when it resumes, and its log would otherwise blame them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace herd::cluster {

class pause_watch {
public:
  /// `on_pause` gets the seconds the process stood still, on the watch's thread.
  pause_watch(std::chrono::milliseconds threshold, std::function<void(double seconds)> on_pause,
              std::chrono::milliseconds tick = std::chrono::milliseconds(100));
  /// Stops the thread and waits for it.
  ~pause_watch();
  pause_watch(const pause_watch&) = delete;
  pause_watch& operator=(const pause_watch&) = delete;

private:
  void watch();

  std::chrono::milliseconds threshold_;
  std::chrono::milliseconds tick_;
  std::function<void(double)> on_pause_;
  // When it was made: a thread that starts late (a loaded machine), or a process stopped before
  // the thread first ran, still measures from here.
  std::chrono::steady_clock::time_point started_;
  std::mutex mutex_;
  std::condition_variable woken_;
  bool stopping_ = false;
  std::thread thread_; // last: started once the rest is set
};

} // namespace herd::cluster
