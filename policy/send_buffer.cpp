// The send buffer's rules; see send_buffer.hpp.
#include "policy/send_buffer.hpp"

#include <algorithm>
#include <utility>

namespace herd::policy {

send_buffer_family send_buffer_family_of(bool exchange_models, bool blend_late_models,
                                         late_gradients late, bool blend_on_time_models,
                                         bool server_parameters) {
  if (server_parameters) // the server applies the gradients; late ones are accumulated
    return send_buffer_family::server_gradients;
  if (blend_late_models) // blending a late model needs models
    return blend_on_time_models ? send_buffer_family::blending_every_model
                                : send_buffer_family::blending_models;
  if (exchange_models)
    return send_buffer_family::averaging_models;
  switch (late) {
  case late_gradients::discard:
    return send_buffer_family::discarding_gradients;
  case late_gradients::scale:
    return send_buffer_family::scaling_gradients;
  case late_gradients::accumulate:
    break;
  }
  return send_buffer_family::accumulating_gradients;
}

send_buffer::send_buffer(send_buffer_family family, std::uint64_t global_every)
    : family_(family), global_every_(global_every) {
  if (exchanges_models())
    held_ = freshness::stale; // the initial model, for a round that asks before the first step
}

std::optional<loan> send_buffer::on_request(std::uint64_t round, std::uint64_t step) {
  if (!must_wait(round, step))
    return lend(round, step);
  waiting_.emplace(round, step);
  return std::nullopt;
}

bool send_buffer::must_wait(std::uint64_t round, std::uint64_t step) const {
  if (lent_to_.count(round) > 0)
    return false;
  if (!blends_late_models()) // one round at a time
    return !lent_to_.empty();
  // wagma: several at once; only the step just finished waits, while its model is not in it yet.
  return waiting_fold_ && step == steps_;
}

std::optional<loan> send_buffer::answer_waiting() {
  if (waiting_.empty() || must_wait(waiting_.begin()->first, waiting_.begin()->second))
    return std::nullopt;
  const auto [round, step] = *waiting_.begin();
  waiting_.erase(waiting_.begin());
  return lend(round, step);
}

// A contribution hands over all the buffer holds. A model stays there, so a later round gets it
// again, as stale; gradients leave it empty.
loan send_buffer::lend(std::uint64_t round, std::uint64_t step) {
  loan answer{round, freshness::none, 0, 0, steps_};
  member_of_.insert(round);
  if (announced_ && !announced_lent_) { // the running step's gradient, as backward finishes it
    announced_lent_ = true;
    lent_to_.insert(round);
    awaiting_round_ = round;
    return {round, freshness::fresh, announced_samples_, step_version_, steps_ + 1, true};
  }
  if (computing_)
    ++rounds_missed_; // the running step's result misses this round
  const bool blending = blends_late_models();
  const bool ahead = blending && step > steps_; // the stored model; blended in when step ends
  if (ahead)
    late_rounds_[round] = step;
  else if (family_ == send_buffer_family::blending_every_model &&
           !(global_every_ > 0 && step % global_every_ == 0))
    on_time_blends_.insert(round);
  if (computing_into_buffer_ || held_ == freshness::none)
    return answer;
  // wagma: fresh is the round of the step this worker finished on time and waits on (another
  // round may have read the same model as stale before this one asked).
  const bool fresh = blending ? !ahead && step == steps_ && fresh_outstanding_ && !awaiting_round_
                              : held_ == freshness::fresh;
  answer = {round, fresh ? freshness::fresh : freshness::stale, held_samples_, held_version_,
            steps_};
  if (fresh)
    awaiting_round_ = round;
  held_ = exchanges_models() ? freshness::stale : freshness::none;
  held_samples_ = 0;
  lent_to_.insert(round);
  return answer;
}

bool send_buffer::step_due() const {
  if (computing_ || fresh_outstanding_ || waiting_fold_)
    return false;
  const auto next = next_application(); // a late round's blend is due before the next step
  return !next || late_rounds_.count(next->round) == 0;
}

bool send_buffer::begin_step() {
  computing_ = true;
  step_version_ = rounds_applied_;
  computing_into_buffer_ = !exchanges_models() && held_ == freshness::none && lent_to_.empty();
  return computing_into_buffer_;
}

bool send_buffer::announce(std::uint32_t samples) {
  // A round that asked while the step ran has made it late: it is no arrival now.
  if (!computing_into_buffer_ || rounds_missed_ > 0 || exchanges_models() ||
      takes_server_parameters())
    return false;
  announced_ = true;
  announced_samples_ = samples;
  return true;
}

send_buffer::step_end send_buffer::end_step(std::uint32_t samples) {
  computing_ = false;
  ++steps_;
  step_end end;
  announced_ = false;
  if (std::exchange(announced_lent_, false)) { // on time: its gradient went out as it was made
    computing_into_buffer_ = false;
    rounds_missed_ = 0;
    fresh_outstanding_ = true; // until awaiting_round_ is applied
    return end;
  }
  end.late = !blends_late_models()
                 ? rounds_missed_ > 0
                 : std::any_of(late_rounds_.begin(), late_rounds_.end(),
                               [this](const auto& late) { return late.second == steps_; });
  if (end.late && family_ == send_buffer_family::scaling_gradients)
    end.scale = late_gradient_weight(rounds_missed_);
  rounds_missed_ = 0;
  fresh_outstanding_ = !end.late;
  const bool into_buffer = std::exchange(computing_into_buffer_, false);
  if (end.late && family_ == send_buffer_family::discarding_gradients)
    return end;
  if (into_buffer) {
    held_ = end.late ? freshness::stale : freshness::fresh;
    held_samples_ = samples;
    held_version_ = step_version_;
    return end;
  }
  waiting_fold_ = finished_result{!end.late, samples, step_version_};
  if (lent_to_.empty())
    end.write = fold();
  return end;
}

// The finished result joins the buffer: a model replaces what it held, a gradient is copied into
// an empty one (a lone gradient goes out bit for bit) or added to the late ones there.
buffer_write send_buffer::fold() {
  auto write = buffer_write::add_gradient;
  if (exchanges_models() || held_ == freshness::none) {
    write = exchanges_models() ? buffer_write::copy_model : buffer_write::copy_gradient;
    held_version_ = waiting_fold_->version;
  } else {
    held_version_ = std::min(held_version_, waiting_fold_->version);
  }
  const bool fresh = waiting_fold_->fresh || held_ == freshness::fresh;
  held_ = fresh ? freshness::fresh : freshness::stale;
  held_samples_ += waiting_fold_->samples;
  waiting_fold_.reset();
  return write;
}

buffer_write send_buffer::on_result(std::uint64_t round) {
  if (lent_to_.erase(round) == 0 || !lent_to_.empty())
    return buffer_write::none;
  return waiting_fold_ ? fold() : after_model_changed(); // results applied while it was lent
}

std::optional<send_buffer::application> send_buffer::next_application() const {
  if (computing_ || member_of_.empty()) // the compute thread reads the parameters
    return std::nullopt;
  const std::uint64_t round = *member_of_.begin();
  const auto late = late_rounds_.find(round);
  if (late == late_rounds_.end()) {
    if (on_time_blends_.count(round) > 0)
      return application{round, result_use::blend_model};
    const bool replace = exchanges_models() || takes_server_parameters();
    return application{round, replace ? result_use::replace_model : result_use::optimizer_step};
  }
  if (late->second > steps_)
    return std::nullopt; // blended in when that step finishes
  return application{round, result_use::blend_model};
}

bool send_buffer::at_rest() const {
  if (computing_ || !lent_to_.empty() || !waiting_.empty() || waiting_fold_)
    return false;
  return std::all_of(member_of_.begin(), member_of_.end(), [this](std::uint64_t round) {
    const auto late = late_rounds_.find(round);
    return late != late_rounds_.end() && late->second > steps_;
  });
}

void send_buffer::applied(std::uint64_t round) {
  late_rounds_.erase(round);
  on_time_blends_.erase(round);
  member_of_.erase(round);
  ++rounds_applied_;
  if (awaiting_round_ == round) {
    awaiting_round_.reset();
    fresh_outstanding_ = false;
  }
}

} // namespace herd::policy
