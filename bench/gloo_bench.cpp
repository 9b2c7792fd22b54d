// bench_gloo: group_reduce of the gloo data plane among P forked processes on loopback, against
// raw loopback TCP measured in the same run (one process streaming the same bytes to another
// through a plain socket pair), right before each P's allreduces: on a shared host the TCP figure
// drifts by tens of percent within a minute, so a baseline taken once at the start would skew
// the later rows' ratios.
//
//   bench_gloo [--processes=2,3,4] [--sizes-mb=1,4,16,64] [--repetitions=7] [--warmup=2]
//              [--hostname=127.0.0.1] [--compression=none,fp16,bf16] [--encryption=off,on]
//              [--seal-threads=1,4] [--seal-pipeline=on,off] [--open-pipeline=on,off]
//              [--lanes=1,2,4]
//
// For every (P, size) it prints the median time of one allreduce over all P ranks (each repetition
// timed from a barrier to the last rank's return), the algorithm bandwidth (bytes / time), the bus
// bandwidth (algbw * 2(P-1)/P, as nccl-tests define it: what each rank's link carries), the raw
// TCP bandwidth of one stream (median), busbw / TCP (the goal's measure), the per-direction
// bandwidth of two streams running both ways at once over one connection (duplex: what each ring
// step asks of the kernel), and busbw / duplex. All processes share this host's cores: with more
// busy threads than cores the ring is CPU-bound, not network-bound. Asserts nothing.
//
// With --compression, each wire format runs in turn (comm.compression); the bandwidths count the
// floats reduced (4 bytes each), not the bytes on the wire, and `vs_none` is none's time over
// this format's at the same P and size (above 1: faster).
//
// With --encryption=off,on, each format runs in the clear and sealed (AES-256-GCM, as
// cluster.data-encryption does it; the wire column says "+gcm"), and `vs_clear` is the clear run's
// time over this one's, same format, P and size (below 1: slower). --seal-threads runs the sealed
// plane with each number of threads sealing a message's pieces (comm.seal-threads; the wire
// column says "+gcmN"); without it, each rank takes the plane's automatic number (half the cores,
// 1 to 4). --seal-pipeline=on,off runs each sealed plane twice: with its sends sealed and posted
// by a thread of their own while the reduction goes on (on, the default), and sealed by the
// reduction's own thread before each is posted (off; the wire column ends in "s", serial).
// --open-pipeline=on,off does the same for receives: each waited for and opened by a thread of
// the operation's own while the reduction adds the segment before (on, the default), or opened
// by the reduction's thread when it needs the segment (off; the wire column ends in "o").
// --lanes=1,2,4 runs each wire over that many connections between each pair of ranks
// (comm.connections; the wire column says "xN" after the format), a reduction of 4 MiB or more
// cut across them; vs_clear then compares with one lane in the clear.
#include "comm/gloo_plane.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <netinet/in.h>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <vector>

#include "bench/bench_flags.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  std::vector<int> processes{2, 3, 4};
  std::vector<double> sizes_mb{1, 4, 16, 64};
  int repetitions = 7;
  int warmup = 2;
  std::string hostname = "127.0.0.1";
  std::vector<std::string> compressions{"none"};
  std::vector<bool> encryptions{false};
  std::vector<int> seal_threads{0}; // 0: the plane's automatic number
  std::vector<bool> seal_pipelines{true};
  std::vector<bool> open_pipelines{true};
  std::vector<int> lanes{1};
};

// How one run's plane is made.
struct plane_setup {
  herd::comm::wire_format compression = herd::comm::wire_format::fp32;
  std::optional<herd::comm::plane_key> key;
  int seal_threads = 0;
  bool seal_pipeline = true;
  bool open_pipeline = true;
  int lanes = 1; // connections between each pair of ranks (comm.connections)
};

template <typename T>
std::vector<T> parse_list(const std::string& text) {
  std::vector<T> values;
  for (const auto& item : herd::bench::list_flag(text))
    values.push_back(static_cast<T>(std::stod(item)));
  return values;
}

