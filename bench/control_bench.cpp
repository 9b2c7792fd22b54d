// bench_control: the round trip of one control message between a node and the coordinator, the
// way a cluster's messages travel (the node's CAF, the TCP connection the gate admitted, the
// checked scribe, the coordinator's CAF and back), against a plain TCP round trip of a small
// message on the same loopback, measured right before it.
//
//   bench_control [--round-trips=2000] [--warmup=200] [--tls=off,on]
//
// The coordinator is a cluster_session of this process waiting for nodes that never come; the
// "node" is a second actor system in this process connected through the gate, which asks the
// registry for a rendezvous key it refuses to anyone it did not welcome: one request, one answer
// (an error message), the smallest exchange the control plane has. Both actor systems have their
// own threads and meet only through the socket, as two processes would; on one machine they share
// its cores. With --tls=on the coordinator and the node share a certificate signed by a CA made
// for the run (openssl), and every message crosses a TLS session. Prints the median and 90th
// percentile round trip and the median's ratio to plain TCP's. Asserts nothing.
#include "actors/messages.hpp"
#include "herd/dataset.hpp"
#include "herd/run_summary.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "bench/bench_flags.hpp"
#include "cluster/cluster_session.hpp"
#include "cluster/remoting.hpp"
#include "support/test_certificates.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct options {
  int round_trips = 2000;
  int warmup = 200;
  std::vector<bool> tls{false, true};
};

void usage(std::ostream& out) {
  out << "usage: bench_control [--round-trips=2000] [--warmup=200] [--tls=off,on]\n"
         "Times one control message's round trip between a node and the coordinator (through\n"
         "the gate, CAF's remoting and back) against a plain TCP round trip on loopback.\n";
}

options parse(int argc, char** argv) {
  options parsed;
  for (int i = 1; i < argc; ++i) {
    const auto [key, value] = herd::bench::split_flag(argv[i]);
    if (key == "--help" || key == "-h") {
      usage(std::cout);
      std::exit(0);
    } else if (key == "--round-trips") {
      parsed.round_trips = herd::bench::int_flag("bench_control", key, value);
    } else if (key == "--warmup") {
      parsed.warmup = herd::bench::int_flag("bench_control", key, value);
    } else if (key == "--tls") {
      parsed.tls = herd::bench::off_on_list("bench_control", key, value);
    } else {
      usage(std::cerr);
      std::exit(2);
    }
  }
  if (parsed.round_trips < 1 || parsed.warmup < 0) {
    std::cerr << "bench_control: --round-trips must be at least 1, --warmup at least 0\n";
    std::exit(2);
  }
  return parsed;
}

// Sorted copies' value at quantile q.
double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
}

