// Checkpoint files: what a damaged, truncated or foreign file is refused with, and how files are
// written and kept.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <sys/mount.h>
#include <sys/stat.h>
#include <utility>

#include "checkpoint/format.hpp"
#include "support/temp_directory.hpp"

namespace {

using namespace herd::checkpoint;

header sample_header() {
  header head;
  head.herd_version = "0.1.0";
  head.shape.model = "24: flatten, dense 16, relu, dense 5";
  head.shape.algorithm = "sync";
  head.shape.workers = 4;
  head.shape.training_samples = 640;
  head.shape.batch_size = 8;
  head.shape.seed = 3;
  head.fingerprint = head.shape.fingerprint();
  head.rounds = 17;
  return head;
}

std::string random_payload(std::size_t n, unsigned seed) {
  std::mt19937 engine(seed);
  std::string payload(n, '\0');
  for (auto& byte : payload)
    byte = static_cast<char>(engine() & 0xff);
  return payload;
}

std::string problem_of(const std::string& bytes) {
  try {
    decode(bytes, "the-file.ckpt");
  } catch (const checkpoint_error& error) {
    EXPECT_EQ(error.file(), "the-file.ckpt");
    EXPECT_NE(std::string(error.what()).find("the-file.ckpt"), std::string::npos);
    return error.problem();
  }
  return "";
}

TEST(CheckpointFormat, RoundTripsHeaderAndPayload) {
  const auto payload = random_payload(5000, 1);
  const auto bytes = encode(sample_header(), payload);
  const auto back = decode(bytes, "f");
  EXPECT_EQ(back.payload, payload);
  EXPECT_EQ(back.head.rounds, 17u);
  EXPECT_EQ(back.head.shape.model, "24: flatten, dense 16, relu, dense 5");
  EXPECT_EQ(back.head.payload_bytes, payload.size());
  EXPECT_EQ(back.head.fingerprint, sample_header().shape.fingerprint());
}

TEST(CheckpointFormat, EveryFlippedPayloadByteFailsTheChecksum) {
  const auto payload = random_payload(300, 2);
  const auto bytes = encode(sample_header(), payload);
  const std::size_t payload_start = bytes.size() - payload.size();
  for (std::size_t i = payload_start; i < bytes.size(); i += 7) {
    auto damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x10);
    EXPECT_NE(problem_of(damaged).find("checksum mismatch"), std::string::npos) << i;
  }
}

TEST(CheckpointFormat, AFlippedHeaderByteIsAHeaderProblem) {
  const auto bytes = encode(sample_header(), random_payload(100, 3));
  for (std::size_t i = 8; i < bytes.size() - 100; ++i) {
    auto damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x01);
    const auto problem = problem_of(damaged);
    EXPECT_EQ(problem.rfind("header:", 0), 0u) << i << ": " << problem;
  }
}

TEST(CheckpointFormat, EveryTruncationIsRefused) {
  const auto bytes = encode(sample_header(), random_payload(200, 4));
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const auto problem = problem_of(bytes.substr(0, n));
    EXPECT_FALSE(problem.empty()) << n;
    if (n > bytes.size() - 200) {
      EXPECT_NE(problem.find("truncated"), std::string::npos) << n << ": " << problem;
    }
  }
  EXPECT_NE(problem_of(bytes + "x").find("too long"), std::string::npos);
}

TEST(CheckpointFormat, AForeignFileIsNotACheckpoint) {
  EXPECT_NE(problem_of("[train]\nworkers = 4\n").find("not a Herd checkpoint"), std::string::npos);
}

// A newer file, and one older than the oldest version read, are refused by number; the versions
// between are read, with the header saying which.
TEST(CheckpointFormat, VersionsOutsideTheReadRangeAreRefusedByNumber) {
  for (const std::uint32_t version : {format_version + 1, oldest_read_version - 1}) {
    auto head = sample_header();
    head.version = version;
    const auto problem = problem_of(encode(head, "abc"));
    EXPECT_NE(problem.find("format version " + std::to_string(version)), std::string::npos)
        << problem;
    EXPECT_NE(problem.find("reads versions " + std::to_string(oldest_read_version) + " to " +
                           std::to_string(format_version)),
              std::string::npos)
        << problem;
  }
  for (std::uint32_t version = oldest_read_version; version <= format_version; ++version) {
    auto head = sample_header();
    head.version = version;
    EXPECT_EQ(decode(encode(head, "abc"), "x.ckpt").head.version, version);
  }
}

