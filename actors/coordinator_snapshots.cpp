// The group coordinator's use of the replicas' state as of a moment (coordinator_actor.hpp):
// evaluations (a snapshot of the parameters, evaluated now or kept for after training) and
// checkpoints (every worker's whole state, written to disk; checkpoint_taker decides when), and
// going on from one.
#include "actors/coordinator_actor.hpp"
#include "monitoring/training_metrics.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <sstream>
#include <utility>

#include "checkpoint/format.hpp"

namespace herd::actors {

namespace {
// Periodic evaluations that may fail in a row before a run stopped by them (a target accuracy,
// patience) fails: one can fail by chance (a timeout on a loaded machine), several cannot.
constexpr int evaluations_failed_in_a_row = 3;

// Seconds as people write them: 600, 0.6.
std::string seconds_text(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}
} // namespace

// -- resuming from a checkpoint --------------------------------------------------------------

// The state the checkpoint saved; the workers were made from it. The policy then hears what it
// had not heard when the checkpoint was taken, and the rounds the epoch limit held back start.
void coordinator_actor::resume_from(const run_checkpoint& saved) {
  const auto& record = saved.coordinator;
  counters_ = record.counters;
  counters_.samples_per_epoch = setup_.samples_per_epoch;
  if (setup_.metrics) { // the lags and the comparison's counters go on from the checkpoint's
    for (std::size_t worker = 0; worker < counters_.workers.size(); ++worker)
      setup_.metrics->resumed_steps(static_cast<int>(worker), counters_.workers[worker].steps);
    const auto compared = counters_.ledger.compare();
    setup_.metrics->resumed_comparison(compared.waited_total, compared.barrier_total,
                                       compared.steps_compared);
  }
  evaluations_.resume_from(record.evaluations, counters_.epochs());
  if (const auto& reached = evaluations_.target_point()) {
    std::ostringstream text;
    text << "train.target-accuracy " << setup_.config.train.target_accuracy
         << " was reached before the checkpoint ("
         << (setup_.validation_samples > 0 ? "validation" : "test") << " accuracy " << std::fixed
         << std::setprecision(4) << reached->test_accuracy << " at round " << reached->round << ", "
         << std::setprecision(1) << reached->elapsed_seconds
         << " s): it does not stop this run again";
    notice(text.str());
  }
  policy_->load_state(record.policy_state);
  elapsed_offset_ = record.elapsed_seconds;
  next_round_ = record.next_round;
  next_aggregator_ = record.next_aggregator;
  samples_committed_ = record.samples_committed;
  aborts_ = abort_streak(record.consecutive_aborted_rounds);
  worker_events_ = record.worker_events;
  checkpoints_.resumed(booked_counters(), evaluations_.evaluations().size());
  start_rounds(record.unstarted);
  for (const auto& input : record.unheard)
    start_rounds(tell_policy(input));
}

// -- evaluation --------------------------------------------------------------------------------

// Asks the workers that make the model for their parameters, as of now; under async the model
// is the parameter server's (each worker holds the server's parameters as of its last update).
void coordinator_actor::request_snapshot(snapshot_taken then, snapshot_failed failed) {
  std::vector<caf::actor> sources;
  if (parameter_server_)
    sources.push_back(parameter_server_);
  else
    for (int index : evaluations_.sources(live_workers()))
      sources.push_back(workers_[static_cast<std::size_t>(index)]);
  evaluation_point now;
  now.round = counters_.rounds;
  now.elapsed_seconds = elapsed();
  now.epoch = counters_.epochs();
  actors::request_snapshot(*this, sources, now, std::move(then), std::move(failed));
}

// Evaluates the model as it is now.
void coordinator_actor::evaluate_now(evaluated on_result) {
  request_snapshot(
      [this, on_result](const evaluation_point& point, parameters_ptr parameters) {
        request_evaluation(*this, evaluator_, point, std::move(parameters), on_result);
      },
      [on_result](const std::string& why) { on_result(std::nullopt, nullptr, why); });
}

void coordinator_actor::evaluate_periodically() {
  evaluate_now([this](std::optional<evaluation_point> point, parameters_ptr parameters,
                      const std::string& failure) {
    evaluations_.periodic_ended();
    failed_evaluations_ = point ? 0 : failed_evaluations_ + 1;
    if (point)
      record_evaluation(*point, std::move(parameters));
    else
      notice("evaluation failed: " + failure);
    // A stopping rule that reads the evaluations can never stop a run whose evaluations all fail:
    // it would train to its last epoch and end as if it had just not reached its target.
    const auto& train = setup_.config.train;
    if (failed_evaluations_ >= evaluations_failed_in_a_row &&
        (train.target_accuracy > 0.0 || train.patience > 0) && phases_.running()) {
      fail(std::to_string(failed_evaluations_) +
           " evaluations in a row failed, and train.target-accuracy or train.patience stops "
           "the run by them; the last: " +
           failure);
    }
    if (auto then = std::exchange(after_periodic_, nullptr))
      then();
    collect_when_ready();
  });
}

// `then` once no periodic evaluation is under way: a checkpoint taken while one is would hold a
// run that never recorded it, and the resumed run would never evaluate that round.
void coordinator_actor::after_periodic_evaluation(std::function<void()> then) {
  if (evaluations_.periodic_outstanding())
    after_periodic_ = std::move(then);
  else
    then();
}

void coordinator_actor::take_snapshot() {
  request_snapshot(
      [this](const evaluation_point& point, parameters_ptr parameters) {
        if (evaluations_.keep({point, std::move(parameters)})) {
          std::ostringstream every;
          every << evaluations_.snapshot_interval_seconds() * 1e3;
          notice("snapshots kept for the accuracy curve thinned to fit in memory (every "
                 "second one dropped): one every " +
                 every.str() + " ms from now on");
        }
      },
      [this](const std::string& why) { notice("snapshot failed: " + why); });
}

// The snapshots kept for after training, one after another, then the final parameters.
void coordinator_actor::evaluate_kept(std::size_t index) {
  if (index >= evaluations_.kept().size()) {
    evaluations_.drop_kept();
    evaluate_final();
    return;
  }
  const auto& kept = evaluations_.kept()[index];
  request_evaluation(
      *this, evaluator_, kept.point, kept.parameters,
      [this, index](std::optional<evaluation_point> point, parameters_ptr parameters,
                    const std::string& failure) {
        if (point)
          record_evaluation(*point, std::move(parameters));
        else
          notice("evaluation of a snapshot failed: " + failure);
        evaluate_kept(index + 1);
      });
}

void coordinator_actor::evaluate_final() {
  evaluate_now([this](std::optional<evaluation_point> point, parameters_ptr parameters,
                      const std::string& failure) {
    if (point) {
      // These are the parameters as training left them: they belong at its end on the run's
      // clock, not after the kept snapshots' evaluations.
      point->elapsed_seconds = std::min(point->elapsed_seconds, wall_seconds_);
      evaluations_.set_final(*point);
      record_evaluation(*point, parameters, true);
    } else {
      // No stand-in from an earlier evaluation: the summary says the final one is missing.
      notice("final evaluation failed: " + failure);
    }
    const std::string failed = point ? "" : "final evaluation failed: " + failure;
    // The parameters a target or the best kept are known without the final evaluation.
    const auto stop_reason = phases_.stop_reason();
    if (setup_.validation_samples > 0 && evaluations_.kept_point(stop_reason) &&
        evaluations_.kept_parameters(stop_reason, parameters))
      test_kept(std::move(parameters), failed);
    else
      carry_out(phases_.final_evaluation_ended(failed));
  });
}

// With a validation set, the test set is measured once: on the parameters the run ends with.
void coordinator_actor::test_kept(parameters_ptr final_parameters, std::string earlier_failure) {
  const auto stop_reason = phases_.stop_reason();
  request_evaluation(
      *this, evaluator_, *evaluations_.kept_point(stop_reason),
      evaluations_.kept_parameters(stop_reason, std::move(final_parameters)),
      [this, earlier_failure](std::optional<evaluation_point> tested, parameters_ptr,
                              const std::string& failure) {
        if (tested && setup_.metrics)
          setup_.metrics->test_accuracy(tested->test_accuracy);
        if (tested)
          evaluations_.set_tested(*tested);
        else
          notice("test of the kept parameters failed: " + failure);
        carry_out(phases_.final_evaluation_ended(
            !earlier_failure.empty() || tested ? earlier_failure
                                               : "test of the kept parameters failed: " + failure));
      },
      measured_set::test);
}

void coordinator_actor::record_evaluation(const evaluation_point& point, parameters_ptr parameters,
                                          bool final) {
  if (phases_.done())
    return;
  const bool target_reached = evaluations_.record(point, std::move(parameters), final);
  if (setup_.metrics && setup_.validation_samples > 0)
    setup_.metrics->validation_accuracy(point.test_accuracy);
  else if (setup_.metrics)
    setup_.metrics->test_accuracy(point.test_accuracy);
  if (setup_.observer != nullptr)
    setup_.observer->on_evaluation(point);
  if (target_reached)
    begin_stop(stop_cause::target_accuracy);
  else if (evaluations_.plateaued())
    begin_stop(stop_cause::plateau);
}

// -- checkpoints (checkpoint_taker decides when, these carry it out) ---------------------------

// Holds the rounds from now on when a checkpoint is due; true when it began one.
bool coordinator_actor::begin_checkpoint_if_due() {
  if (!phases_.running() || holding())
    return false;
  if (checkpoints_.first_wait_for_write(elapsed(), counters_.rounds))
    notice("a checkpoint came due while the last one was still being written: each waits for "
           "the write before it (checkpoint.every-seconds or every-rounds is shorter than a "
           "write; the checkpoints' lines say how long each takes)");
  if (!checkpoints_.due(elapsed(), counters_.rounds))
    return false;
  checkpoints_.begin(elapsed(), counters_.rounds);
  return true;
}

void coordinator_actor::maybe_checkpoint() {
  if (begin_checkpoint_if_due())
    collect_when_ready();
}

// A periodic checkpoint is collected once no round is in flight and no evaluation is under way.
void coordinator_actor::collect_when_ready() {
  if (!evaluations_.periodic_outstanding() && checkpoints_.ready_to_collect(in_flight_.size()))
    collect_checkpoint();
}

// Every worker's state, once all are at rest; `then` (the final evaluation) after a final one.
// In one process the coordinator gathers the states and writes them; across processes each node
// writes its own workers' part first, and the coordinator's file, written once every part is on
// disk, commits the checkpoint (two phases: whole or absent).
void coordinator_actor::collect_checkpoint(std::function<void()> then) {
  const auto ticket = checkpoints_.ticket();
  const bool final = !phases_.running();
  const auto name = checkpoints_.next_name(counters_.rounds);
  auto failed = [this, ticket, final, then](const std::string& why) {
    if (final) // a node's disk full or read-only, a node lost as it wrote: the end state is lost
      final_checkpoint_error_ = why;
    if (final || ticket == checkpoints_.ticket())
      drop_checkpoint(why, final);
    if (then)
      then();
  };
  auto collected = [this, ticket, final, then, name](worker_records records,
                                                std::vector<part_record> parts) {
    if (final || ticket == checkpoints_.ticket()) {
      write_checkpoint(records, std::move(parts), name, final);
      if (!final)
        release_checkpoint();
    }
    if (then)
      then();
  };
  if (node_reducers_.empty()) {
    request_worker_states(
        *this, workers_, setup_.stop_timeout,
        [collected](worker_records records) mutable { collected(std::move(records), {}); }, failed);
    return;
  }
  const auto live = live_workers();
  if (live.size() != workers_.size()) {
    failed(std::to_string(workers_.size() - live.size()) +
           " worker(s) lost: their states cannot be saved");
    return;
  }
  request_parts(
      *this, node_reducers_, worker_nodes_,
      part_request{checkpoint::stem_of(name), parts_to_keep_from(), 0}, setup_.stop_timeout,
      [collected](std::vector<part_record> parts) mutable { collected({}, std::move(parts)); },
      failed);
}

// The oldest checkpoint the coordinator keeps: the nodes' parts of older ones are not needed
// (those checkpoints were pruned), whether this one is committed or not.
std::string coordinator_actor::parts_to_keep_from() const {
  const auto& options = checkpoints_.options();
  const auto kept = checkpoint::list(options.directory);
  if (kept.size() < options.keep || kept.empty())
    return {};
  const auto oldest = kept[kept.size() - options.keep];
  return checkpoint::stem_of(oldest.substr(oldest.find_last_of('/') + 1));
}

void coordinator_actor::write_checkpoint(const worker_records& records,
                                         std::vector<part_record> parts, const std::string& name,
                                         bool final) {
  auto state = std::make_shared<run_checkpoint>();
  state->settings = setup_.checkpoints->settings;
  state->inputs = setup_.checkpoints->inputs;
  state->validation_samples = setup_.validation_samples;
  auto& record = state->coordinator;
  record.elapsed_seconds = final ? wall_seconds_ : elapsed();
  record.counters = booked_counters();
  record.evaluations = evaluations_;
  record.policy_state = policy_->save_state();
  record.unstarted = checkpoints_.unstarted();
  record.unheard = checkpoints_.kept();
  record.next_round = next_round_;
  record.next_aggregator = next_aggregator_;
  record.samples_committed = samples_committed_;
  record.consecutive_aborted_rounds = aborts_.in_a_row();
  record.worker_events = worker_events_;
  for (const auto& worker : records)
    state->workers.push_back(*worker);
  state->parts = std::move(parts);
  checkpoints_.write(std::move(state), elapsed(), final, name);
}

// The policy hears what it was held from, in order, and rounds start again.
void coordinator_actor::release_checkpoint() {
  for (auto& input : checkpoints_.release(elapsed()))
    if (phases_.running())
      hear(std::move(input));
  schedule_policy_time();
  if (in_flight_.empty() && samples_committed_ >= sample_budget() && phases_.running())
    begin_stop(stop_cause::epochs);
}

void coordinator_actor::drop_checkpoint(const std::string& why, bool final) {
  notice((final ? "final checkpoint not written: " : "checkpoint not taken: ") + why);
  if (setup_.metrics)
    setup_.metrics->checkpoint_failed();
  if (!checkpoints_.holding())
    return;
  checkpoints_.abandon();
  release_checkpoint();
}

// A final checkpoint is one the run can go on from: no error, no round abandoned, no worker
// lost. None when the newest periodic one, written, already holds this state (a run stopped just
// after one): it would be a copy, taking one of the kept slots.
bool coordinator_actor::final_checkpoint_wanted() {
  if (!checkpoints_.enabled())
    return false;
  const auto lost = workers_.size() - live_workers().size();
  const std::string unfit = !phases_.error().empty() ? "the run failed"
                            : rounds_abandoned_      ? "rounds were abandoned at the stop timeout"
                            : lost > 0 ? std::to_string(lost) +
                                             " worker(s) lost: their states cannot be saved"
                                       : "";
  if (!unfit.empty()) {
    notice("no final checkpoint: " + unfit);
    return false;
  }
  const auto newest =
      checkpoints_.newest_holding(booked_counters(), evaluations_.evaluations().size(),
                                  [this](double seconds) { still_writing(seconds); });
  if (checkpoints_.write_hung()) { // a final one would wait behind it
    final_checkpoint_error_ = write_hung_text();
    notice("no final checkpoint: " + final_checkpoint_error_);
    return false;
  }
  if (newest.empty())
    return true;
  report_checkpoints(); // its own notice first
  if (newest != checkpoint_taker::resumed_from) // a file name
    final_checkpoint_ = newest;
  notice("no final checkpoint: the newest, " + newest + ", holds this state (round " +
         std::to_string(counters_.rounds) + ")");
  return false;
}

void coordinator_actor::still_writing(double seconds) {
  notice("waiting for a checkpoint's write to " + checkpoints_.options().directory + " (" +
         seconds_text(seconds) + " s so far)");
}

std::string coordinator_actor::write_hung_text() const {
  const auto limit = std::chrono::duration<double>(checkpoints_.options().write_limit).count();
  return "a checkpoint's write to " + checkpoints_.options().directory +
         " had not returned after " + seconds_text(limit) +
         " s (a disk or network filesystem that does not answer?); the run ends without it";
}

void coordinator_actor::report_checkpoints() {
  for (const auto& report : checkpoints_.reports()) {
    if (!report.note.empty())
      notice(report.note);
    if (!report.error.empty()) {
      notice((report.final ? "final checkpoint not written: " : "checkpoint not written: ") +
             report.error);
      if (report.final)
        final_checkpoint_error_ = report.error;
      if (setup_.metrics)
        setup_.metrics->checkpoint_failed();
      continue;
    }
    // The state it holds is as of its collection: about now less its write (a report waits up
    // to a progress interval to be read here).
    if (setup_.metrics)
      setup_.metrics->checkpoint_written(elapsed() - report.write_seconds, report.pause_seconds);
    char size[96];
    if (report.parts > 0) // the coordinator's file lists the parts; the nodes hold the states
      std::snprintf(size, sizeof size, "%zu parts of %.1f MB on the nodes",
                    report.parts, report.part_bytes / 1e6);
    else
      std::snprintf(size, sizeof size, "%.1f MB", report.bytes / 1e6);
    char text[200];
    std::snprintf(text, sizeof text,
                  " (round %llu, %s; training paused %.0f ms, written in %.0f ms)",
                  static_cast<unsigned long long>(report.rounds), size, report.pause_seconds * 1e3,
                  report.write_seconds * 1e3);
    notice((report.final ? "final checkpoint " : "checkpoint ") + report.path + text);
    if (report.final)
      final_checkpoint_ = report.path;
  }
}
} // namespace herd::actors
