// Writes a run's checkpoints on a thread of its own, so that the group coordinator goes on as
// soon as it has the state: encoding, fsync and rename happen while training runs again. One
// write at a time; a checkpoint that comes while one is being written waits for it. No CAF.
#pragma once

#include "actors/checkpoint_state.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/directory_lock.hpp"
#include "checkpoint/format.hpp"

namespace herd::actors {

/// What one written (or failed) checkpoint cost.
struct checkpoint_report {
  std::string name;             // the file's name, given by the caller; empty: made when written
  std::string path;             // the file written
  std::string error;            // non-empty: it was not written, and why
  std::string note;             // non-empty: something the run should hear about the write
  std::uint64_t rounds = 0;     // rounds finished when it was taken
  std::uint64_t bytes = 0;      // the file's size
  std::size_t parts = 0;        // across processes: the nodes' parts it lists
  std::uint64_t part_bytes = 0; // and their sizes, together
  double pause_seconds = 0.0;   // training held: from the decision until every state was in
  double write_seconds = 0.0;   // encoding and writing, on the writer's thread
  bool final = false;           // taken when the run stopped
};

/// Where and how often a run in one process writes checkpoints (config [checkpoint]), and what a
/// checkpoint's header says about the run.
struct checkpoint_options {
  std::string directory;
  double every_seconds = 0.0;     // 0: none by time
  std::uint64_t every_rounds = 0; // 0: none by rounds
  std::size_t keep = 3;
  checkpoint::structure shape;
  std::string settings; // config::to_ini of the run, secrets blanked
  model_inputs inputs;  // of its training set
  std::string herd_version;
  /// Called on the writer's thread after each checkpoint (for benchmarks and tests); may be empty.
  /// Not for a write the writer gave up on (write_limit) that returns later.
  std::function<void(const checkpoint_report&)> on_written;
  /// How long a run's end waits for the checkpoints still being written: a write that has not
  /// returned by then (a disk or network filesystem that does not answer) is given up on, so that
  /// the run still ends and says so. Generous: a legitimate write takes seconds.
  std::chrono::milliseconds write_limit = std::chrono::minutes(10);
  /// How often the run's end says it is still waiting for a write.
  std::chrono::milliseconds write_notice_every = std::chrono::seconds(30);
  /// The run's hold on `directory` (lock_checkpoint_dir()), until it has written its final
  /// checkpoint (checkpoint_taker::close()) or every copy of these options is gone. Taken again
  /// before a write where someone removed the directory meanwhile.
  std::shared_ptr<checkpoint::directory_lock> lock;
};

/// The options of a run of `config` (checkpoint.dir set) training `model` on `training`; the
/// caller adds the lock.
std::shared_ptr<checkpoint_options> checkpoint_options_for(const config::run_config& config,
                                                           const models::model& model,
                                                           const models::dataset& training);

/// Holds `config`'s checkpoint.dir for one run; throws config::invalid_config (key
/// checkpoint.dir) while another run, in this process or another, holds it, and, once held, where
/// it holds checkpoints this run would prune (checkpoint::existing_checkpoints_problem(); the run
/// resumes from `resume_path`, which its caller calls `resume_option`; empty for a new run; none
/// for a resume whose path is not known, which is not checked): another run may have written them
/// after the run's first check, while it loaded its data.
std::shared_ptr<checkpoint::directory_lock>
lock_checkpoint_dir(const config::run_config& config,
                    const std::optional<std::string>& resume_path = std::string(),
                    const std::string& resume_option = "--resume");

/// The version of Herd that writes checkpoints (their headers name it).
const char* herd_version();

class checkpoint_writer {
public:
  explicit checkpoint_writer(checkpoint_options options);
  /// Finishes the writes handed over, waiting at most options().write_limit; a write that has not
  /// returned by then is left to its thread, which ends on its own (the process may end first)
  /// without calling on_written or writing what was queued behind it.
  ~checkpoint_writer();

  checkpoint_writer(const checkpoint_writer&) = delete;
  checkpoint_writer& operator=(const checkpoint_writer&) = delete;

  const checkpoint_options& options() const;

  /// Queues `state` for writing (after the write under way, if any). `report` carries what the
  /// caller measured (rounds, pause_seconds, final).
  void write(std::shared_ptr<const run_checkpoint> state, checkpoint_report report);

  /// Waits until every queued checkpoint is written, at most `limit`: false when one was still
  /// queued or being written then.
  bool flush(std::chrono::milliseconds limit);
  /// The last flush() ended at its limit.
  bool gave_up() const { return gave_up_; }
  /// Whether nothing is queued or being written now.
  bool idle() const;

  /// The reports of checkpoints written since the last call, oldest first.
  std::vector<checkpoint_report> take_reports();

private:
  // What the writer's thread works on, held by it and by this object: a thread left to a write
  // that does not return outlives the writer.
  struct shared_state;

  std::shared_ptr<shared_state> shared_;
  bool gave_up_ = false;
  std::thread thread_; // last: started once everything above exists
};

} // namespace herd::actors
