// A fuzz test of the coordinator's gate with a real coordinator and nodes (processes): while a
// seeded fuzzer sends thousands of random and mutated inputs at every stage of the gate protocol
// (before, inside and after the preamble; with and without the right token; with and without
// TLS; the red-team trial's two payloads among them), a synchronous job trains to its end, and
// its result is bit for bit the result of the same job without the fuzzer.
#include "actors/messages.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/io/basp_broker.hpp>

#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <random>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "cluster/control_gate.hpp"
#include "cluster/remoting.hpp"
#include "support/background_process.hpp"
#include "support/temp_directory.hpp"
#include "support/test_certificates.hpp"

namespace {

using herd::cluster::gate_clock;
using herd::cluster::gate_link;
using herd::cluster::tls_context;
using herd::cluster::tls_files;
using herd::testing::background_process;
using herd::testing::temp_directory;
using namespace std::chrono_literals;

// -- the job ----------------------------------------------------------------------------------

const std::vector<std::string> job_settings{"--data.dataset=synthetic", "--train.algorithm=sync",
                                            "--train.epochs=12", "--train.eval-every=100000",
                                            "--cluster.min-nodes=2"};

struct job_result {
  int coordinator_status = -1;
  std::vector<int> node_status;
  nlohmann::json report;
  std::string logs;
};

// Runs the job (a coordinator and two one-worker nodes); `during` runs on this thread once every
// node is ready, with the coordinator's port, while the job trains.
job_result run_job(const temp_directory& dir, const std::string& name,
                   const std::vector<std::string>& cluster_settings,
                   const std::function<void(int)>& during) {
  const int port = herd::testing::free_loopback_port();
  const std::string report = dir.file(name + "-report.json");
  std::vector<std::string> argv{HERD_BINARY, "coordinator",
                                "--listen",  "127.0.0.1:" + std::to_string(port),
                                "--report",  report};
  argv.insert(argv.end(), job_settings.begin(), job_settings.end());
  argv.insert(argv.end(), cluster_settings.begin(), cluster_settings.end());
  background_process coordinator(argv, dir.file(name + "-coordinator.log"));
  std::vector<std::unique_ptr<background_process>> nodes;
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> node{HERD_BINARY,     "node",
                                  "--coordinator", "127.0.0.1:" + std::to_string(port),
                                  "--name",        "node" + std::to_string(i)};
    node.insert(node.end(), cluster_settings.begin(), cluster_settings.end());
    nodes.push_back(std::make_unique<background_process>(
        node, dir.file(name + "-node" + std::to_string(i) + ".log")));
  }
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline &&
         (coordinator.output().find("(node0) ready") == std::string::npos ||
          coordinator.output().find("(node1) ready") == std::string::npos))
    std::this_thread::sleep_for(20ms);
  if (during)
    during(port);
  job_result result;
  result.coordinator_status = coordinator.wait(10min).value_or(-1);
  for (auto& node : nodes)
    result.node_status.push_back(node->wait(60s).value_or(-1));
  std::ifstream in(report);
  if (in.good())
    result.report = nlohmann::json::parse(in, nullptr, false);
  result.logs = "--- coordinator:\n" + coordinator.output();
  for (std::size_t i = 0; i < nodes.size(); ++i)
    result.logs += "--- node " + std::to_string(i) + ":\n" + nodes[i]->output();
  return result;
}

// -- bytes ------------------------------------------------------------------------------------

void put_big_endian(std::string& out, std::uint64_t value, int bytes) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((value >> shift) & 0xff));
}

