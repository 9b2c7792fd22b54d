// Progress display for `herd train` and `herd coordinator`; see progress_printer.hpp.
#include "cli/progress_printer.hpp"

#include "cli/report.hpp"
#include "herd/run_config.hpp"
#include "models/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace herd::cli {

namespace {

std::string clock_text(double seconds) {
  const auto total = static_cast<long>(std::max(0.0, seconds));
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

// The width of the terminal `descriptor` writes to, else $COLUMNS, else 80.
int terminal_columns(int descriptor) {
  winsize size{};
  if (::ioctl(descriptor, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    const int parsed = std::atoi(columns);
    if (parsed > 0)
      return parsed;
  }
  return 80;
}

} // namespace

std::string log_stamp(double seconds) {
  std::ostringstream text;
  text << '[' << std::fixed << std::setprecision(1) << std::setw(7) << seconds << "s] ";
  return text.str();
}

int standard_output_columns() {
  return terminal_columns(STDOUT_FILENO);
}

std::size_t standard_output_table_width() {
  if (::isatty(STDOUT_FILENO) != 0 || std::getenv("COLUMNS") != nullptr)
    return static_cast<std::size_t>(standard_output_columns());
  return std::numeric_limits<std::size_t>::max();
}

std::string for_terminal(const std::string& line, int descriptor) {
  if (::isatty(descriptor) == 0)
    return line;
  const int columns = terminal_columns(descriptor);
  // Every line, the indented ones too, leaves the last column free.
  return columns > 20 ? wrap_words(line, static_cast<std::size_t>(columns - 3), 2) : line;
}

std::string for_standard_output(const std::string& line) {
  return for_terminal(line, STDOUT_FILENO);
}

progress_options progress_options_for(const config::run_config& config) {
  progress_options options;
  options.interactive = ::isatty(STDOUT_FILENO) != 0;
  options.epochs = config.train.epochs;
  options.max_seconds = config.train.max_seconds;
  options.columns = standard_output_columns;
  options.validation = config.data.has_validation_set();
  const auto schedule = models::lr_schedule::of(config.train);
  if (!schedule.constant())
    options.learning_rate = [schedule, lr = config.train.lr](double epochs) {
      return lr * static_cast<double>(schedule.factor(epochs));
    };
  return options;
}

progress_printer::progress_printer(std::ostream& out, progress_options options)
    : out_(out), options_(std::move(options)) {
  if (!options_.columns)
    options_.columns = [] { return 80; };
}

std::optional<double> progress_printer::eta_seconds(const actors::progress& now) const {
  std::optional<double> left;
  if (now.epoch > 0.0 && now.elapsed_seconds > 0.0)
    left = std::max(0.0, now.elapsed_seconds * (options_.epochs / now.epoch - 1.0));
  if (options_.max_seconds > 0.0) {
    const double until_limit = std::max(0.0, options_.max_seconds - now.elapsed_seconds);
    left = left ? std::min(*left, until_limit) : until_limit;
  }
  return left;
}

std::string progress_printer::status(const actors::progress& now, int columns) const {
  // Parts in the order shown, each with its rank: the highest rank is dropped first.
  struct part {
    std::string text;
    int rank;
  };
  const auto eta = eta_seconds(now);
  const std::vector<part> parts = {
      {"epoch " + fixed(now.epoch, 2) + "/" + std::to_string(static_cast<int>(options_.epochs)), 0},
      {"round " + std::to_string(now.rounds), 4},
      {"(" + std::to_string(now.steps) + " steps)", 6},
      // Before the first step there is no loss or rate yet, not a zero one.
      {"loss " + (now.steps > 0 ? fixed(now.train_loss, 4) : std::string("  -   ")), 2},
      {(options_.validation ? "val acc " : "test acc ") +
           (now.test_accuracy && !std::isnan(*now.test_accuracy) ? fixed(*now.test_accuracy, 4)
                                                                 : std::string("  -   ")),
       1},
      {(now.steps > 0 ? fixed(now.samples_per_second, 0) : std::string("-")) + " samples/s", 5},
      {clock_text(now.elapsed_seconds), 3},
      {stopping_ ? std::string("stopping")
       : eta     ? "ETA " + clock_text(*eta)
                 : std::string("ETA  -  "),
       1},
  };
  const auto width = static_cast<std::size_t>(std::max(1, columns - 1));
  for (int dropped_above = 7; dropped_above >= 0; --dropped_above) {
    std::string line;
    for (const auto& [text, rank] : parts) {
      if (rank > dropped_above)
        continue;
      line += (line.empty() ? "" : "  ") + text;
    }
    if (line.size() <= width || dropped_above == 0)
      return line.substr(0, width);
  }
  return {};
}

void progress_printer::clear_line() {
  if (options_.interactive && line_open_) {
    out_ << "\r\033[K";
    line_open_ = false;
  }
}

double progress_printer::stamp(double seconds) {
  last_stamp_ = std::max(last_stamp_, seconds);
  return last_stamp_;
}

// A closed pipe fails the write (the training commands ignore SIGPIPE: keep_running_when_
// output_closes()) rather than ending the run without its report and final checkpoint.
void progress_printer::note_if_closed() {
  if (out_ || closed_noted_)
    return;
  closed_noted_ = true;
  // The write that failed may have been another thread's, long ago: what standard output is
  // tells why instead (a pipe whose reader left, or a file or device that took no more).
  struct stat output {};
  const bool pipe = ::fstat(STDOUT_FILENO, &output) == 0 &&
                    (S_ISFIFO(output.st_mode) || S_ISSOCK(output.st_mode));
  std::cerr << "herd: cannot write standard output ("
            << (pipe ? "its reader went away" : "a write to it failed: its disk may be full")
            << "): the run goes on without progress lines and writes its report and checkpoints "
               "as usual; Ctrl-C stops it\n";
}

void progress_printer::on_progress(const actors::progress& now) {
  std::lock_guard<std::mutex> guard(mutex_);
  run_time_.emplace(now.elapsed_seconds, options_.clock());
  if (options_.interactive) {
    out_ << "\r\033[K" << status(now, options_.columns()) << std::flush;
    line_open_ = true;
  } else if (now.elapsed_seconds - last_log_seconds_ >= options_.log_interval_seconds) {
    last_log_seconds_ = now.elapsed_seconds;
    out_ << log_stamp(stamp(now.elapsed_seconds)) << status(now, 1 << 20) << std::endl;
  }
  note_if_closed(); // every 250 ms: whatever wrote last (a notice, an evaluation) found it closed
}

void progress_printer::on_evaluation(const actors::evaluation_point& point) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (options_.interactive)
    return; // the live line shows the latest accuracy
  const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  if (last_evaluation_ && last_evaluation_->round == point.round &&
      same(last_evaluation_->test_accuracy, point.test_accuracy) &&
      same(last_evaluation_->test_loss, point.test_loss))
    return;
  last_evaluation_ = point;
  const double at = stamp(point.elapsed_seconds);
  out_ << log_stamp(at) << "evaluation at round " << point.round << " (epoch "
       << fixed(point.epoch, 2);
  if (options_.learning_rate) {
    std::ostringstream rate; // 3 significant digits, whatever the stream's format
    rate << std::setprecision(3) << options_.learning_rate(point.epoch);
    out_ << ", lr " << rate.str();
  }
  if (at > point.elapsed_seconds + 0.05)
    out_ << ", parameters of " << fixed(point.elapsed_seconds, 1) << "s";
  const char* set = options_.validation ? "validation" : "test";
  if (std::isnan(point.test_accuracy))
    out_ << "): " << set << " accuracy none (the parameters are not numbers)" << std::endl;
  else
    out_ << "): " << set << " accuracy " << fixed(point.test_accuracy, 4) << ", " << set << " loss "
         << fixed(point.test_loss, 4) << std::endl;
}

void progress_printer::on_notice(std::string_view text) {
  std::lock_guard<std::mutex> guard(mutex_);
  clear_line();
  // On a terminal a long notice (a checkpoint's path) breaks between words, as the start line
  // does, not wherever the terminal cuts it.
  const std::string line = "herd: " + std::string(text);
  const int columns = options_.columns();
  if (options_.interactive) {
    out_ << (columns > 20 ? wrap_words(line, static_cast<std::size_t>(columns - 3), 2) : line)
         << std::endl;
    return;
  }
  // A log says when: the run's time, from the latest progress event on.
  if (run_time_) {
    const auto since = std::chrono::duration<double>(options_.clock() - run_time_->second);
    out_ << log_stamp(stamp(run_time_->first + since.count()));
  }
  out_ << line << std::endl;
}

void progress_printer::stopping() {
  std::lock_guard<std::mutex> guard(mutex_);
  stopping_ = true;
}

void progress_printer::finish() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (options_.interactive && line_open_) {
    out_ << '\n' << std::flush;
    line_open_ = false;
  }
}

} // namespace herd::cli
