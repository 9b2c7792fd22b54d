// The group coordinator's part in checkpoints (docs/checkpoints.md): when one is due, what the
// coordinator holds back while it waits for a quiescent point, and the requests that collect the
// workers' states. The coordinator carries out the steps:
//
//   due()  -> begin(): the policy hears nothing more (its inputs are kept, as data, in order),
//             so no round starts; the rounds in flight finish;
//   ready_to_collect(0 rounds in flight) -> request_worker_states(): every worker answers once
//             it is at rest (its last step finished, every round it answered applied);
//   all states in -> the coordinator adds its own and the policy's state, hands the checkpoint to
//             the writer (checkpoint_writer.hpp, another thread) and release()s the kept inputs
//             to the policy: training goes on while the file is written.
//
// When the run stops, the inputs that came after the policy stopped hearing them (draining) are
// kept as well, and the final checkpoint holds them. No CAF in this header but its forward
// declarations.
#pragma once

#include "actors/checkpoint_state.hpp"
#include "actors/checkpoint_writer.hpp"

#include <caf/fwd.hpp>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/format.hpp"

namespace herd::actors {

struct part_request;

class checkpoint_taker {
public:
  /// Null options: checkpoints are off, and nothing is ever kept.
  explicit checkpoint_taker(std::shared_ptr<const checkpoint_options> options);

  bool enabled() const { return writer_ != nullptr; }
  /// A periodic checkpoint is being taken: the policy's inputs go to keep().
  bool holding() const { return phase_ != phase::idle; }
  /// Whether one is due at `elapsed` seconds with `rounds` finished: never while holding, nor
  /// while the last one is still being written (an interval shorter than a write queued
  /// checkpoints without end, each a copy of every worker's state in memory: a gigabyte in
  /// seconds); it is then taken once that write has ended.
  bool due(double elapsed, std::uint64_t rounds) const;
  /// True the first time in the run that a checkpoint whose interval had passed waits for the
  /// last one's write (for a notice: the interval is shorter than a write).
  bool first_wait_for_write(double elapsed, std::uint64_t rounds);
  /// The run (re)starts at `elapsed` seconds with `rounds` finished: the intervals count from here.
  void start_clock(double elapsed, std::uint64_t rounds) {
    last_at_ = elapsed;
    last_rounds_ = rounds;
  }
  /// Starts holding, at `elapsed` seconds.
  void begin(double elapsed, std::uint64_t rounds);
  /// True once: holding and no round in flight; the states are to be requested now.
  bool ready_to_collect(std::size_t rounds_in_flight);
  /// Identifies the checkpoint being taken: answers for an abandoned one are dropped.
  std::uint64_t ticket() const { return ticket_; }

  /// A policy input the policy did not hear (held, or the run was stopping).
  void keep(policy_input input) {
    if (enabled())
      kept_.push_back(std::move(input));
  }
  /// A decision the epoch limit kept from starting (a resumed run with more epochs starts it).
  void keep_unstarted(const policy::group_decision& decision) {
    if (enabled())
      unstarted_.push_back(decision);
  }
  const std::vector<policy_input>& kept() const { return kept_; }
  const std::vector<policy::group_decision>& unstarted() const { return unstarted_; }

  /// Writes `state` (on the writer's thread), measured from begin() to `elapsed`, as file `name`
  /// (empty: named when it is written).
  void write(std::shared_ptr<run_checkpoint> state, double elapsed, bool final,
             std::string name = {});
  /// The run has ended: its checkpoints are written (flush()), and another run may have the
  /// directory now. False where a write had not returned by options().write_limit: the run ends
  /// without it, and keeps the directory (the write may still land there).
  bool close(const std::function<void(double)>& waiting = {}) {
    if (!flush(waiting))
      return false;
    if (writer_ && writer_->options().lock)
      writer_->options().lock->release();
    return true;
  }
  /// The directory checkpoints go to, and how many are kept.
  const checkpoint_options& options() const { return writer_->options(); }
  /// The file name of the next checkpoint, after `rounds` rounds (checkpoint::next_file_name()):
  /// after every file in the directory and every name handed out before, written or still queued.
  std::string next_name(std::uint64_t rounds) {
    last_name_ = checkpoint::next_file_name(options().directory, rounds, last_name_);
    return last_name_;
  }
  /// Stops holding at `elapsed` seconds, from which checkpoint.every-seconds counts again
  /// (training time: a long pause, waiting for an evaluation, does not make the next one due at
  /// once); the kept inputs, in order, for the policy to hear now.
  std::vector<policy_input> release(double elapsed);
  /// The run stopped while holding: the checkpoint under way is dropped (the final one follows);
  /// what was kept stays kept.
  void abandon();

