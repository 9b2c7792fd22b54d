// The run summary and the JSON report; see report.hpp.
#include "cli/report.hpp"

#include "cli/json_text.hpp"
#include "cli/stragglers.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace herd::cli {

namespace {

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

std::uint64_t late_steps(const actors::run_summary& s) {
  std::uint64_t late = 0;
  for (const auto& w : s.per_worker)
    late += w.late_steps;
  return late;
}

double avoided_fraction(const actors::waiting_summary& w) {
  return w.barrier_seconds > 0.0 ? 1.0 - w.waited_seconds / w.barrier_seconds : 0.0;
}

// The summary lists this many of the workers' losses and joins, a line each.
constexpr std::size_t shown_events = 8;

// "31.2 s: worker 2 (node vm-c) lost: it left the job", "40.1 s: worker 2 joined (node vm-d)".
// One node's workers lost (or joined) together, for one line: a node of 8 workers lost printed
// its reason 8 times.
struct event_group {
  actors::worker_event first;
  std::vector<int> workers;
};

std::vector<event_group> grouped(const std::vector<actors::worker_event>& events) {
  std::vector<event_group> groups;
  for (const auto& e : events) {
    if (!groups.empty()) {
      const auto& last = groups.back().first;
      if (!e.node.empty() && e.node == last.node && e.joined == last.joined && e.why == last.why &&
          e.seconds - last.seconds < 1.0) {
        groups.back().workers.push_back(e.worker);
        continue;
      }
    }
    groups.push_back({e, {e.worker}});
  }
  return groups;
}

std::string event_line(const event_group& group) {
  const auto& e = group.first;
  const std::string node = e.node.empty() ? std::string() : " (node " + e.node + ")";
  std::string workers = group.workers.size() == 1 ? "worker " : "workers ";
  for (std::size_t i = 0; i < group.workers.size(); ++i)
    workers += (i == 0 ? "" : ", ") + std::to_string(group.workers[i]);
  return fixed(e.seconds, 1) + " s: " + workers +
         (e.joined ? " joined" + node : node + " lost: " + e.why);
}

std::string waiting_line(const actors::waiting_summary& w) {
  std::string text = fixed(w.waited_seconds, 2) +
                     " s idle, all workers together; a synchronous barrier would have imposed " +
                     fixed(w.barrier_seconds, 2) + " s";
  // Under sync, or without imbalance, the real waiting (message latency, reductions) can exceed
  // a barrier's: a percentage "avoided" would then be noise.
  if (w.barrier_seconds > 0.0 && w.waited_seconds < w.barrier_seconds)
    text += " (" + fixed(100.0 * avoided_fraction(w), 0) + "% avoided)";
  else if (w.barrier_seconds > 0.0)
    text += "\n(above a barrier's: reductions and messages add to it)";
  return text;
}

// Whether `word` is a unit of one or two letters, maybe with punctuation after it ("ms);").
bool is_unit(const std::string& word) {
  std::size_t letters = 0;
  while (letters < word.size() && std::isalpha(static_cast<unsigned char>(word[letters])))
    ++letters;
  return letters >= 1 && letters <= 2 &&
         word.find_first_not_of(")];,.:", letters) == std::string::npos;
}

// The words of `line`, a number and its unit ("8.71 s", "2.14 GB", "1.00 ms);") kept together as
// one.
std::vector<std::string> unbreakable_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string word; in >> word;) {
    const bool unit = is_unit(word);
    if (unit && !words.empty() && std::isdigit(static_cast<unsigned char>(words.back().back())))
      words.back() += ' ' + word;
    else
      words.push_back(word);
  }
  return words;
}

} // namespace

