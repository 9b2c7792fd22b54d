// Herd's checkpoint files (docs/checkpoints.md): a header that says what the file is and what run
// it belongs to, then a payload the caller serialised (a cereal binary archive). No CAF, no
// actors: this unit knows bytes, files and directories; actors/checkpoint_state.hpp knows what a
// run's payload holds.
//
// A file is: the 8 magic bytes "HERDCKPT", the header as a cereal binary archive, the FNV-1a 64
// hash of those header bytes (8 bytes, little-endian), then the payload. The header carries the
// payload's size and FNV-1a 64 hash, so a truncated or corrupted file is refused by name before a
// byte of it is interpreted.
#pragma once

#include "herd/checkpoint_error.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace herd::checkpoint {

/// Bumped whenever the header or a payload changes shape; files of versions this one cannot read
/// are refused by number.
/// Version 2: the model is its description (models::model::describe()), not the MLP's sizes.
/// Version 3: the evaluations keep the target's evaluation and the parameters that reached it.
/// Version 4: a worker's send buffer counts the rounds its running step missed (late-gradients =
/// scale weighs a late gradient by them), not only whether it missed one.
/// Version 5: a run's payload lists the parts its nodes wrote (a cluster's checkpoint).
/// Version 6: a run's payload ends with what serving its model needs besides the parameters (the
/// input shape, the classes, the inputs' normalisation), so `herd predict` loads no data.
/// Version 7: then which workers' parameters and momentum are copies of an earlier worker's,
/// written once.
/// Version 8: then the best evaluation and its parameters (train.patience keeps them).
/// Version 9: then the number of validation samples the evaluations measured (0: the test set).
/// Version 10: then the workers lost and joined before the checkpoint (the summary's worker
/// events).
inline constexpr std::uint32_t format_version = 10;

/// The oldest version still read: versions 6 to 10 only appended parts to version 5's payload,
/// so an older file is read as one without them (its readers take the inputs from the dataset).
inline constexpr std::uint32_t oldest_read_version = 5;

/// FNV-1a, 64 bits, over `bytes` (continuing from `hash`).
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash = 0xcbf29ce484222325ull);

/// What a checkpoint must agree on with the run that resumes from it: the run cannot go on from a
/// state of another shape (docs/checkpoints.md, "Resume").
struct structure {
  std::string model;                  // the model's structure: models::model::describe()
  std::string algorithm;              // train.algorithm
  std::int32_t workers = 0;           // train.workers
  std::uint64_t training_samples = 0; // the shards are cut from this many samples
  std::int32_t batch_size = 0;        // train.batch-size: the samplers' positions count batches
  std::uint64_t seed = 0;             // train.seed: the shards and shuffles come from it

  /// FNV-1a 64 of a canonical text of every field.
  std::uint64_t fingerprint() const;
  /// One line per field: "model: 784: flatten, dense 10", "train.algorithm: sync", ...
  std::vector<std::string> describe() const;
};

/// One sentence per field that differs ("train.workers: the checkpoint has 4, this run 8");
/// empty when they agree.
std::vector<std::string> differences(const structure& saved, const structure& now);

struct header {
  std::uint32_t version = format_version;
  std::string herd_version; // of the program that wrote it
  structure shape;
  std::uint64_t fingerprint = 0; // shape.fingerprint()
  std::uint64_t written_unix_ms = 0;
  std::uint64_t rounds = 0; // rounds finished when it was taken, for listings
  double epochs = 0.0;      // epochs of training behind it
  std::uint64_t payload_bytes = 0;
  std::uint64_t payload_hash = 0; // fnv1a64 of the payload
};

/// The bytes of a checkpoint file: magic, header (with payload_bytes and payload_hash filled in
/// here), its hash, payload.
std::string encode(header head, std::string_view payload);

struct loaded {
  header head;
  std::string payload;
};

/// Checks and splits the bytes of a file; `file` names it in errors. Throws checkpoint_error:
/// not a checkpoint (magic), a header that cannot be read or whose hash is wrong, a format version
/// outside [oldest_read_version, format_version], a payload shorter or longer than the header says,
/// or a payload hash mismatch.
loaded decode(std::string_view bytes, const std::string& file);

