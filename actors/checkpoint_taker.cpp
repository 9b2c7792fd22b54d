// The coordinator's part in checkpoints; see checkpoint_taker.hpp.
#include "actors/checkpoint_taker.hpp"

#include "actors/checkpoint_messages.hpp"

namespace herd::actors {

checkpoint_taker::checkpoint_taker(std::shared_ptr<const checkpoint_options> options) {
  if (options)
    writer_ = std::make_unique<checkpoint_writer>(*options);
}

bool checkpoint_taker::due(double elapsed, std::uint64_t rounds) const {
  if (!enabled() || holding())
    return false;
  const auto& options = writer_->options();
  return (options.every_rounds > 0 && rounds >= last_rounds_ + options.every_rounds) ||
         (options.every_seconds > 0.0 && elapsed >= last_at_ + options.every_seconds);
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

void checkpoint_taker::write(std::shared_ptr<run_checkpoint> state, double elapsed, bool final) {
  checkpoint_report report;
  report.rounds = state->coordinator.counters.rounds;
  report.pause_seconds = final ? 0.0 : elapsed - began_at_;
  report.final = final;
  writer_->write(std::move(state), std::move(report));
}

std::vector<policy_input> checkpoint_taker::release() {
  phase_ = phase::idle;
  return std::move(kept_);
}

void checkpoint_taker::abandon() {
  phase_ = phase::idle;
  ++ticket_;
}

void checkpoint_taker::flush() {
  if (writer_)
    writer_->flush();
}

std::vector<checkpoint_report> checkpoint_taker::reports() {
  return writer_ ? writer_->take_reports() : std::vector<checkpoint_report>{};
}

void request_worker_states(caf::event_based_actor& self, const std::vector<caf::actor>& workers,
                           std::chrono::milliseconds timeout,
                           std::function<void(worker_records)> then,
                           std::function<void(const std::string&)> failed) {
  struct gathering {
    worker_records records;
    std::size_t outstanding = 0;
    bool failed = false;
  };
  auto state = std::make_shared<gathering>();
  state->records.resize(workers.size());
  state->outstanding = workers.size();
  if (workers.empty()) {
    then({});
    return;
  }
  for (std::size_t i = 0; i < workers.size(); ++i)
    self.request(workers[i], timeout, checkpoint_atom::value)
        .then(
            [state, i, then](const worker_checkpoint& answer) {
              state->records[i] = answer.record;
              if (--state->outstanding == 0 && !state->failed)
                then(std::move(state->records));
            },
            [&self, state, i, failed](caf::error& error) {
              if (state->failed)
                return;
              state->failed = true;
              failed("worker " + std::to_string(i) +
                     " gave no state: " + self.system().render(error));
            });
}

} // namespace herd::actors
