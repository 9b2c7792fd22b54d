// The metrics end to end against the real thing: a running `herd train` (one worker slowed
// three times) and a `herd coordinator` waiting for nodes are scraped by a real Prometheus
// server, started here on a free loopback port with its own config and data directory. Every query of every panel of the shipped Grafana dashboard
// must return data through Prometheus's HTTP API, the straggler score must name the slowed worker,
// the live exposition must pass `promtool check metrics`, and the alert rules `promtool check
// rules`. Needs Debian's prometheus package (scripts/install-deps.sh installs it).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <regex>
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
  return query;
}

std::string status_of(const nlohmann::json& answer) {
  const auto status = answer.find("status");
  return status != answer.end() && status->is_string() ? status->get_ref<const std::string&>()
                                                       : "none";
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
       "--metrics.port=" + std::to_string(herd_port)},
      dir.file("herd.log"));
  httplib::Client endpoint("127.0.0.1", herd_port);
  endpoint.set_connection_timeout(2);
  endpoint.set_read_timeout(5);
  auto scrape = endpoint.Get("/metrics");
  // Up to 30 s for herd to start serving (under a heavy load its start took more than 10 s).
  for (int attempt = 0; attempt < 300 && !scrape; ++attempt) {
    std::this_thread::sleep_for(100ms);
    scrape = endpoint.Get("/metrics");
  }
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
  background_process coordinator(
      {HERD_BINARY, "coordinator", "--listen", "127.0.0.1:0", "--data.dataset=synthetic",
       "--cluster.min-nodes=2", "--metrics.job=herd-e2e-cluster",
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

  // The straggler is named: worker 1 well above, everyone else near 1.
  const auto scores = query(server, R"(herd_worker_straggler_score{job="herd-e2e"})");
  ASSERT_EQ(status_of(scores), "success") << scores;
  const auto& result = scores.at("data").at("result");
  ASSERT_EQ(result.size(), 4u) << scores;
  for (const auto& series : result) {
    const auto& worker = series.at("metric").at("worker").get_ref<const std::string&>();
    const double score = std::stod(series.at("value").at(1).get_ref<const std::string&>());
    if (worker == "1")
      EXPECT_GT(score, 1.5) << scores;
    else
      EXPECT_LT(score, 1.2) << "worker " << worker << ": " << scores;
  }

  herd.stop(SIGINT, 30s);
  EXPECT_NE(herd.output().find("Herd run summary"), std::string::npos) << herd.output();
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