std::uint64_t read_big_endian(const char* bytes, int count) {
  std::uint64_t value = 0;
  for (int i = 0; i < count; ++i)
    value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

std::string frame(unsigned char operation, const std::string& payload, std::uint64_t operation_data,
                  std::uint64_t source_actor, std::uint64_t dest_actor) {
  std::string bytes{static_cast<char>(operation), 0, 0, 0};
  put_big_endian(bytes, payload.size(), 4);
  put_big_endian(bytes, operation_data, 8);
  put_big_endian(bytes, source_actor, 8);
  put_big_endian(bytes, dest_actor, 8);
  return bytes + payload;
}

std::string preamble(const std::string& token,
                     std::uint32_t version = herd::actors::cluster_protocol_version) {
  std::string bytes = "HERDGATE";
  put_big_endian(bytes, version, 4);
  put_big_endian(bytes, token.size(), 2);
  return bytes + token;
}

// The red-team trial's first payload: a client handshake header that announces no payload.
const std::string empty_handshake = std::string(1, '\x01') + std::string(31, '\0');

// -- the fuzzer -------------------------------------------------------------------------------

// What CAF itself writes first on a connection: a real client handshake (with this process's
// node id), captured from a socketpair, so that mutations start from the real protocol.
std::string captured_client_handshake(caf::actor_system& system) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0)
    return {};
  auto scribe = system.middleman().backend().new_scribe(ends[0]);
  auto broker = system.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::anon_send(broker, caf::connect_atom::value, std::move(scribe), std::uint16_t{1});
  timeval limit{10, 0};
  ::setsockopt(ends[1], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  std::string bytes(32, '\0');
  if (::recv(ends[1], bytes.data(), 32, MSG_WAITALL) != 32) {
    ::close(ends[1]);
    return {};
  }
  std::string payload(read_big_endian(bytes.data() + 4, 4), '\0');
  ::recv(ends[1], payload.data(), payload.size(), MSG_WAITALL);
  ::close(ends[1]);
  return bytes + payload;
}

class gate_fuzzer {
public:
  gate_fuzzer(caf::actor_system& system, int port, std::string token, const tls_files* tls,
              unsigned seed)
      : system_(system), port_(port), token_(std::move(token)), generator_(seed),
        handshake_(captured_client_handshake(system)) {
    if (tls != nullptr)
      tls_ = std::make_unique<tls_context>(tls_context::side::client, *tls);
  }

  bool has_handshake() const { return handshake_.size() > 32; }

  // Sends inputs until `count` of them reached a listening gate, or `limit` passed, or the gate
  // has gone (the job ended).
  void run(int count, std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (delivered_ < count && std::chrono::steady_clock::now() < deadline &&
           refused_in_a_row_ < 200)
      one();
  }

  int delivered() const { return delivered_; }
  const std::map<std::string, int>& kinds() const { return kinds_; }

private:
  std::size_t below(std::size_t bound) { return generator_() % bound; }

  std::string random_bytes(std::size_t size) {
    std::string bytes(size, '\0');
    for (auto& byte : bytes)
      byte = static_cast<char>(generator_());
    return bytes;
  }

  std::string flip_bits(std::string bytes, std::size_t from = 0) {
    if (bytes.size() <= from)
      return bytes;
    const std::size_t flips = 1 + below(8);
    for (std::size_t i = 0; i < flips; ++i)
      bytes[from + below(bytes.size() - from)] ^= static_cast<char>(1u << below(8));
    return bytes;
  }

  std::string mutate(std::string bytes, std::size_t from = 0) {
    switch (below(4)) {
    case 0:
      return flip_bits(std::move(bytes), from);
    case 1:
      return bytes.substr(0, below(bytes.size() + 1));
    case 2:
      return bytes + random_bytes(1 + below(64));
    default:
      return bytes + bytes;
    }
  }

  void count(const std::string& kind) {
    ++kinds_[kind];
    ++delivered_;
  }

