// The watchdog thread: polls completion and asynchronous-error queries, enforces deadlines, and
// aborts once. See watchdog.hpp for the guarantees the callbacks get.
#include "comm/watchdog.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace herd::comm {

namespace {

using steady_clock = std::chrono::steady_clock;

// Deadlines further out than this are this far out: now() + milliseconds::max() would overflow.
constexpr std::chrono::milliseconds longest_timeout = std::chrono::hours(24 * 365 * 10);

std::string what_of(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

} // namespace

// ---- watched_operation --------------------------------------------------------------------------

watched_operation::watched_operation(std::string description, std::function<bool()> is_complete,
                                     std::chrono::milliseconds timeout)
    : description_(std::move(description)), is_complete_(std::move(is_complete)), timeout_(timeout),
      deadline_(steady_clock::now() + std::min(timeout, longest_timeout)) {}

bool watched_operation::wait(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return ended_.wait_for(lock, std::min(timeout, longest_timeout), [this] { return finished_; });
}

bool watched_operation::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

bool watched_operation::succeeded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_ && error_.empty();
}

std::string watched_operation::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void watched_operation::finish(const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_)
      return;
    finished_ = true;
    error_ = error;
  }
  ended_.notify_all();
}

// ---- watchdog -----------------------------------------------------------------------------------

watchdog::watchdog(std::string subject, std::function<std::string()> async_error,
                   std::function<std::string(const std::string&)> abort, watchdog_options options)
    : subject_(std::move(subject)), async_error_(std::move(async_error)), abort_(std::move(abort)),
      options_(options), thread_([this] { loop(); }) {}

watchdog::~watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::vector<std::shared_ptr<watched_operation>> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(running_);
  }
  for (const auto& operation : left)
    operation->finish(subject_ + ": the watchdog stopped before " + operation->description() +
                      " finished");
}

std::shared_ptr<watched_operation> watchdog::watch(std::string description,
                                                   std::function<bool()> is_complete,
                                                   std::chrono::milliseconds timeout) {
  // make_shared cannot reach the private constructor.
  std::shared_ptr<watched_operation> operation(
      new watched_operation(std::move(description), std::move(is_complete), timeout));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) {
      operation->finish(abort_message_);
      return operation;
    }
    running_.push_back(operation);
    new_operation_ = true;
  }
  wake_.notify_all();
  return operation;
}

std::string watchdog::abort(const std::string& cause) {
  std::lock_guard<std::mutex> polling(poll_mutex_);
  abort_holding_poll_lock(cause);
  return abort_message();
}

bool watchdog::aborted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return aborted_;
}

std::string watchdog::abort_message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return abort_message_;
}

std::vector<std::shared_ptr<watched_operation>> watchdog::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

void watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    const auto interval = running_.empty() ? options_.idle_poll : options_.busy_poll;
    wake_.wait_for(lock, interval, [this] { return stopping_ || new_operation_; });
    if (stopping_)
      break;
    new_operation_ = false;
    lock.unlock();
    poll_once();
    lock.lock();
  }
}

void watchdog::poll_once() {
  std::lock_guard<std::mutex> polling(poll_mutex_);
  if (aborted())
    return;
  // Read before the completion queries: an operation found incomplete afterwards was incomplete
  // at `now` as well, so comparing `now` with its deadline never aborts one that finished in time.
  const auto now = steady_clock::now();
  std::vector<std::shared_ptr<watched_operation>> still_running;
  for (const auto& operation : running()) {
    bool complete = false;
    try {
      complete = operation->is_complete_();
    } catch (...) {
      abort_holding_poll_lock(operation->description() +
                              " failed: " + what_of(std::current_exception()));
      return;
    }
    if (!complete) {
      still_running.push_back(operation);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_.erase(std::remove(running_.begin(), running_.end(), operation), running_.end());
    }
    operation->finish({});
  }

  std::string cause;
  try {
    cause = async_error_();
  } catch (...) {
    cause = "the asynchronous error query failed: " + what_of(std::current_exception());
  }
  if (!cause.empty()) {
    std::string during;
    for (const auto& operation : still_running)
      during += (during.empty() ? " during " : ", ") + operation->description();
    abort_holding_poll_lock(cause + during);
    return;
  }

  // The operation whose deadline passed first names the timeout.
  const watched_operation* overdue = nullptr;
  for (const auto& operation : still_running)
    if (operation->deadline_ < now &&
        (overdue == nullptr || operation->deadline_ < overdue->deadline_))
      overdue = operation.get();
  if (overdue != nullptr)
    abort_holding_poll_lock(overdue->description() + " did not finish within " +
                            std::to_string(overdue->timeout_.count()) + " ms");
}

void watchdog::abort_holding_poll_lock(const std::string& cause) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_)
      return;
  }
  // Only the holder of poll_mutex_ gets here, so the callback runs once. Operations watched while
  // it runs join running_ and fail below with the others.
  std::string outcome;
  try {
    outcome = abort_(cause);
  } catch (...) {
    outcome = "the abort itself failed: " + what_of(std::current_exception());
  }
  std::string message = subject_ + ": " + cause;
  if (!outcome.empty())
    message += "; " + outcome;
  std::vector<std::shared_ptr<watched_operation>> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    abort_message_ = message;
    failed.swap(running_);
  }
  for (const auto& operation : failed)
    operation->finish(message);
}

} // namespace herd::comm
