// The coordinator's part in checkpoints; see checkpoint_taker.hpp.
#include "actors/checkpoint_taker.hpp"

#include "actors/checkpoint_messages.hpp"
#include "actors/messages.hpp"

#include <algorithm>

namespace herd::actors {

checkpoint_taker::checkpoint_taker(std::shared_ptr<const checkpoint_options> options) {
  if (options)
    writer_ = std::make_unique<checkpoint_writer>(*options);
}

bool checkpoint_taker::interval_passed(double elapsed, std::uint64_t rounds) const {
  if (!enabled() || holding())
    return false;
  const auto& options = writer_->options();
  return (options.every_rounds > 0 && rounds >= last_rounds_ + options.every_rounds) ||
         (options.every_seconds > 0.0 && elapsed >= last_at_ + options.every_seconds);
}

bool checkpoint_taker::due(double elapsed, std::uint64_t rounds) const {
  return interval_passed(elapsed, rounds) && writer_->idle();
}

bool checkpoint_taker::first_wait_for_write(double elapsed, std::uint64_t rounds) {
  if (waited_for_write_ || !interval_passed(elapsed, rounds) || writer_->idle())
    return false;
  waited_for_write_ = true;
  return true;
}

void checkpoint_taker::begin(double elapsed, std::uint64_t rounds) {
  phase_ = phase::draining;
  ++ticket_;
  began_at_ = elapsed;
  last_at_ = elapsed;
  last_rounds_ = rounds;
}

bool checkpoint_taker::ready_to_collect(std::size_t rounds_in_flight) {
  if (phase_ != phase::draining || rounds_in_flight > 0)
    return false;
  phase_ = phase::collecting;
  return true;
}

namespace {

// What a run adds to between two checkpoints: rounds (finished or aborted), steps, workers that
// joined, evaluations.
std::array<std::uint64_t, 5> mark_of(const run_counters& counters, std::size_t evaluations) {
  return {counters.rounds, counters.aborted_rounds, counters.steps, counters.workers_joined,
          evaluations};
}

} // namespace

void checkpoint_taker::write(std::shared_ptr<run_checkpoint> state, double elapsed, bool final,
                             std::string name) {
  if (!final) {
    newest_mark_ =
        mark_of(state->coordinator.counters, state->coordinator.evaluations.evaluations().size());
    newest_path_.clear();
  }
  checkpoint_report report;
  report.name = std::move(name);
  report.parts = state->parts.size();
  for (const auto& part : state->parts)
    report.part_bytes += part.bytes;
  report.rounds = state->coordinator.counters.rounds;
  report.pause_seconds = final ? 0.0 : elapsed - began_at_;
  report.final = final;
  writer_->write(std::move(state), std::move(report));
}

std::vector<policy_input> checkpoint_taker::release(double elapsed) {
  phase_ = phase::idle;
  last_at_ = std::max(last_at_, elapsed);
  return std::move(kept_);
}

void checkpoint_taker::abandon() {
  phase_ = phase::idle;
  ++ticket_;
}

bool checkpoint_taker::flush(const std::function<void(double)>& waiting) {
  if (!writer_)
    return true;
  const auto say_every =
      std::max(writer_->options().write_notice_every, std::chrono::milliseconds(1));
  const auto limit = write_hung() ? std::chrono::milliseconds(0) : writer_->options().write_limit;
  auto waited = std::chrono::milliseconds(0);
  for (;;) {
    const auto slice = std::min<std::chrono::milliseconds>(say_every, limit - waited);
    if (writer_->flush(slice))
      return true;
    waited += slice;
    if (waited >= limit)
      return false;
    if (waiting)
      waiting(std::chrono::duration<double>(waited).count());
  }
}

std::vector<checkpoint_report> checkpoint_taker::take_from_writer() {
  auto reports = writer_ ? writer_->take_reports() : std::vector<checkpoint_report>{};
  for (const auto& report : reports)
    if (!report.final)
      newest_path_ = report.error.empty() ? report.path : std::string();
  return reports;
}

std::vector<checkpoint_report> checkpoint_taker::reports() {
  auto reports = std::move(taken_);
  taken_.clear();
  auto fresh = take_from_writer();
  reports.insert(reports.end(), fresh.begin(), fresh.end());
  return reports;
}

void checkpoint_taker::resumed(const run_counters& counters, std::size_t evaluations) {
  newest_mark_ = mark_of(counters, evaluations);
  newest_path_ = resumed_from;
}

std::string checkpoint_taker::newest_holding(const run_counters& counters, std::size_t evaluations,
                                             const std::function<void(double)>& waiting) {
  if (!enabled() || !newest_mark_ || *newest_mark_ != mark_of(counters, evaluations))
    return {};
  if (!flush(waiting))
    return {};
  auto fresh = take_from_writer();
  taken_.insert(taken_.end(), fresh.begin(), fresh.end());
  return newest_path_;
}

namespace {

// Sends one request per target (`ask(i)` makes the i-th) and gathers the answers, converted by
// `take`, in the targets' order: `then` once all answered, `failed` with why as soon as one did
// not (`who(i)` names it).
template <class Answer, class Kept, class Ask, class Take>
void gather(caf::event_based_actor& self, std::size_t targets, Ask ask, Take take,
            std::function<std::string(std::size_t)> who,
            std::function<void(std::vector<Kept>)> then,
            std::function<void(const std::string&)> failed) {
  struct gathering {
    std::vector<Kept> answers;
    std::size_t outstanding = 0;
    bool failed = false;
  };
  auto state = std::make_shared<gathering>();
  state->answers.resize(targets);
  state->outstanding = targets;
  if (targets == 0) {
    then({});
    return;
  }
  for (std::size_t i = 0; i < targets; ++i)
    ask(i).then(
        [state, i, then, take](const Answer& answer) {
          state->answers[i] = take(answer);
          if (--state->outstanding == 0 && !state->failed)
            then(std::move(state->answers));
        },
        [&self, state, i, who, failed](caf::error& error) {
          if (state->failed)
            return;
          state->failed = true;
          failed(who(i) + ": " + self.system().render(error));
        });
}

} // namespace

void request_worker_states(caf::event_based_actor& self, const std::vector<caf::actor>& workers,
                           std::chrono::milliseconds timeout,
                           std::function<void(worker_records)> then,
                           std::function<void(const std::string&)> failed) {
  gather<worker_checkpoint, std::shared_ptr<const worker_record>>(
      self, workers.size(),
      [&self, &workers, timeout](std::size_t i) {
        return self.request(workers[i], timeout, checkpoint_atom::value);
      },
      [](const worker_checkpoint& answer) { return answer.record; },
      [](std::size_t i) { return "worker " + std::to_string(i) + " gave no state"; },
      std::move(then), std::move(failed));
}

void request_parts(caf::event_based_actor& self, const std::vector<caf::actor>& node_reducers,
                   const std::vector<std::int32_t>& worker_nodes, const part_request& request,
                   std::chrono::milliseconds timeout,
                   std::function<void(std::vector<part_record>)> then,
                   std::function<void(const std::string&)> failed) {
  std::vector<std::int32_t> nodes(worker_nodes.begin(), worker_nodes.end());
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  gather<part_record, part_record>(
      self, nodes.size(),
      [&self, &node_reducers, nodes, request, timeout](std::size_t i) {
        auto order = request;
        order.node = nodes[i];
        return self.request(node_reducers.at(static_cast<std::size_t>(nodes[i])), timeout,
                            checkpoint_atom::value, std::move(order));
      },
      [](const part_record& part) { return part; },
      [nodes](std::size_t i) { return "node " + std::to_string(nodes[i]) + " wrote no part"; },
      std::move(then), std::move(failed));
}

} // namespace herd::actors