std::string fixed(double value, int digits) {
  if (std::isnan(value)) // not "-nan": a NaN's sign says nothing
    return "nan";
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

std::string wrap_words(const std::string& text, std::size_t width, std::size_t indent) {
  std::string out;
  std::size_t column = 0;
  std::istringstream lines(text);
  std::string line;
  bool first_line = true;
  while (std::getline(lines, line)) {
    if (!first_line) {
      out += '\n' + std::string(indent, ' ');
      column = 0;
    }
    first_line = false;
    for (const auto& word : unbreakable_words(line)) {
      if (column > 0 && column + 1 + word.size() > width) {
        out += '\n' + std::string(indent, ' ');
        column = 0;
      } else if (column > 0) {
        out += ' ';
        ++column;
      }
      out += word;
      column += word.size();
    }
  }
  return out;
}

namespace {

nlohmann::json durations(const actors::duration_summary& d) {
  return {{"mean", d.mean}, {"median", d.median}, {"p90", d.p90}, {"max", d.max}, {"cv", d.cv}};
}

nlohmann::json histogram(const std::vector<actors::histogram_bar>& bars) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& bar : bars)
    out.push_back({{"lower_seconds", bar.lower_seconds},
                   {"upper_seconds", bar.upper_seconds},
                   {"count", bar.count}});
  return out;
}

std::string system_error_text() {
  return std::strerror(errno);
}

std::filesystem::path directory_of(const std::string& path) {
  const std::filesystem::path file(path);
  return file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
}

// The mode open(path, O_CREAT, 0666) would give a new file: a report is no more private than any
// other file the user writes (mkstemp's 0600 would make it so). The umask comes from /proc:
// umask() reads it only by changing it, for every thread.
mode_t new_file_mode() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0)
      return 0666 & ~static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
  return 0600; // no /proc: stay private
}

// A new, empty file beside `path` (".<name>.XXXXXX" in its directory), unique to this object;
// removed with it unless renamed.
class temporary_file {
public:
  explicit temporary_file(const std::string& beside)
      : name_((directory_of(beside) /
               ("." + std::filesystem::path(beside).filename().string() + ".XXXXXX"))
                  .string()) {
    fd_ = ::mkostemp(name_.data(), O_CLOEXEC);
    if (fd_ < 0) {
      const std::string reason = system_error_text();
      name_.clear();
      throw std::runtime_error("cannot create a file in " + directory_of(beside).string() + ": " +
                               reason);
    }
  }
  ~temporary_file() {
    if (fd_ >= 0)
      ::close(fd_);
    if (!name_.empty())
      ::unlink(name_.c_str());
  }
  temporary_file(const temporary_file&) = delete;
  temporary_file& operator=(const temporary_file&) = delete;

  const std::string& name() const { return name_; }

  /// All of `text`, on the disk (fsync) before the file is closed.
  void write_and_close(const std::string& text, mode_t mode) {
    if (::fchmod(fd_, mode) != 0)
      fail("cannot set the mode of");
    for (std::size_t written = 0; written < text.size();) {
      const ssize_t done = ::write(fd_, text.data() + written, text.size() - written);
      if (done < 0 && errno == EINTR)
        continue;
      if (done < 0)
        fail("cannot write");
      written += static_cast<std::size_t>(done);
    }
    if (::fsync(fd_) != 0)
      fail("cannot flush");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0)
      fail("cannot write");
  }

  /// Renames the file to `path` (replacing what was there); it is then no longer removed.
  void rename_to(const std::string& path) {
    if (std::rename(name_.c_str(), path.c_str()) != 0)
      throw std::runtime_error("cannot rename " + name_ + " to " + path + ": " +
                               system_error_text());
    name_.clear();
  }

private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(what + " " + name_ + ": " + system_error_text());
  }

  std::string name_;
  int fd_ = -1;
};

// The rename is in the directory: flushing it too means a crash after "report written" cannot
// lose the report. Best effort (some file systems refuse fsync on a directory).
void flush_directory(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  ::fsync(fd);
  ::close(fd);
}

} // namespace

// The summary's test accuracy when the run has no final one: why, and the last evaluation's.
std::string unmeasured_accuracy(const actors::run_summary& s) {
  // A step's loss that is not a number fails the run at once (a diverged run), and it is among
  // the recent steps' mean: the summary's facts say so, not its error's words.
  if (!std::isfinite(s.final_train_loss))
    return "none (the parameters are not numbers: the run diverged)";
  const std::string why = s.error.empty() ? "the final evaluation failed" : "the run failed";
  if (s.evaluations.empty())
    return "not measured (" + why + ")";
  const auto& last = s.evaluations.back();
  return "none at the end (" + why + "); the last evaluation: " + fixed(last.test_accuracy, 4) +
         " at round " + std::to_string(last.round);
}

