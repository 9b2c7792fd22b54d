// The virtual clock; see event_queue.hpp.
#include "sim/event_queue.hpp"

#include <algorithm>
#include <utility>

namespace herd::sim {

void event_queue::at(double time, action what) {
  std::size_t slot = slots_.size();
  if (free_slots_.empty()) {
    slots_.push_back(std::move(what));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = std::move(what);
  }
  queue_.push({std::max(time, now_), scheduled_++, slot});
}

bool event_queue::run_next(double until) {
  if (queue_.empty() || queue_.top().time > until)
    return false;
  const event next = queue_.top();
  queue_.pop();
  // Out of its slot first: the action may schedule events, which may reuse the slot or grow
  // slots_ (moving every action in it).
  action what = std::move(slots_[next.slot]);
  free_slots_.push_back(next.slot);
  now_ = next.time;
  ++run_;
  what();
  return true;
}

} // namespace herd::sim