void usage(std::ostream& out) {
  out << "usage: bench_gloo [--processes=2,3,4] [--sizes-mb=1,4,16,64] [--repetitions=7]\n"
         "                  [--warmup=2] [--hostname=127.0.0.1] [--compression=none,fp16,bf16]\n"
         "                  [--encryption=off,on] [--seal-threads=1,4] [--seal-pipeline=on,off]\n"
         "                  [--open-pipeline=on,off] [--lanes=1,2,4]\n"
         "Times group_reduce among P forked processes on one host (median over repetitions)\n"
         "next to raw loopback TCP between two processes (one stream, and one each way at once),\n"
         "and prints algbw, busbw, busbw/TCP and busbw/duplex.\n";
}

options parse(int argc, char** argv) {
  options parsed;
  for (int i = 1; i < argc; ++i) {
    const auto [key, value] = herd::bench::split_flag(argv[i]);
    if (key == "--help" || key == "-h") {
      usage(std::cout);
      std::exit(0);
    } else if (key == "--processes") {
      parsed.processes = parse_list<int>(value);
    } else if (key == "--sizes-mb") {
      parsed.sizes_mb = parse_list<double>(value);
    } else if (key == "--repetitions") {
      parsed.repetitions = herd::bench::int_flag("bench_gloo", key, value);
    } else if (key == "--warmup") {
      parsed.warmup = herd::bench::int_flag("bench_gloo", key, value);
    } else if (key == "--hostname") {
      parsed.hostname = value;
    } else if (key == "--compression") {
      parsed.compressions.clear();
      std::stringstream list(value);
      for (std::string item; std::getline(list, item, ',');) {
        try {
          herd::comm::wire_format_of(item);
        } catch (const std::invalid_argument& bad) {
          std::cerr << "bench_gloo: --compression: " << bad.what() << "\n";
          std::exit(2);
        }
        parsed.compressions.push_back(item);
      }
    } else if (key == "--encryption") {
      parsed.encryptions = herd::bench::off_on_list("bench_gloo", key, value);
    } else if (key == "--lanes") {
      parsed.lanes = parse_list<int>(value);
      for (int lanes : parsed.lanes)
        if (lanes < 1 || lanes > herd::comm::max_lanes) {
          std::cerr << "bench_gloo: --lanes wants counts from 1 to " << herd::comm::max_lanes
                    << ", got " << lanes << "\n";
          std::exit(2);
        }
    } else if (key == "--seal-pipeline") {
      parsed.seal_pipelines = herd::bench::off_on_list("bench_gloo", key, value);
    } else if (key == "--open-pipeline") {
      parsed.open_pipelines = herd::bench::off_on_list("bench_gloo", key, value);
    } else if (key == "--seal-threads") {
      parsed.seal_threads = parse_list<int>(value);
      for (int threads : parsed.seal_threads)
        if (threads < 1 || threads > 64) {
          std::cerr << "bench_gloo: --seal-threads wants counts from 1 to 64, got " << threads
                    << "\n";
          std::exit(2);
        }
    } else {
      usage(std::cerr);
      std::exit(2);
    }
  }
  for (int p : parsed.processes)
    if (p < 2) {
      std::cerr << "bench_gloo: --processes wants counts of 2 or more, got " << p << "\n";
      std::exit(2);
    }
  if (parsed.repetitions < 1) {
    std::cerr << "bench_gloo: --repetitions must be at least 1\n";
    std::exit(2);
  }
  return parsed;
}

// Whole floats: the ranks report the bytes they reduced, and their rows are looked up by them.
std::size_t bytes_of(double size_mb) {
  return static_cast<std::size_t>(size_mb * (1 << 20)) / sizeof(float) * sizeof(float);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  auto n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Children report "key value" lines through a pipe; writes under PIPE_BUF bytes are atomic.
void report(int fd, const std::string& line) {
  auto text = line + "\n";
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    std::_Exit(3);
}

std::vector<std::string> read_lines(int fd) {
  std::string all;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;)
    all.append(buffer, static_cast<std::size_t>(n));
  std::vector<std::string> lines;
  std::stringstream stream(all);
  for (std::string line; std::getline(stream, line);)
    lines.push_back(line);
  return lines;
}

