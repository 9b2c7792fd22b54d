// Writing checkpoints off the coordinator's thread; see checkpoint_writer.hpp.
#include "actors/checkpoint_writer.hpp"

#include "herd/config.hpp"

#include <chrono>

#include "checkpoint/format.hpp"

namespace herd::actors {

namespace {

using clock_type = std::chrono::steady_clock;

} // namespace

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
    : options_(std::move(options)), thread_([this] { loop(); }) {}

checkpoint_writer::~checkpoint_writer() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void checkpoint_writer::write(std::shared_ptr<const run_checkpoint> state,
                              checkpoint_report report) {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    queue_.emplace_back(std::move(state), std::move(report));
  }
  changed_.notify_all();
}

void checkpoint_writer::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

bool checkpoint_writer::idle() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return queue_.empty() && !busy_;
}

std::vector<checkpoint_report> checkpoint_writer::take_reports() {
  std::lock_guard<std::mutex> guard(mutex_);
  return std::move(reports_);
}

void checkpoint_writer::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty())
      return; // closing, nothing left to write
    auto next = std::move(queue_.front());
    queue_.erase(queue_.begin());
    busy_ = true;
    lock.unlock();
    auto report = write_now(*next.first, std::move(next.second));
    next.first.reset();
    if (options_.on_written)
      options_.on_written(report);
    lock.lock();
    reports_.push_back(std::move(report));
    busy_ = false;
    changed_.notify_all();
  }
}

checkpoint_report checkpoint_writer::write_now(const run_checkpoint& state,
                                               checkpoint_report report) {
  const auto start = clock_type::now();
  try {
    checkpoint::header head;
    head.herd_version = options_.herd_version;
    head.shape = options_.shape;
    head.fingerprint = options_.shape.fingerprint();
    head.written_unix_ms = checkpoint::unix_milliseconds();
    head.rounds = report.rounds;
    head.epochs = state.coordinator.counters.epochs();
    const auto bytes = checkpoint::encode(head, encode_payload(state));
    // A directory removed while the run wrote there is made again, and locked again: the next
    // run into it must not take it for free (and then prune this one's checkpoints).
    if (options_.lock && options_.lock->hold_again())
      report.note = "checkpoint.dir = " + options_.directory +
                    " lost its lock during the run (the directory, or its .herd-lock file, was "
                    "removed): locked again";
    const auto name = report.name.empty()
                          ? checkpoint::next_file_name(options_.directory, report.rounds)
                          : report.name;
    checkpoint::write_atomically(options_.directory, name, bytes);
    checkpoint::prune(options_.directory, options_.keep);
    report.path = options_.directory + "/" + name;
    report.bytes = bytes.size();
  } catch (const std::exception& failure) {
    report.error = failure.what();
  }
  report.write_seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  return report;
}

} // namespace herd::actors
