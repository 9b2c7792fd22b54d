// The cost of metrics: the same training job with Prometheus metrics on (registry updated on the
// coordinator, the endpoint served and scraped every second, as a Prometheus server would) and
// off, alternating in this process, several times; prints the median throughput of each and the
// ratio (issue goal: at most 3% overhead).
//
//   bench_metrics [--repetitions=5] [--epochs=2] [--workers=4] [--algorithm=sync]
//                 [--data=fashion-mnist|synthetic]
#include "actors/train_session.hpp"
#include "herd/config.hpp"
#include "herd/metrics.hpp"
#include "monitoring/metrics_endpoint.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "bench/bench_flags.hpp"

namespace {

using namespace herd;

struct options {
  int repetitions = 5;
  int epochs = 2;
  int workers = 4;
  std::string algorithm = "sync";
  std::string data = "fashion-mnist";
};

options parse(int argc, char** argv) {
  options parsed;
  for (int i = 1; i < argc; ++i) {
    const auto [key, value] = herd::bench::split_flag(argv[i]);
    if (key == "--repetitions")
      parsed.repetitions = std::stoi(value);
    else if (key == "--epochs")
      parsed.epochs = std::stoi(value);
    else if (key == "--workers")
      parsed.workers = std::stoi(value);
    else if (key == "--algorithm")
      parsed.algorithm = value;
    else if (key == "--data")
      parsed.data = value;
    else {
      std::cerr << "usage: bench_metrics [--repetitions=N] [--epochs=N] [--workers=P] "
                   "[--algorithm=NAME] [--data=fashion-mnist|synthetic]\n";
      std::exit(2);
    }
  }
  return parsed;
}

// A scrape over a plain socket: what a Prometheus server does every scrape interval.
std::size_t scrape(int port) {
  const int socket = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::size_t bytes = 0;
  if (::connect(socket, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    const std::string request =
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (::write(socket, request.data(), request.size()) > 0) {
      char buffer[65536];
      for (ssize_t got; (got = ::read(socket, buffer, sizeof buffer)) > 0;)
        bytes += static_cast<std::size_t>(got);
    }
  }
  ::close(socket);
  return bytes;
}

double samples_per_second(const config::run_config& config,
                          const std::shared_ptr<const models::train_test_split>& data,
                          bool metrics_on, std::size_t& scraped_bytes) {
  actors::session_options session_options;
  session_options.progress_interval = std::chrono::milliseconds(250);
  std::unique_ptr<monitoring::metrics_endpoint> endpoint;
  std::atomic<bool> done{false};
  std::thread scraper;
  if (metrics_on) {
    session_options.metrics = std::make_shared<monitoring::registry>();
    endpoint = std::make_unique<monitoring::metrics_endpoint>(
        "127.0.0.1", 0,
        [metrics = session_options.metrics] { return monitoring::expose(*metrics); });
    scraper = std::thread([&, port = endpoint->port()] {
      while (!done.load()) {
        scraped_bytes += scrape(port);
        for (int i = 0; i < 20 && !done.load(); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  session_options.blas_threads = actors::blas_threads_for(config, config.train.workers);
  actors::train_session session(config, data, session_options);
  const auto summary = session.run();
  done = true;
  if (scraper.joinable())
    scraper.join();
  return summary.samples_per_second;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace

int main(int argc, char** argv) {
  const options opts = parse(argc, argv);
  config::run_config config;
  config.train.algorithm = opts.algorithm;
  config.train.workers = opts.workers;
  config.train.epochs = opts.epochs;
  config.train.eval_every = 1000000; // no evaluation beside training: measure training alone
  config.data.dataset = opts.data;
  std::shared_ptr<const models::train_test_split> data =
      opts.data == "synthetic"
          ? std::make_shared<models::train_test_split>(
                models::make_synthetic_split(6000, 1000, 784, 10, 1))
          : std::make_shared<models::train_test_split>(models::load_fashion_mnist());
  std::printf("bench_metrics: %s, %d workers, %d epochs of %s, %d alternating repetitions\n",
              opts.algorithm.c_str(), opts.workers, opts.epochs, opts.data.c_str(),
              opts.repetitions);
  std::vector<double> off, on;
  std::size_t scraped_bytes = 0;
  for (int repetition = 0; repetition < opts.repetitions; ++repetition) {
    off.push_back(samples_per_second(config, data, false, scraped_bytes));
    on.push_back(samples_per_second(config, data, true, scraped_bytes));
    std::printf("  repetition %d: off %.0f samples/s, on %.0f samples/s\n", repetition + 1,
                off.back(), on.back());
  }
  const double ratio = median(on) / median(off);
  std::printf("\nmetrics off %.0f samples/s, on %.0f samples/s (medians): on/off = %.3f "
              "(overhead %.1f%%; %zu bytes scraped in all)\n",
              median(off), median(on), ratio, 100.0 * (1.0 - ratio), scraped_bytes);
  return 0;
}
