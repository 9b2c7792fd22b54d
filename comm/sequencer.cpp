// The sequencer and the issue gate; see sequencer.hpp.
#include "comm/sequencer.hpp"

#include <string>

namespace herd::comm {

reduction_tickets sequencer::take(std::uint32_t generation, const std::vector<int>& nodes) {
  const std::lock_guard<std::mutex> lock(mutex_);
  reduction_tickets taken;
  taken.ticket = ++ticket_;
  taken.sequences.reserve(nodes.size());
  for (int node : nodes)
    taken.sequences.push_back(++last_[{generation, node}]);
  return taken;
}

std::uint64_t sequencer::tickets() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return ticket_;
}

status issue_gate::wait_turn(std::uint32_t generation, std::uint64_t sequence,
                             std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto given_up = [&] {
    return status{outcome::aborted, "reduction " + std::to_string(sequence) + " of generation " +
                                        std::to_string(generation) +
                                        " came after its turn was given up; not issued, so that "
                                        "this node never issues out of order"};
  };
  if (closed_ || generation < oldest_)
    return {outcome::aborted,
            "the issue gate of generation " + std::to_string(generation) + " is closed"};
  auto& order = lines_[generation];
  if (sequence < order.next)
    return given_up();
  const bool turn = changed_.wait_for(
      lock, timeout, [&] { return closed_ || generation < oldest_ || sequence <= order.next; });
  if (closed_ || generation < oldest_)
    return {outcome::aborted, "the issue gate of generation " + std::to_string(generation) +
                                  " was closed while reduction " + std::to_string(sequence) +
                                  " waited for its turn"};
  if (sequence < order.next)
    return given_up();
  if (turn)
    return {};
  // The numbers below never came (an order lost on its way, which should not happen while the
  // coordinator is reachable): give them up, so this node does not wait for each of them again.
  const auto missing = order.next;
  order.next = sequence;
  order.done_ahead.erase(order.done_ahead.begin(), order.done_ahead.lower_bound(sequence));
  changed_.notify_all();
  return {outcome::timeout, "reduction " + std::to_string(sequence) + " of generation " +
                                std::to_string(generation) + " waited " +
                                std::to_string(timeout.count()) + " ms for reduction " +
                                std::to_string(missing) + " to be issued first"};
}

void issue_gate::done(std::uint32_t generation, std::uint64_t sequence) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (sequence == 0 || generation < oldest_)
    return;
  auto& order = lines_[generation];
  if (sequence < order.next)
    return;
  order.done_ahead.insert(sequence);
  while (!order.done_ahead.empty() && *order.done_ahead.begin() == order.next) {
    order.done_ahead.erase(order.done_ahead.begin());
    ++order.next;
  }
  changed_.notify_all();
}

void issue_gate::forget_before(std::uint32_t generation) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (generation <= oldest_)
    return;
  oldest_ = generation;
  lines_.erase(lines_.begin(), lines_.lower_bound(generation));
  changed_.notify_all();
}

void issue_gate::close() {
  const std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  changed_.notify_all();
}

} // namespace herd::comm