  int connect_gate() {
    const int sock = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(sock);
      ++refused_in_a_row_;
      std::this_thread::sleep_for(5ms);
      return -1;
    }
    refused_in_a_row_ = 0;
    return sock;
  }

  // One connection, one input.
  void one() {
    const int sock = connect_gate();
    if (sock < 0)
      return;
    const auto deadline = gate_clock::now() + 3s;
    if (tls_ && below(5) == 0) {
      // Plain bytes to a TLS gate: the red-team trial's second payload and others.
      gate_link plain(sock, nullptr);
      const std::string bytes = below(3) == 0   ? std::string(32, '\0')
                                : below(2) == 0 ? preamble(token_) + empty_handshake
                                                : random_bytes(below(600));
      plain.write_all(bytes.data(), bytes.size(), deadline);
      count("plain bytes to TLS");
      return;
    }
    gate_link link(sock, tls_.get());
    if (!link.handshake(deadline).ok())
      return; // the gate is busy or going: not an input it saw
    switch (below(10)) {
    case 0:
    case 1:
    case 2:
      before_preamble(link, deadline);
      break;
    case 3:
    case 4:
      inside_preamble(link, deadline);
      break;
    default:
      after_preamble(link, deadline);
    }
    link.close_gracefully();
  }

  void before_preamble(gate_link& link, gate_clock::time_point deadline) {
    std::string bytes;
    switch (below(3)) {
    case 0:
      bytes = random_bytes(below(2048));
      break;
    case 1:
      bytes = std::string("HERDGATE").substr(0, 1 + below(8)) + random_bytes(below(64));
      break;
    default:
      bytes = handshake_; // CAF's own handshake, without the gate's preamble
    }
    link.write_all(bytes.data(), bytes.size(), deadline);
    count("before the preamble");
  }

  void inside_preamble(gate_link& link, gate_clock::time_point deadline) {
    std::string bytes;
    switch (below(5)) {
    case 0:
      bytes = preamble(token_, static_cast<std::uint32_t>(generator_()));
      break;
    case 1: {
      bytes = preamble(token_);
      bytes[12] = static_cast<char>(0xff); // a token length of 65,000 and more
      break;
    }
    case 2:
      bytes = preamble(token_ + "x");
      break;
    case 3:
      bytes = preamble(token_).substr(0, 8 + below(6 + token_.size()));
      break;
    default:
      bytes = mutate(preamble(token_), 8);
    }
    link.write_all(bytes.data(), bytes.size(), deadline);
    count("inside the preamble");
  }

  // Authenticated: what CAF would read, mutated.
  void after_preamble(gate_link& link, gate_clock::time_point deadline) {
    const auto hello = preamble(token_);
    char answer = 0;
    if (!link.write_all(hello.data(), hello.size(), deadline) ||
        !link.read_exactly(&answer, 1, deadline) || answer != 'A')
      return;
    std::string bytes;
    switch (below(6)) {
    case 0:
      bytes = empty_handshake;
      count("after: the empty handshake");
      break;
    case 1:
      bytes = random_bytes(below(4096));
      count("after: random bytes");
      break;
    case 2:
      bytes = flip_bits(handshake_.substr(0, 32)) + handshake_.substr(32);
      count("after: mutated handshake header");
      break;
    case 3:
      bytes = mutate(handshake_, 32);
      count("after: mutated handshake payload");
      break;
    default:
      messages_after_handshake(link, deadline);
      count("after: messages to the coordinator's actors");
      return;
    }
    link.write_all(bytes.data(), bytes.size(), deadline);
  }

  // A whole CAF handshake, then direct, routed, monitor and down messages with serialized Herd
  // messages (mutated) or random payloads, to the published actor and to other actor ids.
  void messages_after_handshake(gate_link& link, gate_clock::time_point deadline) {
    link.write_all(handshake_.data(), handshake_.size(), deadline);
    char head[32];
    std::uint64_t published = 1;
    if (link.read_exactly(head, sizeof head, deadline)) {
      std::vector<char> payload(read_big_endian(head + 4, 4));
      if (payload.size() < (1u << 20) &&
          link.read_exactly(payload.data(), payload.size(), deadline)) {
        caf::binary_deserializer source{system_, payload};
        caf::node_id node;
        std::vector<std::string> app_ids;
        caf::actor_id actor = 0;
        std::set<std::string> signatures;
        if (!source(node, app_ids, actor, signatures))
          published = actor;
      }
    }
    std::string stream;
    for (std::size_t i = 0, n = 1 + below(6); i < n; ++i) {
      const std::uint64_t target = below(3) == 0 ? 1 + below(64) : published;
      std::string payload = below(3) == 0 ? random_bytes(1 + below(512)) : serialized_message();
      if (below(2) == 0)
        payload = mutate(payload);
      if (payload.empty())
        payload = "x";
      const unsigned char operation = static_cast<unsigned char>(2 + below(4)); // 2..5
      stream += frame(operation, payload, 0, operation == 5 ? 1 + below(9) : below(9),
                      operation == 5 ? 0 : target);
      if (below(4) == 0)
        stream += frame(6, "", 0, 0, 0); // a heartbeat
    }
    link.write_all(stream.data(), stream.size(), deadline);
  }

  // The payload of a direct message (forwarding stack, message) holding one of the messages a
  // node sends the coordinator's registry.
  std::string serialized_message() {
    caf::message message;
    switch (below(3)) {
    case 0:
      message = caf::make_message(herd::actors::store_get_atom::value,
                                  std::string("herd-job/0/") + random_bytes(4));
      break;
    case 1: {
      herd::actors::node_hello hello;
      hello.protocol = herd::actors::cluster_protocol_version;
      hello.name = "fuzz";
      hello.workers = 1 + static_cast<int>(below(4));
      hello.data_host = "127.0.0.1";
      hello.heartbeat_ms = herd::config::cluster_section{}.heartbeat_ms; // admitted: the defaults
      hello.node_timeout_ms = herd::config::cluster_section{}.node_timeout_ms;
      message = caf::make_message(hello);
      break;
    }
    default:
      message = caf::make_message(herd::actors::store_set_atom::value, std::string("k"),
                                  herd::actors::wire_bytes{std::vector<char>(below(64), 'v')});
    }
    std::vector<char> buffer;
    caf::binary_serializer sink{system_, buffer};
    std::vector<caf::strong_actor_ptr> stack;
    if (sink(stack, message))
      return {};
    return std::string(buffer.begin(), buffer.end());
  }

  caf::actor_system& system_;
  int port_;
  std::string token_;
  std::mt19937_64 generator_;
  std::string handshake_;
  std::unique_ptr<tls_context> tls_;
  int delivered_ = 0;
  int refused_in_a_row_ = 0;
  std::map<std::string, int> kinds_;
};