  /// Waits until every checkpoint handed over is written, at most options().write_limit (once it
  /// gave up, not again: it only looks whether the write has returned since); `waiting`, when
  /// given, hears the seconds waited every options().write_notice_every meanwhile. False when the
  /// limit passed first.
  bool flush(const std::function<void(double)>& waiting = {});
  /// A flush() gave up on a write that had not returned, and no flush has seen it return since.
  bool write_hung() const { return writer_ && writer_->gave_up(); }
  /// Reports of the checkpoints written since the last call.
  std::vector<checkpoint_report> reports();
  /// The file of the newest periodic checkpoint when it holds the run as it is now (the same
  /// rounds, steps and joins in `counters`, as many `evaluations`: a final checkpoint would
  /// repeat it, and take one of the kept slots) and was written; else empty. Waits for the writer
  /// (flush(waiting)) when they agree; empty with write_hung() when that wait gave up.
  std::string newest_holding(const run_counters& counters, std::size_t evaluations,
                             const std::function<void(double)>& waiting = {});
  /// The run resumed from a checkpoint that holds `counters` and `evaluations`: until the run
  /// changes them, that checkpoint is the newest that holds its state (a run resumed with nothing
  /// left to train writes no copy of it).
  void resumed(const run_counters& counters, std::size_t evaluations);
  /// What newest_holding() names the checkpoint the run resumed from by (not a file name here).
  static constexpr const char* resumed_from = "the checkpoint it resumed from";

private:
  enum class phase { idle, draining, collecting };

  std::unique_ptr<checkpoint_writer> writer_;
  phase phase_ = phase::idle;
  std::uint64_t ticket_ = 0;
  double began_at_ = 0.0;
  double last_at_ = 0.0;          // elapsed seconds at the last checkpoint (or the start)
  std::uint64_t last_rounds_ = 0; // rounds at the last checkpoint (or the start)
  std::vector<policy_input> kept_;
  std::vector<policy::group_decision> unstarted_;
  // The newest periodic checkpoint handed to the writer: what it holds, and its file once
  // written (empty while pending or when it failed). Reports taken from the writer to learn
  // that wait in taken_ for reports().
  std::optional<std::array<std::uint64_t, 5>> newest_mark_;
  std::string newest_path_;
  std::vector<checkpoint_report> taken_;
  std::string last_name_; // the last next_name()
  bool waited_for_write_ = false;
  bool interval_passed(double elapsed, std::uint64_t rounds) const;
  std::vector<checkpoint_report> take_from_writer();
};

using worker_records = std::vector<std::shared_ptr<const worker_record>>;

/// Asks each of `workers` for its state (in their order): `then` once all answered, `failed` with
/// why as soon as one did not (within `timeout`).
void request_worker_states(caf::event_based_actor& self, const std::vector<caf::actor>& workers,
                           std::chrono::milliseconds timeout,
                           std::function<void(worker_records)> then,
                           std::function<void(const std::string&)> failed);

/// Asks each node of `worker_nodes` (the node of every worker) to write its workers' part of a
/// cluster's checkpoint through its reducer (`node_reducers`, by node index): `then` with the
/// parts once every node wrote its own (by node index), `failed` with why as soon as one did not.
void request_parts(caf::event_based_actor& self, const std::vector<caf::actor>& node_reducers,
                   const std::vector<std::int32_t>& worker_nodes, const part_request& request,
                   std::chrono::milliseconds timeout,
                   std::function<void(std::vector<part_record>)> then,
                   std::function<void(const std::string&)> failed);

} // namespace herd::actors
