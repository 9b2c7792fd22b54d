// metrics: the registry's rules (names, re-registration), counter/gauge/histogram semantics, and
// the exact exposition text (format 0.0.4), including under concurrent updates and promtool.
#include "herd/metrics.hpp"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using herd::monitoring::bucket_boundaries;
using herd::monitoring::client_metric;
using herd::monitoring::escape;
using herd::monitoring::expose;
using herd::monitoring::histogram;
using herd::monitoring::metric_family;
using herd::monitoring::metric_type;
using herd::monitoring::registry;
using herd::monitoring::serialize;

/// The message of the std::invalid_argument that `action` throws ("" and a test failure if none).
std::string invalid_argument_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

/// The exposition of a registry holding one gauge `g` set to `value`, without HELP and TYPE.
std::string gauge_sample(double value) {
  registry metrics;
  metrics.add_gauge("g", "A value.").add({}).set(value);
  const std::string text = expose(metrics);
  const std::string header = "# HELP g A value.\n# TYPE g gauge\n";
  EXPECT_EQ(text.substr(0, header.size()), header);
  return text.substr(header.size());
}

TEST(metrics, escape_label_values_and_help_text) {
  EXPECT_EQ(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(escape("a\"b\\c\nd", true), "a\"b\\\\c\\nd");
  EXPECT_EQ(escape("plain text"), "plain text");

  registry metrics;
  metrics.add_gauge("loss", "Loss of \"the\" model\\run.\nSecond line.")
      .add({{"model", "a\"b\\c\nd"}})
      .set(0.25);
  EXPECT_EQ(expose(metrics), "# HELP loss Loss of \"the\" model\\\\run.\\nSecond line.\n"
                             "# TYPE loss gauge\n"
                             "loss{model=\"a\\\"b\\\\c\\nd\"} 0.25\n");
}

TEST(metrics, histogram_buckets_are_cumulative_with_inclusive_le) {
  registry metrics;
  auto& latency = metrics.add_histogram("step_seconds", "Seconds per step.")
                      .add({{"phase", "compute"}}, bucket_boundaries{0.005, 0.5, 1, 2.5});
  for (const double value : {0.005, 0.001, 0.5, 0.25, 1.0, 3.0, 100.0})
    latency.observe(value);

  const client_metric snapshot = latency.collect();
  EXPECT_EQ(snapshot.bucket_bounds,
            (std::vector<double>{0.005, 0.5, 1, 2.5, std::numeric_limits<double>::infinity()}));
  EXPECT_EQ(snapshot.cumulative_counts, (std::vector<std::uint64_t>{2, 4, 5, 5, 7}));
  EXPECT_EQ(snapshot.count, 7u);
  EXPECT_DOUBLE_EQ(snapshot.sum, 0.005 + 0.001 + 0.5 + 0.25 + 1.0 + 3.0 + 100.0);

  registry exact;
  auto& sizes = exact.add_histogram("batch_bytes", "Bytes per batch.")
                    .add({}, histogram::exponential_buckets(1, 10, 7));
  for (const double value : {0.5, 1.0, 10.0, 1500.0, 1e6, 2e6})
    sizes.observe(value);
  EXPECT_EQ(expose(exact), "# HELP batch_bytes Bytes per batch.\n"
                           "# TYPE batch_bytes histogram\n"
                           "batch_bytes_bucket{le=\"1\"} 2\n"
                           "batch_bytes_bucket{le=\"10\"} 3\n"
                           "batch_bytes_bucket{le=\"100\"} 3\n"
                           "batch_bytes_bucket{le=\"1000\"} 3\n"
                           "batch_bytes_bucket{le=\"10000\"} 4\n"
                           "batch_bytes_bucket{le=\"100000\"} 4\n"
                           "batch_bytes_bucket{le=\"1e+06\"} 5\n"
                           "batch_bytes_bucket{le=\"+Inf\"} 6\n"
                           "batch_bytes_sum 3.0015115e+06\n"
                           "batch_bytes_count 6\n");
}

TEST(metrics, histogram_le_bounds_are_written_like_the_go_client) {
  registry metrics;
  metrics.add_histogram("request_seconds", "Seconds per request.")
      .add({}, bucket_boundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
  EXPECT_EQ(expose(metrics), "# HELP request_seconds Seconds per request.\n"
                             "# TYPE request_seconds histogram\n"
                             "request_seconds_bucket{le=\"0.005\"} 0\n"
                             "request_seconds_bucket{le=\"0.01\"} 0\n"
                             "request_seconds_bucket{le=\"0.025\"} 0\n"
                             "request_seconds_bucket{le=\"0.05\"} 0\n"
                             "request_seconds_bucket{le=\"0.1\"} 0\n"
                             "request_seconds_bucket{le=\"0.25\"} 0\n"
                             "request_seconds_bucket{le=\"0.5\"} 0\n"
                             "request_seconds_bucket{le=\"1\"} 0\n"
                             "request_seconds_bucket{le=\"2.5\"} 0\n"
                             "request_seconds_bucket{le=\"5\"} 0\n"
                             "request_seconds_bucket{le=\"10\"} 0\n"
                             "request_seconds_bucket{le=\"+Inf\"} 0\n"
                             "request_seconds_sum 0\n"
                             "request_seconds_count 0\n");
}

TEST(metrics, histogram_sends_nan_and_values_above_every_bound_to_inf) {
  histogram empty_bounds{{}};
  empty_bounds.observe(7);
  EXPECT_EQ(empty_bounds.collect().cumulative_counts, (std::vector<std::uint64_t>{1}));

  histogram bounded{{1.0}};
  bounded.observe(std::nan(""));
  bounded.observe(2);
  const auto snapshot = bounded.collect();
  EXPECT_EQ(snapshot.cumulative_counts, (std::vector<std::uint64_t>{0, 2}));
  EXPECT_TRUE(std::isnan(snapshot.sum));
}

TEST(metrics, histogram_rejects_bad_bounds) {
  EXPECT_NE(invalid_argument_of([] {
              histogram({1, 1});
            }).find("increase strictly"),
            std::string::npos);
  EXPECT_NE(invalid_argument_of([] {
              histogram({2, 1});
            }).find("increase strictly"),
            std::string::npos);
  EXPECT_NE(invalid_argument_of([] {
              histogram({1, std::numeric_limits<double>::infinity()});
            }).find("implicit"),
            std::string::npos);
  EXPECT_THROW(histogram({std::nan("")}), std::invalid_argument);
  EXPECT_THROW(histogram::exponential_buckets(0, 2, 3), std::invalid_argument);
  EXPECT_THROW(histogram::exponential_buckets(1, 1, 3), std::invalid_argument);
  EXPECT_THROW(histogram::exponential_buckets(1, 2, 0), std::invalid_argument);
  EXPECT_THROW(histogram::linear_buckets(0, 0, 3), std::invalid_argument);
  EXPECT_THROW(histogram::linear_buckets(0, 1, 0), std::invalid_argument);
  EXPECT_EQ(histogram::exponential_buckets(0.5, 2, 4), (bucket_boundaries{0.5, 1, 2, 4}));
  EXPECT_EQ(histogram::linear_buckets(-1, 0.5, 4), (bucket_boundaries{-1, -0.5, 0, 0.5}));
}

TEST(metrics, counter_ignores_negative_and_nan_increments) {
  registry metrics;
  auto& steps = metrics.add_counter("steps_total", "Steps.").add({});
  steps.increment();
  steps.increment(2.5);
  steps.increment(-10);
  steps.increment(std::nan(""));
  steps.increment(0);
  EXPECT_EQ(steps.value(), 3.5);
  EXPECT_EQ(expose(metrics), "# HELP steps_total Steps.\n# TYPE steps_total counter\n"
                             "steps_total 3.5\n");
}

TEST(metrics, gauge_sets_increments_and_decrements) {
  registry metrics;
  auto& level = metrics.add_gauge("queue_depth", "Items queued.").add({});
  level.set(5);
  level.increment();
  level.increment(2);
  level.decrement(10);
  level.decrement();
  EXPECT_EQ(level.value(), -3.0);
}

TEST(metrics, numbers_are_written_like_the_go_client) {
  EXPECT_EQ(gauge_sample(0), "g 0\n");
  EXPECT_EQ(gauge_sample(-0.0), "g 0\n");
  EXPECT_EQ(gauge_sample(1), "g 1\n");
  EXPECT_EQ(gauge_sample(-2.5), "g -2.5\n");
  EXPECT_EQ(gauge_sample(0.1), "g 0.1\n");
  EXPECT_EQ(gauge_sample(0.1 + 0.2), "g 0.30000000000000004\n");
  EXPECT_EQ(gauge_sample(1.0 / 3.0), "g 0.3333333333333333\n");
  EXPECT_EQ(gauge_sample(123456), "g 123456\n");
  EXPECT_EQ(gauge_sample(123456.5), "g 123456.5\n");
  EXPECT_EQ(gauge_sample(1e6), "g 1e+06\n");
  EXPECT_EQ(gauge_sample(1234567), "g 1.234567e+06\n");
  EXPECT_EQ(gauge_sample(0.0001), "g 0.0001\n");
  EXPECT_EQ(gauge_sample(0.00001), "g 1e-05\n");
  EXPECT_EQ(gauge_sample(-1.5e-7), "g -1.5e-07\n");
  EXPECT_EQ(gauge_sample(1e300), "g 1e+300\n");
  EXPECT_EQ(gauge_sample(std::numeric_limits<double>::max()), "g 1.7976931348623157e+308\n");
  EXPECT_EQ(gauge_sample(std::numeric_limits<double>::denorm_min()), "g 5e-324\n");
  EXPECT_EQ(gauge_sample(std::nan("")), "g NaN\n");
  EXPECT_EQ(gauge_sample(std::numeric_limits<double>::infinity()), "g +Inf\n");
  EXPECT_EQ(gauge_sample(-std::numeric_limits<double>::infinity()), "g -Inf\n");
  // Every finite value reads back exactly.
  for (const double value : {0.1 + 0.2, 1.0 / 3.0, 2.0 / 3.0 * 1e-9, 6.02214076e23, -123.456}) {
    const std::string line = gauge_sample(value);
    EXPECT_EQ(std::strtod(line.c_str() + 2, nullptr), value) << line;
  }
}

TEST(metrics, invalid_names_are_refused_by_name) {
  registry metrics;
  auto error = [&](const std::function<void()>& action) { return invalid_argument_of(action); };
  EXPECT_NE(error([&] { metrics.add_gauge("1st_gauge", "h"); }).find("\"1st_gauge\""),
            std::string::npos);
  EXPECT_NE(error([&] { metrics.add_gauge("bad-name", "h"); }).find("\"bad-name\""),
            std::string::npos);
  EXPECT_NE(error([&] { metrics.add_gauge("", "h"); }).find("invalid metric name"),
            std::string::npos);
  EXPECT_NE(error([&] { metrics.add_gauge("__internal", "h"); }).find("reserved"),
            std::string::npos);
  EXPECT_NE(error([&] {
              metrics.add_gauge("ok", "h", {{"bad:label", "v"}});
            }).find("\"bad:label\""),
            std::string::npos);
  EXPECT_NE(error([&] {
              metrics.add_gauge("ok", "h", {{"__meta", "v"}});
            }).find("\"__meta\""),
            std::string::npos);
  EXPECT_NE(error([&] {
              metrics.add_histogram("hist", "h", {{"le", "1"}});
            }).find("\"le\""),
            std::string::npos);
  EXPECT_NE(error([&] { metrics.add_counter("steps", "h"); }).find("_total"), std::string::npos);
  EXPECT_NE(error([&] { metrics.add_gauge("no_help", ""); }).find("no help text"),
            std::string::npos);

  // Metric names may hold colons (recording rules), label names may not; `le` is fine on gauges.
  EXPECT_NO_THROW(metrics.add_gauge("job:rate5m", "h", {{"le", "x"}, {"_under", "y"}}));

  auto& requests = metrics.add_counter("requests_total", "h", {{"job", "a"}});
  EXPECT_NE(error([&] { requests.add({{"0code", "200"}}); }).find("\"0code\""), std::string::npos);
  EXPECT_NE(error([&] { requests.add({{"job", "b"}}); }).find("constant"), std::string::npos);
  auto& latency = metrics.add_histogram("latency_seconds", "h");
  EXPECT_NE(error([&] {
              latency.add({{"le", "0.5"}}, bucket_boundaries{1});
            }).find("\"le\""),
            std::string::npos);
  // None of the refused families were registered.
  EXPECT_EQ(metrics.collect().size(), 3u);
}

TEST(metrics, same_name_returns_the_same_family_and_other_types_throw) {
  registry metrics;
  auto& first = metrics.add_counter("jobs_total", "Jobs.", {{"node", "a"}});
  auto& again = metrics.add_counter("jobs_total", "Other help is ignored.", {{"node", "a"}});
  EXPECT_EQ(&first, &again);
  auto& metric = first.add({{"kind", "x"}});
  EXPECT_EQ(&metric, &again.add({{"kind", "x"}}));
  EXPECT_NE(&metric, &again.add({{"kind", "y"}}));

  EXPECT_NE(invalid_argument_of([&] {
              metrics.add_gauge("jobs_total", "Jobs.");
            }).find("already registered as a counter"),
            std::string::npos);
  EXPECT_NE(invalid_argument_of([&] {
              metrics.add_counter("jobs_total", "Jobs.", {{"node", "b"}});
            }).find("other constant labels"),
            std::string::npos);

  // A histogram's series names are taken too.
  metrics.add_histogram("wait_seconds", "Waits.");
  EXPECT_NE(invalid_argument_of([&] {
              metrics.add_gauge("wait_seconds_count", "h");
            }).find("\"wait_seconds_count\""),
            std::string::npos);
  metrics.add_gauge("load_sum", "Load.");
  EXPECT_NE(invalid_argument_of([&] { metrics.add_histogram("load", "h"); }).find("\"load_sum\""),
            std::string::npos);

  // References stay valid while many more families are registered.
  for (int i = 0; i < 1000; ++i)
    metrics.add_gauge("filler_" + std::to_string(i), "Filler.");
  metric.increment(2);
  EXPECT_EQ(
      metrics.add_counter("jobs_total", "Jobs.", {{"node", "a"}}).add({{"kind", "x"}}).value(),
      2.0);
  const auto families = metrics.collect();
  ASSERT_EQ(families.size(), 1003u);
  EXPECT_EQ(families.front().name, "jobs_total");
  EXPECT_EQ(families[1].name, "wait_seconds");
  EXPECT_EQ(families[2].name, "load_sum");
  EXPECT_EQ(families.back().name, "filler_999");
}

TEST(metrics, golden_exposition_of_a_small_registry) {
  registry metrics;
  auto& steps =
      metrics.add_counter("herd_train_steps_total", "Training steps finished.", {{"zone", "eu"}});
  steps.add({{"worker", "1"}}).increment(3);
  steps.add({{"worker", "0"}}).increment(2.5);
  metrics.add_gauge("herd_workers_up", "Workers alive.").add({}).set(4);
  auto& step_time = metrics.add_histogram("herd_step_duration_seconds", "Time per step.\nWall.");
  auto& compute = step_time.add({{"phase", "compute"}}, bucket_boundaries{0.5, 1, 2.5});
  for (const double value : {0.5, 0.25, 1.0, 3.0})
    compute.observe(value);
  step_time.add({{"phase", "apply"}}, bucket_boundaries{0.5, 1, 2.5}).observe(0.75);
  metrics.add_gauge("herd_unused", "Never set.");

  const std::string expected =
      "# HELP herd_train_steps_total Training steps finished.\n"
      "# TYPE herd_train_steps_total counter\n"
      "herd_train_steps_total{worker=\"0\",zone=\"eu\"} 2.5\n"
      "herd_train_steps_total{worker=\"1\",zone=\"eu\"} 3\n"
      "# HELP herd_workers_up Workers alive.\n"
      "# TYPE herd_workers_up gauge\n"
      "herd_workers_up 4\n"
      "# HELP herd_step_duration_seconds Time per step.\\nWall.\n"
      "# TYPE herd_step_duration_seconds histogram\n"
      "herd_step_duration_seconds_bucket{phase=\"apply\",le=\"0.5\"} 0\n"
      "herd_step_duration_seconds_bucket{phase=\"apply\",le=\"1\"} 1\n"
      "herd_step_duration_seconds_bucket{phase=\"apply\",le=\"2.5\"} 1\n"
      "herd_step_duration_seconds_bucket{phase=\"apply\",le=\"+Inf\"} 1\n"
      "herd_step_duration_seconds_sum{phase=\"apply\"} 0.75\n"
      "herd_step_duration_seconds_count{phase=\"apply\"} 1\n"
      "herd_step_duration_seconds_bucket{phase=\"compute\",le=\"0.5\"} 2\n"
      "herd_step_duration_seconds_bucket{phase=\"compute\",le=\"1\"} 3\n"
      "herd_step_duration_seconds_bucket{phase=\"compute\",le=\"2.5\"} 3\n"
      "herd_step_duration_seconds_bucket{phase=\"compute\",le=\"+Inf\"} 4\n"
      "herd_step_duration_seconds_sum{phase=\"compute\"} 4.75\n"
      "herd_step_duration_seconds_count{phase=\"compute\"} 4\n"
      "# HELP herd_unused Never set.\n"
      "# TYPE herd_unused gauge\n";
  EXPECT_EQ(expose(metrics), expected);
  std::ostringstream streamed;
  serialize(streamed, metrics.collect());
  EXPECT_EQ(streamed.str(), expected);
}

TEST(metrics, serialize_adds_a_missing_inf_bucket_to_a_hand_built_histogram) {
  metric_family built;
  built.name = "made_seconds";
  built.help = "Built by hand.";
  built.type = metric_type::histogram;
  client_metric metric;
  metric.bucket_bounds = {1};
  metric.cumulative_counts = {2};
  metric.sum = 2.5;
  metric.count = 3;
  built.metrics.push_back(metric);
  std::ostringstream out;
  serialize(out, {built});
  EXPECT_EQ(out.str(), "# HELP made_seconds Built by hand.\n# TYPE made_seconds histogram\n"
                       "made_seconds_bucket{le=\"1\"} 2\n"
                       "made_seconds_bucket{le=\"+Inf\"} 3\n"
                       "made_seconds_sum 2.5\nmade_seconds_count 3\n");
}

/// The value of the sample line that starts with `prefix` (the series and a space), or NaN.
double sample_value(const std::string& text, const std::string& prefix) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (text.compare(at, prefix.size(), prefix) == 0)
      return std::strtod(text.c_str() + at + prefix.size(), nullptr);
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return std::nan("");
}

TEST(metrics, concurrent_updates_scrape_consistently_and_add_up) {
  constexpr int threads = 8;
  constexpr int iterations = 100000;
  constexpr std::uint64_t observations = std::uint64_t{threads} * iterations;
  registry metrics;
  auto& steps = metrics.add_counter("herd_concurrent_total", "Increments.").add({});
  auto& waits = metrics.add_histogram("herd_concurrent_seconds", "Observations.")
                    .add({}, bucket_boundaries{1, 2});

  std::atomic<bool> done{false};
  int scrapes = 0;
  std::vector<std::string> problems;
  std::thread scraper([&] {
    double last_count = 0;
    double last_total = 0;
    auto check = [&] {
      const std::string text = expose(metrics);
      ++scrapes;
      const double total = sample_value(text, "herd_concurrent_total ");
      const double le_1 = sample_value(text, "herd_concurrent_seconds_bucket{le=\"1\"} ");
      const double le_2 = sample_value(text, "herd_concurrent_seconds_bucket{le=\"2\"} ");
      const double inf = sample_value(text, "herd_concurrent_seconds_bucket{le=\"+Inf\"} ");
      const double sum = sample_value(text, "herd_concurrent_seconds_sum ");
      const double count = sample_value(text, "herd_concurrent_seconds_count ");
      // Every observation is 0.5 or 3, so a consistent snapshot has sum = 0.5*le_1 + 3*(rest).
      const bool consistent = inf == count && le_1 == le_2 && le_2 <= inf &&
                              sum == 0.5 * le_1 + 3.0 * (inf - le_1) && count >= last_count &&
                              total >= last_total;
      if (!consistent && problems.size() < 5)
        problems.push_back(text);
      last_count = count;
      last_total = total;
    };
    while (!done.load())
      check();
    check();
  });

  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < iterations; ++i) {
        steps.increment();
        waits.observe((i + t) % 2 == 0 ? 0.5 : 3.0);
      }
    });
  }
  for (auto& worker : workers)
    worker.join();
  done.store(true);
  scraper.join();

  for (const auto& problem : problems)
    ADD_FAILURE() << "inconsistent scrape:\n" << problem;
  EXPECT_GT(scrapes, 1);
  EXPECT_EQ(steps.value(), double{threads} * iterations);
  const auto snapshot = waits.collect();
  EXPECT_EQ(snapshot.count, observations);
  EXPECT_EQ(snapshot.cumulative_counts,
            (std::vector<std::uint64_t>{observations / 2, observations / 2, observations}));
  EXPECT_EQ(snapshot.sum, (0.5 + 3.0) * static_cast<double>(observations) / 2);
  const std::string text = expose(metrics);
  EXPECT_NE(text.find("herd_concurrent_total 800000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("herd_concurrent_seconds_bucket{le=\"+Inf\"} 800000\n"), std::string::npos);
  EXPECT_NE(text.find("herd_concurrent_seconds_count 800000\n"), std::string::npos);
}