std::string describe(const std::map<std::string, int>& kinds) {
  std::string text;
  for (const auto& [kind, n] : kinds)
    text += "  " + kind + ": " + std::to_string(n) + "\n";
  return text;
}

// The fuzzer's own actor system: its node id is what the captured handshake carries, and its
// types serialize the Herd messages.
struct fuzzer_system {
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  fuzzer_system() {
    herd::cluster::configure_remoting(config, herd::config::cluster_section{});
    system = std::make_unique<caf::actor_system>(config);
  }
};

void expect_same_result_under_fuzzing(const std::vector<std::string>& cluster_settings,
                                      const std::string& token, const tls_files* tls, unsigned seed,
                                      int inputs) {
  temp_directory dir;
  const auto reference = run_job(dir, "reference", cluster_settings, nullptr);
  ASSERT_EQ(reference.coordinator_status, 0) << reference.logs;
  ASSERT_TRUE(reference.report.contains("final_test_accuracy")) << reference.logs;

  fuzzer_system fuzz_actors;
  std::map<std::string, int> kinds;
  int delivered = 0;
  bool captured = false;
  const auto fuzzed = run_job(dir, "fuzzed", cluster_settings, [&](int port) {
    gate_fuzzer fuzzer(*fuzz_actors.system, port, token, tls, seed);
    captured = fuzzer.has_handshake();
    fuzzer.run(inputs, 240s);
    delivered = fuzzer.delivered();
    kinds = fuzzer.kinds();
  });
  EXPECT_TRUE(captured) << "could not capture CAF's handshake to mutate";
  ASSERT_EQ(fuzzed.coordinator_status, 0) << fuzzed.logs;
  for (int status : fuzzed.node_status)
    EXPECT_EQ(status, 0) << fuzzed.logs;
  EXPECT_GE(delivered, inputs) << "the job ended before the fuzzer was done:\n" << describe(kinds);
  // Bit for bit the same training: no hostile input changed a round.
  EXPECT_EQ(fuzzed.report["final_test_accuracy"], reference.report["final_test_accuracy"]);
  EXPECT_EQ(fuzzed.report["final_test_loss"], reference.report["final_test_loss"]);
  EXPECT_EQ(fuzzed.report["rounds"], reference.report["rounds"]);
  EXPECT_EQ(fuzzed.report["rounds_aborted"], 0);
  // The gate said what it refused and dropped.
  EXPECT_NE(fuzzed.logs.find("refused a connection"), std::string::npos);
  EXPECT_NE(fuzzed.logs.find("broke the control protocol"), std::string::npos);
  std::cout << "fuzz inputs delivered: " << delivered << "\n" << describe(kinds);
}

TEST(gate_fuzz, thousands_of_hostile_inputs_leave_a_job_and_its_result_unchanged) {
  const std::string token = "fuzz-token-0123456789";
  expect_same_result_under_fuzzing({"--cluster.token=" + token}, token, nullptr, 7, 3000);
}

TEST(gate_fuzz, with_tls_thousands_of_hostile_inputs_leave_a_job_and_its_result_unchanged) {
  temp_directory certs;
  const std::string d = certs.path().string();
  ASSERT_TRUE(herd::testing::make_certificate_authority(d, "ca") &&
              herd::testing::make_signed_certificate(d, "member", "ca"))
      << "openssl could not make the test certificates";
  const tls_files member{certs.file("ca.pem"), certs.file("member.pem"), certs.file("member.key")};
  const std::string token = "fuzz-token-0123456789";
  expect_same_result_under_fuzzing({"--cluster.token=" + token, "--cluster.tls-ca=" + member.ca,
                                    "--cluster.tls-cert=" + member.cert,
                                    "--cluster.tls-key=" + member.key},
                                   token, &member, 11, 2000);
}

} // namespace
