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
                                     std::chrono::milliseconds timeout,
                                     std::function<void()> expire)
    : description_(std::move(description)), is_complete_(std::move(is_complete)), timeout_(timeout),
      deadline_(steady_clock::now() + std::min(timeout, longest_timeout)),
      expire_(std::move(expire)) {}

status watched_operation::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (ended_.wait_for(lock, std::min(timeout, longest_timeout), [this] { return finished_; }))
    return result_;
  return {outcome::timeout, description_ + " was still running after a wait of " +
                                std::to_string(timeout.count()) + " ms"};
}

bool watched_operation::is_completed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

void watched_operation::finish(status result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_)
      return;
    finished_ = true;
    result_ = std::move(result);
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
    operation->finish({outcome::aborted, subject_ + ": the watchdog stopped before " +
                                             operation->description_ + " finished"});
}

std::shared_ptr<watched_operation> watchdog::watch(std::string description,
                                                   std::function<bool()> is_complete,
                                                   std::chrono::milliseconds timeout,
                                                   std::function<void()> expire) {
  // make_shared cannot reach the private constructor.
  std::shared_ptr<watched_operation> operation(new watched_operation(
      std::move(description), std::move(is_complete), timeout, std::move(expire)));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) {
      operation->finish({outcome::aborted, abort_message_});
      return operation;
    }
    running_.push_back(operation);
    new_operation_ = true;
  }
  wake_.notify_all();
  return operation;
}

void watchdog::finish(watched_operation& operation, status result) {
  std::lock_guard<std::mutex> polling(poll_mutex_);
  end_holding_poll_lock(operation, std::move(result));
}

std::string watchdog::abort(const std::string& cause) {
  std::lock_guard<std::mutex> polling(poll_mutex_);
  abort_holding_poll_lock(cause, nullptr);
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

// Soon while a completion query must run, else as often as async_error asks; by every deadline.
steady_clock::time_point watchdog::next_poll() const {
  const bool polled = std::any_of(running_.begin(), running_.end(),
                                  [](const auto& operation) { return operation->is_complete_; });
  auto next = steady_clock::now() + (polled         ? options_.busy_poll
                                     : async_error_ ? options_.idle_poll
                                                    : longest_timeout);
  for (const auto& operation : running_)
    next = std::min(next, operation->deadline_);
  return next;
}

void watchdog::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_until(lock, next_poll(), [this] { return stopping_ || new_operation_; });
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
      complete = operation->is_complete_ && operation->is_complete_();
    } catch (...) {
      abort_holding_poll_lock(
          operation->description_ + " failed: " + what_of(std::current_exception()), nullptr);
      return;
    }
    if (complete)
      end_holding_poll_lock(*operation, {});
    else
      still_running.push_back(operation);
  }

  std::string cause;
  try {
    cause = async_error_ ? async_error_() : std::string();
  } catch (...) {
    cause = "the asynchronous error query failed: " + what_of(std::current_exception());
  }
  if (!cause.empty()) {
    std::string during;
    for (const auto& operation : still_running)
      during += (during.empty() ? " during " : ", ") + operation->description_;
    abort_holding_poll_lock(cause + during, nullptr);
    return;
  }

  // An overdue operation that the plane can end alone expires; the one whose deadline passed
  // first among the others names the abort.
  const watched_operation* overdue = nullptr;
  for (const auto& operation : still_running) {
    if (!(operation->deadline_ < now))
      continue;
    if (operation->expire_) {
      operation->expire_();
      end_holding_poll_lock(*operation,
                            {outcome::timeout, subject_ + ": " + operation->not_in_time()});
    } else if (overdue == nullptr || operation->deadline_ < overdue->deadline_) {
      overdue = operation.get();
    }
  }
  if (overdue != nullptr)
    abort_holding_poll_lock(overdue->not_in_time(), overdue);
}

void watchdog::end_holding_poll_lock(watched_operation& operation, status result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.erase(std::remove_if(running_.begin(), running_.end(),
                                  [&](const auto& watched) { return watched.get() == &operation; }),
                   running_.end());
  }
  operation.finish(std::move(result));
}

void watchdog::abort_holding_poll_lock(const std::string& cause, const watched_operation* overdue) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_)
      return;
  }
  // Only the holder of poll_mutex_ gets here, so the hook runs once. Operations watched while it
  // runs join running_ and fail below with the others.
  std::string outcome_words;
  try {
    outcome_words = abort_ ? abort_(cause) : std::string();
  } catch (...) {
    outcome_words = "the abort itself failed: " + what_of(std::current_exception());
  }
  std::string message = subject_ + ": " + cause;
  if (!outcome_words.empty())
    message += "; " + outcome_words;
  std::vector<std::shared_ptr<watched_operation>> failed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    abort_message_ = message;
    failed.swap(running_);
  }
  for (const auto& operation : failed)
    operation->finish({operation.get() == overdue ? outcome::timeout : outcome::aborted, message});
}

} // namespace herd::comm
