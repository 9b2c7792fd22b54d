// The virtual clock; see event_queue.hpp.
#include "sim/event_queue.hpp"

#include <algorithm>
#include <utility>

namespace herd::sim {

void event_queue::at(double time, action what) {
  queue_.push({std::max(time, now_), scheduled_++, std::move(what)});
}

bool event_queue::run_next(double until) {
  if (queue_.empty() || queue_.top().time > until)
    return false;
  // top() is const; moving the action out leaves the time and order the heap compares intact.
  event next = std::move(const_cast<event&>(queue_.top()));
  queue_.pop();
  now_ = next.time;
  ++run_;
  next.what();
  return true;
}

} // namespace herd::sim