template <typename Body>
pid_t spawn(Body body) {
  pid_t child = ::fork();
  if (child == -1) {
    std::perror("bench_gloo: fork");
    std::exit(1);
  }
  if (child == 0) {
    int status = 1;
    try {
      status = body();
    } catch (const std::exception& failure) {
      std::cerr << "bench_gloo: " << failure.what() << std::endl;
    }
    std::_Exit(status);
  }
  return child;
}

bool wait_all(const std::vector<pid_t>& children) {
  bool all_passed = true;
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    all_passed = all_passed && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return all_passed;
}

// One process per rank; every rank reports "size repetition seconds" for each timed allreduce.
// Returns, per size in bytes, the median over repetitions of the slowest rank's time.
std::map<std::size_t, double> time_allreduce(const options& opts, int processes,
                                             const std::string& store_directory,
                                             const plane_setup& setup) {
  int channel[2];
  if (::pipe(channel) != 0) {
    std::perror("bench_gloo: pipe");
    std::exit(1);
  }
  std::vector<pid_t> children;
  for (int rank = 0; rank < processes; ++rank) {
    children.push_back(spawn([&, rank] {
      ::close(channel[0]);
      herd::comm::gloo_plane_options plane_options;
      plane_options.hostname = opts.hostname;
      plane_options.compression = setup.compression;
      plane_options.seal_key = setup.key;
      plane_options.seal_threads = setup.seal_threads;
      plane_options.pipeline_sealing = setup.seal_pipeline;
      plane_options.pipeline_opening = setup.open_pipeline;
      plane_options.lanes = setup.lanes;
      plane_options.prefix = "bench-" + std::to_string(processes);
      auto plane = herd::comm::make_gloo_plane(
          rank, processes, herd::comm::make_file_store(store_directory), plane_options);
      std::vector<herd::comm::weighted_input> everyone;
      for (int r = 0; r < processes; ++r)
        everyone.push_back({r, 1.0f});
      std::uint64_t tag = 0;
      auto sum = [&](float* data, std::size_t count, std::chrono::milliseconds timeout) {
        auto reduced =
            plane->group_reduce(everyone, data, data, count, {tag++, timeout})->wait(timeout);
        if (!reduced.ok())
          throw herd::comm::comm_error(reduced); // spawn() prints it
      };
      std::vector<float> token(1);
      auto barrier = [&] { sum(token.data(), 1, std::chrono::seconds(60)); };
      for (double size_mb : opts.sizes_mb) {
        std::size_t count = bytes_of(size_mb) / sizeof(float);
        std::vector<float> data(count);
        for (int repetition = -opts.warmup; repetition < opts.repetitions; ++repetition) {
          std::fill(data.begin(), data.end(), 1.0f);
          barrier();
          auto start = clock_type::now();
          sum(data.data(), count, std::chrono::seconds(120));
          double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
          if (count > 0 && (data.front() != static_cast<float>(processes) ||
                            data.back() != static_cast<float>(processes))) {
            std::cerr << "bench_gloo: rank " << rank << " got a wrong sum\n";
            return 4;
          }
          if (repetition >= 0)
            report(channel[1], std::to_string(count * sizeof(float)) + " " +
                                   std::to_string(repetition) + " " + std::to_string(seconds));
        }
      }
      barrier(); // nobody leaves while a peer still reads from its sockets
      return 0;
    }));
  }
  ::close(channel[1]);
  auto lines = read_lines(channel[0]);
  ::close(channel[0]);
  if (!wait_all(children)) {
    std::cerr << "bench_gloo: a rank of the " << processes << "-process run failed\n";
    std::exit(1);
  }
  std::map<std::size_t, std::map<int, double>> slowest; // bytes -> repetition -> seconds
  for (const auto& line : lines) {
    std::stringstream fields(line);
    std::size_t bytes = 0;
    int repetition = 0;
    double seconds = 0;
    fields >> bytes >> repetition >> seconds;
    auto& entry = slowest[bytes][repetition];
    entry = std::max(entry, seconds);
  }
  std::map<std::size_t, double> medians;
  for (const auto& [bytes, by_repetition] : slowest) {
    std::vector<double> times;
    for (const auto& [repetition, seconds] : by_repetition)
      times.push_back(seconds);
    medians[bytes] = median(times);
  }
  return medians;
}

