// The marks a backward pass leaves on a send buffer; see gradient_marks.hpp.
#include "comm/gradient_marks.hpp"

#include <algorithm>

namespace herd::comm {

void gradient_marks::begin() {
  std::lock_guard<std::mutex> lock(mutex_);
  final_from_ = count_;
  abandoned_ = false;
  why_.clear();
}

void gradient_marks::final_from(std::size_t begin) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (begin >= final_from_)
      return;
    final_from_ = begin;
  }
  changed_.notify_all();
}

void gradient_marks::abandon(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    abandoned_ = true;
    why_ = why;
  }
  changed_.notify_all();
}

status gradient_marks::wait_final_from(std::size_t from, clock_type::time_point deadline) const {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto final_now = [&] { return final_from_ <= std::min(from, count_); };
  const bool ended = changed_.wait_until(lock, deadline, [&] { return abandoned_ || final_now(); });
  auto missing = [&] {
    return "floats [" + std::to_string(from) + ", " + std::to_string(final_from_) +
           ") of the gradient";
  };
  if (final_now()) // what the pass finished before it was abandoned is final too
    return {};
  if (abandoned_)
    return {outcome::peer_lost, missing() + " were never written: " + why_};
  if (!ended)
    return {outcome::timeout, missing() + " were not final in time"};
  return {};
}

bool gradient_marks::writing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return final_from_ > 0 || abandoned_;
}

} // namespace herd::comm