TEST(CheckpointFormat, DifferencesNameEveryStructuralKey) {
  const auto saved = sample_header().shape;
  EXPECT_TRUE(differences(saved, saved).empty());
  auto now = saved;
  now.workers = 8;
  now.algorithm = "wagma";
  now.model = "24: flatten, dense 32, relu, dense 5";
  now.training_samples = 600;
  now.batch_size = 16;
  now.seed = 4;
  const auto found = differences(saved, now);
  ASSERT_EQ(found.size(), 6u);
  EXPECT_NE(found[0].find("model (from [model] and the data's shape): the checkpoint has 24: "
                          "flatten, dense 16, relu, dense 5, this run 24: flatten, dense 32"),
            std::string::npos)
      << found[0];
  EXPECT_NE(found[1].find("train.algorithm: the checkpoint has sync, this run wagma"),
            std::string::npos);
  EXPECT_EQ(found[2], "train.workers: the checkpoint has 4, this run 8");
  EXPECT_EQ(found[3], "training samples (the data, less data.validation-fraction's share): the "
                      "checkpoint has 640, this run 600");
  EXPECT_EQ(found[4], "train.batch-size: the checkpoint has 8, this run 16");
  EXPECT_EQ(found[5], "train.seed: the checkpoint has 3, this run 4");
  auto seed_only = saved; // the fingerprint in the header covers every field
  seed_only.seed = 4;
  EXPECT_NE(saved.fingerprint(), seed_only.fingerprint());
  EXPECT_NE(saved.fingerprint(), now.fingerprint());
}

TEST(CheckpointFiles, WritesReadsAndKeepsTheNewest) {
  herd::testing::temp_directory dir;
  const std::string where = dir.file("nested/checkpoints");
  std::uint64_t written = 1764612345000;
  for (std::uint64_t rounds : {5u, 10u, 15u, 20u}) {
    auto head = sample_header();
    head.rounds = rounds;
    write_atomically(where, file_name(++written, rounds), encode(head, random_payload(64, 5)));
  }
  // A write that was interrupted leaves a temporary file, never a checkpoint.
  std::ofstream(where + "/" + file_name(++written, 25) + ".tmp-abcdef") << "half";
  auto files = list(where);
  ASSERT_EQ(files.size(), 4u);
  EXPECT_EQ(read_file(resolve(where)).head.rounds, 20u);
  EXPECT_EQ(resolve(files[0]), files[0]);
  const auto removed = prune(where, 2);
  EXPECT_EQ(removed.size(), 3u); // two old checkpoints and the temporary file
  files = list(where);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(read_file(files[0]).head.rounds, 15u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(where),
                          std::filesystem::directory_iterator()),
            2);
}