/// Whether `path` is a regular file that starts as a checkpoint does (its magic bytes), whole or
/// not.
bool is_checkpoint_file(const std::string& path);

/// Reads and decodes `path`. Throws checkpoint_error (also when it cannot be read).
loaded read_file(const std::string& path);

/// Writes `bytes` as `directory`/`name` so that a crash at any moment leaves either the whole new
/// file or none: into a temporary file in the same directory, fsync, rename over `name`, fsync
/// the directory. Makes the directory (and its parents) when missing. Throws std::runtime_error
/// naming the path and the system's reason.
void write_atomically(const std::string& directory, const std::string& name,
                      std::string_view bytes);

/// Makes `directory` (and its parents) when missing; empty when files can be written there, else
/// why not ("Permission denied", "not writable").
std::string directory_problem(const std::string& directory);

/// Why a run may not write its checkpoints to `directory` ("checkpoint.dir = DIR: ..."), or ""
/// when it may: the directory cannot be made or written (directory_problem()), or it holds
/// checkpoints of another run, which this one would prune as it keeps its own, or a run writes
/// its checkpoints there now (directory_lock.hpp; its own directory too). A run that
/// resumes from a checkpoint in it may (`resume_path`: the checkpoint or directory it resumes
/// from, empty for a new run), unless the directory holds checkpoints newer than that one (a
/// run going back to an earlier checkpoint would prune the later ones). `resume_option` names where
/// a resume is asked ("--resume", "job_options.resume_from"), for the advice.
std::string run_directory_problem(const std::string& directory, const std::string& resume_path,
                                  const std::string& resume_option);

/// run_directory_problem() less the directory's checks and its holder's, for a run that now holds
/// the directory's lock: the checkpoints another run wrote there since it was first checked (a
/// short run that came and went while this one loaded its data), which it would prune.
std::string existing_checkpoints_problem(const std::string& directory,
                                         const std::string& resume_path,
                                         const std::string& resume_option);

/// Milliseconds since 1970, now: what file names count in.
std::uint64_t unix_milliseconds();

/// The file name of a checkpoint written at `unix_ms` (milliseconds since 1970) after `rounds`
/// rounds: "herd-001764612345678-000000001234.ckpt" (zero-padded, so names sort in the order they
/// were written, whatever run wrote them).
std::string file_name(std::uint64_t unix_ms, std::uint64_t rounds);

/// The file name of a checkpoint written into `directory` now, after `rounds` rounds: named at
/// this millisecond, or at one after the newest checkpoint's name in `directory`, or after
/// `after` (the last name the run handed out, whose file may not be written yet), where that is
/// later. A clock set back (an NTP step, a VM restored) must not make a new checkpoint sort before
/// older ones: pruning would delete it as soon as it was written, and a resume pass over it.
std::string next_file_name(const std::string& directory, std::uint64_t rounds,
                           const std::string& after = {});

/// The name without ".ckpt" ("herd-001764612345678-000000001234"): what a cluster's node parts
/// of that checkpoint are named after.
std::string stem_of(const std::string& file_name);

/// The file name of node `node`'s part of the checkpoint `stem`:
/// "herd-001764612345678-000000001234.node-2.part".
std::string part_name(const std::string& stem, int node);

/// The node part files in `directory` (names only, no directory), oldest first.
std::vector<std::string> list_parts(const std::string& directory);

/// Deletes the node parts in `directory` of checkpoints older than `keep_from` (a stem; empty:
/// none), and leftover temporary files of interrupted writes of parts older than `writing` (the
/// stem being written now: other nodes sharing the directory may be writing theirs). Returns the
/// paths deleted.
std::vector<std::string> prune_parts(const std::string& directory, const std::string& keep_from,
                                     const std::string& writing);

/// The checkpoint files in `directory`, oldest first (by name). Empty when there is none or the
/// directory does not exist.
std::vector<std::string> list(const std::string& directory);

/// Deletes all but the newest `keep` checkpoint files of `directory` (and leftover temporary
/// files of interrupted writes). Returns the paths deleted.
std::vector<std::string> prune(const std::string& directory, std::size_t keep);

/// `path` itself when it is a file; the newest checkpoint in it when it is a directory. Throws
/// checkpoint_error when there is no such path or the directory holds no checkpoint.
std::string resolve(const std::string& path);

} // namespace herd::checkpoint