void print_summary(std::ostream& out, const actors::run_summary& s) {
  constexpr std::size_t label_width = 20; // two spaces and the label's column
  auto line = [&out](const std::string& label, const std::string& value) {
    out << "  " << std::left << std::setw(label_width - 2) << label
        << wrap_words(value, summary_columns - label_width, label_width) << '\n';
  };
  out << "\nHerd run summary\n";
  line("algorithm", s.algorithm + " (" + std::to_string(s.workers) +
                        (s.workers == 1 ? " worker on " : " workers on ") + s.compute + ", " +
                        s.data_plane + " data plane, imbalance " + s.imbalance + ")");
  line("stopped by", std::string(actors::to_string(s.stop_reason)) + " after " +
                         fixed(s.epochs, 2) + " epochs" +
                         (s.error.empty() ? "" : " (" + s.error + ")"));
  if (!s.final_checkpoint_error.empty())
    line("final checkpoint", "NOT WRITTEN: " + s.final_checkpoint_error);
  line("wall time", fixed(s.wall_seconds, 1) + " s");
  line("rounds / steps", std::to_string(s.rounds) + " / " + std::to_string(s.steps) + " (" +
                             std::to_string(s.full_sync_rounds) + " full sync, " +
                             std::to_string(s.partial_rounds) + " partial)");
  if (s.algorithm == "preduce")
    line("isolation guard", std::to_string(s.isolation_interventions) + " group(s) built across " +
                                "disconnected workers");
  if (s.algorithm == "async")
    line("parameter server", std::to_string(s.server_updates) + " gradients applied; staleness " +
                                 fixed(s.server_staleness_mean, 2) + " versions on average, " +
                                 std::to_string(s.server_staleness_max) + " at most");
  if (s.aborted_rounds > 0)
    line("aborted rounds", std::to_string(s.aborted_rounds) +
                               " (their reduction failed: a node or worker lost, or a peer "
                               "unreachable; their members skipped them)");
  if (s.rounds_in_backward > 0)
    line("gradient buckets", std::to_string(s.rounds_in_backward) + " of " +
                                 std::to_string(s.rounds) +
                                 " rounds began while a member's backward still ran");
  if (s.workers_joined > 0)
    line("workers joined", std::to_string(s.workers_joined) +
                               " (a node took over lost workers' slots during the run)");
  const auto events = grouped(s.worker_events);
  for (std::size_t i = 0; i < std::min(events.size(), shown_events); ++i)
    line(i == 0 ? "worker events" : "", event_line(events[i]));
  if (events.size() > shown_events)
    line("", "and " + std::to_string(events.size() - shown_events) +
                 " more (the report's worker_events lists them all)");
  if (s.stale_contributions + s.empty_contributions > 0 || late_steps(s) > 0)
    line("contributions", std::to_string(s.fresh_contributions) + " fresh, " +
                              std::to_string(s.stale_contributions) + " stale, " +
                              std::to_string(s.empty_contributions) + " empty; " +
                              std::to_string(late_steps(s)) + " late steps");
  for (const auto& text : straggler_lines(s))
    line("straggler", text);
  line("waiting", waiting_line(s.waiting));
  // Workers compute more samples than are applied where late gradients are dropped.
  std::uint64_t computed = 0;
  for (const auto& w : s.per_worker)
    computed += w.samples;
  line("samples", std::to_string(s.samples) + " applied (" + fixed(s.samples_per_second, 0) +
                      " samples/s)" +
                      (computed > s.samples ? "; " + std::to_string(computed) + " computed" : ""));
  // Stopped at the target: the run keeps the parameters that reached it; the rounds then in
  // flight moved the workers' on, which is shown too where it differs. With train.patience it
  // keeps its best evaluation's, and shows the workers' last where they differ.
  // With a validation set, the evaluations (the target, the stop) measured it, and the test set
  // was measured once, on the parameters the run kept.
  const bool validating = s.validation_samples > 0;
  const auto& chosen = validating ? s.final_validation_accuracy : s.final_test_accuracy;
  const bool both = chosen && s.after_stop_test_accuracy &&
                    fixed(*s.after_stop_test_accuracy, 4) != fixed(*chosen, 4);
  const auto measured = [](const std::optional<double>& accuracy,
                           const std::optional<double>& loss) {
    return fixed(*accuracy, 4) + " (loss " + fixed(loss.value_or(0.0), 4) + ")";
  };
  const bool at_target = s.stop_reason == actors::stop_cause::target_accuracy;
  const std::string kept = !both       ? ""
                           : at_target ? ", those that reached the target"
                                       : ", the best evaluation's";
  if (validating)
    line("validation acc", chosen ? measured(chosen, s.final_validation_loss) + " on " +
                                        std::to_string(s.validation_samples) + " held-out samples" +
                                        kept
                                  : unmeasured_accuracy(s));
  line("test accuracy",
       s.final_test_accuracy ? measured(s.final_test_accuracy, s.final_test_loss) +
                                   (validating ? ", measured once, at the end" : kept)
       : validating ? "not measured (" + (s.error.empty() ? "its evaluation failed" : s.error) + ")"
                    : unmeasured_accuracy(s));
  if (both && at_target)
    line("after the stop",
         fixed(*s.after_stop_test_accuracy, 4) + " (the workers' after the rounds then in flight)");
  else if (both)
    line("last evaluation", fixed(*s.after_stop_test_accuracy, 4) + " (the workers' last)");
  line("train loss", fixed(s.final_train_loss, 4) + " (mean of recent steps)");
  line("data plane",
       fixed(s.reduce_seconds, 2) + " s reducing, " +
           fixed(static_cast<double>(s.reduce_bytes) / 1e9, 2) + " GB" +
           (s.reduce_seconds > 0.0
                ? " (" + fixed(static_cast<double>(s.reduce_bytes) / 1e9 / s.reduce_seconds, 1) +
                      " GB/s)"
                : ""));
  if (s.target_accuracy > 0.0)
    line("time to " + fixed(s.target_accuracy, 3),
         s.time_to_target_seconds ? fixed(*s.time_to_target_seconds, 1) + " s" : "not reached");
  out << "\n  worker  steps   late samples  step mean  step p90  waited  wait/step  barrier\n";
  // Each column after the first is at least one space and a right-aligned value: a value wider
  // than its column (a long run's counts) pushes the line on, never into its neighbour.
  const auto column = [&out](int width, const auto& value) {
    out << ' ' << std::setw(width - 1) << value;
  };
  for (const auto& w : s.per_worker) {
    const std::string worker = std::to_string(w.worker) + (w.live ? "" : "*");
    out << "  " << std::right << std::setw(6) << worker;
    column(7, w.steps);
    column(7, w.late_steps);
    column(8, w.samples);
    column(11, fixed(w.step_seconds.mean * 1e3, 2) + "ms");
    column(10, fixed(w.step_seconds.p90 * 1e3, 2) + "ms");
    column(8, fixed(w.waited_compared_seconds, 2) + "s");
    column(11, fixed(w.wait_seconds_per_step.mean * 1e3, 2) + "ms");
    column(9, fixed(w.barrier_wait_seconds, 2) + "s");
    out << '\n';
  }
  out << "  (waited: idle between steps; barrier: what a synchronous barrier would have\n"
         "   imposed; both over the "
      << s.waiting.steps_compared << " step numbers every worker finished)\n";
  if (!std::all_of(s.per_worker.begin(), s.per_worker.end(), [](const auto& w) { return w.live; }))
    out << "  (*: a worker lost during the run)\n";
  out << "\n  worker   step median    step p90     step max   variation (cv)\n";
  for (const auto& w : s.per_worker) {
    out << "  " << std::right << std::setw(6) << w.worker;
    column(14, fixed(w.step_seconds.median * 1e3, 2) + "ms");
    column(12, fixed(w.step_seconds.p90 * 1e3, 2) + "ms");
    column(13, fixed(w.step_seconds.max * 1e3, 2) + "ms");
    column(17, fixed(w.step_seconds.cv, 2));
    out << '\n';
  }
  out << "  (cv: the step times' standard deviation over their mean; steps of\n"
         "   variable-length inputs vary by themselves, injected delays add to it)\n";
}