// A full disk: the error names the checkpoint asked for (its temporary file is removed) and what
// did not fit, and leaves nothing behind. Needs a small tmpfs (root); skipped without one.
TEST(CheckpointFiles, AFullDiskIsReportedWithTheSizesAndLeavesNothing) {
  herd::testing::temp_directory dir;
  const std::string where = dir.file("small");
  std::filesystem::create_directories(where);
  if (::mount("tmpfs", where.c_str(), "tmpfs", 0, "size=256k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs on " << where << " (not root?)";
  struct unmount_at_end {
    std::string path;
    ~unmount_at_end() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{where};
  const std::string name = file_name(1764612345000, 7);
  try {
    write_atomically(where, name, encode(sample_header(), random_payload(1 << 20, 5)));
    FAIL() << "1 MB fitted in a 256 KB tmpfs";
  } catch (const std::runtime_error& full) {
    const std::string what = full.what();
    EXPECT_NE(what.find("cannot write " + where + "/" + name +
                        ": No space left on device (1.0 "
                        "MB to write, "),
              std::string::npos)
        << what;
    EXPECT_NE(what.find(" MB free there)"), std::string::npos) << what;
    EXPECT_EQ(what.find(".tmp-"), std::string::npos) << what;
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(where),
                          std::filesystem::directory_iterator()),
            0);
}

// By time first: a new run writing into a directory of an older, longer one keeps its own newest.
TEST(CheckpointFiles, NamesSortInTheOrderTheyWereWritten) {
  EXPECT_LT(file_name(99, 500), file_name(100, 1));
  EXPECT_LT(file_name(100, 1), file_name(100, 2));
}

// A checkpoint written after the clock was set back (an NTP step, a VM restored) still sorts
// after those written before: it is the newest to resume from, and pruning keeps it.
TEST(CheckpointFiles, ACheckpointWrittenAfterTheClockWentBackIsStillTheNewest) {
  herd::testing::temp_directory dir;
  const std::string where = dir.file("checkpoints");
  const std::uint64_t hour_ahead = unix_milliseconds() + 3600 * 1000;
  auto head = sample_header();
  for (std::uint64_t rounds : {200u, 400u}) {
    head.rounds = rounds;
    write_atomically(where, file_name(hour_ahead + rounds, rounds),
                     encode(head, random_payload(64, 5)));
  }
  const std::string foreign = where + "/herd-notanumber.ckpt"; // not one of the run's names
  std::ofstream(foreign) << "not one of ours";
  head.rounds = 600;
  const auto name = next_file_name(where, 600);
  EXPECT_EQ(name, file_name(hour_ahead + 401, 600));
  std::filesystem::remove(foreign);
  write_atomically(where, name, encode(head, random_payload(64, 5)));
  prune(where, 2);
  EXPECT_EQ(read_file(resolve(where)).head.rounds, 600u);
  // A name handed out whose file is not written yet (a periodic checkpoint still queued when the
  // final one is named) counts as much as a file: the final one must sort after it.
  const auto queued = file_name(hour_ahead + 900, 650);
  EXPECT_EQ(next_file_name(where, 700, queued), file_name(hour_ahead + 901, 700));
  EXPECT_EQ(next_file_name(where, 700, "not a name"), file_name(hour_ahead + 402, 700));
  // Without a clock set back, a name counts the time now.
  const auto before = unix_milliseconds();
  const auto fresh = next_file_name(dir.file("empty"), 7);
  EXPECT_GE(fresh, file_name(before, 7));
  EXPECT_LE(fresh, file_name(unix_milliseconds(), 7));
}

// A user's copy beside the run's checkpoints ("cp ckpt/herd-...ckpt ckpt/herd-best.ckpt") sorted
// after all of them by name: with checkpoint.keep = 1 every new checkpoint was pruned as soon as
// it was written, and --resume DIR went back to the copy. Only the names a run writes count.
TEST(CheckpointFiles, CopiesUnderOtherNamesAreNeitherPrunedNorTakenForTheNewest) {
  herd::testing::temp_directory dir;
  const std::string where = dir.path().string();
  auto head = sample_header();
  std::vector<std::string> stems;
  for (std::uint64_t rounds : {100u, 200u}) {
    head.rounds = rounds;
    const auto name = file_name(1764612345000 + rounds, rounds);
    stems.push_back(stem_of(name));
    write_atomically(where, name, encode(head, random_payload(64, 5)));
    write_atomically(where, part_name(stems.back(), 0), encode(head, random_payload(8, 5)));
  }
  const std::vector<std::string> copies = {"herd-best.ckpt",
                                           "herd-1.ckpt",
                                           "herd-" + std::string(15, '9') + "-12.ckpt",
                                           stems[0] + "-copy.ckpt",
                                           "herd-best.node-0.part",
                                           stems[0] + ".node-x.part",
                                           "herd-best.ckpt.tmp-abcdef"};
  for (const auto& copy : copies)
    std::filesystem::copy_file(where + "/" + stems[0] + ".ckpt", where + "/" + copy);
  EXPECT_EQ(list(where).size(), 2u);
  EXPECT_EQ(list_parts(where).size(), 2u);
  EXPECT_EQ(read_file(resolve(where)).head.rounds, 200u);
  head.rounds = 300;
  const auto newest = next_file_name(where, 300);
  EXPECT_EQ(newest.substr(0, 5), "herd-");
  write_atomically(where, newest, encode(head, random_payload(64, 5)));
  prune(where, 1);
  prune_parts(where, stem_of(newest), stem_of(newest));
  EXPECT_EQ(list(where), std::vector<std::string>{where + "/" + newest});
  EXPECT_TRUE(list_parts(where).empty());
  for (const auto& copy : copies)
    EXPECT_TRUE(std::filesystem::exists(where + "/" + copy)) << copy << " was deleted";
  // A directory of copies alone holds no checkpoint to resume; the copy is named as a file.
  const std::string copies_only = dir.file("copies");
  std::filesystem::create_directories(copies_only);
  std::filesystem::copy_file(where + "/" + newest, copies_only + "/herd-best.ckpt");
  try {
    resolve(copies_only);
    ADD_FAILURE() << "a directory of copies resolved";
  } catch (const checkpoint_error& error) {
    EXPECT_NE(error.problem().find("name a copy under another name as a file"), std::string::npos)
        << error.problem();
  }
  EXPECT_EQ(read_file(resolve(copies_only + "/herd-best.ckpt")).head.rounds, 300u);
}

// A cluster's nodes write parts next to (or apart from) the coordinator's files: each kind is
// listed and pruned by its own rule, and a node never deletes a part another node is writing.
TEST(CheckpointFiles, NodePartsAreListedAndPrunedApartFromCheckpoints) {
  herd::testing::temp_directory dir;
  const std::string where = dir.path().string();
  const auto head = encode(sample_header(), random_payload(32, 6));
  std::vector<std::string> stems;
  for (std::uint64_t rounds : {100u, 200u, 300u}) {
    stems.push_back(stem_of(file_name(1764612345000 + rounds, rounds)));
    write_atomically(where, stems.back() + ".ckpt", head);
    for (int node : {0, 1})
      write_atomically(where, part_name(stems.back(), node), head);
  }
  EXPECT_EQ(part_name(stems[0], 1), stems[0] + ".node-1.part");
  EXPECT_EQ(list(where).size(), 3u) << "parts are not checkpoints";
  ASSERT_EQ(list_parts(where).size(), 6u);
  EXPECT_EQ(list_parts(where).front(), part_name(stems[0], 0));
  // An interrupted write of an old part, and another node writing its part of the newest now.
  std::ofstream(where + "/" + part_name(stems[1], 1) + ".tmp-old123") << "half";
  std::ofstream(where + "/" + part_name(stems[2], 1) + ".tmp-now456") << "half";
  // The coordinator keeps its newest checkpoint: a node's temporary file is not its to delete.
  EXPECT_EQ(prune(where, 1).size(), 2u);
  EXPECT_TRUE(std::filesystem::exists(where + "/" + part_name(stems[1], 1) + ".tmp-old123"));
  // Node 0, writing the newest, drops parts older than the oldest checkpoint kept, and the old
  // temporary file; not node 1's write under way.
  const auto removed = prune_parts(where, stems[1], stems[2]);
  EXPECT_EQ(removed.size(), 3u);
  EXPECT_EQ(list_parts(where),
            (std::vector<std::string>{part_name(stems[1], 0), part_name(stems[1], 1),
                                      part_name(stems[2], 0), part_name(stems[2], 1)}));
  EXPECT_TRUE(std::filesystem::exists(where + "/" + part_name(stems[2], 1) + ".tmp-now456"));
  EXPECT_TRUE(prune_parts(where, "", stems[2]).empty()) << "no checkpoint kept: keep every part";
}

// A run may write its checkpoints where it resumes from, unless newer checkpoints lie beside the
// one it resumes from: keeping its own newest, it would delete them. Which is newer is told by
// the file itself (a link to one, or a copy under another name), not by its name.
TEST(CheckpointFiles, ResumingFromAnEarlierCheckpointIntoItsDirectoryIsRefused) {
  herd::testing::temp_directory dir;
  const std::string where = dir.file("ckpt");
  std::vector<std::string> written;
  for (std::uint64_t i = 0; i < 3; ++i) {
    auto head = sample_header();
    head.written_unix_ms = 1764612345000 + 1000 * i;
    head.rounds = 10 * (i + 1);
    const auto name = file_name(head.written_unix_ms, head.rounds);
    write_atomically(where, name, encode(head, random_payload(32, 3)));
    written.push_back(where + "/" + name);
  }
  EXPECT_EQ(run_directory_problem(where, where, "--resume"), "");
  EXPECT_EQ(run_directory_problem(where, written[2], "--resume"), "");
  const auto refused = run_directory_problem(where, written[0], "--resume");
  EXPECT_NE(refused.find("holds 2 checkpoints newer than " + written[0] +
                         " (the newest: " + written[2] + "), which this run would delete"),
            std::string::npos)
      << refused;
  EXPECT_NE(run_directory_problem(where, written[1], "--resume").find("holds 1 checkpoint newer"),
            std::string::npos);
  // Under names of their own: a link to the newest, a copy of the newest, a copy of the first.
  std::filesystem::create_symlink(written[2], where + "/best.ckpt");
  EXPECT_EQ(run_directory_problem(where, where + "/best.ckpt", "--resume"), "");
  std::filesystem::copy_file(written[2], where + "/latest-copy.ckpt");
  EXPECT_EQ(run_directory_problem(where, where + "/latest-copy.ckpt", "--resume"), "");
  std::filesystem::copy_file(written[0], where + "/zz-first.ckpt");
  EXPECT_NE(run_directory_problem(where, where + "/zz-first.ckpt", "--resume")
                .find("holds 2 checkpoints newer than"),
            std::string::npos);
  // From elsewhere, the directory holds another run's checkpoints.
  const std::string other = dir.file("other");
  std::filesystem::create_directories(other);
  std::filesystem::copy_file(written[0], other + "/" + file_name(1764612345000, 10));
  EXPECT_NE(run_directory_problem(where, other, "--resume").find("of another run"),
            std::string::npos);
}

TEST(CheckpointFiles, ResolveSaysWhatIsMissing) {
  herd::testing::temp_directory dir;
  try {
    resolve(dir.path().string());
    FAIL();
  } catch (const checkpoint_error& error) {
    EXPECT_NE(error.problem().find("holds no checkpoint"), std::string::npos);
  }
  EXPECT_THROW(resolve(dir.file("absent")), checkpoint_error);
  EXPECT_THROW(read_file(dir.file("absent")), checkpoint_error);
}

// A sparse file of 100 GB (no disk space) beside the real checkpoints: the whole file was read
// before its header was (std::bad_alloc, or seconds and gigabytes for 3 GB). Its header is read
// first, and a size the header does not give is refused without reading further.
TEST(CheckpointFiles, AFileOfAnotherSizeThanItsHeaderGivesIsRefusedUnread) {
  herd::testing::temp_directory dir;
  const auto real = encode(sample_header(), random_payload(64, 5));
  const std::uint64_t huge = 100ull << 30;
  const auto sparse = [&](const std::string& name, const std::string& start) {
    const auto path = dir.file(name);
    std::ofstream(path, std::ios::binary) << start;
    std::filesystem::resize_file(path, huge);
    return path;
  };
  try {
    read_file(sparse("grown.ckpt", real));
    ADD_FAILURE() << "a 100 GB file was read";
  } catch (const checkpoint_error& refused) {
    EXPECT_EQ(refused.problem(), "too long: the header says 64 payload bytes, the file holds " +
                                     std::to_string(huge - (real.size() - 64)));
  }
  try {
    read_file(sparse("zeros.ckpt", ""));
    ADD_FAILURE() << "a 100 GB file of zeros was read";
  } catch (const checkpoint_error& refused) {
    EXPECT_EQ(refused.problem().rfind("not a Herd checkpoint", 0), 0u) << refused.problem();
  }
  // A whole checkpoint is read as before.
  write_atomically(dir.file("real"), file_name(1764612345001, 5), real);
  EXPECT_EQ(read_file(dir.file("real/" + file_name(1764612345001, 5))).payload,
            decode(real, "x").payload);
}

// A FIFO waited for a writer forever, /dev/zero was read until memory ran out.
TEST(CheckpointFiles, OnlyRegularFilesAreRead) {
  herd::testing::temp_directory dir;
  ASSERT_EQ(::mkfifo(dir.file("pipe").c_str(), 0600), 0);
  for (const auto& [path, kind] :
       {std::pair<std::string, std::string>{dir.file("pipe"), "a FIFO (named pipe)"},
        {"/dev/zero", "a character device"},
        {dir.path().string(), "a directory"}}) {
    try {
      read_file(path);
      ADD_FAILURE() << path << " was read";
    } catch (const checkpoint_error& error) {
      EXPECT_EQ(error.problem(), "cannot be read: it is " + kind + ", not a regular file");
    }
  }
  EXPECT_FALSE(is_checkpoint_file(dir.file("pipe")));
}

} // namespace
