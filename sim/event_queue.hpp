// The virtual clock: events in time order, and in the order they were scheduled among events of
// the same time, so that a run is a pure function of its inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace herd::sim {

class event_queue {
public:
  using action = std::function<void()>;

  /// Runs `what` at virtual time `time` (not before now()).
  void at(double time, action what);

  /// Runs the earliest event due at or before `until`; false when none is.
  bool run_next(double until);

  double now() const { return now_; }
  std::uint64_t events_run() const { return run_; }

private:
  struct event {
    double time = 0.0;
    std::uint64_t order = 0;
    action what;
  };
  struct later {
    bool operator()(const event& a, const event& b) const {
      return a.time != b.time ? a.time > b.time : a.order > b.order;
    }
  };

  std::priority_queue<event, std::vector<event>, later> queue_;
  double now_ = 0.0;
  std::uint64_t scheduled_ = 0;
  std::uint64_t run_ = 0;
};

} // namespace herd::sim
