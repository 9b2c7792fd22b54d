// The run summary and the JSON report; see report.hpp.
#include "cli/report.hpp"

#include "config/loader.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace herd::cli {

namespace {

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

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

std::string waiting_line(const actors::waiting_summary& w) {
  std::string text = fixed(w.waited_seconds, 2) +
                     " s idle; a synchronous barrier would have imposed " +
                     fixed(w.barrier_seconds, 2) + " s";
  // Under sync, or without imbalance, the real waiting (message latency, reductions) can exceed
  // a barrier's: a percentage "avoided" would then be noise.
  if (w.barrier_seconds > 0.0 && w.waited_seconds < w.barrier_seconds)
    text += " (" + fixed(100.0 * avoided_fraction(w), 0) + "% avoided)";
  return text;
}

nlohmann::json durations(const actors::duration_summary& d) {
  return {{"mean", d.mean}, {"median", d.median}, {"p90", d.p90}, {"max", d.max}};
}

} // namespace

void print_summary(std::ostream& out, const actors::run_summary& s) {
  auto line = [&out](const std::string& label, const std::string& value) {
    out << "  " << std::left << std::setw(18) << label << value << '\n';
  };
  out << "\nHerd run summary\n";
  line("algorithm", s.algorithm + " (" + std::to_string(s.workers) + " workers on " + s.compute +
                        ", " + s.backend + " backend, imbalance " + s.imbalance + ")");
  line("stopped by", s.stop_reason + " after " + fixed(s.epochs, 2) + " epochs" +
                         (s.error.empty() ? "" : " (" + s.error + ")"));
  line("wall time", fixed(s.wall_seconds, 1) + " s");
  line("rounds / steps", std::to_string(s.rounds) + " / " + std::to_string(s.steps) + " (" +
                             std::to_string(s.full_sync_rounds) + " full sync, " +
                             std::to_string(s.partial_rounds) + " partial)");
  if (s.algorithm == "preduce")
    line("isolation guard", std::to_string(s.isolation_interventions) + " group(s) built across " +
                                "disconnected workers");
  if (s.aborted_rounds > 0)
    line("aborted rounds", std::to_string(s.aborted_rounds) +
                               " (a node was lost while they reduced; their members skipped them)");
  if (s.workers_joined > 0)
    line("workers joined", std::to_string(s.workers_joined) +
                               " (a node took over lost workers' slots during the run)");
  if (s.stale_contributions + s.empty_contributions > 0 || late_steps(s) > 0)
    line("contributions", std::to_string(s.fresh_contributions) + " fresh, " +
                              std::to_string(s.stale_contributions) + " stale, " +
                              std::to_string(s.empty_contributions) + " empty; " +
                              std::to_string(late_steps(s)) + " late steps");
  line("waiting", waiting_line(s.waiting));
  line("samples",
       std::to_string(s.samples) + " (" + fixed(s.samples_per_second, 0) + " samples/s)");
  line("test accuracy", s.final_test_accuracy ? fixed(*s.final_test_accuracy, 4) + " (loss " +
                                                    fixed(s.final_test_loss.value_or(0.0), 4) + ")"
                                              : "not measured (the final evaluation failed)");
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
  out << "\n  worker   steps    late   samples   step mean   step p90   waited   wait/step"
         "   barrier would\n";
  for (const auto& w : s.per_worker) {
    out << "  " << std::right << std::setw(6) << w.worker << std::setw(8) << w.steps << std::setw(8)
        << w.late_steps << std::setw(10) << w.samples << std::setw(10)
        << fixed(w.step_seconds.mean * 1e3, 2) << "ms" << std::setw(9)
        << fixed(w.step_seconds.p90 * 1e3, 2) << "ms" << std::setw(8)
        << fixed(w.waited_compared_seconds, 2) << "s" << std::setw(10)
        << fixed(w.wait_seconds_per_step.mean * 1e3, 2) << "ms" << std::setw(15)
        << fixed(w.barrier_wait_seconds, 2) << "s" << (w.live ? "" : "  (lost)") << '\n';
  }
  out << "  (waited: idle between steps; barrier would: what a synchronous barrier would have\n"
         "   imposed; both over the "
      << s.waiting.steps_compared << " step numbers every worker finished)\n";
}

std::string report_json(const actors::run_summary& s, const config::run_config& config) {
  nlohmann::json report;
  report["algorithm"] = s.algorithm;
  report["workers"] = s.workers;
  report["backend"] = s.backend;
  report["compute"] = s.compute;
  report["imbalance"] = s.imbalance;
  report["stop_reason"] = s.stop_reason;
  report["error"] = s.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.error);
  report["steps"] = s.steps;
  report["rounds"] = s.rounds;
  report["rounds_full_sync"] = s.full_sync_rounds;
  report["rounds_partial"] = s.partial_rounds;
  report["isolation_interventions"] = s.isolation_interventions;
  report["rounds_aborted"] = s.aborted_rounds;
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
  report["final_train_loss"] = s.final_train_loss;
  report["samples_per_second"] = s.samples_per_second;
  report["reduce_seconds"] = s.reduce_seconds;
  report["reduce_bytes"] = s.reduce_bytes;
  auto& workers = report["per_worker"] = nlohmann::json::array();
  for (const auto& w : s.per_worker) {
    workers.push_back({{"worker", w.worker},
                       {"live", w.live},
                       {"steps", w.steps},
                       {"late_steps", w.late_steps},
                       {"samples", w.samples},
                       {"compute_seconds", w.compute_seconds},
                       {"wait_seconds", w.wait_seconds},
                       {"waited_compared_seconds", w.waited_compared_seconds},
                       {"barrier_wait_seconds", w.barrier_wait_seconds},
                       {"step_seconds", durations(w.step_seconds)},
                       {"wait_seconds_per_step", durations(w.wait_seconds_per_step)}});
  }
  auto& evaluations = report["evaluations"] = nlohmann::json::array();
  for (const auto& e : s.evaluations) {
    evaluations.push_back({{"round", e.round},
                           {"elapsed_seconds", e.elapsed_seconds},
                           {"epoch", e.epoch},
                           {"test_accuracy", e.test_accuracy},
                           {"test_loss", e.test_loss}});
  }
  report["config"] = config::to_ini(config);
  return report.dump(2) + "\n";
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      throw std::runtime_error("cannot write " + temporary + ": " + std::strerror(errno));
    out << text;
    out.flush();
    if (!out)
      throw std::runtime_error("cannot write " + temporary + ": " + std::strerror(errno));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(temporary.c_str());
    throw std::runtime_error("cannot move the report to " + path + ": " + reason);
  }
}

} // namespace herd::cli
