// Progress display for `herd train`; see progress_printer.hpp.
#include "cli/progress_printer.hpp"

#include <cstdio>
#include <iomanip>
#include <sstream>

namespace herd::cli {

namespace {

std::string clock_text(double seconds) {
  const auto total = static_cast<long>(seconds);
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

} // namespace

progress_printer::progress_printer(std::ostream& out, bool interactive, double epochs,
                                   double log_interval_seconds)
    : out_(out), interactive_(interactive), epochs_(epochs),
      log_interval_seconds_(log_interval_seconds) {}

std::string progress_printer::status(const actors::progress& now) const {
  std::ostringstream line;
  line << std::fixed << "epoch " << std::setprecision(2) << now.epoch << '/' << std::setprecision(0)
       << epochs_ << "  round " << now.rounds << " (" << now.steps << " steps)  loss "
       << std::setprecision(4) << now.train_loss << "  test acc ";
  if (now.test_accuracy)
    line << std::setprecision(4) << *now.test_accuracy;
  else
    line << "  -   ";
  line << "  " << std::setprecision(0) << now.samples_per_second << " samples/s  "
       << clock_text(now.elapsed_seconds);
  return line.str();
}

void progress_printer::clear_line() {
  if (interactive_ && line_open_) {
    out_ << "\r\033[K";
    line_open_ = false;
  }
}

void progress_printer::on_progress(const actors::progress& now) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (interactive_) {
    out_ << "\r\033[K" << status(now) << std::flush;
    line_open_ = true;
  } else if (now.elapsed_seconds - last_log_seconds_ >= log_interval_seconds_) {
    last_log_seconds_ = now.elapsed_seconds;
    out_ << '[' << std::fixed << std::setprecision(1) << std::setw(7) << now.elapsed_seconds
         << "s] " << status(now) << std::endl;
  }
}

void progress_printer::on_evaluation(const actors::evaluation_point& point) {
  std::lock_guard<std::mutex> guard(mutex_);
  if (interactive_)
    return; // the live line shows the latest accuracy
  out_ << '[' << std::fixed << std::setprecision(1) << std::setw(7) << point.elapsed_seconds
       << "s] evaluation at round " << point.round << " (epoch " << std::setprecision(2)
       << point.epoch << "): test accuracy " << std::setprecision(4) << point.test_accuracy
       << ", test loss " << point.test_loss << std::endl;
}

void progress_printer::on_notice(std::string_view text) {
  std::lock_guard<std::mutex> guard(mutex_);
  clear_line();
  out_ << "herd: " << text << std::endl;
}

void progress_printer::finish() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (interactive_ && line_open_) {
    out_ << '\n' << std::flush;
    line_open_ = false;
  }
}

} // namespace herd::cli