std::string report_json(const actors::run_summary& s, const config::run_config& config,
                        const config::key_scope& scope) {
  nlohmann::json report;
  report["algorithm"] = s.algorithm;
  report["workers"] = s.workers;
  report["data_plane"] = s.data_plane;
  report["backend"] = s.data_plane; // the field's first name, kept for readers of old reports
  report["compute"] = s.compute;
  report["imbalance"] = s.imbalance;
  report["stop_reason"] = actors::to_string(s.stop_reason);
  report["error"] = s.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.error);
  report["final_checkpoint"] =
      s.final_checkpoint.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.final_checkpoint);
  report["final_checkpoint_error"] = s.final_checkpoint_error.empty()
                                         ? nlohmann::json(nullptr)
                                         : nlohmann::json(s.final_checkpoint_error);
  report["steps"] = s.steps;
  report["rounds"] = s.rounds;
  report["rounds_full_sync"] = s.full_sync_rounds;
  report["rounds_partial"] = s.partial_rounds;
  report["isolation_interventions"] = s.isolation_interventions;
  auto stragglers = nlohmann::json::array();
  for (const auto& found : stragglers_of(s))
    stragglers.push_back({{"worker", found.worker->worker},
                          {"step_mean_ratio", found.ratio()},
                          {"late_steps", found.worker->late_steps}});
  report["straggler"] = stragglers.empty() ? nlohmann::json(nullptr) : stragglers.front();
  report["stragglers"] = std::move(stragglers);
  report["parameter_server"] = {{"updates", s.server_updates},
                                {"staleness_mean", s.server_staleness_mean},
                                {"staleness_max", s.server_staleness_max}};
  report["rounds_aborted"] = s.aborted_rounds;
  report["rounds_in_backward"] = s.rounds_in_backward;
  report["workers_joined"] = s.workers_joined;
  report["contributions"] = {{"fresh", s.fresh_contributions},
                             {"stale", s.stale_contributions},
                             {"none", s.empty_contributions}};
  report["late_steps"] = late_steps(s);
  report["waiting"] = {{"steps_compared", s.waiting.steps_compared},
                       {"waited_seconds", s.waiting.waited_seconds},
                       {"barrier_seconds", s.waiting.barrier_seconds},
                       {"avoided_seconds", s.waiting.barrier_seconds - s.waiting.waited_seconds},
                       {"avoided_fraction", avoided_fraction(s.waiting)}};
  report["samples"] = s.samples;
  report["epochs"] = s.epochs;
  report["wall_seconds"] = s.wall_seconds;
  report["target_accuracy"] =
      s.target_accuracy > 0.0 ? nlohmann::json(s.target_accuracy) : nlohmann::json(nullptr);
  report["time_to_target_seconds"] = optional_number(s.time_to_target_seconds);
  report["final_test_accuracy"] = optional_number(s.final_test_accuracy);
  report["final_test_loss"] = optional_number(s.final_test_loss);
  report["evaluated_on"] = s.validation_samples > 0 ? "validation" : "test";
  report["validation_samples"] = s.validation_samples;
  report["final_validation_accuracy"] = optional_number(s.final_validation_accuracy);
  report["final_validation_loss"] = optional_number(s.final_validation_loss);
  report["after_stop_test_accuracy"] = optional_number(s.after_stop_test_accuracy);
  report["final_train_loss"] = s.final_train_loss;
  report["samples_per_second"] = s.samples_per_second;
  report["reduce_seconds"] = s.reduce_seconds;
  report["reduce_bytes"] = s.reduce_bytes;
  report["control_plane"] = {{"coordinator_seconds", s.control.coordinator_seconds},
                             {"coordinator_messages", s.control.coordinator_messages},
                             {"aggregator_seconds", s.control.aggregator_seconds},
                             {"aggregator_messages", s.control.aggregator_messages}};
  auto& workers = report["per_worker"] = nlohmann::json::array();
  for (const auto& w : s.per_worker) {
    workers.push_back({{"worker", w.worker},
                       {"node", w.node.empty() ? nlohmann::json(nullptr) : nlohmann::json(w.node)},
                       {"live", w.live},
                       {"steps", w.steps},
                       {"late_steps", w.late_steps},
                       {"samples", w.samples},
                       {"compute_seconds", w.compute_seconds},
                       {"wait_seconds", w.wait_seconds},
                       {"waited_compared_seconds", w.waited_compared_seconds},
                       {"barrier_wait_seconds", w.barrier_wait_seconds},
                       {"step_seconds", durations(w.step_seconds)},
                       {"step_histogram", histogram(w.step_histogram)},
                       {"wait_seconds_per_step", durations(w.wait_seconds_per_step)}});
  }
  auto& events = report["worker_events"] = nlohmann::json::array();
  for (const auto& e : s.worker_events)
    events.push_back({{"seconds", e.seconds},
                      {"worker", e.worker},
                      {"node", e.node.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.node)},
                      {"event", e.joined ? "joined" : "lost"},
                      {"why", e.why}});
  auto& evaluations = report["evaluations"] = nlohmann::json::array();
  for (const auto& e : s.evaluations) {
    evaluations.push_back({{"round", e.round},
                           {"elapsed_seconds", e.elapsed_seconds},
                           {"epoch", e.epoch},
                           {"test_accuracy", e.test_accuracy},
                           {"test_loss", e.test_loss}});
  }
  // The settings that reproduce the run, less the cluster's secrets: a report gets passed around.
  report["config"] = config::to_ini(config::without_secrets(config), scope);
  return json_text(report);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  temporary_file temporary(path);
  // A file replaced keeps its mode, as it would if written in place.
  struct stat existing {};
  const bool replacing = ::stat(path.c_str(), &existing) == 0 && S_ISREG(existing.st_mode);
  temporary.write_and_close(text, replacing ? existing.st_mode & 07777 : new_file_mode());
  temporary.rename_to(path);
  flush_directory(directory_of(path));
}

