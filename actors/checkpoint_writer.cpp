// Writing checkpoints off the coordinator's thread; see checkpoint_writer.hpp.
#include "actors/checkpoint_writer.hpp"

#include "herd/config.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "checkpoint/format.hpp"

namespace herd::actors {

namespace {

using clock_type = std::chrono::steady_clock;
using queued_checkpoint = std::pair<std::shared_ptr<const run_checkpoint>, checkpoint_report>;

checkpoint_report write_now(const checkpoint_options& options, const run_checkpoint& state,
                            checkpoint_report report);

} // namespace

struct checkpoint_writer::shared_state {
  explicit shared_state(checkpoint_options given) : options(std::move(given)) {}

  // Writes what is queued until closing; runs on the writer's thread.
  void loop();
  bool idle() const { return queue.empty() && !busy; }

  const checkpoint_options options;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<queued_checkpoint> queue;
  bool busy = false;
  bool closing = false;
  bool abandoned = false; // its writer gave up on it: no callback, nothing more written
  std::vector<checkpoint_report> reports;
};

std::shared_ptr<checkpoint_options> checkpoint_options_for(const config::run_config& config,
                                                           const models::model& model,
                                                           const models::dataset& training) {
  auto checkpoints = std::make_shared<checkpoint_options>();
  const auto& settings = config.checkpoint;
  checkpoints->directory = settings.dir;
  checkpoints->every_seconds = settings.every_seconds;
  checkpoints->every_rounds = static_cast<std::uint64_t>(settings.every_rounds);
  checkpoints->keep = static_cast<std::size_t>(settings.keep);
  checkpoints->shape = structure_of(config, model, training.size());
  checkpoints->settings = config::to_ini(config::without_secrets(config));
  checkpoints->inputs = inputs_of(training);
  checkpoints->herd_version = herd_version();
  return checkpoints;
}

std::shared_ptr<checkpoint::directory_lock>
lock_checkpoint_dir(const config::run_config& config, const std::optional<std::string>& resume_path,
                    const std::string& resume_option) {
  std::shared_ptr<checkpoint::directory_lock> lock;
  try {
    lock = std::make_shared<checkpoint::directory_lock>(config.checkpoint.dir);
  } catch (const std::runtime_error& held) {
    throw config::invalid_config({config::config_error{"checkpoint.dir", held.what()}});
  }
  if (!resume_path)
    return lock;
  // Released as the refusal leaves: the run that wrote them may go on there.
  if (auto problem = checkpoint::existing_checkpoints_problem(config.checkpoint.dir, *resume_path,
                                                              resume_option);
      !problem.empty())
    throw config::invalid_config({config::config_error{"checkpoint.dir", std::move(problem)}});
  return lock;
}

const char* herd_version() {
  return HERD_VERSION;
}

checkpoint_writer::checkpoint_writer(checkpoint_options options)
    : shared_(std::make_shared<shared_state>(std::move(options))),
      thread_([shared = shared_] { shared->loop(); }) {}

checkpoint_writer::~checkpoint_writer() {
  // Once a flush gave up on a write, the end does not wait for it a second time.
  const bool written =
      flush(gave_up_ ? std::chrono::milliseconds(0) : shared_->options.write_limit);
  {
    std::lock_guard<std::mutex> guard(shared_->mutex);
    shared_->closing = true;
    if (!written) { // the run reported these as not written: none lands, and none calls back later
      shared_->abandoned = true;
      shared_->queue.clear();
    }
  }
  shared_->changed.notify_all();
  if (written)
    thread_.join();
  else
    thread_.detach(); // it holds the shared state; joining would hang with the write
}

const checkpoint_options& checkpoint_writer::options() const {
  return shared_->options;
}

void checkpoint_writer::write(std::shared_ptr<const run_checkpoint> state,
                              checkpoint_report report) {
  {
    std::lock_guard<std::mutex> guard(shared_->mutex);
    shared_->queue.emplace_back(std::move(state), std::move(report));
  }
  shared_->changed.notify_all();
}

bool checkpoint_writer::flush(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  const bool written = shared_->changed.wait_for(lock, limit, [this] { return shared_->idle(); });
  gave_up_ = !written;
  return written;
}

bool checkpoint_writer::idle() const {
  std::lock_guard<std::mutex> guard(shared_->mutex);
  return shared_->idle();
}

std::vector<checkpoint_report> checkpoint_writer::take_reports() {
  std::lock_guard<std::mutex> guard(shared_->mutex);
  return std::move(shared_->reports);
}

void checkpoint_writer::shared_state::loop() {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    changed.wait(lock, [this] { return closing || !queue.empty(); });
    if (queue.empty())
      return; // closing, nothing left to write
    auto next = std::move(queue.front());
    queue.erase(queue.begin());
    busy = true;
    lock.unlock();
    auto report = write_now(options, *next.first, std::move(next.second));
    next.first.reset();
    lock.lock();
    const bool call_back = !abandoned && options.on_written;
    lock.unlock();
    if (call_back)
      options.on_written(report);
    lock.lock();
    reports.push_back(std::move(report));
    busy = false;
    changed.notify_all();
  }
}

namespace {

checkpoint_report write_now(const checkpoint_options& options, const run_checkpoint& state,
                            checkpoint_report report) {
  const auto start = clock_type::now();
  try {
    checkpoint::header head;
    head.herd_version = options.herd_version;
    head.shape = options.shape;
    head.fingerprint = options.shape.fingerprint();
    head.written_unix_ms = checkpoint::unix_milliseconds();
    head.rounds = report.rounds;
    head.epochs = state.coordinator.counters.epochs();
    const auto bytes = checkpoint::encode(head, encode_payload(state));
    // A directory removed while the run wrote there is made again, and locked again: the next
    // run into it must not take it for free (and then prune this one's checkpoints).
    if (options.lock && options.lock->hold_again())
      report.note = "checkpoint.dir = " + options.directory +
                    " lost its lock during the run (the directory, or its .herd-lock file, was "
                    "removed): locked again";
    const auto name = report.name.empty()
                          ? checkpoint::next_file_name(options.directory, report.rounds)
                          : report.name;
    checkpoint::write_atomically(options.directory, name, bytes);
    checkpoint::prune(options.directory, options.keep);
    report.path = options.directory + "/" + name;
    report.bytes = bytes.size();
  } catch (const std::exception& failure) {
    report.error = failure.what();
  }
  report.write_seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  return report;
}

} // namespace

} // namespace herd::actors
