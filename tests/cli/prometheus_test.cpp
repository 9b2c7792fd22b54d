// The metrics end to end against the real thing: a running `herd train` (one worker slowed
// three times) and a `herd coordinator` waiting for nodes are scraped by a real Prometheus
// server, started here on a free loopback port with its own config and data directory. Every query of every panel of the shipped Grafana dashboard
// must return data through Prometheus's HTTP API, the straggler score must name the slowed worker,
// the live exposition must pass `promtool check metrics`, and the alert rules `promtool check
// rules`. Needs Debian's prometheus package (scripts/install-deps.sh installs it).
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <httplib.h>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "support/background_process.hpp"
#include "support/subprocess.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::testing::background_process;
using herd::testing::run_process;
using namespace std::chrono_literals;

bool tools_present() {
  return std::filesystem::exists("/usr/bin/prometheus") &&
         std::filesystem::exists("/usr/bin/promtool");
}

#define REQUIRE_PROMETHEUS()                                                                       \
  do {                                                                                             \
    if (!tools_present()) {                                                                        \
      if (std::getenv("HERD_REQUIRE_PROMETHEUS") != nullptr)                                       \
        FAIL() << "prometheus is not installed: apt-get install prometheus";                       \
      GTEST_SKIP() << "prometheus is not installed: apt-get install prometheus";                   \
    }                                                                                              \
  } while (false)

// Every panel query of the dashboard, nested rows included.
void collect_queries(const nlohmann::json& panels, std::vector<std::string>& queries) {
  for (const auto& panel : panels) {
    if (panel.contains("panels"))
      collect_queries(panel.at("panels"), queries);
    if (!panel.contains("targets"))
      continue;
    const auto title = panel.find("title");
    const std::string name =
        title != panel.end() && title->is_string() ? title->get_ref<const std::string&>() : "";
    for (const auto& target : panel.at("targets"))
      if (target.contains("expr"))
        queries.push_back(name + "\t" + target.at("expr").get_ref<const std::string&>());
  }
}

// Grafana's variables as Grafana would fill them for this job.
std::string substitute(std::string query) {
  query = std::regex_replace(query, std::regex(R"(\$__rate_interval)"), "10s");
  query = std::regex_replace(query, std::regex(R"(\$__interval)"), "5s");
  query = std::regex_replace(query, std::regex(R"(\$__range)"), "30s");
  // Both jobs of the test: the training run's and the waiting coordinator's.
  query = std::regex_replace(query, std::regex(R"(\$\{?job\}?)"), "herd-e2e.*");
  query = std::regex_replace(query, std::regex(R"(\$\{?instance\}?)"), ".*"); // All
  return query;
}

std::string status_of(const nlohmann::json& answer) {
  const auto status = answer.find("status");
  return status != answer.end() && status->is_string() ? status->get_ref<const std::string&>()
                                                       : "none";
}

// The first answer of a starting herd's endpoint: up to 30 s for it to start serving (under a
// heavy load its start took more than 10 s).
auto first_scrape(httplib::Client& endpoint) {
  auto scrape = endpoint.Get("/metrics");
  for (int attempt = 0; attempt < 300 && !scrape; ++attempt) {
    std::this_thread::sleep_for(100ms);
    scrape = endpoint.Get("/metrics");
  }
  return scrape;
}

// A file's text with every run of white space as one space (a YAML rule folded over lines).
std::string collapsed_text(const std::string& path) {
  std::ifstream file(path);
  std::string text;
  for (std::string word; file >> word;)
    text += (text.empty() ? "" : " ") + word;
  return text;
}

// The expression of alert `name` in the rules file, its white space collapsed: the folded block
// after its `expr: >-`, up to its `for:`.
std::string alert_expression(const std::string& name) {
  const auto rules =
      collapsed_text(std::string(HERD_MONITORING_DIR) + "/prometheus/herd-alerts.yml");
  const auto alert = rules.find("- alert: " + name + " ");
  const std::string opening = "expr: >- ";
  const auto begin = rules.find(opening, alert);
  const auto end = rules.find(" for: ", begin);
  if (alert == std::string::npos || begin == std::string::npos || end == std::string::npos)
    return {};
  return rules.substr(begin + opening.size(), end - begin - opening.size());
}

nlohmann::json query(httplib::Client& prometheus, const std::string& promql) {
  auto response =
      prometheus.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
  if (!response)
    return {{"status", "no response"}};
  return nlohmann::json::parse(response->body, nullptr, false);
}