TEST(metrics, promtool_accepts_a_realistic_exposition) {
  const char* promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool))
    GTEST_SKIP() << "promtool is not installed (apt-get install prometheus)";

  registry metrics;
  auto& steps =
      metrics.add_counter("herd_train_steps_total", "Training steps finished.", {{"job", "mnist"}});
  steps.add({{"worker", "0"}}).increment(120);
  steps.add({{"worker", "1"}}).increment(118);
  auto& loss = metrics.add_gauge("herd_train_loss", "Training loss \\ last \"step\".\nPer worker.");
  loss.add({{"model", "a\"b\\c\nd"}}).set(0.25);
  loss.add({{"model", "mlp"}}).set(std::nan(""));
  metrics.add_gauge("herd_learning_rate", "Learning rate.").add({}).set(1e-5);
  metrics.add_gauge("herd_grad_norm_max", "Largest gradient norm.")
      .add({})
      .set(std::numeric_limits<double>::infinity());
  auto& step_time = metrics.add_histogram("herd_step_duration_seconds", "Wall time per step.",
                                          {{"job", "mnist"}});
  auto& compute =
      step_time.add({{"phase", "compute"}}, histogram::exponential_buckets(0.001, 2.5, 10));
  auto& apply = step_time.add({{"phase", "apply"}}, histogram::linear_buckets(0.01, 0.01, 5));
  for (int i = 0; i < 200; ++i) {
    compute.observe(0.0007 * (i + 1));
    apply.observe(0.0003 * i);
  }
  metrics.add_gauge("herd_unused_ratio", "Registered, never set.");
  const std::string text = expose(metrics);

  const auto directory = std::filesystem::temp_directory_path();
  const std::string stem = "herd_metrics_test_" + std::to_string(::getpid());
  const auto input = directory / (stem + ".prom");
  const auto output = directory / (stem + ".out");
  std::ofstream(input) << text;
  const std::string command = std::string(promtool) + " check metrics < '" + input.string() +
                              "' > '" + output.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  std::ostringstream report;
  report << std::ifstream(output).rdbuf();
  std::filesystem::remove(input);
  std::filesystem::remove(output);
  ASSERT_TRUE(WIFEXITED(status)) << command;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "promtool said:\n" << report.str() << "\nabout:\n" << text;
}

} // namespace