// Two names of one file: by device and inode when both exist (hard and symbolic links, "./a"
// and "a"), else by their canonical paths.
bool same_file(const std::string& first, const std::string& second) {
  struct stat first_status {};
  struct stat second_status {};
  if (::stat(first.c_str(), &first_status) == 0 && ::stat(second.c_str(), &second_status) == 0)
    return first_status.st_dev == second_status.st_dev &&
           first_status.st_ino == second_status.st_ino;
  std::error_code first_error;
  std::error_code second_error;
  const auto first_path = std::filesystem::weakly_canonical(first, first_error);
  const auto second_path = std::filesystem::weakly_canonical(second, second_error);
  return !first_error && !second_error && first_path == second_path;
}

void check_writable(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (std::filesystem::is_directory(status))
    throw std::runtime_error(path + ": is a directory; name a file");
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw std::runtime_error(path + ": is not a regular file (a device, a pipe or a socket); " +
                             "name a file");
  if (!std::filesystem::path(path).has_filename())
    throw std::runtime_error(path + ": names a directory; name a file");
  const auto directory = directory_of(path);
  if (!std::filesystem::is_directory(directory, error))
    throw std::runtime_error(path + ": directory " + directory.string() + " does not exist");
  try {
    temporary_file probe(path); // removed at once
  } catch (const std::runtime_error& failure) {
    throw std::runtime_error(path + ": " + failure.what());
  }
}

std::string plot_colour(std::size_t index) {
  static const char* const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#17becf", "#000000"};
  return std::string("rgb '") + colours[index % std::size(colours)] + "'";
}

bool run_gnuplot(const std::string& dir, const std::string& script) {
  const std::filesystem::path where(dir);
  write_file_atomically((where / "plot.gp").string(), script);
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) {
    std::cout << "gnuplot is not installed (apt-get install gnuplot-nox): " << (where / "plot.gp")
              << " is ready to plot\n";
    return false;
  }
  const std::string command = "cd '" + dir + "' && gnuplot plot.gp > gnuplot.log 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::cout << "gnuplot failed; see " << (where / "gnuplot.log") << '\n';
    return false;
  }
  return true;
}

} // namespace herd::cli