bool read_fully(int fd, char* into, std::size_t bytes) {
  while (bytes > 0) {
    auto n = ::read(fd, into, bytes);
    if (n <= 0)
      return false;
    into += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_fully(int fd, const char* from, std::size_t bytes) {
  while (bytes > 0) {
    auto n = ::write(fd, from, bytes);
    if (n <= 0)
      return false;
    from += n;
    bytes -= static_cast<std::size_t>(n);
  }
  return true;
}

// Raw loopback TCP between two processes, default socket options (kernel buffer autotuning).
// Simplex: one streams `bytes` to the other, which acknowledges with one byte. Duplex: both stream
// `bytes` to each other at once (a thread writes while the main thread reads), which is what each
// step of a ring does; on a host with few cores it shows what the kernel's copies alone leave.
// Median seconds per transfer.
double time_raw_tcp(const options& opts, std::size_t bytes, bool duplex) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = 0;
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  socklen_t length = sizeof(address);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("bench_gloo: raw TCP listener");
    std::exit(1);
  }
  int channel[2];
  if (::pipe(channel) != 0) {
    std::perror("bench_gloo: pipe");
    std::exit(1);
  }
  const int transfers = opts.warmup + opts.repetitions;
  // Moves one transfer's bytes: reads them (receiver) or writes them (sender), and in duplex mode
  // the other direction too, from a second thread.
  auto exchange = [bytes, duplex](int connection, std::vector<char>& out, std::vector<char>& in,
                                  bool sender) {
    bool other_ok = true;
    std::thread other;
    if (duplex)
      other = std::thread([&] {
        other_ok = sender ? read_fully(connection, in.data(), bytes)
                          : write_fully(connection, out.data(), bytes);
      });
    bool ok = sender ? write_fully(connection, out.data(), bytes)
                     : read_fully(connection, in.data(), bytes);
    if (other.joinable())
      other.join();
    return ok && other_ok;
  };
  pid_t receiver = spawn([&] {
    ::close(channel[0]);
    int connection = ::accept(listener, nullptr, nullptr);
    std::vector<char> out(bytes, 1), in(bytes, 0);
    char ack = 'k';
    for (int i = 0; i < transfers; ++i)
      if (!exchange(connection, out, in, false) || !write_fully(connection, &ack, 1))
        return 5;
    return 0;
  });
  pid_t sender = spawn([&] {
    ::close(channel[0]);
    int connection = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(connection, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0)
      return 6;
    std::vector<char> out(bytes, 2), in(bytes, 0);
    char ack = 0;
    for (int i = 0; i < transfers; ++i) {
      auto start = clock_type::now();
      if (!exchange(connection, out, in, true) || !read_fully(connection, &ack, 1))
        return 7;
      double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
      if (i >= opts.warmup)
        report(channel[1], std::to_string(seconds));
    }
    return 0;
  });
  ::close(listener);
  ::close(channel[1]);
  auto lines = read_lines(channel[0]);
  ::close(channel[0]);
  if (!wait_all({receiver, sender})) {
    std::cerr << "bench_gloo: the raw TCP run failed\n";
    std::exit(1);
  }
  std::vector<double> times;
  for (const auto& line : lines)
    times.push_back(std::stod(line));
  return median(times);
}

} // namespace

