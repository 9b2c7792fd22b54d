// Shows a run's progress: on a terminal one live status line, redrawn in place; otherwise (logs,
// CI) a plain line per evaluation and at most one progress line every few seconds.
#pragma once

#include "actors/run_summary.hpp"

#include <chrono>
#include <mutex>
#include <ostream>

namespace herd::cli {

class progress_printer final : public actors::run_observer {
public:
  /// `interactive`: redraw one line with carriage returns (a terminal) or print log lines.
  progress_printer(std::ostream& out, bool interactive, double epochs,
                   double log_interval_seconds = 10.0);

  void on_progress(const actors::progress& now) override;
  void on_evaluation(const actors::evaluation_point& point) override;
  void on_notice(std::string_view text) override;

  /// Ends the live line so that what follows starts on a fresh line.
  void finish();

private:
  std::string status(const actors::progress& now) const;
  void clear_line();

  std::ostream& out_;
  bool interactive_;
  double epochs_;
  double log_interval_seconds_;
  double last_log_seconds_ = -1e9;
  bool line_open_ = false;
  std::mutex mutex_;
};

} // namespace herd::cli
