// Checkpoint files; see format.hpp.
#include "checkpoint/format.hpp"

#include "kernels/regular_file.hpp"

#include <algorithm>
#include <cctype>
#include <cereal/archives/binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <system_error>
#include <unistd.h>

#include "checkpoint/bounded_archive.hpp"
#include "checkpoint/directory_lock.hpp"

namespace herd::checkpoint {

template <class Archive>
void serialize(Archive& ar, structure& x) {
  ar(x.model, x.algorithm, x.workers, x.training_samples, x.batch_size, x.seed);
}

template <class Archive>
void serialize(Archive& ar, header& x) {
  ar(x.version, x.herd_version, x.shape, x.fingerprint, x.written_unix_ms, x.rounds, x.epochs,
     x.payload_bytes, x.payload_hash);
}

namespace {

constexpr std::string_view magic = "HERDCKPT";
constexpr std::string_view suffix = ".ckpt";
constexpr std::string_view prefix = "herd-";
constexpr std::string_view part_suffix = ".part";
constexpr std::string_view temporary_marker = ".tmp-";
// A header is a few hundred bytes; anything claiming more is not one of ours.
constexpr std::size_t max_header_bytes = 1 << 20;

std::string hash_text(std::uint64_t hash) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

void put_u64(std::string& out, std::uint64_t value) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

std::uint64_t get_u64(std::string_view in) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(in[static_cast<std::size_t>(i)]);
  return value;
}

std::string system_reason(int error) {
  return std::error_code(error, std::generic_category()).message();
}

// Closes on every path out.
struct file_descriptor {
  int fd = -1;
  ~file_descriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

void sync_directory(const std::string& directory) {
  file_descriptor dir{::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd < 0)
    throw std::runtime_error("cannot open " + directory + " to sync it: " + system_reason(errno));
  if (::fsync(dir.fd) != 0)
    throw std::runtime_error("cannot sync " + directory + ": " + system_reason(errno));
}

bool ends_with(const std::string& name, std::string_view end) {
  return name.size() >= end.size() && name.compare(name.size() - end.size(), end.size(), end) == 0;
}

// Whether `text` from `at` holds `count` digits.
bool digits_at(std::string_view text, std::size_t at, std::size_t count) {
  if (text.size() < at + count)
    return false;
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(at),
                     text.begin() + static_cast<std::ptrdiff_t>(at + count),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// The length of the stem `name` starts with, as file_name() writes it ("herd-" 15 digits "-" 12
// digits), or 0. Only such names are the run's: a copy a user made beside them
// ("herd-best.ckpt") is never pruned, and never taken for the newest.
std::size_t stem_length(std::string_view name) {
  constexpr std::size_t ms_digits = 15;
  constexpr std::size_t round_digits = 12;
  const std::size_t dash = prefix.size() + ms_digits;
  if (name.compare(0, prefix.size(), prefix) != 0 || !digits_at(name, prefix.size(), ms_digits) ||
      name.size() <= dash || name[dash] != '-' || !digits_at(name, dash + 1, round_digits))
    return 0;
  return dash + 1 + round_digits;
}

bool is_checkpoint_name(const std::string& name) {
  const std::size_t stem = stem_length(name);
  return stem != 0 && name.compare(stem, std::string::npos, suffix) == 0;
}

// A stem, ".node-", the node's number, ".part" (part_name()).
bool is_part_name(const std::string& name) {
  constexpr std::string_view node = ".node-";
  const std::size_t stem = stem_length(name);
  if (stem == 0 || name.compare(stem, node.size(), node) != 0 || !ends_with(name, part_suffix))
    return false;
  const std::size_t number = stem + node.size();
  const std::size_t end = name.size() - part_suffix.size();
  return end > number && digits_at(name, number, end - number);
}

// The temporary file of an interrupted write of one of the run's files (`is_name`).
bool is_temporary_of(const std::string& name, bool (*is_name)(const std::string&)) {
  const auto marker = name.find(temporary_marker);
  return marker != std::string::npos && is_name(name.substr(0, marker));
}

// The regular files of `directory` whose names pass `keep`, sorted.
template <class Test>
std::vector<std::string> names_in(const std::string& directory, Test keep) {
  std::vector<std::string> names;
  std::error_code error;
  for (std::filesystem::directory_iterator it(directory, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (keep(name) && it->is_regular_file(error))
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Removes `directory`/`name` for each name; returns the paths removed.
void remove_all(const std::string& directory, const std::vector<std::string>& names,
                std::vector<std::string>& removed) {
  for (const auto& name : names) {
    const auto path = (std::filesystem::path(directory) / name).string();
    std::error_code ignored;
    if (std::filesystem::remove(path, ignored))
      removed.push_back(path);
  }
}

} // namespace

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash) {
  for (const char byte : bytes) {
    hash ^= static_cast<unsigned char>(byte);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::uint64_t structure::fingerprint() const {
  std::string text;
  for (const auto& line : describe())
    text += line + '\n';
  return fnv1a64(text);
}

std::vector<std::string> structure::describe() const {
  return {"model: " + model,
          "train.algorithm: " + algorithm,
          "train.workers: " + std::to_string(workers),
          "training samples: " + std::to_string(training_samples),
          "train.batch-size: " + std::to_string(batch_size),
          "train.seed: " + std::to_string(seed)};
}

std::vector<std::string> differences(const structure& saved, const structure& now) {
  std::vector<std::string> out;
  auto differ = [&out](const std::string& what, const std::string& then, const std::string& here) {
    if (then != here)
      out.push_back(what + ": the checkpoint has " + then + ", this run " + here);
  };
  differ("model (from [model] and the data's shape)", saved.model, now.model);
  differ("train.algorithm", saved.algorithm, now.algorithm);
  differ("train.workers", std::to_string(saved.workers), std::to_string(now.workers));
  differ("training samples (the data, less data.validation-fraction's share)",
         std::to_string(saved.training_samples), std::to_string(now.training_samples));
  differ("train.batch-size", std::to_string(saved.batch_size), std::to_string(now.batch_size));
  differ("train.seed", std::to_string(saved.seed), std::to_string(now.seed));
  return out;
}

checkpoint_error::checkpoint_error(const std::string& file, const std::string& problem, kind what)
    : std::runtime_error(file + ": " + problem), file_(file), problem_(problem), kind_(what) {}

std::string encode(header head, std::string_view payload) {
  head.payload_bytes = payload.size();
  head.payload_hash = fnv1a64(payload);
  std::ostringstream header_stream(std::ios::binary);
  {
    cereal::BinaryOutputArchive archive(header_stream);
    archive(head);
  }
  const std::string header_bytes = header_stream.str();
  std::string out;
  out.reserve(magic.size() + header_bytes.size() + 16 + payload.size());
  out.append(magic);
  put_u64(out, header_bytes.size());
  out.append(header_bytes);
  put_u64(out, fnv1a64(header_bytes));
  out.append(payload);
  return out;
}

namespace {

// The header of the checkpoint whose first bytes are `bytes` (the whole file, or at least its
// magic, header and header checksum), and where its payload begins. Throws checkpoint_error as
// decode() does for everything before the payload.
std::pair<loaded, std::size_t> decode_header(std::string_view bytes, const std::string& file) {
  if (bytes.size() < magic.size() || bytes.substr(0, magic.size()) != magic)
    throw checkpoint_error(file, "not a Herd checkpoint (the file does not begin with \"" +
                                     std::string(magic) + "\")");
  std::size_t at = magic.size();
  if (bytes.size() < at + 8)
    throw checkpoint_error(file, "header: truncated (" + std::to_string(bytes.size()) +
                                     " bytes, too short for a header)");
  const std::uint64_t header_size = get_u64(bytes.substr(at, 8));
  at += 8;
  if (header_size > max_header_bytes)
    throw checkpoint_error(file, "header: corrupt (it claims " + std::to_string(header_size) +
                                     " bytes; a header holds at most " +
                                     std::to_string(max_header_bytes) + ")");
  if (bytes.size() < at + header_size + 8)
    throw checkpoint_error(file, "header: truncated or corrupt (it claims " +
                                     std::to_string(header_size) + " bytes, the file has " +
                                     std::to_string(bytes.size()) + " in all)");
  const std::string_view header_bytes = bytes.substr(at, header_size);
  at += header_size;
  const std::uint64_t header_hash = get_u64(bytes.substr(at, 8));
  at += 8;
  if (fnv1a64(header_bytes) != header_hash)
    throw checkpoint_error(file, "header: checksum mismatch (the header was changed or damaged)");
  loaded out;
  try {
    std::istringstream stream(std::string(header_bytes), std::ios::binary);
    bounded_input_archive archive(stream, header_bytes.size());
    archive(out.head);
  } catch (const std::exception& failure) {
    throw checkpoint_error(file, std::string("header: cannot be read (") + failure.what() + ")");
  }
  if (out.head.version < oldest_read_version || out.head.version > format_version)
    throw checkpoint_error(
        file, "header: format version " + std::to_string(out.head.version) + " (written by Herd " +
                  out.head.herd_version + "); this Herd reads versions " +
                  std::to_string(oldest_read_version) + " to " + std::to_string(format_version));
  return {std::move(out), at};
}

// Refuses a file whose size is not the one its header gives, naming both.
void check_payload_size(std::uint64_t payload_size, const header& head, const std::string& file) {
  if (payload_size != head.payload_bytes)
    throw checkpoint_error(
        file, std::string(payload_size < head.payload_bytes ? "truncated" : "too long") +
                  ": the header says " + std::to_string(head.payload_bytes) +
                  " payload bytes, the file holds " + std::to_string(payload_size));
}

} // namespace

loaded decode(std::string_view bytes, const std::string& file) {
  auto [out, at] = decode_header(bytes, file);
  const std::uint64_t payload_size = bytes.size() - at;
  check_payload_size(payload_size, out.head, file);
  const auto payload = bytes.substr(at);
  const std::uint64_t hash = fnv1a64(payload);
  if (hash != out.head.payload_hash)
    throw checkpoint_error(file, "checksum mismatch: the payload hashes to " + hash_text(hash) +
                                     ", the header says " + hash_text(out.head.payload_hash) +
                                     " (the file is damaged)");
  if (out.head.shape.fingerprint() != out.head.fingerprint)
    throw checkpoint_error(file, "header: the structure's fingerprint does not match it");
  out.payload.assign(payload);
  return out;
}

bool is_checkpoint_file(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || !S_ISREG(status.st_mode))
    return false;
  std::ifstream in(path, std::ios::binary);
  std::string start(magic.size(), '\0');
  return in.read(start.data(), static_cast<std::streamsize>(start.size())) && start == magic;
}

loaded read_file(const std::string& path) {
  try {
    // The header first: a file that is no checkpoint, or whose size is not the one its header
    // gives (a sparse file of gigabytes beside the real ones), is refused before its bytes are.
    // Opened without blocking and only a regular file: a FIFO would wait for a writer forever, a
    // device such as /dev/zero never ends.
    kernels::regular_file file(path);
    const std::uint64_t prefix_bytes = magic.size() + 8 + max_header_bytes + 8;
    std::string bytes(static_cast<std::size_t>(prefix_bytes), '\0');
    bytes.resize(file.read(bytes.data(), bytes.size()));
    if (bytes.size() < prefix_bytes)
      return decode(bytes, path);
    const auto [front, at] = decode_header(bytes, path);
    // The size it had when opened; at least what was read, where it grew since.
    const std::uint64_t size = std::max(file.size(), std::uint64_t{bytes.size()});
    check_payload_size(size - at, front.head, path);
    bytes.reserve(static_cast<std::size_t>(size));
    file.append_rest(bytes, size - bytes.size());
    return decode(bytes, path);
  } catch (const checkpoint_error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw checkpoint_error(path, "cannot be read: not enough memory for it");
  } catch (const std::runtime_error& unread) {
    throw checkpoint_error(path, std::string("cannot be read: ") + unread.what());
  }
}

void write_atomically(const std::string& directory, const std::string& name,
                      std::string_view bytes) {
  std::error_code made;
  std::filesystem::create_directories(directory, made);
  if (made)
    throw std::runtime_error("cannot make the directory " + directory + ": " + made.message());
  const std::string target = (std::filesystem::path(directory) / name).string();
  std::string temporary = target + std::string(temporary_marker) + "XXXXXX";
  file_descriptor file{::mkstemp(temporary.data())};
  if (file.fd < 0)
    throw std::runtime_error("cannot create a file in " + directory + ": " + system_reason(errno));
  // Names the file the caller asked for (the temporary one is gone when this is read) and, when
  // the device is full, how much would not fit.
  auto fail = [&](const std::string& what) {
    const int error = errno;
    std::string reason = system_reason(error);
    ::unlink(temporary.c_str());
    const auto megabytes = [](double size) {
      char text[32];
      std::snprintf(text, sizeof text, size < 1e5 ? "%.3f MB" : "%.1f MB", size / 1e6);
      return std::string(text);
    };
    struct statvfs device {};
    if (error == ENOSPC && ::statvfs(directory.c_str(), &device) == 0)
      reason +=
          " (" + megabytes(static_cast<double>(bytes.size())) + " to write, " +
          megabytes(static_cast<double>(device.f_bavail) * static_cast<double>(device.f_frsize)) +
          " free there)";
    else if (error == EDQUOT)
      reason += " (" + megabytes(static_cast<double>(bytes.size())) +
                " to write: the user's disk quota is spent)";
    throw std::runtime_error(what + " " + target + ": " + reason);
  };
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(file.fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0)
      errno = ENOSPC; // write() wrote nothing and set no error: the device took no more
    if (n <= 0)
      fail("cannot write");
    written += static_cast<std::size_t>(n);
  }
  if (::fchmod(file.fd, 0644) != 0 || ::fsync(file.fd) != 0)
    fail("cannot sync");
  if (::close(file.fd) != 0) {
    file.fd = -1;
    fail("cannot close");
  }
  file.fd = -1;
  if (::rename(temporary.c_str(), target.c_str()) != 0)
    fail("cannot rename a temporary file to");
  sync_directory(directory);
}

std::string directory_problem(const std::string& directory) {
  std::error_code made;
  std::filesystem::create_directories(directory, made);
  if (made)
    return made.message();
  return ::access(directory.c_str(), W_OK) == 0 ? std::string() : "not writable";
}

namespace {

// The milliseconds a checkpoint's name counts ("herd-001764612345678-..."), if it has them.
std::optional<std::uint64_t> named_milliseconds(const std::string& name) {
  constexpr std::size_t digits = 15;
  if (name.size() < prefix.size() + digits || name.compare(0, prefix.size(), prefix) != 0)
    return std::nullopt;
  std::uint64_t ms = 0;
  for (std::size_t i = prefix.size(); i < prefix.size() + digits; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i])))
      return std::nullopt;
    ms = ms * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  return ms;
}

// How many of a directory's checkpoints `existing` (list()'s, oldest first) are newer than
// `resumed`: those after it, where it is one of them (a link to one too); else, for a copy under
// another name, those named after the time its header says it was written. 0 when that cannot
// be told (a damaged file: the resume itself says so).
std::size_t checkpoints_newer_than(const std::vector<std::string>& existing,
                                   const std::filesystem::path& resumed) {
  for (std::size_t i = existing.size(); i-- > 0;) {
    std::error_code unknown;
    if (std::filesystem::equivalent(existing[i], resumed, unknown))
      return existing.size() - 1 - i;
  }
  std::uint64_t written = 0;
  try {
    written = read_file(resumed.string()).head.written_unix_ms;
  } catch (const checkpoint_error&) {
    return 0;
  }
  return static_cast<std::size_t>(
      std::count_if(existing.begin(), existing.end(), [written](const std::string& file) {
        const auto named = named_milliseconds(std::filesystem::path(file).filename().string());
        return named && *named > written;
      }));
}

} // namespace

std::string run_directory_problem(const std::string& directory, const std::string& resume_path,
                                  const std::string& resume_option) {
  if (const auto problem = directory_problem(directory); !problem.empty())
    return "checkpoint.dir = " + directory + ": cannot write checkpoints there (" + problem + ")";
  if (auto held = directory_lock::holder_problem(directory); !held.empty())
    return held; // resuming from there too: that run is not over
  return existing_checkpoints_problem(directory, resume_path, resume_option);
}

std::string existing_checkpoints_problem(const std::string& directory,
                                         const std::string& resume_path,
                                         const std::string& resume_option) {
  const auto existing = list(directory);
  if (existing.empty())
    return {};
  if (!resume_path.empty()) {
    std::filesystem::path resumed;
    try {
      resumed = resolve(resume_path);
    } catch (const std::exception&) {
      return {}; // the resume itself says what is wrong with its path
    }
    std::error_code unknown;
    const auto resumed_directory = resumed.parent_path();
    if (std::filesystem::equivalent(resumed_directory.empty() ? "." : resumed_directory, directory,
                                    unknown)) {
      // Going back to an earlier checkpoint: the later ones are another branch of the run, and
      // keeping this run's newest would prune them first.
      const auto newer = checkpoints_newer_than(existing, resumed);
      if (newer == 0)
        return {};
      return "checkpoint.dir = " + directory + " holds " + std::to_string(newer) + " checkpoint" +
             (newer == 1 ? "" : "s") + " newer than " + resumed.string() +
             " (the newest: " + existing.back() +
             "), which this run would delete as it keeps its own: to go on from the earlier " +
             "one, move the newer ones away (across processes with the nodes' parts of them), " +
             "or, in one process, give this run another checkpoint.dir (\"\" for none)";
    }
  }
  const std::string held = "checkpoint.dir = " + directory + " holds " +
                           std::to_string(existing.size()) + " checkpoint" +
                           (existing.size() == 1 ? "" : "s") +
                           " of another run (the newest: " + existing.back() +
                           "), which this run would delete as it keeps its own";
  if (resume_path.empty())
    return held + ": resume that run with " + resume_option + " " + directory +
           ", or give this one another checkpoint.dir";
  return held + ": this run resumes from " + resume_path +
         "; give it an empty checkpoint.dir, or that checkpoint's own directory";
}

std::uint64_t unix_milliseconds() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::string file_name(std::uint64_t unix_ms, std::uint64_t rounds) {
  char name[64];
  std::snprintf(name, sizeof name, "herd-%015llu-%012llu.ckpt",
                static_cast<unsigned long long>(unix_ms), static_cast<unsigned long long>(rounds));
  return name;
}

std::string next_file_name(const std::string& directory, std::uint64_t rounds,
                           const std::string& after) {
  std::uint64_t ms = unix_milliseconds();
  if (const auto at = named_milliseconds(after))
    ms = std::max(ms, *at + 1);
  const auto names = names_in(directory, is_checkpoint_name);
  for (auto newest = names.rbegin(); newest != names.rend(); ++newest)
    if (const auto at = named_milliseconds(*newest)) {
      ms = std::max(ms, *at + 1);
      break;
    }
  return file_name(ms, rounds);
}

std::string stem_of(const std::string& file_name) {
  return ends_with(file_name, suffix) ? file_name.substr(0, file_name.size() - suffix.size())
                                      : file_name;
}

std::string part_name(const std::string& stem, int node) {
  return stem + ".node-" + std::to_string(node) + std::string(part_suffix);
}

std::vector<std::string> list_parts(const std::string& directory) {
  return names_in(directory, is_part_name);
}

std::vector<std::string> prune_parts(const std::string& directory, const std::string& keep_from,
                                     const std::string& writing) {
  std::vector<std::string> removed;
  std::vector<std::string> older;
  // Parts are named after their checkpoint's stem, and stems sort in the order they were taken.
  if (!keep_from.empty())
    for (const auto& name : list_parts(directory))
      if (name.compare(0, keep_from.size(), keep_from) < 0)
        older.push_back(name);
  remove_all(directory, older, removed);
  remove_all(directory,
             names_in(directory,
                      [&writing](const std::string& name) {
                        return is_temporary_of(name, is_part_name) &&
                               name.compare(0, writing.size(), writing) < 0;
                      }),
             removed);
  return removed;
}

std::vector<std::string> list(const std::string& directory) {
  std::vector<std::string> paths;
  for (const auto& name : names_in(directory, is_checkpoint_name))
    paths.push_back((std::filesystem::path(directory) / name).string());
  return paths;
}

std::vector<std::string> prune(const std::string& directory, std::size_t keep) {
  std::vector<std::string> removed;
  const auto files = list(directory);
  for (std::size_t i = 0; i + keep < files.size(); ++i) {
    std::error_code ignored;
    if (std::filesystem::remove(files[i], ignored))
      removed.push_back(files[i]);
  }
  // Temporary files of writes that were interrupted (a process killed mid-write); only those of
  // checkpoints: a node writing its part into a directory it shares with the coordinator (one
  // machine) keeps its own.
  remove_all(
      directory,
      names_in(directory,
               [](const std::string& name) { return is_temporary_of(name, is_checkpoint_name); }),
      removed);
  return removed;
}

std::string resolve(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error || !std::filesystem::exists(status))
    throw checkpoint_error(path, "no such file or directory");
  if (!std::filesystem::is_directory(status))
    return path;
  const auto files = list(path);
  if (files.empty())
    throw checkpoint_error(path, "the directory holds no checkpoint named as a run names them "
                                 "(herd-<time>-<round>.ckpt); name a copy under another name as "
                                 "a file");
  return files.back();
}

} // namespace herd::checkpoint