TEST(prometheus, a_real_server_scrapes_herd_and_every_dashboard_query_returns_data) {
  REQUIRE_PROMETHEUS();
  herd::testing::temp_directory dir;
  const int herd_port = herd::testing::free_loopback_port();
  const int prometheus_port = herd::testing::free_loopback_port();

  background_process herd(
      {HERD_BINARY, "train", "--data.dataset=synthetic", "--train.workers=4", "--model.hidden=[64]",
       "--train.epochs=1000", "--train.max-seconds=60", "--train.eval-every=50",
       "--train.algorithm=solo", "--imbalance.kind=persistent", "--imbalance.workers=[1]",
       "--imbalance.factor=3", "--metrics.job=herd-e2e", "--metrics.window-seconds=5",
       "--checkpoint.dir=" + dir.file("checkpoints"), "--checkpoint.every-seconds=2",
       "--metrics.port=" + std::to_string(herd_port)},
      dir.file("herd.log"));
  httplib::Client endpoint("127.0.0.1", herd_port);
  endpoint.set_connection_timeout(2);
  endpoint.set_read_timeout(5);
  auto scrape = first_scrape(endpoint);
  ASSERT_TRUE(scrape) << herd.output();
  ASSERT_EQ(scrape->status, 200);
  EXPECT_NE(scrape->get_header_value("Content-Type").find("version=0.0.4"), std::string::npos);

  // Bad requests while it trains: answered, and training goes on.
  EXPECT_EQ(endpoint.Get("/")->status, 404);
  EXPECT_EQ(endpoint.Get("/metrics/../etc/passwd")->status, 404);
  httplib::Headers huge{{"X-Filler", std::string(std::size_t{256} * 1024, 'x')}};
  auto refused = endpoint.Get("/metrics", huge);
  EXPECT_TRUE(!refused || refused->status >= 400);

  // The live exposition passes promtool.
  std::this_thread::sleep_for(2s);
  scrape = endpoint.Get("/metrics");
  ASSERT_TRUE(scrape);
  {
    std::ofstream(dir.file("live.prom")) << scrape->body;
    const auto checked = run_process(
        {"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + dir.file("live.prom")});
    EXPECT_EQ(checked.exit_code, 0) << checked.output << "\n" << scrape->body;
  }

  // A coordinator waiting for nodes that never come: the dashboard's cluster panel reads it.
  const int coordinator_port = herd::testing::free_loopback_port();
  background_process coordinator({HERD_BINARY, "coordinator", "--listen", "127.0.0.1:0",
                                  "--data.dataset=synthetic", "--cluster.min-nodes=2",
                                  "--metrics.job=herd-e2e-cluster", "--metrics.linger-seconds=0",
                                  "--metrics.port=" + std::to_string(coordinator_port)},
                                 dir.file("coordinator.log"));

  // A real Prometheus scrapes both every second.
  std::filesystem::create_directories(dir.file("data"));
  std::ofstream(dir.file("prometheus.yml"))
      << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      << "scrape_configs:\n  - job_name: herd\n    honor_labels: true\n"
      << "    static_configs:\n      - targets: ['127.0.0.1:" << herd_port << "', '127.0.0.1:"
      << coordinator_port << "']\n";
  background_process prometheus(
      {"/usr/bin/prometheus", "--config.file=" + dir.file("prometheus.yml"),
       "--storage.tsdb.path=" + dir.file("data"),
       "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port)},
      dir.file("prometheus.log"));
  httplib::Client server("127.0.0.1", prometheus_port);
  server.set_read_timeout(10);
  // Enough scrapes for rates over 10 s windows, and for the 5 s straggler window to fill.
  std::this_thread::sleep_for(15s);
  ASSERT_TRUE(herd.running()) << "training ended early:\n" << herd.output();
  ASSERT_TRUE(coordinator.running()) << coordinator.output();
  ASSERT_TRUE(prometheus.running()) << prometheus.output();

  std::ifstream dashboard_file(std::string(HERD_MONITORING_DIR) + "/grafana/herd-imbalance.json");
  ASSERT_TRUE(dashboard_file.good());
  const auto dashboard = nlohmann::json::parse(dashboard_file);
  std::vector<std::string> queries;
  collect_queries(dashboard.at("panels"), queries);
  ASSERT_GE(queries.size(), 12u);
  for (const auto& entry : queries) {
    const auto tab = entry.find('\t');
    const std::string title = entry.substr(0, tab);
    const std::string promql = substitute(entry.substr(tab + 1));
    const auto answer = query(server, promql);
    ASSERT_EQ(status_of(answer), "success") << title << ": " << promql << "\n" << answer;
    EXPECT_FALSE(answer.at("data").at("result").empty())
        << "panel '" << title << "' has no data: " << promql;
  }

  // The job variable's selector (label_values(SELECTOR, job)) lists both jobs, as Grafana asks:
  // the waiting coordinator's too, which has no worker yet.
  for (const auto& variable : dashboard.at("templating").at("list")) {
    if (variable.at("name") != "job")
      continue;
    std::smatch parts;
    const std::string definition = variable.at("query");
    ASSERT_TRUE(std::regex_match(definition, parts, std::regex(R"(label_values\((.*), job\))")))
        << definition;
    auto values = server.Get("/api/v1/label/job/values",
                             httplib::Params{{"match[]", parts[1].str()}}, httplib::Headers{});
    ASSERT_TRUE(values);
    EXPECT_NE(values->body.find("\"herd-e2e\""), std::string::npos) << values->body;
    EXPECT_NE(values->body.find("\"herd-e2e-cluster\""), std::string::npos) << values->body;
  }

  // The straggler is named: worker 1 (3 times slower) well above 1, and above twice any other's.
  // The others stay under HerdStraggler's 2, though not always near 1: with 4 workers, a
  // coordinator and Prometheus on 2 busy cores, an unslowed worker's score was seen at 1.26.
  const auto scores = query(server, R"(herd_worker_straggler_score{job="herd-e2e"})");
  ASSERT_EQ(status_of(scores), "success") << scores;
  const auto& result = scores.at("data").at("result");
  ASSERT_EQ(result.size(), 4u) << scores;
  std::map<std::string, double> score_of;
  for (const auto& series : result)
    score_of[series.at("metric").at("worker").get<std::string>()] =
        std::stod(series.at("value").at(1).get_ref<const std::string&>());
  ASSERT_EQ(score_of.count("1"), 1u) << scores;
  EXPECT_GT(score_of["1"], 1.5) << scores;
  for (const auto& [worker, score] : score_of)
    if (worker != "1") {
      EXPECT_LT(score, 2.0) << "worker " << worker << ": " << scores;
      EXPECT_LT(2.0 * score, score_of["1"]) << "worker " << worker << ": " << scores;
    }

  // Stopped, the run says it ended (herd_run_finished) while its endpoint lingers, and once the
  // process is gone, HerdProcessDown's expression, as the rules file has it, pages for nothing.
  ::kill(herd.pid(), SIGINT);
  ASSERT_TRUE(herd.wait_for_output("serving the final metrics", 30s)) << herd.output();
  EXPECT_NE(herd.output().find("Herd run summary"), std::string::npos) << herd.output();
  std::this_thread::sleep_for(3s); // a few scrapes of the finished run
  const auto finished = query(server, R"(herd_run_finished{job="herd-e2e"})");
  ASSERT_EQ(status_of(finished), "success") << finished;
  ASSERT_EQ(finished.at("data").at("result").size(), 1u) << finished;
  EXPECT_EQ(finished.at("data").at("result").at(0).at("value").at(1), "1") << finished;
  ::kill(herd.pid(), SIGINT); // ends the lingering at once: no "aborted", status 130 as before
  EXPECT_EQ(herd.wait(5s), 130) << herd.output();
  EXPECT_EQ(herd.output().find("aborted by a second"), std::string::npos) << herd.output();
  const std::string target = "127.0.0.1:" + std::to_string(herd_port);
  const std::string process_down = alert_expression("HerdProcessDown");
  ASSERT_NE(process_down.find("up{job=\"herd\"} == 0"), std::string::npos) << process_down;
  std::this_thread::sleep_for(3s); // scrapes that fail
  const auto down = query(server, "up{instance=\"" + target + "\"} == 0");
  ASSERT_EQ(status_of(down), "success") << down;
  EXPECT_EQ(down.at("data").at("result").size(), 1u) << "the process is gone: " << down;
  const auto paged = query(server, process_down);
  ASSERT_EQ(status_of(paged), "success") << paged;
  for (const auto& series : paged.at("data").at("result"))
    EXPECT_NE(series.at("metric").at("instance"), target) << paged;
}

// Without Prometheus: a run that ends serves herd_run_finished = 1 for metrics.linger-seconds,
// and a stop signal ends that wait, the first one as the second, with the run's own status.
TEST(prometheus, a_finished_run_says_so_while_its_endpoint_lingers) {
  herd::testing::temp_directory dir;
  const int port = herd::testing::free_loopback_port();
  background_process herd({HERD_BINARY, "train", "--data.dataset=synthetic", "--train.workers=2",
                           "--model.hidden=[16]", "--train.epochs=1000", "--train.max-seconds=4",
                           "--metrics.job=herd-linger", "--metrics.linger-seconds=60",
                           "--metrics.port=" + std::to_string(port), "--report",
                           dir.file("report.json")},
                          dir.file("herd.log"));
  httplib::Client endpoint("127.0.0.1", port);
  endpoint.set_connection_timeout(2);
  auto scrape = first_scrape(endpoint);
  ASSERT_TRUE(scrape) << herd.output();
  EXPECT_NE(scrape->body.find("herd_run_finished{job=\"herd-linger\"} 0"), std::string::npos)
      << scrape->body;
  ASSERT_TRUE(herd.wait_for_output("serving the final metrics 60 s more", 60s)) << herd.output();
  scrape = endpoint.Get("/metrics");
  ASSERT_TRUE(scrape) << herd.output();
  EXPECT_NE(scrape->body.find("herd_run_finished{job=\"herd-linger\"} 1"), std::string::npos)
      << scrape->body;
  // Every series is still there, at its final value: the last scrape sees the end of the run.
  std::ifstream report_file(dir.file("report.json"));
  const auto report = nlohmann::json::parse(report_file);
  std::smatch applied;
  ASSERT_TRUE(
      std::regex_search(scrape->body, applied,
                        std::regex(R"(herd_samples_applied_total\{job="herd-linger"\} (\S+))")))
      << scrape->body;
  EXPECT_EQ(std::stod(applied[1].str()), report["samples"].get<double>()) << scrape->body;
  EXPECT_NE(scrape->body.find("herd_worker_up{job=\"herd-linger\""), std::string::npos)
      << scrape->body;
  EXPECT_TRUE(herd.running());
  ::kill(herd.pid(), SIGTERM);
  EXPECT_EQ(herd.wait(5s), 0) << herd.output(); // the run reached train.max-seconds
}

// The dashboard as Grafana lays it out: sections as rows in the order docs/metrics.md lists them,
// every panel under one, no two panels on the same cell, every id once.
TEST(prometheus, the_dashboards_sections_are_rows_and_its_panels_do_not_overlap) {
  std::ifstream file(std::string(HERD_MONITORING_DIR) + "/grafana/herd-imbalance.json");
  const auto dashboard = nlohmann::json::parse(file);
  std::vector<std::string> rows;
  std::set<int> ids;
  std::set<std::pair<int, int>> cells;
  for (const auto& panel : dashboard.at("panels")) {
    const int id = panel.at("id");
    EXPECT_TRUE(ids.insert(id).second) << "panel id " << id << " twice";
    if (panel.at("type") == "row")
      rows.push_back(panel.at("title"));
    else
      EXPECT_FALSE(rows.empty()) << "panel " << id << " comes before the first row";
    const auto& at = panel.at("gridPos");
    for (int x = at.at("x"); x < at.at("x").get<int>() + at.at("w").get<int>(); ++x)
      for (int y = at.at("y"); y < at.at("y").get<int>() + at.at("h").get<int>(); ++y)
        EXPECT_TRUE(cells.insert({x, y}).second)
            << "panel " << id << " overlaps at " << x << "," << y;
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"Overview", "Stragglers", "Rounds", "Data plane",
                                            "Progress", "Cluster", "Processes"}));
}

TEST(prometheus, the_alert_rules_and_scrape_config_pass_promtool) {
  REQUIRE_PROMETHEUS();
  const std::string dir = std::string(HERD_MONITORING_DIR) + "/prometheus";
  const auto rules = run_process({"/usr/bin/promtool", "check", "rules", dir + "/herd-alerts.yml"});
  EXPECT_EQ(rules.exit_code, 0) << rules.output;
  const auto config = run_process(
      {"/bin/sh", "-c", "cd " + dir + " && /usr/bin/promtool check config prometheus.yml"});
  EXPECT_EQ(config.exit_code, 0) << config.output;
  // The rules' own unit tests: series in, alerts (or none) out.
  const auto tests = run_process(
      {"/bin/sh", "-c", "cd " + dir + " && /usr/bin/promtool test rules herd-alerts-test.yml"});
  EXPECT_EQ(tests.exit_code, 0) << tests.output;
}

} // namespace