// Plain TCP on loopback, TCP_NODELAY: a thread echoes each 64-byte message; microseconds per
// round trip, one per timed exchange.
std::vector<double> tcp_round_trips(const options& opts) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  socklen_t length = sizeof address;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0)
    throw std::runtime_error("bench_control: cannot listen on loopback");
  const int total = opts.warmup + opts.round_trips;
  constexpr std::size_t size = 64;
  auto move_all = [](int fd, char* data, bool out) {
    for (std::size_t done = 0; done < size;) {
      const auto n =
          out ? ::write(fd, data + done, size - done) : ::read(fd, data + done, size - done);
      if (n <= 0)
        return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  };
  std::thread echo([&] {
    const int connection = ::accept(listener, nullptr, nullptr);
    const int on = 1;
    ::setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    char buffer[size];
    for (int i = 0; i < total; ++i)
      if (!move_all(connection, buffer, false) || !move_all(connection, buffer, true))
        break;
    ::close(connection);
  });
  const int connection = ::socket(AF_INET, SOCK_STREAM, 0);
  const int on = 1;
  ::setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  std::vector<double> micros;
  if (::connect(connection, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    char buffer[size] = {};
    for (int i = 0; i < total; ++i) {
      const auto start = clock_type::now();
      if (!move_all(connection, buffer, true) || !move_all(connection, buffer, false))
        break;
      if (i >= opts.warmup)
        micros.push_back(
            std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
    }
  }
  ::close(connection);
  echo.join();
  ::close(listener);
  if (micros.empty())
    throw std::runtime_error("bench_control: the plain TCP round trips failed");
  return micros;
}

// The control plane: a coordinator waiting for nodes, and a node's actor system connected to it
// through the gate; microseconds per request and answer.
std::vector<double> control_round_trips(const options& opts, bool tls) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("herd-bench-control-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  herd::config::run_config config;
  if (tls) {
    if (!herd::testing::make_certificate_authority(dir.string(), "ca") ||
        !herd::testing::make_signed_certificate(dir.string(), "member", "ca"))
      throw std::runtime_error("bench_control: openssl could not make the certificates");
    config.cluster.tls_ca = (dir / "ca.pem").string();
    config.cluster.tls_cert = (dir / "member.pem").string();
    config.cluster.tls_key = (dir / "member.key").string();
  }
  config.train.workers = 2;
  config.data.dataset = "synthetic";
  config.cluster.min_nodes = 2;
  herd::cluster::cluster_options cluster_options;
  cluster_options.listen_host = "127.0.0.1";
  herd::cluster::cluster_session coordinator(
      config,
      std::make_shared<herd::models::train_test_split>(
          herd::models::make_synthetic_split(64, 16, 24, 5, 3)),
      cluster_options);
  std::vector<double> micros;
  {
    caf::actor_system_config node_config;
    herd::cluster::configure_remoting(node_config, config.cluster);
    caf::actor_system node(node_config);
    herd::cluster::gate_dialer gate("127.0.0.1", coordinator.port(),
                                    herd::cluster::gate_settings_of(config.cluster));
    herd::cluster::gate_connection outcome;
    const auto registry = herd::cluster::remote_through_gate(node, gate, outcome, 10s);
    if (!registry)
      throw std::runtime_error("bench_control: the node could not connect: " + outcome.why);
    caf::scoped_actor self{node};
    for (int i = 0; i < opts.warmup + opts.round_trips; ++i) {
      const auto start = clock_type::now();
      bool answered = false;
      self->request(registry, 10s, herd::actors::store_peek_atom::value, std::string("key"))
          .receive([&](bool, const herd::actors::wire_bytes&) { answered = true; },
                   [&](caf::error& refused) {
                     // The registry refuses a process it did not welcome: the answer we time.
                     answered = refused != caf::make_error(caf::sec::request_timeout);
                   });
      if (!answered)
        throw std::runtime_error("bench_control: the registry did not answer in 10 s");
      if (i >= opts.warmup)
        micros.push_back(
            std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
    }
  }
  coordinator.request_stop();
  coordinator.wait_for(30s);
  std::filesystem::remove_all(dir);
  return micros;
}

} // namespace

int main(int argc, char** argv) {
  const auto opts = parse(argc, argv);
  std::printf("bench_control: %d round trips after %d warm-up, %u cores on this host\n",
              opts.round_trips, opts.warmup, std::thread::hardware_concurrency());
  std::printf("%-14s %12s %12s %14s %11s\n", "control plane", "median_us", "p90_us",
              "tcp_median_us", "vs_tcp");
  try {
    for (bool tls : opts.tls) {
      // For some 100 ms after a coordinator and a node shut down, this host's loopback round
      // trips take twice as long (measured: 11 us, then 27 us, then 11 us again after 300 ms);
      // each measurement starts on a settled machine.
      std::this_thread::sleep_for(300ms);
      const auto tcp = tcp_round_trips(opts);
      const auto control = control_round_trips(opts, tls);
      const double tcp_median = quantile(tcp, 0.5);
      const double median = quantile(control, 0.5);
      std::printf("%-14s %12.1f %12.1f %14.1f %10.1fx\n", tls ? "tls" : "clear", median,
                  quantile(control, 0.9), tcp_median, median / tcp_median);
      std::fflush(stdout);
    }
  } catch (const std::exception& failure) {
    std::cerr << failure.what() << "\n";
    return 1;
  }
  return 0;
}
