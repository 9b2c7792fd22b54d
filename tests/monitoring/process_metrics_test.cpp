// The process's own resources as Prometheus client libraries name them, read from /proc: values
// that move as the process does.
#include "monitoring/process_metrics.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <vector>

namespace {

using herd::monitoring::metric_type;

std::map<std::string, double> read_now() {
  std::map<std::string, double> values;
  for (const auto& family : herd::monitoring::process_families()) {
    EXPECT_EQ(family.metrics.size(), 1u) << family.name;
    EXPECT_TRUE(family.metrics.at(0).label_values.empty()) << family.name;
    EXPECT_EQ(family.type == metric_type::counter,
              family.name.size() > 6 && family.name.substr(family.name.size() - 6) == "_total")
        << family.name;
    values[family.name] = family.metrics.at(0).value;
  }
  return values;
}

TEST(process_metrics, cpu_memory_descriptors_and_start_time_are_this_processs) {
  const auto before = read_now();
  for (const char* name :
       {"process_cpu_seconds_total", "process_resident_memory_bytes",
        "process_virtual_memory_bytes", "process_threads", "process_start_time_seconds",
        "process_open_fds", "process_max_fds"})
    EXPECT_EQ(before.count(name), 1u) << name << " missing";
  EXPECT_GT(before.at("process_resident_memory_bytes"), 1e6);
  EXPECT_GE(before.at("process_virtual_memory_bytes"), before.at("process_resident_memory_bytes"));
  EXPECT_GE(before.at("process_threads"), 1.0);
  EXPECT_GE(before.at("process_max_fds"), before.at("process_open_fds"));
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(before.at("process_start_time_seconds"), now + 1.0);
  EXPECT_GT(before.at("process_start_time_seconds"), now - 24 * 3600.0) << "started today";

  // Half a CPU-second of work and a file held open show up.
  volatile double sink = 0.0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < until)
    for (int i = 0; i < 1000; ++i)
      sink = sink + i * 0.5;
  std::FILE* held = std::fopen("/proc/self/stat", "r");
  ASSERT_NE(held, nullptr);
  const auto after = read_now();
  std::fclose(held);
  EXPECT_GE(after.at("process_cpu_seconds_total") - before.at("process_cpu_seconds_total"), 0.3);
  EXPECT_EQ(after.at("process_open_fds"), before.at("process_open_fds") + 1.0);
  EXPECT_EQ(after.at("process_start_time_seconds"), before.at("process_start_time_seconds"));
}

} // namespace
