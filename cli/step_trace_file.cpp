// herd simulate's --step-trace: a herd train report read as step times; see step_trace_file.hpp.
#include "cli/step_trace_file.hpp"

#include "kernels/regular_file.hpp"

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace herd::cli {

namespace {

// A problem of the --step-trace file, said in full ("--step-trace FILE: why").
struct step_trace_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

} // namespace

std::shared_ptr<const sim::step_trace> load_step_trace(const std::string& path) {
  const auto fail = [&path](const std::string& why) {
    return step_trace_error("--step-trace " + path + ": " + why);
  };
  // A report of even 1024 workers' histograms is a few MB; a FIFO or a device is refused unread.
  constexpr std::uint64_t largest_report = std::uint64_t{256} << 20;
  std::string text;
  try {
    text = kernels::read_regular_file(path, largest_report);
  } catch (const std::runtime_error& unread) {
    throw fail(std::string("cannot read it (") + unread.what() +
               "); name the file a herd train --report wrote");
  }
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(text); // the whole text: anything after the report is refused
  } catch (const nlohmann::json::parse_error& bad) {
    throw fail("not JSON (unreadable at byte " + std::to_string(bad.byte) +
               "); name the file a herd train --report wrote");
  } catch (const nlohmann::json::exception&) { // a number beyond a double's range: 1e999
    throw fail("JSON with a number that cannot be read (out of range); name the file a herd "
               "train --report wrote");
  }
  if (!report.is_object() || !report.contains("per_worker") || !report["per_worker"].is_array())
    throw fail("no per_worker list: not a report of herd train --report");
  std::vector<std::vector<actors::histogram_bar>> workers;
  std::string name; // the worker read now
  try {
    std::size_t index = 0; // in per_worker, which keeps workers without steps
    for (const auto& worker : report["per_worker"]) {
      name = "worker " + std::to_string(index++);
      if (!worker.contains("step_histogram"))
        throw fail(name + " has no step_histogram (a report of Herd 0.2 or later has one)");
      std::vector<actors::histogram_bar> bars;
      for (const auto& bar : worker["step_histogram"]) {
        // get<std::uint64_t>() takes -5 as 2^64 - 5.
        if (const auto& count = bar.at("count"); !count.is_number_unsigned())
          throw fail(name + ": a bar's count " + count.dump() + " is not a whole number >= 0");
        bars.push_back({bar.at("lower_seconds").get<double>(),
                        bar.at("upper_seconds").get<double>(),
                        bar.at("count").get<std::uint64_t>()});
      }
      if (!bars.empty()) // a worker lost before its first step has none
        workers.push_back(std::move(bars));
    }
    return std::make_shared<const sim::step_trace>(std::move(workers));
  } catch (const nlohmann::json::exception&) {
    throw fail(name + ": its step_histogram is not a list of bars {lower_seconds, "
                      "upper_seconds, count} with numbers: not a report of herd train --report");
  } catch (const step_trace_error&) {
    throw;
  } catch (const std::invalid_argument& bad) { // the trace's own check, said of the file
    throw fail(bad.what());
  }
}

} // namespace herd::cli