int main(int argc, char** argv) {
  auto opts = parse(argc, argv);
  auto store_root =
      std::filesystem::temp_directory_path() / ("herd-bench-gloo-" + std::to_string(::getpid()));
  std::filesystem::remove_all(store_root);

  std::printf("bench_gloo: %d repetitions (median) after %d warm-up, %u cores on this host\n",
              opts.repetitions, opts.warmup, std::thread::hardware_concurrency());
  std::printf("%5s %11s %9s %10s %11s %11s %9s %10s %11s %13s %8s %9s\n", "procs", "wire",
              "size_MB", "time_ms", "algbw_GB/s", "busbw_GB/s", "tcp_GB/s", "busbw/tcp",
              "duplex_GB/s", "busbw/duplex", "vs_none", "vs_clear");
  const herd::comm::plane_key key = herd::comm::random_plane_key();
  for (int processes : opts.processes) {
    std::map<std::size_t, double> raw_tcp;
    std::map<std::size_t, double> duplex_tcp;
    for (double size_mb : opts.sizes_mb) {
      raw_tcp[bytes_of(size_mb)] = time_raw_tcp(opts, bytes_of(size_mb), false);
      duplex_tcp[bytes_of(size_mb)] = time_raw_tcp(opts, bytes_of(size_mb), true);
    }
    std::map<std::string, std::map<std::size_t, double>> times; // wire -> bytes -> seconds
    // (format, sealed, threads, sends pipelined, opening pipelined, lanes): every format in the
    // clear, and sealed by each number of threads, pipelined or not, over each number of lanes.
    std::vector<std::tuple<std::string, bool, int, bool, bool, int>> runs;
    const std::vector<bool> clear_pipeline{true};
    for (const auto& format : opts.compressions)
      for (int lanes : opts.lanes)
        for (bool sealed : opts.encryptions)
          for (int threads : sealed ? opts.seal_threads : std::vector<int>{0})
            for (bool sends : sealed ? opts.seal_pipelines : clear_pipeline)
              for (bool opening : sealed ? opts.open_pipelines : clear_pipeline)
                runs.emplace_back(format, sealed, threads, sends, opening, lanes);
    for (const auto& [format, sealed, threads, sends, opening, lanes] : runs) {
      const std::string wire =
          format + (lanes > 1 ? "x" + std::to_string(lanes) : "") + (sealed ? "+gcm" : "") +
          (threads > 0 ? std::to_string(threads) : "") + (sends ? "" : "s") + (opening ? "" : "o");
      auto directory = store_root / (std::to_string(processes) + "-" + wire);
      const plane_setup setup{herd::comm::wire_format_of(format),
                              sealed ? std::optional(key) : std::nullopt,
                              threads,
                              sends,
                              opening,
                              lanes};
      times[wire] = time_allreduce(opts, processes, directory.string(), setup);
      for (double size_mb : opts.sizes_mb) {
        auto bytes = bytes_of(size_mb);
        double seconds = times[wire][bytes];
        double algbw = static_cast<double>(bytes) / seconds / 1e9;
        double busbw = algbw * 2.0 * (processes - 1) / processes;
        double tcp = static_cast<double>(bytes) / raw_tcp[bytes] / 1e9;
        double duplex = static_cast<double>(bytes) / duplex_tcp[bytes] / 1e9;
        // 0 where the run to compare with is not in this invocation.
        auto over = [&](const std::string& baseline) {
          const auto found = times.find(baseline);
          return found != times.end() ? found->second[bytes] / seconds : 0.0;
        };
        std::printf("%5d %11s %9.3g %10.3f %11.2f %11.2f %9.2f %10.2f %11.2f %13.2f %8.2f %9.2f\n",
                    processes, wire.c_str(), size_mb, seconds * 1e3, algbw, busbw, tcp, busbw / tcp,
                    duplex, busbw / duplex, over("none"), over(format));
        std::fflush(stdout);
      }
    }
  }
  std::filesystem::remove_all(store_root);
  return 0;
}
